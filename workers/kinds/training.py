"""Training job kinds on the ``train`` queue: SFT, CARE / plain GRPO, and evaluation.

Each run writes to ``FLYWHEEL_DATA_DIR/checkpoints/<job id>/``: the trainer's ``last/`` folder
(weights, tokenizer, optimizer state) and ``metrics.jsonl`` (one line per metrics callback, read by
the training page's live curves). The trainers resume from ``last/`` by themselves, so a job re-run
after its worker died continues from its latest checkpoint; the result records ``start_step``.
A finished run registers one ``Checkpoint`` row (``ctx.effect_once``); an evaluation (of a checkpoint,
the reference solver or an OpenAI-compatible endpoint, under a chosen HarnessVersion) stores its
report in the job result and, for a checkpoint, in its ``scores``.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from console.models import Checkpoint, DatasetVersion, Job
from console.sealing import SealedField
from workers.kinds import job_kind
from workers.runner import JobCancelled, JobContext

UUID_PATTERN = r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}"
MODEL_SIZES = {
    "small": {},  # ml.model.ModelConfig's defaults
    "tiny": {"hidden_size": 32, "intermediate_size": 64, "num_layers": 1, "num_heads": 2, "num_kv_heads": 1},
}


def run_dir(data_dir: Path, job_id: Any) -> Path:
    return Path(data_dir) / "checkpoints" / str(job_id)


def _field_errors(exc: ValueError) -> dict[str, list[str]]:
    errors = getattr(exc, "field_errors", None) or {"config": str(exc)}
    return {k: [str(v)] for k, v in errors.items()}


def _checkpoint_errors(checkpoint_id: str | None, name: str) -> dict[str, list[str]]:
    if checkpoint_id and not Checkpoint.objects.filter(id=checkpoint_id).exists():
        return {name: [f"no checkpoint with id {checkpoint_id}."]}
    return {}


def _checkpoint_id_errors(value: str, name: str, malformed: str = "must be a checkpoint id.") -> dict[str, list[str]]:
    try:
        uuid.UUID(value)
    except ValueError:
        return {name: [malformed]}
    return _checkpoint_errors(value, name)


def _storable(v: Any) -> bool:
    """Scalars, and lists of numbers such as CARE's ``competence_hist``; dicts (``schedules``) stay out."""
    if isinstance(v, list):
        return all(isinstance(x, int | float) for x in v)
    return isinstance(v, int | float | str | bool) or v is None


class _Metrics:
    """on_metrics: append to metrics.jsonl and report progress (the cancel point)."""

    def __init__(self, ctx: JobContext, folder: Path, total: int, unit: str):
        self.ctx, self.total, self.unit = ctx, max(1, total), unit
        self.file = folder / "metrics.jsonl"
        folder.mkdir(parents=True, exist_ok=True)

    def __call__(self, m: dict[str, Any]) -> None:
        step = int(m.get("step", m.get("iteration", 0)))
        row = {k: v for k, v in m.items() if _storable(v)}
        row["step"] = step
        if "loss" not in row and isinstance(m.get("pg_loss"), int | float):
            row["loss"] = m["pg_loss"]  # CARE / GRPO report the policy-gradient loss
        row["attempt"] = self.ctx.attempt
        with self.file.open("a") as out:
            out.write(json.dumps(row) + "\n")
        loss = row.get("loss")
        message = f"{self.unit} {step}/{self.total}" + (f" loss {loss:.4f}" if isinstance(loss, float) else "")
        self.ctx.progress(0.05 + 0.9 * min(1.0, step / self.total), message)


def _should_stop(ctx: JobContext):
    def check() -> bool:
        return bool(Job.objects.filter(id=ctx.job_id, cancel_requested=True).exists())
    return check


def _start_step(last: Path) -> int:
    from ml.sft import TRAINER_STATE, load_state, recover_checkpoint

    recover_checkpoint(last)
    if (last / TRAINER_STATE).exists():
        return int(load_state(last)["step"])
    return 0


def _register(ctx: JobContext, *, name: str, kind: str, folder: Path, parent_id: str | None,
              dataset_id: str | None, config: dict[str, Any]) -> str:
    with ctx.effect_once("checkpoint") as first:
        if first:
            ckpt = Checkpoint.objects.create(
                name=name, path=str((folder / "last").relative_to(ctx.data_dir)), kind=kind, parent_id=parent_id,
                dataset_id=dataset_id, job_id=ctx.job_id, config=config)
        else:
            ckpt = Checkpoint.objects.get(job_id=ctx.job_id)
    return str(ckpt.id)


# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SFTRunConfig:
    name: str = field(default="", metadata={"max_length": 200, "help": "checkpoint name (default: sft-<job>)"})
    dataset_id: str | None = field(default=None, metadata={
        "pattern": UUID_PATTERN, "pattern_help": "must be a dataset version id (a UUID).",
        "help": "dataset version to train on; empty: reference-solver episodes from the harness"})
    reference_seeds: int = field(default=2, metadata={
        "min": 1, "max": 1000, "help": "without a dataset: instance seeds per template for reference episodes"})
    init_checkpoint_id: str | None = field(default=None, metadata={
        "pattern": UUID_PATTERN, "pattern_help": "must be a checkpoint id (a UUID).",
        "help": "start from this checkpoint (default: a fresh model)"})
    model_size: str = field(default="small", metadata={
        "pattern": "small|tiny", "pattern_help": "must be small or tiny.", "help": "fresh model's size"})
    max_steps: int = field(default=600, metadata={"max": 10**6, "help": "optimiser steps"})
    minutes: float = field(default=0.0, metadata={"min": 0, "max": 10000, "help": "wall-time budget (0 = none)"})
    lr: float = field(default=3e-3, metadata={"help": "peak learning rate, in (0, 1)"})
    min_lr: float = field(default=3e-4, metadata={"help": "final learning rate, in [0, lr]"})
    warmup_steps: int = field(default=30, metadata={"help": "linear warmup steps"})
    batching: str = field(default="bucket", metadata={
        "pattern": "bucket|pack", "pattern_help": "must be bucket or pack.",
        "help": "bucket: episodes of similar length per batch (fastest on CPU); pack: episodes packed into rows"})
    batch_rows: int = field(default=8, metadata={"help": "rows per step (bucketing: at most rows x seq_len tokens)"})
    seq_len: int = field(default=1024, metadata={"help": "row length in tokens"})
    swap_share: float = field(default=0.5, metadata={
        "min": 0, "max": 1, "help": "share of episodes per epoch with their task values swapped for invented ones, "
                                    "so arguments are learnt by copying (ml.augment; 0 = off)"})
    value_weight: float = field(default=3.0, metadata={
        "min": 0, "max": 100, "help": "loss weight of the tokens of call argument values (1 = plain mean); "
                                      "values are few tokens but most wrong calls"})
    save_every: int = field(default=100, metadata={"help": "steps between checkpoints (0 = only at the end)"})
    log_every: int = field(default=10, metadata={"help": "steps between metrics points"})
    seed: int = field(default=0, metadata={"help": "data order and init seed"})
    threads: int = field(default=0, metadata={"help": "torch CPU threads (0 = leave as is)"})

    def sft_config(self, out_dir: str = "") -> Any:
        from ml.model import ModelConfig
        from ml.sft_config import SFTConfig

        return SFTConfig(
            max_steps=self.max_steps, max_minutes=self.minutes, lr=self.lr, min_lr=self.min_lr,
            warmup_steps=self.warmup_steps, batching=self.batching, batch_rows=self.batch_rows, seq_len=self.seq_len,
            swap_share=self.swap_share, value_weight=self.value_weight, save_every=self.save_every,
            log_every=self.log_every, seed=self.seed,
            threads=self.threads, out_dir=out_dir, model=ModelConfig(**MODEL_SIZES.get(self.model_size, {})))

    def validate(self) -> dict[str, list[str]]:
        errors: dict[str, list[str]] = {}
        try:
            self.sft_config()
        except ValueError as exc:
            errors.update(_field_errors(exc))
        if self.dataset_id and not DatasetVersion.objects.filter(id=self.dataset_id).exists():
            errors["dataset_id"] = [f"no dataset version with id {self.dataset_id}."]
        errors.update(_checkpoint_errors(self.init_checkpoint_id, "init_checkpoint_id"))
        return errors


def dataset_episodes(version: Any, data_dir: Path) -> list[dict[str, Any]]:
    """A dataset version's train split (OpenAI chat rows) as episode dicts for ``train_sft``.

    The last ``len(metadata["turns"])`` assistant messages are the episode's steps (earlier ones are
    task history); one with ``"weight": 0`` is an erroneous turn (no loss).
    """
    rows = []
    path = Path(data_dir) / version.export_dir / "train.jsonl"
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        tools = r.get("tools", [])
        if isinstance(tools, str):
            tools = json.loads(tools)
        assistant = [m for m in r["messages"] if m.get("role") == "assistant"]
        metadata = r.get("metadata") or {}
        if isinstance(metadata, str):
            metadata = json.loads(metadata)
        n = len(metadata.get("turns") or assistant)  # the episode's own turns come after any task history
        steps = [{"erroneous": m.get("weight") == 0} for m in assistant[len(assistant) - n:]]
        rows.append({"messages": r["messages"], "tools": tools, "steps": steps, "verdict": {"success": True}})
    return rows


@job_kind("train.sft", config=SFTRunConfig, title="Training: SFT cold start", queue="train", time_limit_s=12 * 3600)
def train_sft_job(ctx: JobContext, config: SFTRunConfig) -> dict:
    """Supervised cold start on a dataset version (or reference episodes); registers a Checkpoint."""
    from ml.sft import reference_episodes, train_sft, training_tasks

    folder = run_dir(ctx.data_dir, ctx.job_id)
    start = _start_step(folder / "last")
    ctx.log(f"attempt {ctx.attempt}: starting at step {start}")
    ctx.progress(0.01, f"preparing data (resume from step {start})" if start else "preparing data")
    if config.dataset_id:
        episodes: list[Any] = dataset_episodes(DatasetVersion.objects.get(id=config.dataset_id), ctx.data_dir)
    else:
        from harness.reference import ReferenceStyle

        episodes = reference_episodes(training_tasks(range(100, 100 + config.reference_seeds)),
                                      styles=[ReferenceStyle()])
    init = None
    if config.init_checkpoint_id:
        init = ctx.data_dir / Checkpoint.objects.get(id=config.init_checkpoint_id).path
    cfg = config.sft_config(str(folder))
    metrics = _Metrics(ctx, folder, cfg.max_steps, "step")
    res = train_sft(episodes, cfg, init_from=init, on_metrics=metrics, should_stop=_should_stop(ctx))
    if _should_stop(ctx)():
        ctx.progress(0.99, "cancelled")  # raises JobCancelled
        raise JobCancelled()
    ckpt = _register(ctx, name=config.name or f"sft-{str(ctx.job_id)[:8]}", kind="sft", folder=folder,
                     parent_id=config.init_checkpoint_id, dataset_id=config.dataset_id, config=cfg.to_dict())
    ctx.progress(1.0, f"checkpoint saved at step {res.step}")
    return {"checkpoint": ckpt, "path": str(res.checkpoint), "start_step": start, "steps": res.step,
            "loss": res.loss, "episodes": len(episodes), "attempt": ctx.attempt}


# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CARERunConfig:
    init_checkpoint_id: str = field(metadata={
        "pattern": UUID_PATTERN, "pattern_help": "must be a checkpoint id (a UUID).",
        "help": "the (SFT) checkpoint to start from"})
    name: str = field(default="", metadata={"max_length": 200, "help": "checkpoint name (default: care-<job>)"})
    care: bool = field(default=True, metadata={"help": "CARE rewards; off = plain GRPO baseline"})
    iterations: int = field(default=20, metadata={"help": "optimiser iterations"})
    minutes: float = field(default=0.0, metadata={"min": 0, "max": 10000, "help": "wall-time budget (0 = none)"})
    tasks_per_iter: int = field(default=8, metadata={"help": "tasks per iteration"})
    group_size: int = field(default=4, metadata={"help": "attempts per task (>= 2)"})
    task_sampling: str = field(default="uniform", metadata={
        "pattern": "signal|uniform", "pattern_help": "must be 'signal' or 'uniform'.",
        "help": "signal: prefer tasks whose groups mix successes and failures; uniform: every task alike"})
    lr: float = field(default=1e-4, metadata={"help": "learning rate"})
    save_every: int = field(default=5, metadata={"help": "iterations between checkpoints"})
    seed: int = field(default=0, metadata={"help": "sampling and order seed"})
    threads: int = field(default=0, metadata={"help": "torch CPU threads (0 = leave as is)"})

    def care_config(self, out_dir: str = "") -> Any:
        from ml.care_config import CAREConfig

        return CAREConfig(care=self.care, iterations=self.iterations, max_minutes=self.minutes,
                          tasks_per_iter=self.tasks_per_iter, group_size=self.group_size,
                          task_sampling=self.task_sampling, lr=self.lr,
                          save_every=self.save_every, seed=self.seed, threads=self.threads, out_dir=out_dir)

    def validate(self) -> dict[str, list[str]]:
        errors: dict[str, list[str]] = {}
        try:
            self.care_config()
        except ValueError as exc:
            errors.update(_field_errors(exc))
        errors.update(_checkpoint_errors(self.init_checkpoint_id, "init_checkpoint_id"))
        return errors


@job_kind("train.care", config=CARERunConfig, title="Training: CARE RL (or plain GRPO)", queue="train",
          time_limit_s=12 * 3600)
def train_care_job(ctx: JobContext, config: CARERunConfig) -> dict:
    """Online RL from a checkpoint with CARE rewards (or plain GRPO); registers a Checkpoint."""
    from ml.care_trainer import CARETrainer

    folder = run_dir(ctx.data_dir, ctx.job_id)
    start = _start_step(folder / "last")
    ctx.progress(0.01, f"starting (resume from iteration {start})" if start else "starting")
    parent = Checkpoint.objects.get(id=config.init_checkpoint_id)
    cfg = config.care_config(str(folder))
    metrics = _Metrics(ctx, folder, cfg.iterations, "iteration")
    res = CARETrainer(cfg, init_from=ctx.data_dir / parent.path, on_metrics=metrics,
                      should_stop=_should_stop(ctx)).train()
    if _should_stop(ctx)():
        ctx.progress(0.99, "cancelled")
        raise JobCancelled()
    kind = "care" if config.care else "grpo"
    ckpt = _register(ctx, name=config.name or f"{kind}-{str(ctx.job_id)[:8]}", kind=kind, folder=folder,
                     parent_id=str(parent.id), dataset_id=str(parent.dataset_id) if parent.dataset_id else None,
                     config=cfg.to_dict())
    ctx.progress(1.0, f"checkpoint saved at iteration {res.iterations}")
    return {"checkpoint": ckpt, "path": str(res.checkpoint or ""), "start_step": start,
            "iterations": res.iterations, "attempt": ctx.attempt}


# ---------------------------------------------------------------------------------------------


ENDPOINT_KEY = SealedField(kind="train.evaluate", name="endpoint_key", url_field="endpoint_url", max_length=2000)
HARNESS_VERSION_KEYS = {"id", "name", "policy", "skill_overrides", "tool_description_overrides", "notice_rules",
                        "offer_memory", "gui_step_budget"}


def _endpoint_url_error(url: str) -> str | None:
    # Not Django's URLValidator: it refuses hosts without a dot (``http://vllm:8000/v1``), which is
    # how endpoints on a private network are usually named.
    from urllib.parse import urlsplit

    if not url:
        return "is required for an endpoint evaluation (e.g. http://localhost:8000/v1)."
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        return "is not a valid URL."
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "must be an http:// or https:// URL with a host, e.g. http://localhost:8000/v1."
    if parts.username or parts.password:
        return "must not hold credentials; give the API key as endpoint_key."
    if parts.query or parts.fragment:
        return "must be the API's base URL (ending in /v1, without ? or #); /chat/completions is appended."
    return None


def _harness_errors(data: dict[str, Any] | None) -> list[str]:
    from harness.version import HarnessVersion

    if data is None:
        return []
    unknown = sorted(set(data) - HARNESS_VERSION_KEYS)
    if unknown:
        return [f"has unknown keys {unknown}; known: {sorted(HARNESS_VERSION_KEYS)}."]
    if not isinstance(data.get("policy", ""), str) or data.get("offer_memory", "task") not in ("task", "always"):
        return ['needs policy as text and offer_memory "task" or "always".']
    try:
        HarnessVersion.from_dict(data)
    except (ValueError, TypeError, AttributeError) as exc:
        return [f"is not a harness version: {exc}."]
    return []


@dataclass(frozen=True)
class EvaluateConfig:
    """What to evaluate: a checkpoint id, "reference" (the reference solver) or "endpoint" (any
    OpenAI-compatible chat-completions endpoint: ``endpoint_url``, ``endpoint_model`` and, when it wants
    one, ``endpoint_key``; with ``endpoint_checkpoint``, a Flywheel checkpoint that ``vllm serve`` serves,
    asked through ``/v1/completions`` with the prompt built here). ``endpoint_key`` is sealed as soon as
    the config is built (``console.sealing``, bound to ``endpoint_url``), so the stored job config, its
    page, the API and logs hold only the sealed form; the job opens it just before sending requests.
    ``harness_version``: a ``HarnessVersion.to_dict()``-style object (default: the default harness)."""

    checkpoint: str = field(default="reference", metadata={
        "max_length": 64,
        "help": 'a checkpoint id, "reference" for the reference solver, or "endpoint" for an OpenAI-compatible '
                "endpoint"})
    endpoint_url: str = field(default="", metadata={
        "max_length": 500, "help": 'with checkpoint "endpoint": the API base URL, e.g. http://localhost:8000/v1'})
    endpoint_model: str = field(default="", metadata={
        "max_length": 200, "help": 'with checkpoint "endpoint": the served model name (required)'})
    endpoint_key: str = field(default="", metadata=ENDPOINT_KEY.metadata(
        'with checkpoint "endpoint": API key sent as a bearer token (optional; stored sealed, never shown)'))
    endpoint_checkpoint: str = field(default="", metadata={
        "max_length": 64,
        "help": 'with checkpoint "endpoint": the id of the registered checkpoint the endpoint serves (vllm serve '
                "its folder); prompts are then built here with its tokenizer and sent to /v1/completions, as the "
                "in-process planner builds them. Empty: any model, through /v1/chat/completions"})
    harness_version: dict[str, Any] | None = field(default=None, metadata={
        "help": "a HarnessVersion as JSON (policy, skill_overrides, tool_description_overrides, notice_rules, "
                "offer_memory, gui_step_budget); empty: the default harness"})
    seeds: int = field(default=3, metadata={"max": 100, "help": "evaluation seeds 0..n-1 (>= 3 for a reported figure)"})
    per_category: int = field(default=25, metadata={"help": "held-out tasks per category per seed"})
    batch_size: int = field(default=64, metadata={"help": "episodes in lock-step"})
    price_per_million_output_tokens: float = field(default=0.60, metadata={
        "min": 0, "help": "USD per 1M output tokens, for the estimated cost per 1,000 tasks"})

    def __post_init__(self) -> None:
        ENDPOINT_KEY.seal(self)

    def api_key(self) -> str | None:
        """The endpoint key in clear, for the request header only (never log or store it)."""
        return ENDPOINT_KEY.open(self)

    def harness(self) -> Any:
        from harness.version import HarnessVersion

        return HarnessVersion.from_dict(self.harness_version) if self.harness_version is not None else None

    def eval_config(self) -> Any:
        from ml.evaluate import EvalConfig

        return EvalConfig(seeds=tuple(range(self.seeds)), per_category=self.per_category, batch_size=self.batch_size,
                          price_per_million_output_tokens=self.price_per_million_output_tokens)

    def validate(self) -> dict[str, list[str]]:
        errors: dict[str, list[str]] = {}
        try:
            self.eval_config()
        except ValueError as exc:
            errors.update(_field_errors(exc))
        if self.checkpoint == "endpoint":
            url_error = _endpoint_url_error(self.endpoint_url)
            if url_error:
                errors["endpoint_url"] = [url_error]
            if not self.endpoint_model.strip():
                errors["endpoint_model"] = ['is required for an endpoint evaluation (the served model name).']
            elif not url_error:
                errors.update(ENDPOINT_KEY.errors(self))
            if self.endpoint_checkpoint:
                errors.update(_checkpoint_id_errors(self.endpoint_checkpoint, "endpoint_checkpoint"))
        else:
            for name in ("endpoint_url", "endpoint_model", "endpoint_key", "endpoint_checkpoint"):
                if getattr(self, name):
                    errors[name] = ['is only for checkpoint "endpoint".']
            if self.checkpoint != "reference":
                errors.update(_checkpoint_id_errors(self.checkpoint, "checkpoint",
                                                    'must be a checkpoint id, "reference" or "endpoint".'))
        harness_errors = _harness_errors(self.harness_version)
        if harness_errors:
            errors["harness_version"] = harness_errors
        return errors

    def target(self) -> str:
        """What is evaluated, for progress messages and logs (the key is never part of it)."""
        if self.checkpoint == "endpoint":
            return f"{self.endpoint_model} at {self.endpoint_url}"
        return self.checkpoint


@job_kind("train.evaluate", config=EvaluateConfig, title="Training: evaluate", queue="train", time_limit_s=6 * 3600)
def evaluate_job(ctx: JobContext, config: EvaluateConfig) -> dict:
    """Held-out benchmark, mean ± std over seeds, with costs; a checkpoint's scores are updated."""
    from ml.evaluate import evaluate, evaluate_checkpoint, evaluate_reference

    ctx.progress(0.05, f"evaluating {config.target()}")
    cfg = config.eval_config()
    harness = config.harness()
    ckpt = None
    if config.checkpoint == "reference":
        report = evaluate_reference(cfg, harness=harness)
    elif config.checkpoint == "endpoint":
        from ml.backends import OpenAIPlanner, ServedCheckpointPlanner

        if config.endpoint_checkpoint:
            served = Checkpoint.objects.get(id=config.endpoint_checkpoint)
            planner = ServedCheckpointPlanner(config.endpoint_url, config.endpoint_model,
                                              ctx.data_dir / served.path, config.api_key())
        else:
            planner = OpenAIPlanner(config.endpoint_url, config.endpoint_model, config.api_key())
        report = evaluate(lambda seed: planner, cfg, harness=harness)
    else:
        ckpt = Checkpoint.objects.get(id=config.checkpoint)
        report = evaluate_checkpoint(str(ctx.data_dir / ckpt.path), cfg, harness=harness)
    ctx.progress(0.95, "scored")
    out = report.to_dict()
    if ckpt is not None:
        with ctx.effect_once("scores") as first:
            if first:
                Checkpoint.objects.filter(id=ckpt.id).update(
                    scores={"mean": out["mean"], "std": out["std"], "job": str(ctx.job_id),
                            "seeds": config.seeds, "wall_s": out["wall_s"], "harness": out["harness"]})
    out["checkpoint"] = config.checkpoint
    if config.checkpoint == "endpoint":
        out["endpoint"] = {"url": config.endpoint_url, "model": config.endpoint_model,
                           **({"checkpoint": config.endpoint_checkpoint} if config.endpoint_checkpoint else {})}
    return out
