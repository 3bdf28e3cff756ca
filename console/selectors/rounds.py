"""Reads of the data flywheel's rounds: accepted trajectories for curation, the names generation weights
know, and a round's weights beside the suggestion (tasks and trajectories are listed in ``review``,
dataset versions in ``datasets``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import QuerySet

from console.models import Round, Trajectory, TrajectoryStatus, TrajectoryStep

DIFFICULTIES = ("1", "2", "3")


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
    return {
        "current": round.generation_weights or {},
        "suggested": round.suggested_weights or {},
        "known": weight_names(),
    }


def generation_weight(*, weights: dict[str, Any], category: str, domains: Iterable[str], difficulty: Any) -> float:
    """How strongly a round's generation weights ask for a task: the weight of its category times the mean
    weight of its domains times the weight of its difficulty (a name the weights do not mention weighs 1).
    Generation samples templates by it, and review offers tasks and trajectories in its order."""
    domain_weights = [_weight(weights, "domain", d) for d in domains] or [1.0]
    return (
        _weight(weights, "category", category)
        * (sum(domain_weights) / len(domain_weights))
        * _weight(weights, "difficulty", difficulty)
    )


def _weight(weights: dict[str, Any], axis: str, key: Any) -> float:
    table = weights.get(axis) or {}
    try:
        value = float(table.get(str(key), 1.0))
    except (TypeError, ValueError, AttributeError):
        return 1.0
    return value if value >= 0 else 0.0


def weight_names() -> dict[str, list[str]]:
    """The names each generation-weight axis knows: the task categories, the phone's domains, difficulties."""
    # Imported here: devices loads the phone's whole catalogue, which most pages never need.
    from devices.virtual.registry import catalog
    from devices.virtual.tasks import CATEGORIES

    return {"category": list(CATEGORIES), "domain": sorted(catalog().domains), "difficulty": list(DIFFICULTIES)}
