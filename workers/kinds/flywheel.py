"""The data flywheel's job kinds: generate tasks, collect trajectories, curate a dataset, feedback.

Each kind is a thin shell over a service in ``console/services/`` (the management command
``flywheel round`` calls the same services in-process): the config names the round by id and is
validated at enqueue, long loops report ``ctx.progress`` (where a cancel takes effect), and writes
that must happen once per job go through ``ctx.effect_once`` or a unique constraint. Each kind imports
its service inside its body (``STYLE.md``: Celery tasks are APIs), so loading the kinds at start-up does
not load the flywheel's services. Endpoint API keys are sealed as soon as a config is built
(``console.sealing``, bound to the endpoint's URL), so the stored job config, its page, the API and logs
hold only the sealed form; the job opens a key just before handing it to the service that sends requests.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from console.models import Job, Round, TaskSpec, TaskStatus
from console.sealing import SealedField
from workers.kinds import job_kind
from workers.runner import JobContext

UUID_PATTERN = r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}"
ROUND_META = {"pattern": UUID_PATTERN, "pattern_help": "must be a round id (a UUID).", "help": "the round's id"}
REWRITE_KEY = SealedField(kind="flywheel.generate", name="rewrite_api_key", url_field="rewrite_url")
ENDPOINT_KEY = SealedField(kind="flywheel.collect", name="api_key", url_field="url")


def _round_errors(round_id: str, name: str = "round_id") -> dict[str, list[str]]:
    if not Round.objects.filter(id=round_id).exists():
        return {name: [f"no round with id {round_id}."]}
    return {}


def _round(round_id: str) -> Any:
    return Round.objects.get(id=round_id)


def _job(ctx: JobContext) -> Any:
    return Job.objects.select_related("created_by").get(id=ctx.job_id)


# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GenerateConfig:
    round_id: str = field(metadata=ROUND_META)
    n_tasks: int = field(default=100, metadata={"min": 1, "max": 100000, "help": "tasks to generate"})
    seed: int = field(default=0, metadata={"min": 0, "max": 2**62, "help": "sampling seed"})
    rewrite_url: str | None = field(default=None, metadata={
        "max_length": 500, "pattern": r"https?://\S+", "pattern_help": "must be an http(s) URL.",
        "help": "OpenAI-compatible server for instruction rewrites (e.g. http://host:8000/v1); empty: template wording",
    })
    rewrite_model: str | None = field(default=None, metadata={"max_length": 200, "help": "served model name"})
    rewrite_api_key: str | None = field(default=None, metadata=REWRITE_KEY.metadata(
        "bearer token, if any (stored sealed, never shown)"))

    def __post_init__(self) -> None:
        REWRITE_KEY.seal(self)

    def validate(self) -> dict[str, list[str]]:
        errors = {**_round_errors(self.round_id), **REWRITE_KEY.errors(self)}
        if self.rewrite_url and not self.rewrite_model:
            errors["rewrite_model"] = ["is required with rewrite_url."]
        return errors


@job_kind("flywheel.generate", config=GenerateConfig, title="Flywheel: generate tasks", time_limit_s=7200)
def generate(ctx: JobContext, config: GenerateConfig) -> dict:
    """Generate, validate and dedupe TaskSpecs for a round; valid ones go to the task review queue."""
    from console.services.rounds import task_generate

    rnd = _round(config.round_id)
    if ctx.effect_done("generate:write"):  # an earlier attempt of this job stored its tasks
        stored = TaskSpec.objects.filter(round=rnd)
        return {"already_written": True, "tasks": stored.count(),
                "valid": stored.exclude(status=TaskStatus.INVALID).count()}
    rewrite = None
    if config.rewrite_url:
        rewrite = {"url": config.rewrite_url, "model": config.rewrite_model, "api_key": REWRITE_KEY.open(config)}
    return task_generate(round=rnd, n_tasks=config.n_tasks, seed=config.seed, rewrite=rewrite,
                         progress=ctx.progress, once=ctx.effect_once)


# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CollectConfig:
    round_id: str = field(metadata=ROUND_META)
    planner: str = field(default="reference", metadata={
        "pattern": "reference|endpoint|checkpoint", "pattern_help": "must be reference, endpoint or checkpoint.",
        "help": "reference solver, an OpenAI-compatible endpoint, or a trained checkpoint"})
    style: list[str] = field(default_factory=list, metadata={
        "choices": ("verbose", "checks", "mistake"), "help": "reference style knobs"})
    url: str | None = field(default=None, metadata={"max_length": 500, "help": "endpoint base URL (planner=endpoint)"})
    model: str | None = field(default=None, metadata={"max_length": 200, "help": "served model (planner=endpoint)"})
    api_key: str | None = field(default=None, metadata=ENDPOINT_KEY.metadata(
        "endpoint bearer token (stored sealed, never shown)"))
    path: str | None = field(default=None, metadata={"max_length": 500, "help": (
        "checkpoint folder (planner=checkpoint; with planner=endpoint, the Flywheel checkpoint that endpoint "
        "serves with vllm serve, asked through /v1/completions with prompts built here)")})
    attempts: int = field(default=1, metadata={"min": 1, "max": 64, "help": "episodes per task"})
    parallel: int = field(default=8, metadata={"min": 1, "max": 512, "help": "episodes run at once"})
    task_ids: list[str] = field(default_factory=list, metadata={"help": "only these approved tasks (default: all)"})

    def __post_init__(self) -> None:
        ENDPOINT_KEY.seal(self)

    def validate(self) -> dict[str, list[str]]:
        errors = {**_round_errors(self.round_id), **ENDPOINT_KEY.errors(self)}
        if self.planner == "endpoint":
            for name in ("url", "model"):
                if not getattr(self, name):
                    errors[name] = ["is required for an endpoint planner."]
        if self.planner == "checkpoint" and not self.path:
            errors["path"] = ["is required for a checkpoint planner."]
        bad = []
        for tid in self.task_ids:
            try:
                uuid.UUID(tid)
            except ValueError:
                bad.append(tid)
        if bad:
            errors["task_ids"] = [f"are not task ids: {bad[:3]}."]
        return errors

    def planner_spec(self) -> dict[str, Any]:
        """What ``collection_run`` builds the planner from; an endpoint's key is in clear here, so it is
        for the run only (never log or store it)."""
        if self.planner == "endpoint":
            return {"kind": "endpoint", "url": self.url, "model": self.model, "api_key": ENDPOINT_KEY.open(self),
                    **({"checkpoint": self.path} if self.path else {})}
        if self.planner == "checkpoint":
            return {"kind": "checkpoint", "path": self.path}
        style = {"reasoning": "verbose" if "verbose" in self.style else "concise",
                 "redundant_checks": "checks" in self.style, "mistake": "mistake" in self.style}
        return {"kind": "reference", "style": style}


@job_kind("flywheel.collect", config=CollectConfig, title="Flywheel: collect trajectories", queue="collect",
          time_limit_s=4 * 3600)
def collect(ctx: JobContext, config: CollectConfig) -> dict:
    """Run the round's approved tasks with the chosen planner; trajectories go to the review queue."""
    from console.services.collection import collection_run

    return collection_run(round=_round(config.round_id), planner=config.planner_spec(), attempts=config.attempts,
                          parallel=config.parallel, task_ids=list(config.task_ids) or None, job=_job(ctx),
                          progress=ctx.progress)


# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CurateConfig:
    rounds: list[str] = field(metadata={"help": "round ids to curate accepted trajectories from"})
    name: str = field(metadata={"max_length": 80, "pattern": r"[a-z0-9][a-z0-9_-]*",
                                "pattern_help": "must be a slug: lower-case letters, digits, '-' or '_'.",
                                "help": "dataset name (the version is the next number for it)"})
    target_mix: str = field(default="", metadata={
        "max_length": 5000,
        "help": 'JSON, e.g. {"category": {"tool_use": 0.5, "memory": 0.2, ...}}; empty: no balancing',
    })
    tolerance: float = field(default=0.05, metadata={"min": 0, "max": 1, "help": "allowed |achieved - target| share"})
    heldout_fraction: float = field(default=0.1, metadata={"min": 0, "max": 0.9, "help": "share of instances in test"})
    seed: int = field(default=0, metadata={"min": 0, "max": 2**62, "help": "split and tie-break seed"})

    def mix(self) -> Any:
        return json.loads(self.target_mix) if self.target_mix.strip() else {}

    def validate(self) -> dict[str, list[str]]:
        from console.services.curation import mix_validate

        errors: dict[str, list[str]] = {}
        if not self.rounds:
            errors["rounds"] = ["name at least one round."]
        for rid in self.rounds:
            try:
                uuid.UUID(rid)
            except ValueError:
                errors["rounds"] = [f"{rid!r} is not a round id."]
                break
            errors.update(_round_errors(rid, "rounds"))
        try:
            mix_validate(target_mix=self.mix())
        except json.JSONDecodeError as exc:
            errors["target_mix"] = [f"is not valid JSON: {exc.msg}."]
        except ValueError as exc:
            errors["target_mix"] = [str(exc)]
        return errors


@job_kind("flywheel.curate", config=CurateConfig, title="Flywheel: curate a dataset", time_limit_s=7200)
def curate(ctx: JobContext, config: CurateConfig) -> dict:
    """Build the next DatasetVersion from accepted trajectories and export it (JSONL, HF folder, manifest)."""
    from console.services.curation import dataset_curate

    job = _job(ctx)
    ctx.progress(0.05, "curating")
    version = dataset_curate(rounds=list(config.rounds), name=config.name, target_mix=config.mix(),
                             tolerance=config.tolerance, heldout_fraction=config.heldout_fraction, seed=config.seed,
                             user=job.created_by, job=job)
    ctx.progress(1.0, f"{version} exported")
    return {"dataset": str(version.id), "name": version.name, "version": version.version,
            "export_dir": version.export_dir, "train": version.stats.get("train"), "test": version.stats.get("test"),
            "within_tolerance": version.stats.get("within_tolerance")}


# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FeedbackConfig:
    round_id: str = field(metadata=ROUND_META)

    def validate(self) -> dict[str, list[str]]:
        return _round_errors(self.round_id)


@job_kind("flywheel.feedback", config=FeedbackConfig, title="Flywheel: next round's weights", time_limit_s=600)
def feedback(ctx: JobContext, config: FeedbackConfig) -> dict:
    """Competence per category and domain → suggested generation weights for the next round."""
    from console.services.feedback import feedback_weights

    ctx.progress(0.1, "measuring competence")
    out = feedback_weights(round=_round(config.round_id))
    ctx.progress(1.0, "weights suggested")
    return out
