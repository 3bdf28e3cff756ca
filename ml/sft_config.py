"""The SFT cold start's configuration (one documented, validated dataclass; see ``ml.sft``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ml.chat import ChatFormat, raise_field_errors
from ml.model import ModelConfig


@dataclass
class SFTConfig:
    """Planning-oriented supervised cold start.

    Data and masking:
        mask_codes: a step whose call failed with one of these codes (agent-attributable errors:
            400 bad argument, 404 unknown tool) is an *erroneous action turn* when a later step
            calls the same tool successfully (it was corrected); its tokens get no loss. The
            correcting turn (a verified recovery) keeps its loss. Environment failures (409, 412,
            503) are evidence the model must learn to react to, never masked by code.
        mask_uncorrected: also mask agent-attributable failures nobody corrected.
        mask_parse_errors: mask turns whose output could not be parsed.
        Steps labelled ``"erroneous": true`` (in the step dict or its ``metadata``) are masked too.
        only_successful: train only on episodes whose verdict is a success.
        swap_share: the share of episodes whose task values (names, numbers and free words the episode
            states; never enum values or other words of the prompt and tool schemas) are replaced by
            invented ones in every message (``ml.augment``), so argument values can only be learnt by
            copying; which episodes and which values are drawn afresh every epoch (``EpochData``).
            Default 0.5: two runs of ``bench/train_loop.py --sft-minutes 95 --sft-seeds 96`` on the same
            data and held-out suite, differing only in ``--swap-share`` (0 / 0.5), gave SFT Overall 20.6 /
            35.0 (then the swap took only names and numbers the request states). With numbers from any
            user turn or tool reply and free words added it gave 40.6 ± 2.8 (35.0 ± 10.3 before), but that
            run also made 27,479 steps in its 95 minutes against 18,554 (a faster machine), so the gain
            is not the swap's alone. In 16-minute runs it raised the held-out loss (0.30 -> 0.35)
            without a clear change in Overall (4.2 -> 6.7 on 48 tasks, within noise): copying is learnt
            late. 0 memorises the episodes verbatim.
        value_weight: loss weight of the tokens of call argument values (``ml.sft.call_values``: the
            values the episode passes to tools, wherever a turn writes them: reasoning, content, calls);
            every other trained token weighs 1, and the loss is the weighted mean. Argument values are an
            eighth of the trained tokens (12.6% on the bench's data, ``bench/value_weight_cost.py``) but
            most of the held-out failures (stop 13's probe: 17 of 25 first divergences were a right
            tool with a wrong value); weight 3 gives them 30% of the gradient at no measurable cost
            per step. 1 turns the weighting off. Same-machine A/B (``bench/sft_ab.py --values 1,3
            --sft-minutes 70``, the arms side by side, 9,607 / 9,576 steps) on 48 held-out tasks, 1 vs 3:
            held-out loss 0.143 vs 0.123, turn_exact 0.500 vs 0.557 (140 call turns), closed-loop
            success 6 vs 9 of 48 (wrong-value first divergences 38 vs 32), training-instance replay
            0.086 vs 0.237; tool names 0.950 vs 0.914. One run each: every value measure moves the same
            way, but a 6-vs-9-of-48 or 70-vs-78-of-140 gap alone is within binomial noise.
    Optimisation:
        batching: "bucket" (default: episodes of similar length batched together, right-padded, plain
            causal attention; fastest on CPU) or "pack" (whole episodes packed into rows of seq_len
            with block-diagonal attention; the efficient choice where attention kernels take
            variable-length sequences, e.g. flash attention on a GPU).
        seq_len: row length in tokens (whole episodes, never split; longer ones are truncated at
            the context budget). batch_rows: rows per optimiser step when packing; when bucketing,
            a step holds at most batch_rows x seq_len padded tokens.
        lr, min_lr: peak and final learning rate (linear warmup over warmup_steps, cosine decay to
            min_lr at max_steps). weight_decay, betas: AdamW. grad_clip: max global grad norm.
        max_steps: optimiser steps (the schedule's length). max_minutes: stop earlier on wall time
            (0 = no limit); the cosine then ends at whichever of the two comes first. Both count the
            whole run: a run resumed after a crash goes on from its checkpoint's step and elapsed time.
        epochs_cap: stop after this many passes over the data (0 = no cap).
    Bookkeeping:
        out_dir: checkpoints go to ``out_dir/last`` (weights + tokenizer + trainer_state.pt).
        save_every: steps between checkpoints (0 = only at the end). log_every: steps between
        metrics callbacks. seed: data order and init. threads: torch CPU threads (0 = leave as is).
        model: the ModelConfig for a fresh model (ignored when starting from a checkpoint).
        chat: context compaction (ChatFormat).
    """

    mask_codes: tuple[int, ...] = (400, 404)
    mask_uncorrected: bool = True
    mask_parse_errors: bool = True
    only_successful: bool = True
    swap_share: float = 0.5
    value_weight: float = 3.0
    batching: str = "bucket"
    seq_len: int = 1024
    batch_rows: int = 8
    lr: float = 3e-3
    min_lr: float = 3e-4
    warmup_steps: int = 30
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.95)
    grad_clip: float = 1.0
    max_steps: int = 600
    max_minutes: float = 0.0
    epochs_cap: int = 0
    out_dir: str = ""
    save_every: int = 100
    log_every: int = 10
    seed: int = 0
    threads: int = 0
    model: ModelConfig = field(default_factory=ModelConfig)
    chat: ChatFormat = field(default_factory=ChatFormat)

    def __post_init__(self) -> None:
        if isinstance(self.model, dict):
            self.model = ModelConfig.from_dict(self.model)
        if isinstance(self.chat, dict):
            self.chat = ChatFormat(**self.chat)
        self.mask_codes = tuple(self.mask_codes)
        self.betas = tuple(self.betas)  # type: ignore[assignment]
        self.validate()

    def validate(self) -> None:
        e: dict[str, str] = {}
        for name in ("seq_len", "batch_rows", "max_steps"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                e[name] = f"must be a positive integer, got {v!r}"
        for name in ("warmup_steps", "save_every", "log_every", "seed", "threads", "epochs_cap"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 0:
                e[name] = f"must be a non-negative integer, got {v!r}"
        if not (isinstance(self.lr, int | float) and 0 < self.lr < 1):
            e["lr"] = f"must be in (0, 1), got {self.lr!r}"
        if not (isinstance(self.min_lr, int | float) and 0 <= self.min_lr <= (self.lr if "lr" not in e else 1)):
            e["min_lr"] = f"must be in [0, lr], got {self.min_lr!r}"
        if self.batching not in ("bucket", "pack"):
            e["batching"] = f"must be 'bucket' or 'pack', got {self.batching!r}"
        if not (isinstance(self.swap_share, int | float) and 0 <= self.swap_share <= 1):
            e["swap_share"] = f"must be in [0, 1], got {self.swap_share!r}"
        if not (isinstance(self.value_weight, int | float) and 0 < self.value_weight <= 100):
            e["value_weight"] = f"must be in (0, 100], got {self.value_weight!r}"
        if not self.weight_decay >= 0:
            e["weight_decay"] = "must be >= 0"
        if len(self.betas) != 2 or not all(0 <= b < 1 for b in self.betas):
            e["betas"] = "must be two numbers in [0, 1)"
        if not self.grad_clip > 0:
            e["grad_clip"] = "must be > 0"
        if not self.max_minutes >= 0:
            e["max_minutes"] = "must be >= 0 (0 = no limit)"
        if not all(isinstance(c, int) and 100 <= c <= 599 for c in self.mask_codes):
            e["mask_codes"] = "must be HTTP-like integer codes (100..599)"
        if "seq_len" not in e and self.seq_len < self.chat.max_context_tokens + self.chat.max_new_tokens:
            e["seq_len"] = (f"must hold one whole context: >= chat.max_context_tokens + chat.max_new_tokens "
                            f"({self.chat.max_context_tokens + self.chat.max_new_tokens})")
        if "seq_len" not in e and self.seq_len > self.model.max_positions:
            e["seq_len"] = f"must be <= model.max_positions ({self.model.max_positions})"
        raise_field_errors("SFTConfig", e)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SFTConfig:
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise_field_errors("SFTConfig", {k: "unknown field" for k in unknown})
        return cls(**d)
