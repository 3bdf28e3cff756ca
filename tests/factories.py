"""Factories for the console's records (one module instead of fixture files)."""

from __future__ import annotations

import functools
import itertools
import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.hashers import make_password

from console.models import (
    ItemStatus,
    Job,
    JobStatus,
    Queue,
    QueueItem,
    Role,
    Round,
    TaskSpec,
    TaskStatus,
    Trajectory,
    TrajectoryStatus,
    TrajectoryStep,
    User,
)

_counter = itertools.count(1)
PASSWORD = "correct-horse-battery-staple"


@functools.cache
def _password_hash() -> str:
    # Hashing is deliberately slow (PBKDF2); hash once and share it, so a hundred users cost one hash.
    return make_password(PASSWORD)


def user_create(*, role: Role = Role.ANNOTATOR, superuser: bool = False, username: str | None = None) -> User:
    """A user who can log in with PASSWORD."""
    name = username or f"{'admin' if superuser else role.value}{next(_counter)}"
    return User.objects.create(username=name, password=_password_hash(), role=role,
                               is_superuser=superuser, is_staff=superuser)


def job_create(*, kind: str = "demo.sleep", status: JobStatus = JobStatus.QUEUED, created_by: User | None = None,
               config: dict[str, Any] | None = None, **fields: Any) -> Job:
    """A Job row written directly (not enqueued): for pages and API reads."""
    return Job.objects.create(kind=kind, status=status, created_by=created_by,
                              config=config if config is not None else {"seconds": 1.0, "steps": 2}, **fields)


def care_metrics_point(iteration: int, *, hist: list[int] | None = None) -> dict[str, Any]:
    """A CARE iteration's metrics line as ``workers.kinds.training._Metrics`` stores it."""
    return {"iteration": iteration, "step": iteration, "mode": "care", "success": 0.25 * iteration,
            "reward": 0.1 * iteration, "output_tokens": 40.0 + iteration, "tool_calls": 2.5, "kl": 0.001 * iteration,
            "pg_loss": -0.05, "loss": -0.05, "groups_kept": 3, "iteration_s": 1.5, "attempt": 1,
            "competence_hist": hist if hist is not None else [2, 1, 0, 0, 0, 0, 0, 1, 0, iteration]}


def metrics_points_append(*, job: Job, points: list[dict[str, Any]]) -> Path:
    """Append a training run's metrics lines to its ``metrics.jsonl``, as the running job does."""
    folder = Path(settings.FLYWHEEL_DATA_DIR) / "checkpoints" / str(job.id)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "metrics.jsonl"
    with path.open("a") as out:
        out.write("".join(json.dumps(p) + "\n" for p in points))
    return path


# ---------------------------------------------------------------------------------------------
# The data flywheel: rounds, task specs (real template instances), trajectories (real reference
# episodes), review queue items.


def _digest(obj: Any) -> str:
    import hashlib
    import json

    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def _templates() -> list[str]:
    from devices.virtual.registry import catalog

    return sorted(catalog().templates)


def round_create(*, name: str = "", generation_weights: dict | None = None, config: dict | None = None,
                 created_by: User | None = None, number: int | None = None) -> Round:
    """A Round row (numbered one past the highest unless given)."""
    from django.db.models import Max

    if number is None:
        number = (Round.objects.aggregate(n=Max("number"))["n"] or 0) + 1
    return Round.objects.create(number=number, name=name or f"Round {number}",
                                generation_weights=generation_weights or {}, config=config or {},
                                created_by=created_by)


def task_spec_build(*, round: Round, template: str | None = None, seed: int | None = None,  # noqa: A002
                    status: TaskStatus = TaskStatus.PENDING, **fields: Any) -> TaskSpec:
    """An unsaved TaskSpec holding a real instance of a catalogue template (``Template.instantiate``)."""
    from devices.virtual.registry import catalog

    n = next(_counter)
    template = template or _templates()[n % len(_templates())]
    seed = seed if seed is not None else 1_000_000 + n
    task = catalog().templates[template].instantiate(seed)
    spec = task.to_dict()
    values: dict[str, Any] = {
        "round": round, "template": task.template, "category": task.category, "domains": list(task.domains),
        "tags": list(task.tags), "difficulty": task.difficulty, "seed": task.seed, "instruction": task.instruction,
        "spec": spec, "param_hash": _digest({"template": task.template, "params": task.params}),
        "state_hash": _digest({"setup": task.setup, "goal": task.goal, "memory": task.memory}),
        "status": status, "validation": {"ok": True, "reason": "ok"},
    }
    values.update(fields)
    return TaskSpec(**values)


def task_spec_create(*, round: Round | None = None, **kwargs: Any) -> TaskSpec:  # noqa: A002
    spec = task_spec_build(round=round or round_create(), **kwargs)
    spec.save()
    return spec


def task_specs_create(*, round: Round, n: int, **kwargs: Any) -> list[TaskSpec]:  # noqa: A002
    """``n`` TaskSpecs of real template instances in one bulk insert."""
    return TaskSpec.objects.bulk_create([task_spec_build(round=round, **kwargs) for _ in range(n)], batch_size=1000)


def episode_run(*, spec: dict[str, Any], mistake: bool = False) -> Any:
    """A real episode of the reference solver on a virtual phone (``mistake=True``: one failed call first)."""
    from devices.virtual.tasks import Task
    from harness.episode import run_episode
    from harness.reference import ReferenceSolver

    return run_episode(Task.from_dict(spec), ReferenceSolver(mistake=mistake))


def trajectory_create(*, task: TaskSpec | None = None, episode: Any = None, attempt: int = 0,
                      status: TrajectoryStatus = TrajectoryStatus.PENDING, mistake: bool = False,
                      **fields: Any) -> Trajectory:
    """A Trajectory + TrajectorySteps stored the way collection stores them, from a real reference episode
    of ``task`` (a new TaskSpec when not given) unless ``episode`` (a contract.Episode) is passed."""
    task = task or task_spec_create(status=TaskStatus.APPROVED)
    ep = episode or episode_run(spec=task.spec, mistake=mistake)
    data = ep.to_dict()
    steps = data.pop("steps")
    verdict = ep.verdict
    values: dict[str, Any] = {
        "task": task, "round": task.round, "attempt": attempt, "planner": ep.planner, "environment": ep.environment,
        "success": bool(verdict and verdict.success), "progress": float(verdict.progress) if verdict else 0.0,
        "reason": verdict.reason if verdict else "", "output_tokens": ep.costs.output_tokens,
        "reasoning_tokens": ep.costs.reasoning_tokens, "tool_calls": ep.costs.total_tool_calls,
        "costs": ep.costs.to_dict(), "n_steps": len(steps), "episode": data, "status": status,
    }
    values.update(fields)
    trajectory = Trajectory.objects.create(**values)
    TrajectoryStep.objects.bulk_create(
        [TrajectoryStep(trajectory=trajectory, index=s["index"], data=s) for s in steps]
    )
    return trajectory


def queue_item_create(*, subject: TaskSpec | Trajectory, slot: int = 0, priority: float = 1.0,
                      claimed_by: User | None = None, lease_expires_at: Any = None,
                      status: ItemStatus = ItemStatus.PENDING) -> QueueItem:
    """One review slot for a TaskSpec (task queue) or a Trajectory (trajectory queue)."""
    is_task = isinstance(subject, TaskSpec)
    return QueueItem.objects.create(
        queue=Queue.TASK if is_task else Queue.TRAJECTORY, round=subject.round,
        task=subject if is_task else None, trajectory=None if is_task else subject, slot=slot,
        priority=priority, claimed_by=claimed_by, lease_expires_at=lease_expires_at, status=status,
    )
