"""Reads of the data flywheel's rounds: task and trajectory listings, accepted trajectories for
curation, dataset versions and their exported files, and a round's weights beside the suggestion."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.http import Http404

from console.models import DatasetVersion, Round, TaskSpec, Trajectory, TrajectoryStatus, TrajectoryStep


def _uuid_or_404(value: Any, what: str) -> uuid.UUID:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise Http404(f"No {what} with id {value}.") from None


def round_tasks(*, round: Round, status: str | None = None) -> QuerySet[TaskSpec]:  # noqa: A002
    """The round's task specs (optionally of one status), in a stable order."""
    tasks = TaskSpec.objects.filter(round=round)
    if status:
        tasks = tasks.filter(status=status)
    return tasks.order_by("template", "seed")


def round_trajectories(*, round: Round, status: str | None = None) -> QuerySet[Trajectory]:  # noqa: A002
    """The round's trajectories (optionally of one status) with their tasks, in a stable order."""
    trajs = Trajectory.objects.filter(round=round).select_related("task")
    if status:
        trajs = trajs.filter(status=status)
    return trajs.order_by("task__template", "task__seed", "attempt", "id")


def accepted_trajectories(*, round_ids: list[Any]) -> QuerySet[Trajectory]:
    """What curation reads: accepted trajectories of the rounds, with task and round, in export order."""
    return (
        Trajectory.objects.filter(round_id__in=list(round_ids), status=TrajectoryStatus.ACCEPTED)
        .select_related("task", "round").order_by("task__template", "task__seed", "attempt", "id")
    )


def trajectory_steps(*, trajectories: list[Trajectory]) -> dict[Any, list[TrajectoryStep]]:
    """Steps of many trajectories in one query: trajectory id -> steps by index."""
    out: dict[Any, list[TrajectoryStep]] = {}
    for step in TrajectoryStep.objects.filter(trajectory__in=trajectories).order_by("trajectory_id", "index"):
        out.setdefault(step.trajectory_id, []).append(step)
    return out


def round_weights(*, round: Round) -> dict[str, Any]:  # noqa: A002
    """The round's generation weights, the feedback job's suggestion, and the names each axis knows."""
    from devices.virtual.registry import catalog
    from devices.virtual.tasks import CATEGORIES

    return {
        "current": round.generation_weights or {},
        "suggested": round.suggested_weights or {},
        "known": {"category": list(CATEGORIES), "domain": sorted(catalog().domains), "difficulty": ["1", "2", "3"]},
    }


def dataset_list(*, name: str | None = None) -> QuerySet[DatasetVersion]:
    """Dataset versions, newest first (optionally one dataset's versions)."""
    versions = DatasetVersion.objects.select_related("created_by").order_by("name", "-version")
    if name:
        versions = versions.filter(name=name)
    return versions


def dataset_get(*, dataset_id: Any) -> DatasetVersion:
    """One dataset version, or Http404 for an unknown (or malformed) id."""
    found = DatasetVersion.objects.filter(id=_uuid_or_404(dataset_id, "dataset")).first()
    if found is None:
        raise Http404(f"No dataset with id {dataset_id}.")
    return found


def dataset_file(*, version: DatasetVersion, path: str) -> Path:
    """The absolute path of one exported file of ``version`` (only files its manifest lists; else 404)."""
    if path not in (version.files or {}) and path != "SHA256SUMS":
        raise Http404(f"{version} has no file {path!r}.")
    full = Path(settings.FLYWHEEL_DATA_DIR) / version.export_dir / path
    if not full.is_file():
        raise Http404(f"{version}'s file {path!r} is missing on disk.")
    return full
