"""Planning-oriented SFT cold start: loss on assistant turns only, erroneous action turns masked out.

Input is contract Episodes (or their dicts): a DatasetVersion's trajectories, or reference-solver
episodes straight from the Harness (``reference_episodes``). Each episode becomes token sequences
(``encode_views``) in which every turn follows exactly the prompt generation would build for it, with
a loss mask over the planner's own turns (the reasoning, content and tool calls of each step, plus
``<|im_end|>``), minus the turns ``erroneous_steps`` flags and turns too long to generate; the tokens of
call argument values weigh ``value_weight`` in the loss (``value_weights``). Sequences
are batched by length (CPU default) or packed into rows (position ids restart per sequence, so
attention stays inside each one); AdamW with linear warmup and cosine decay; global-norm clipping;
checkpoints (weights + tokenizer + optimizer, step and RNG) with resume.

CPU (2 cores, ~5 minutes)::

    python -m ml.sft --out var/ml/sft --minutes 5

On a GPU host the same command runs with ``--device cuda`` (the config's sizes scale up).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.contract import Episode
from ml.chat import (
    IM_END,
    ChatFormat,
    Encoded,
    TurnSpan,
    assistant_text,
    encode_conversation,
    encode_many,
    encode_prompt,
    render_prompt,
    tool_dict,
)
from ml.sft_config import SFTConfig

TRAINER_STATE = "trainer_state.pt"
Metrics = Callable[[dict[str, Any]], None]


# ---------------------------------------------------------------------------------------------
# Turn-level error detection


def _as_dict(ep: Episode | dict[str, Any]) -> dict[str, Any]:
    return ep.to_dict() if isinstance(ep, Episode) else ep


def erroneous_steps(ep: Episode | dict[str, Any], cfg: SFTConfig | None = None) -> set[int]:
    """Indices of the episode's erroneous action turns (their tokens get no loss).

    A step is erroneous when (a) it is labelled so (``step["erroneous"]`` or
    ``step["metadata"]["erroneous"]``), or (b) one of its calls failed with a code in
    ``cfg.mask_codes`` and a later step calls the same tool successfully (a corrected mistake;
    with ``mask_uncorrected`` the correction need not exist), or (c) its output had parse errors
    (``mask_parse_errors``). Recoveries, i.e. the later successful calls, are never masked.
    """
    cfg = cfg or SFTConfig()
    d = _as_dict(ep)
    steps = d.get("steps", [])
    bad: set[int] = set()
    for i, s in enumerate(steps):
        if s.get("erroneous") or (s.get("metadata") or {}).get("erroneous"):
            bad.add(i)
            continue
        if cfg.mask_parse_errors and (s.get("parse_errors") or (s.get("turn") or {}).get("parse_errors")):
            bad.add(i)
            continue
        for c in s.get("calls", []):
            r = c.get("result", {})
            if r.get("success") or int(r.get("code", 0)) not in cfg.mask_codes:
                continue
            tool = c.get("call", {}).get("name")
            corrected = any(
                c2.get("call", {}).get("name") == tool and c2.get("result", {}).get("success")
                for s2 in steps[i + 1:] for c2 in s2.get("calls", [])
            )
            if corrected or cfg.mask_uncorrected:
                bad.add(i)
                break
    return bad


def step_messages(ep: Episode | dict[str, Any]) -> list[int]:
    """Message index of each step's assistant turn (earlier dialogue from the task's history comes first)."""
    d = _as_dict(ep)
    assistant = [i for i, m in enumerate(d.get("messages", [])) if m.get("role") == "assistant"]
    n = len(d.get("steps", []))
    return assistant[len(assistant) - n:] if n else []


def encode_episode(ep: Episode | dict[str, Any], tokenizer: Any, cfg: SFTConfig) -> Encoded:
    """One training sequence: loss on the episode's own turns except the erroneous ones."""
    d = _as_dict(ep)
    msg_of = step_messages(d)
    bad = erroneous_steps(d, cfg)
    train = {m for i, m in enumerate(msg_of) if i not in bad}
    return encode_conversation(d["messages"], d.get("tools", []), tokenizer, cfg.chat, train_messages=train)


def step_tools(ep: Episode | dict[str, Any]) -> list[list[Any]]:
    """The tool specs each step was offered (``step["tools"]`` names, resolved against the episode's tools).

    Steps that predate per-turn tool records, or an episode whose records name a tool it has no spec
    for, get the episode's whole tool list for every step.
    """
    d = _as_dict(ep)
    by_name = {tool_dict(t)["name"]: t for t in d.get("tools", [])}
    names = [s.get("tools") or list(by_name) for s in d.get("steps", [])]
    if any(n not in by_name for k in names for n in k):
        names = [list(by_name)] * len(names)
    return [[by_name[n] for n in k] for k in names]


def call_values(messages: Iterable[dict[str, Any]]) -> set[str]:
    """Every argument value the assistant ``messages`` pass to a tool, as it appears in text: the
    leaves of the arguments (also inside lists and objects) that are strings of two or more characters
    or numbers, plus a string's JSON-escaped form where that differs. Booleans are left out."""
    out: set[str] = set()

    def leaves(x: Any) -> None:
        if isinstance(x, dict):
            for v in x.values():
                leaves(v)
        elif isinstance(x, list):
            for v in x:
                leaves(v)
        elif isinstance(x, str) and len(x.strip()) >= 2:
            out.add(x)
            out.add(json.dumps(x, ensure_ascii=False)[1:-1])
        elif isinstance(x, int | float) and not isinstance(x, bool):
            out.add(json.dumps(x))

    for m in messages:
        if m.get("role") == "assistant":
            for c in m.get("tool_calls") or []:
                args = c.get("function", c).get("arguments", {})
                if isinstance(args, str):  # OpenAI style: the arguments as a JSON string
                    try:
                        args = json.loads(args)
                    except ValueError:
                        continue
                leaves(args)
    return out


def hidden_values(ep: Episode | dict[str, Any], fmt: ChatFormat) -> list[tuple[int, str]]:
    """(step, value) for every argument value (``call_values``) a step passes to a tool that an earlier
    tool result states but that step's compacted prompt (``ml.chat`` rules 1-3) no longer shows: a value
    the model can only guess. A diagnostic of the compaction against the data (``bench/sft_probe.py``).
    Substring tests: a value that also occurs elsewhere in the prompt counts as shown (a lower bound)."""
    d = _as_dict(ep)
    msgs = d.get("messages", [])
    out = []
    for i, (m, tools) in enumerate(zip(step_messages(d), step_tools(d), strict=True)):
        said = " ".join(str(x.get("content", "")) for x in msgs[:m] if x.get("role") == "tool")
        shown = render_prompt(msgs[:m], tools, fmt)
        out += [(i, v) for v in sorted(call_values([msgs[m]])) if v in said and v not in shown]
    return out


def value_weights(texts: list[str], values: set[str], tokenizer: Any, weight: float) -> list[list[float]]:
    """Per-token loss weights of ``texts`` (as ``encode_many`` tokenises them): ``weight`` on every token
    that overlaps an occurrence of one of ``values`` (a whole word or number: not inside a longer one),
    1 elsewhere. A fast tokenizer's character offsets map the occurrences to tokens."""
    encs = tokenizer.backend_tokenizer.encode_batch(texts, add_special_tokens=False)
    pat = re.compile("|".join(rf"(?<![\w.]){re.escape(v)}(?![\w]|\.\d)" for v in sorted(values, key=len, reverse=True)))
    out = []
    for text, enc in zip(texts, encs, strict=True):
        hit = bytearray(len(text) + 1)
        for m in pat.finditer(text) if values else ():
            hit[m.start():m.end()] = b"\x01" * (m.end() - m.start())
        out.append([weight if any(hit[a:b]) else 1.0 for a, b in enc.offsets])
    return out


def encode_views(ep: Episode | dict[str, Any], tokenizer: Any, cfg: SFTConfig) -> list[Encoded]:
    """The episode's SFT sequences (``turn_views``): the turns ``erroneous_steps`` flags and turns longer
    than ``chat.max_new_tokens`` (generation could never finish them) get no loss; with ``cfg.value_weight``
    other than 1, the tokens of the argument values the trained turns pass to tools (``call_values``; an
    erroneous turn's wrong value is not one), in a turn's reasoning, content and calls alike, carry that
    loss weight (``Encoded.weights``). Episodes without steps are the single sequence of ``encode_episode``.
    """
    d = _as_dict(ep)
    if not d.get("steps"):
        return [encode_episode(d, tokenizer, cfg)]
    return turn_views(d, tokenizer, cfg.chat, cfg.seq_len, skip=erroneous_steps(d, cfg),
                      value_weight=cfg.value_weight, finishable_only=True)


def turn_views(ep: Episode | dict[str, Any], tokenizer: Any, fmt: ChatFormat, seq_len: int, *,
               skip: Collection[int] = (), value_weight: float = 1.0, finishable_only: bool = False) -> list[Encoded]:
    """The episode's turns as token sequences in which every turn follows exactly the prompt generation gave it.

    Generation builds each turn's prompt with ``encode_prompt``: the messages before the turn, under
    the tools offered at that turn (loading a skill adds its tool family), compacted to
    ``fmt.max_context_tokens`` (old results squeezed, then the oldest tokens dropped). One
    whole-episode sequence would show late turns contexts generation never builds: in the reference
    data a third of the turns (long episodes are squeezed or cut differently, or cut off at
    ``seq_len``). So a sequence starts at a turn's own prompt and runs on through later turns only
    while each later turn's prompt extends it token for token (same tools, no squeeze or cut in
    between) and it fits ``seq_len``. Every step's turn is a target (mask 1 on its tokens and its
    ``<|im_end|>``; a ``TurnSpan`` each) except the steps in ``skip`` and, with ``finishable_only``,
    turns longer than ``fmt.max_new_tokens``. SFT (``encode_views``) and the RL trainer's action
    tokens (``ml.care_trainer.encode_actions``) both read episodes through here.
    """
    d = _as_dict(ep)
    messages = d["messages"]
    msg_of = step_messages(d)
    prompts = [encode_prompt(messages[:m], tools, tokenizer, fmt) for m, tools in zip(msg_of, step_tools(d),
                                                                                      strict=True)]
    texts = [assistant_text(messages[m]) + IM_END for m in msg_of]
    targets = encode_many(tokenizer, texts)
    weighted = value_weight != 1
    values = call_values(messages[m] for i, m in enumerate(msg_of) if i not in skip) if weighted else set()
    weights = value_weights(texts, values, tokenizer, value_weight) if weighted else None
    out: list[Encoded] = []
    for i, (m, prompt, target) in enumerate(zip(msg_of, prompts, targets, strict=True)):
        cur = out[-1] if out else None
        if (cur is None or len(prompt) + len(target) > seq_len
                or prompt[:len(cur.ids)] != cur.ids):
            cur = Encoded([], [], [], [] if weighted else None)
            out.append(cur)
        cur.mask.extend([0] * (len(prompt) - len(cur.ids)))
        if weights is not None:
            cur.weights.extend([1.0] * (len(prompt) - len(cur.ids)))
            cur.weights.extend(weights[i])
        cur.ids = list(prompt)
        on = i not in skip and (not finishable_only or len(target) <= fmt.max_new_tokens)
        cur.turns.append(TurnSpan(len(cur.ids), len(cur.ids) + len(target), m))
        cur.ids.extend(target)
        cur.mask.extend([int(on)] * len(target))
    return out


def reference_episodes(tasks: Iterable[Any], styles: Iterable[Any] | None = None, batch_size: int = 64,
                       *, rotate: bool = False, weights: Iterable[float] | None = None) -> list[Episode]:
    """Reference-solver episodes of ``tasks`` in each style (default: concise, verbose, checks, mistake).

    With ``rotate`` each task is played once, in one style: more distinct instances per token,
    which teaches copying arguments rather than memorising instances. Styles then take turns in
    proportion to ``weights`` (smooth weighted round robin over the task order; equal by default).
    """
    from harness.episode import run_episodes
    from harness.reference import ReferenceSolver, ReferenceStyle

    tasks = list(tasks)
    styles = list(styles) if styles is not None else [
        ReferenceStyle(), ReferenceStyle("verbose"), ReferenceStyle(redundant_checks=True),
        ReferenceStyle(mistake=True)]
    share = list(weights) if weights is not None else [1.0] * len(styles)
    if len(share) != len(styles) or any(w < 0 for w in share) or not sum(share) > 0:
        raise ValueError("weights must be one non-negative number per style, not all zero")
    assigned: list[list[Any]] = [[] for _ in styles]
    if rotate:
        credit = [0.0] * len(styles)
        for task in tasks:
            credit = [c + w / sum(share) for c, w in zip(credit, share, strict=True)]
            k = max(range(len(styles)), key=lambda i: credit[i])
            credit[k] -= 1.0
            assigned[k].append(task)
    else:
        assigned = [tasks if w > 0 else [] for w in share]
    out: list[Episode] = []
    for style, mine in zip(styles, assigned, strict=True):
        if mine:
            out.extend(run_episodes(mine, ReferenceSolver(style), batch_size=batch_size))
    return out


def training_tasks(seeds: Iterable[int], per_template: int = 1) -> list[Any]:
    """Instances of every template from ``seeds`` (plain instantiate seeds never collide with the held-out
    suite's 63-bit instance seeds; ``harness.bench.assert_no_test_overlap`` checks it)."""
    from devices.virtual.registry import catalog
    from harness.bench import assert_no_test_overlap

    cat = catalog()
    tasks = [tpl.instantiate(s * per_template + k) for s in seeds for _, tpl in sorted(cat.templates.items())
             for k in range(per_template)]
    assert_no_test_overlap(tasks)
    return tasks


# ---------------------------------------------------------------------------------------------
# Packing


@dataclass
class Batch:
    """Rows: input ids, next-token labels (-100 where no loss) and per-episode position ids; all (B, T).

    ``packed`` is False when every row holds one right-padded episode: the model then runs with
    plain causal attention (no mask at all: padding only follows real tokens, which never look
    ahead), the fast fused kernel on CPU.
    """

    input_ids: Any
    labels: Any
    position_ids: Any
    tokens: int
    packed: bool = True
    weights: Any = None  # (B, T) loss weight of each label, or None for a plain mean


def pack(examples: list[Encoded], seq_len: int) -> list[list[int]]:
    """First-fit-decreasing bin packing of whole examples into rows of at most ``seq_len`` tokens.

    Returns rows as lists of example indices.
    """
    order = sorted(range(len(examples)), key=lambda i: -len(examples[i].ids))
    rows: list[list[int]] = []
    room: list[int] = []
    for i in order:
        n = min(len(examples[i].ids), seq_len)
        for r, free in enumerate(room):
            if n <= free:
                rows[r].append(i)
                room[r] -= n
                break
        else:
            rows.append([i])
            room.append(seq_len - n)
    return rows


def buckets(examples: list[Encoded], seq_len: int, budget: int) -> list[list[int]]:
    """Batches of whole episodes of similar length (sorted), each at most ``budget`` tokens once right-padded.

    The CPU alternative to ``pack``: a packed row needs a block-diagonal attention mask, which sends
    scaled-dot-product attention to its unfused path over the whole row; a batch of equal-length
    episodes needs no mask and attends only within each episode's own length.
    """
    order = sorted(range(len(examples)), key=lambda i: len(examples[i].ids))
    batches: list[list[int]] = []
    for i in order:
        n = min(len(examples[i].ids), seq_len)
        if batches and n * (len(batches[-1]) + 1) <= budget:
            batches[-1].append(i)
        else:
            batches.append([i])
    return batches


def collate(examples: list[Encoded], rows: list[list[int]], seq_len: int, pad_id: int) -> Batch:
    """Rows of examples into tensors. With one example per row the tensors are only as long as the longest."""
    import torch

    B = len(rows)
    single = all(len(r) == 1 for r in rows)
    if single:
        seq_len = min(seq_len, max(len(examples[r[0]].ids) for r in rows))
    ids = torch.full((B, seq_len), pad_id, dtype=torch.long)
    labels = torch.full((B, seq_len), -100, dtype=torch.long)
    pos = torch.zeros((B, seq_len), dtype=torch.long)
    weighted = any(examples[i].weights is not None for r in rows for i in r)
    weights = torch.zeros((B, seq_len), dtype=torch.float) if weighted else None
    tokens = 0
    for r, members in enumerate(rows):
        at = 0
        for i in members:
            ex = examples[i]
            n = min(len(ex.ids), seq_len - at)
            seq = torch.tensor(ex.ids[:n], dtype=torch.long)
            m = torch.tensor(ex.mask[:n], dtype=torch.bool)
            ids[r, at:at + n] = seq
            # labels[t] is the token at t+1 (shifted here, so the loss is a plain cross-entropy).
            lab = torch.where(m[1:], seq[1:], torch.full_like(seq[1:], -100))
            labels[r, at:at + n - 1] = lab
            if weights is not None:
                w = torch.tensor(ex.weights[1:n], dtype=torch.float) if ex.weights is not None else torch.ones(n - 1)
                weights[r, at:at + n - 1] = torch.where(m[1:], w, 0.0)
            pos[r, at:at + n] = torch.arange(n)
            at += n
            tokens += n
        # Padding continues as its own "episode" so it never joins the last one's attention.
        pos[r, at:] = torch.arange(seq_len - at)
    return Batch(ids, labels, pos, tokens, packed=not single, weights=weights)


def token_loss(model: Any, batch: Batch) -> Any:
    """Mean cross-entropy over labelled tokens (weighted by ``batch.weights`` where set: sum of weight x
    cross-entropy over the sum of weights). In packed rows attention is block-diagonal per episode
    (transformers derives the mask from position ids that restart); unpacked rows are plain causal."""
    import torch.nn.functional as F

    hidden = model.get_decoder()(input_ids=batch.input_ids, position_ids=batch.position_ids if batch.packed else None,
                                 use_cache=False).last_hidden_state  # (B, T, C)
    sel = batch.labels != -100  # (B, T)
    # Project to the vocabulary only where there is a label: most tokens (prompts, tool replies) have none.
    logits = model.get_output_embeddings()(hidden[sel])  # (N, V)
    if batch.weights is None:
        return F.cross_entropy(logits.float(), batch.labels[sel])
    w = batch.weights[sel]
    return (F.cross_entropy(logits.float(), batch.labels[sel], reduction="none") * w).sum() / w.sum()


# ---------------------------------------------------------------------------------------------
# Training


def lr_at(step: int, cfg: SFTConfig, elapsed_s: float = 0.0) -> float:
    """Linear warmup to ``lr`` over ``warmup_steps``, then cosine decay to ``min_lr``.

    The decay ends at ``max_steps`` or, with ``max_minutes``, at the time budget, whichever comes
    first: on shared CPUs the steps a budget buys are unknown in advance, and a schedule cut off
    half-way leaves the learning rate high at the end.
    """
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    t = (step - cfg.warmup_steps) / max(1, cfg.max_steps - cfg.warmup_steps)
    if cfg.max_minutes:
        t = max(t, elapsed_s / (cfg.max_minutes * 60))
    t = min(1.0, t)
    return cfg.min_lr + 0.5 * (cfg.lr - cfg.min_lr) * (1 + math.cos(math.pi * t))


def save_state(path: Path, model: Any, tokenizer: Any, opt: Any, step: int, extra: dict[str, Any]) -> None:
    """Weights (safetensors) + tokenizer, then optimizer, step and RNG states (tensors and plain values only)."""
    import torch

    from ml.model import save_checkpoint

    tmp = path.with_name(path.name + ".tmp")
    save_checkpoint(model, tokenizer, tmp, card=extra.get("card"))
    torch.save({"optimizer": opt.state_dict(), "step": step, "torch_rng": torch.get_rng_state(),
                "python_rng": list(random.getstate()[1]), "extra": {k: v for k, v in extra.items() if k != "card"}},
               tmp / TRAINER_STATE)
    # Swap in one rename so a crash mid-save leaves the previous checkpoint whole.
    old = path.with_name(path.name + ".old")
    if path.exists():
        path.rename(old)
    tmp.rename(path)
    if old.exists():
        import shutil

        shutil.rmtree(old)


def recover_checkpoint(path: Path) -> Path:
    """Finish an interrupted ``save_state`` swap: if only ``<path>.old`` survived a crash, it is the checkpoint."""
    old = path.with_name(path.name + ".old")
    if not path.exists() and old.exists():
        old.rename(path)
    return path


def load_state(path: Path) -> dict[str, Any]:
    import torch

    return torch.load(path / TRAINER_STATE, map_location="cpu", weights_only=True)


class EpochData:
    """The training examples of each epoch, in fixed slots (one per episode view with a loss).

    Without ``cfg.swap_share`` every epoch holds the same encodings. With it, each epoch draws afresh
    which episodes are swapped and the invented values they get (``ml.augment``), re-encoding only
    those: a swap fixed once before training would just be memorised like the values it replaced.
    A swap changes text, never the turns or their tools, so an episode almost always keeps its views
    and slots (where it would not, the original is used that epoch), and the batches planned from
    epoch 0's lengths stay valid (a few tokens longer or shorter).
    """

    def __init__(self, dicts: list[dict[str, Any]], tokenizer: Any, cfg: SFTConfig):
        self.dicts, self.tokenizer, self.cfg = dicts, tokenizer, cfg
        self.views = [encode_views(d, tokenizer, cfg) for d in dicts]
        self.slots = [(i, j) for i, vs in enumerate(self.views) for j, v in enumerate(vs) if sum(v.mask) > 0]
        self._epoch = -1
        self._examples: list[Encoded] = []

    def examples(self, epoch: int) -> list[Encoded]:
        if epoch == self._epoch:
            return self._examples
        fresh: dict[int, list[Encoded]] = {}
        if self.cfg.swap_share:
            from ml.augment import swap_values

            rng = random.Random(self.cfg.seed * 1_000_003 + epoch)
            for i, d in enumerate(self.dicts):
                if rng.random() < self.cfg.swap_share:
                    sw = swap_values(d, rng)
                    if sw is d:
                        continue
                    views = encode_views(sw, self.tokenizer, self.cfg)
                    # Rarely, longer or shorter values change where a sequence must break: keep the
                    # original then, so the slots (and the planned batches) stay valid.
                    if len(views) == len(self.views[i]):
                        fresh[i] = views
        self._examples = [(fresh.get(i) or self.views[i])[j] for i, j in self.slots]
        self._epoch = epoch
        return self._examples


def lineage_totals(card: dict[str, Any]) -> tuple[int, float]:
    """(steps, seconds) of SFT behind a checkpoint's card, its SFT ancestors included; (0, 0) for others."""
    if card.get("kind") != "sft":
        return 0, 0.0
    return int(card.get("total_steps", card.get("step", 0))), float(card.get("total_seconds", card.get("seconds", 0.0)))


@dataclass
class SFTResult:
    model: Any
    tokenizer: Any
    step: int
    loss: float
    seconds: float
    tokens: int
    checkpoint: Path | None


def train_sft(
    episodes: list[Episode | dict[str, Any]],
    cfg: SFTConfig,
    *,
    tokenizer: Any | None = None,
    model: Any | None = None,
    init_from: str | Path | None = None,
    on_metrics: Metrics | None = None,
    should_stop: Callable[[], bool] | None = None,
    resume: bool = True,
    device: str = "cpu",
) -> SFTResult:
    """Train on ``episodes``; resumes from ``cfg.out_dir/last`` when it holds a trainer state.

    The model is, in order of precedence: the resumed checkpoint, ``model``, ``init_from`` (a
    checkpoint path), or a fresh ``cfg.model`` for ``tokenizer`` (trained on the corpus if None).
    A resumed run keeps its step, optimizer, RNG, elapsed time and token count (``cfg.max_minutes`` is the
    whole run's budget). Starting ``init_from`` an SFT checkpoint is a continuation: fresh optimizer and
    schedule, and the card's ``total_steps`` / ``total_seconds`` add the parent's to this run's.
    ``on_metrics`` receives ``{step, loss, lr, grad_norm, tokens, tokens_per_s, elapsed_s, epoch}``.
    """
    import torch

    from ml.model import build_model, load_checkpoint, read_card
    from ml.tokenizer import build_tokenizer

    prior = lineage_totals(read_card(init_from) if init_from is not None else {})
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    out = Path(cfg.out_dir) if cfg.out_dir else None
    last = recover_checkpoint(out / "last") if out else None
    state = None
    if resume and last is not None and (last / TRAINER_STATE).exists():
        model, tokenizer = load_checkpoint(last, device)
        state = load_state(last)
    elif model is None and init_from is not None:
        model, tokenizer = load_checkpoint(init_from, device)
    if tokenizer is None:
        tokenizer = build_tokenizer()
    if model is None:
        model = build_model(cfg.model, tokenizer).to(device)
    dicts = [_as_dict(e) for e in episodes]
    if cfg.only_successful:
        dicts = [d for d in dicts if (d.get("verdict") or {}).get("success")]
    if not dicts:
        raise ValueError("no training episodes (with only_successful, every episode needs a successful verdict)")
    data = EpochData(dicts, tokenizer, cfg)
    examples = data.examples(0)
    if cfg.batching == "pack":
        rows = pack(examples, cfg.seq_len)
        per_epoch = math.ceil(len(rows) / cfg.batch_rows)
    else:
        rows = [[i] for i in range(len(examples))]
        groups = buckets(examples, cfg.seq_len, cfg.batch_rows * cfg.seq_len)
        per_epoch = len(groups)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr, betas=cfg.betas)
    step = 0
    if state is not None:
        opt.load_state_dict(state["optimizer"])
        step = int(state["step"])
        torch.set_rng_state(state["torch_rng"])
        random.setstate((3, tuple(int(x) for x in state["python_rng"]), None))
    model.train()
    # A resumed run goes on with the time and tokens its checkpoint had used: the max_minutes budget and
    # the cosine over it count the whole run, not each attempt afresh.
    done = state["extra"] if state is not None else {}
    t0 = time.perf_counter() - float(done.get("elapsed_s", 0.0))
    seen_tokens = int(done.get("tokens", 0))
    loss_val = float("nan")
    plan: dict[int, list[list[int]]] = {}  # the current epoch's batches (row indices), built once per epoch

    def epoch_batches(epoch: int) -> list[list[int]]:
        if epoch not in plan:
            plan.clear()
            g = torch.Generator().manual_seed(cfg.seed * 100_003 + epoch)
            if cfg.batching == "pack":  # rows are reshuffled into new batches every epoch
                perm = torch.randperm(len(rows), generator=g).tolist()
                plan[epoch] = [perm[i:i + cfg.batch_rows] for i in range(0, len(rows), cfg.batch_rows)]
            else:  # length buckets stay together; their order is reshuffled every epoch
                plan[epoch] = [groups[i] for i in torch.randperm(len(groups), generator=g).tolist()]
        return plan[epoch]

    def checkpoint() -> Path | None:
        if last is None:
            return None
        elapsed = time.perf_counter() - t0
        card = {"kind": "sft", "config": cfg.to_dict(), "step": step, "loss": loss_val, "seconds": round(elapsed, 1),
                "tokens": seen_tokens, "episodes": len(dicts), "init_from": str(init_from) if init_from else None,
                "total_steps": prior[0] + step, "total_seconds": round(prior[1] + elapsed, 1)}
        save_state(last, model, tokenizer, opt, step, {"card": card, "elapsed_s": elapsed, "tokens": seen_tokens})
        return last

    while step < cfg.max_steps:
        epoch, k = divmod(step, per_epoch)
        if cfg.epochs_cap and epoch >= cfg.epochs_cap:
            break
        batch = collate(data.examples(epoch), [rows[i] for i in epoch_batches(epoch)[k]], cfg.seq_len,
                        tokenizer.pad_token_id)
        batch = Batch(batch.input_ids.to(device), batch.labels.to(device), batch.position_ids.to(device),
                      batch.tokens, batch.packed, None if batch.weights is None else batch.weights.to(device))
        lr = lr_at(step, cfg, time.perf_counter() - t0)
        for group in opt.param_groups:
            group["lr"] = lr
        loss = token_loss(model, batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip))
        opt.step()
        step += 1
        seen_tokens += batch.tokens
        loss_val = loss.item()
        elapsed = time.perf_counter() - t0
        if on_metrics is not None and (step % max(cfg.log_every, 1) == 0 or step == cfg.max_steps):
            on_metrics({"step": step, "loss": loss_val, "lr": lr, "grad_norm": grad_norm, "tokens": seen_tokens,
                        "tokens_per_s": seen_tokens / max(elapsed, 1e-9), "elapsed_s": elapsed, "epoch": epoch})
        if cfg.save_every and step % cfg.save_every == 0:
            checkpoint()
        if (cfg.max_minutes and elapsed > cfg.max_minutes * 60) or (should_stop is not None and should_stop()):
            break
    path = checkpoint()
    model.eval()
    return SFTResult(model, tokenizer, step, loss_val, time.perf_counter() - t0, seen_tokens, path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ml.sft", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--max-steps", type=int, default=SFTConfig.max_steps)
    ap.add_argument("--seeds", type=int, default=8, help="instances per template (x4 styles)")
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args(argv)
    cfg = SFTConfig(out_dir=args.out, max_minutes=args.minutes, max_steps=args.max_steps)
    eps = reference_episodes(training_tasks(range(100, 100 + args.seeds)))
    res = train_sft(eps, cfg, device=args.device, on_metrics=lambda m: print(
        " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in m.items()), flush=True))
    print(f"steps={res.step} loss={res.loss:.4f} seconds={res.seconds:.1f} checkpoint={res.checkpoint}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
