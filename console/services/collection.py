"""Trajectory collection: run a round's approved tasks with a chosen planner and store every episode.

Episodes run in lock-step batches (``harness.episode.run_episodes``; ``parallel`` is the batch
size), ``attempts`` per task. The outcome is the verifier's verdict only. Each trajectory keeps
its episode (without steps) and costs; each step is a TrajectoryStep holding the contract's Step
dict and a PNG of the phone's screen after that step under
``FLYWHEEL_DATA_DIR/screens/<trajectory id>/<index>.png``. Within a job, a (task, attempt) is
written once: a redelivered job skips what an earlier attempt stored (ids are derived from the
job, so a re-run overwrites the same screen files rather than leaving strays).

``devices`` and ``harness`` are imported where they are used (importing them loads the phone's whole
catalogue, which pages that never collect should not pay); ``ml`` because its backends are optional.
"""

from __future__ import annotations

import functools
import io
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max

from console.models import Job, Round, TaskSpec, TaskStatus, Trajectory, TrajectoryStep
from console.services.review import review_items_create

Progress = Callable[[float, str], None]
_NS = uuid.UUID("5b0c6a44-6f7e-4a55-9d0e-2f4e1c7a9b11")


class PlannerUnavailable(ValueError):
    """The requested planner cannot run here (missing checkpoint, backend not installed)."""


def _checkpoint_path(value: Any) -> Path:
    path = Path(str(value or ""))
    if not value or not path.exists():
        raise PlannerUnavailable(f"checkpoint {str(path)!r} does not exist.")
    return path


def planner_build(*, planner: Any) -> Any:
    """A harness planner from its description: ``{"kind": "reference", "style": {...}}``,
    ``{"kind": "endpoint", "url", "model", "api_key"}`` (plus ``"checkpoint": path`` when the endpoint is
    ``vllm serve`` of that Flywheel checkpoint) or ``{"kind": "checkpoint", "path"}``."""
    if not isinstance(planner, dict) or "kind" not in planner:
        raise ValueError("planner must be an object with a 'kind': reference, endpoint or checkpoint.")
    kind = planner["kind"]
    if kind == "reference":
        from dataclasses import fields

        from harness.reference import ReferenceSolver, ReferenceStyle

        known = [f.name for f in fields(ReferenceStyle)]
        style = planner.get("style") or {}
        if not isinstance(style, dict):
            raise ValueError(f"planner.style must be an object: {', '.join(known)}.")
        unknown = sorted(set(style) - set(known))
        if unknown:
            raise ValueError(f"Unknown reference style keys {unknown}; known: {', '.join(known)}.")
        try:
            return ReferenceSolver(ReferenceStyle(**style))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"Bad reference style: {exc}") from exc
    if kind == "endpoint":
        url, model = planner.get("url"), planner.get("model")
        if not url or not model:
            raise ValueError("An endpoint planner needs 'url' and 'model'.")
        try:
            from ml.backends import OpenAIPlanner
        except ImportError as exc:
            raise PlannerUnavailable(f"endpoint planners are not available yet: {exc}") from exc
        base = str(url).rstrip("/")
        base = base[: -len("/chat/completions")] if base.endswith("/chat/completions") else base
        base = base if base.endswith("/v1") else base + "/v1"
        if planner.get("checkpoint"):  # a Flywheel checkpoint behind vllm serve: compact prompts, /v1/completions
            from ml.backends import ServedCheckpointPlanner

            return ServedCheckpointPlanner(base, str(model), _checkpoint_path(planner["checkpoint"]),
                                           planner.get("api_key") or None)
        return OpenAIPlanner(base, str(model), planner.get("api_key") or None)
    if kind == "checkpoint":
        path = _checkpoint_path(planner.get("path"))
        try:
            from ml.backends import TransformersPlanner
        except ImportError as exc:
            raise PlannerUnavailable(f"checkpoint planners are not available yet: {exc}") from exc
        return TransformersPlanner.from_pretrained(path)
    raise ValueError(f"Unknown planner kind {kind!r}; use reference, endpoint or checkpoint.")


# ---------------------------------------------------------------------------------------------
# Screens


@functools.cache
def _domain_apps() -> dict[str, str]:
    """The app that shows each domain (the one named after it, else the first by name)."""
    from devices.virtual.registry import catalog

    out: dict[str, str] = {}
    for app in sorted(catalog().apps.values(), key=lambda a: a.name):
        if app.domain not in out or app.name.lower() == app.domain:
            out[app.domain] = app.name
    return out


def _touched_domain(step: Any) -> str | None:
    from devices.virtual.registry import catalog

    tools = catalog().tools
    domain = None
    for rec in step.calls:
        tool = tools.get(rec.call.name)
        if tool is not None:
            domain = tool.spec.domain
    return domain


def screen_png(*, env: Any, step: Any) -> bytes | None:
    """The phone's screen after ``step`` as PNG bytes. On the home screen, the main screen of the app
    of the domain the step touched is shown instead (the GUI focus is restored: state is unchanged)."""
    image = screen_image(env=env, step=step)
    return None if image is None else png_bytes(image)


def png_bytes(image: Any) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG", compress_level=1)  # fast: screens are flat colours and compress well anyway
    return buf.getvalue()


def screen_image(*, env: Any, step: Any) -> Any | None:
    """The Pillow image behind ``screen_png`` (rendering must happen now; encoding can wait)."""
    if not hasattr(env, "screen"):
        return None
    gui = getattr(env, "gui", None)
    saved = None
    if isinstance(gui, dict) and gui.get("app") is None:
        app = _domain_apps().get(_touched_domain(step) or "")
        if app is not None:
            saved = dict(gui)
            env.state["_meta"]["gui"] = {"app": app, "route": "main", "stack": [], "inputs": {}, "scroll": 0}
    try:
        return env.screen().image()
    finally:
        if saved is not None:
            env.state["_meta"]["gui"] = saved


# ---------------------------------------------------------------------------------------------
# Collection


def _trajectory_id(job: Job | None, task: TaskSpec, attempt: int) -> uuid.UUID:
    return uuid.uuid5(_NS, f"{job.id}:{task.id}:{attempt}") if job is not None else uuid.uuid4()


def collection_run(
    *,
    round: Round,  # noqa: A002
    planner: dict[str, Any],
    attempts: int = 1,
    parallel: int = 8,
    task_ids: list[Any] | None = None,
    job: Job | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Run the round's approved tasks ``attempts`` times each and store the trajectories; returns counts."""
    from devices.virtual.tasks import Task
    from harness.episode import run_episodes

    if not 1 <= attempts <= 64:
        raise ValueError("attempts must be between 1 and 64.")
    if not 1 <= parallel <= 512:
        raise ValueError("parallel must be between 1 and 512.")
    impl = planner_build(planner=planner)
    specs = TaskSpec.objects.filter(round=round, status=TaskStatus.APPROVED).order_by("template", "seed")
    if task_ids is not None:
        specs = specs.filter(id__in=list(task_ids))
    specs = list(specs)
    todo: list[tuple[TaskSpec, int]] = []
    skipped = 0
    if job is not None:
        done = set(Trajectory.objects.filter(job=job).values_list("task_id", "attempt"))
        for spec in specs:
            for a in range(attempts):
                if (spec.id, a) in done:
                    skipped += 1
                else:
                    todo.append((spec, a))
    else:  # outside a job each call adds new attempts after those stored
        first = dict(Trajectory.objects.filter(task__in=specs).values("task_id").annotate(n=Max("attempt") + 1)
                     .values_list("task_id", "n"))
        todo = [(spec, first.get(spec.id, 0) + a) for spec in specs for a in range(attempts)]
    data_dir = Path(settings.FLYWHEEL_DATA_DIR)
    ids = [_trajectory_id(job, spec, a) for spec, a in todo]
    screens: dict[int, dict[int, str]] = {}
    created: list[Trajectory] = []
    succeeded = 0
    t0 = time.perf_counter()
    total = len(todo)

    # PNG encoding (zlib, which runs without the GIL) overlaps the episodes on a small thread pool.
    encoder = ThreadPoolExecutor(max_workers=2, thread_name_prefix="screens")
    writes: list[Future[None]] = []

    def save(image: Any, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(png_bytes(image))

    def on_step(idx: int, env: Any, step: Any) -> None:
        image = screen_image(env=env, step=step)
        if image is None:
            return
        rel = f"screens/{ids[idx]}/{step.index}.png"
        writes.append(encoder.submit(save, image, data_dir / rel))
        screens.setdefault(idx, {})[step.index] = rel

    def on_episode(idx: int, ep: Any) -> None:
        nonlocal succeeded
        spec, attempt = todo[idx]
        traj = _store(ids[idx], round, spec, attempt, job, ep, screens.pop(idx, {}))
        if traj is not None:
            created.append(traj)
            succeeded += int(traj.success)
        n = len(created)
        if progress is not None and (n % 10 == 0 or n == total):
            progress(0.95 * n / max(total, 1), f"collected {n} of {total} episodes")

    try:
        if todo:
            tasks = [Task.from_dict(spec.spec) for spec, _ in todo]
            run_episodes(tasks, impl, batch_size=parallel, on_episode=on_episode, on_step=on_step)
        for write in writes:
            write.result()  # a screen that could not be written fails the run loudly
    finally:
        encoder.shutdown(wait=True)
    wall = time.perf_counter() - t0
    pending = Trajectory.objects.filter(round=round, queue_items__isnull=True)
    pending = pending.filter(job=job) if job is not None else pending.filter(id__in=[t.id for t in created])
    pending = list(pending.order_by("task__template", "task__seed", "attempt"))
    if pending:
        review_items_create(queue="trajectory", round=round, objects=pending)
    if progress is not None:
        progress(1.0, f"collected {len(created)} episodes, {succeeded} succeeded")
    return {
        "tasks": len(specs), "episodes": len(created), "skipped": skipped, "succeeded": succeeded,
        "planner": getattr(impl, "name", str(planner.get("kind"))), "wall_s": _r3(wall),
        "episodes_per_s": _r3(len(created) / wall) if wall > 0 else 0.0,
    }


def _r3(x: float) -> float:
    return round(x, 3)


def _store(
    traj_id: uuid.UUID, round: Round, spec: TaskSpec, attempt: int, job: Job | None,  # noqa: A002
    ep: Any, screens: dict[int, str],
) -> Trajectory | None:
    """Write one episode (trajectory + steps) in one transaction; None if this (job, task, attempt) exists."""
    data = ep.to_dict()
    steps = data.pop("steps")
    verdict = ep.verdict
    try:
        with transaction.atomic():
            traj = Trajectory.objects.create(
                id=traj_id, task=spec, round=round, job=job, attempt=attempt, planner=ep.planner[:200],
                environment=ep.environment[:64], success=bool(verdict and verdict.success),
                progress=float(verdict.progress) if verdict else 0.0, reason=verdict.reason if verdict else "",
                output_tokens=ep.costs.output_tokens, reasoning_tokens=ep.costs.reasoning_tokens,
                tool_calls=ep.costs.total_tool_calls, costs=ep.costs.to_dict(), n_steps=len(steps), episode=data,
            )
            TrajectoryStep.objects.bulk_create([
                TrajectoryStep(trajectory=traj, index=s["index"], data=s, screen=screens.get(s["index"], ""))
                for s in steps
            ])
    except IntegrityError:  # the same (job, task, attempt) written by an earlier delivery
        return None
    return traj
