"""Feedback: competence per category and per domain sets the next round's generation weights.

Competence is the success rate from the round's latest evaluation when one is recorded in
``round.config["evaluation"]`` (``{"category": {name: rate}, "domain": {name: rate}}``, rates in
[0, 1] or percent), else from the round's collected trajectories. The raw weight of a group is
``floor + (1 - success)``: more tasks where the planner fails, never none where it succeeds.
Groups without evidence get the mean raw weight; each axis is then scaled to mean 1 over every
known name (missing names weigh 1 in generation, so mean 1 keeps them comparable).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from console.models import Round, Trajectory
from console.selectors.rounds import weight_names
from console.services.rounds import round_weights_set, weights_validate

DEFAULT_FLOOR = 0.2

__all__ = ["competence", "feedback_weights", "round_weights_set", "weights_from_competence", "weights_validate"]


def competence(*, round: Round) -> tuple[str, dict[str, dict[str, dict[str, float]]]]:  # noqa: A002
    """``(source, {axis: {name: {"success": rate, "n": count}}})`` for category and domain."""
    evaluation = (round.config or {}).get("evaluation")
    if isinstance(evaluation, dict) and any(isinstance(evaluation.get(a), dict) for a in ("category", "domain")):
        out: dict[str, dict[str, dict[str, float]]] = {"category": {}, "domain": {}}
        for axis in out:
            for name, rate in (evaluation.get(axis) or {}).items():
                if isinstance(rate, bool) or not isinstance(rate, (int, float)):
                    continue
                rate = float(rate) / 100.0 if rate > 1 else float(rate)
                out[axis][str(name)] = {"success": min(max(rate, 0.0), 1.0), "n": 0}
        return "evaluation", out
    tally: dict[str, dict[str, list[int]]] = {"category": defaultdict(lambda: [0, 0]),
                                              "domain": defaultdict(lambda: [0, 0])}
    for success, category, domains in Trajectory.objects.filter(round=round).values_list(
        "success", "task__category", "task__domains"
    ):
        for axis, names in (("category", [category]), ("domain", domains or [])):
            for name in names:
                tally[axis][name][0] += int(success)
                tally[axis][name][1] += 1
    return "collection", {
        axis: {name: {"success": ok / n, "n": n} for name, (ok, n) in sorted(table.items())}
        for axis, table in tally.items()
    }


def weights_from_competence(
    comp: dict[str, dict[str, dict[str, float]]], *, floor: float = DEFAULT_FLOOR
) -> dict[str, dict[str, float]]:
    """``w = floor + (1 - success)`` per group, unseen groups at the mean, scaled to mean 1 per axis."""
    names = weight_names()
    known = {"category": names["category"], "domain": names["domain"]}
    out: dict[str, dict[str, float]] = {}
    for axis, names in known.items():
        seen = {k: floor + (1.0 - v["success"]) for k, v in comp.get(axis, {}).items() if k in names}
        if not seen:
            continue
        mean_seen = sum(seen.values()) / len(seen)
        raw = {k: seen.get(k, mean_seen) for k in names}
        scale = len(raw) / sum(raw.values())
        out[axis] = {k: round(v * scale, 4) for k, v in sorted(raw.items())}
    return out


def feedback_weights(*, round: Round) -> dict[str, Any]:  # noqa: A002
    """Compute and store ``round.suggested_weights`` (for the next round); returns the evidence too."""
    floor = float((round.config or {}).get("feedback_floor", DEFAULT_FLOOR))
    source, comp = competence(round=round)
    weights = weights_validate(weights=weights_from_competence(comp, floor=floor))
    round.suggested_weights = weights
    round.save(update_fields=["suggested_weights"])
    return {"source": source, "floor": floor, "competence": comp, "weights": weights}
