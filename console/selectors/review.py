"""Reads of the data flywheel: rounds and their funnel, tasks, trajectories, review queues, the decision
log, agreement between reviewers and reason codes (dataset versions are read in ``datasets``)."""

from __future__ import annotations

import uuid
from collections import defaultdict
from itertools import combinations
from typing import Any

from django.db.models import Count, Prefetch, Q, QuerySet
from django.utils import timezone

from console.models import (
    DatasetVersion,
    Decision,
    Gate,
    ItemStatus,
    Queue,
    QueueItem,
    ReasonCode,
    Review,
    Round,
    TaskSpec,
    TaskStatus,
    Trajectory,
    TrajectoryStatus,
    TrajectoryStep,
    User,
)
from console.selectors.lookup import get_or_404

__all__ = [
    "cohen_kappa",
    "queue_item_get",
    "reason_code_list",
    "review_agreement",
    "review_get",
    "review_log",
    "review_queue_progress",
    "round_funnel",
    "round_get",
    "round_list",
    "task_detail",
    "task_list",
    "trajectory_detail",
    "trajectory_list",
]


# ---------------------------------------------------------------------------------------------
# Rounds, tasks, trajectories


def round_list() -> QuerySet[Round]:
    return Round.objects.select_related("created_by").order_by("-number")


def round_get(*, round_id: Any, user: User | None = None) -> Round:
    return get_or_404(round_list(), round_id, "round")


def task_list(*, round: Round | None = None, status: str = "", template: str = "") -> QuerySet[TaskSpec]:
    tasks = TaskSpec.objects.select_related("round").order_by("-created_at")
    if round is not None:
        tasks = tasks.filter(round=round)
    if status:
        tasks = tasks.filter(status=status)
    if template:
        tasks = tasks.filter(template=template)
    return tasks


def task_detail(*, task_id: Any, user: User | None = None) -> TaskSpec:
    """The task with this id (every signed-in role reads tasks), or 404."""
    return get_or_404(TaskSpec.objects.select_related("round"), task_id, "task")


def trajectory_list(
    *, round: Round | None = None, status: str = "", task: TaskSpec | None = None
) -> QuerySet[Trajectory]:
    trajectories = Trajectory.objects.select_related("task", "round").order_by("-created_at")
    if round is not None:
        trajectories = trajectories.filter(round=round)
    if status:
        trajectories = trajectories.filter(status=status)
    if task is not None:
        trajectories = trajectories.filter(task=task)
    return trajectories


def trajectory_detail(*, trajectory_id: Any, user: User | None = None) -> Trajectory:
    """The trajectory with its task, round and steps (in order, one query), or 404."""
    qs = Trajectory.objects.select_related("task", "round").prefetch_related(
        Prefetch("steps", queryset=TrajectoryStep.objects.order_by("index"))
    )
    return get_or_404(qs, trajectory_id, "trajectory")


def reason_code_list(*, queue: str = "", active_only: bool = True) -> QuerySet[ReasonCode]:
    """The reject reasons, in the order keys 1–9 pick them."""
    codes = ReasonCode.objects.order_by("queue", "position", "code")
    if queue:
        codes = codes.filter(queue=queue)
    return codes.filter(active=True) if active_only else codes


def queue_item_get(*, item_id: Any, user: User | None = None) -> QueueItem:
    qs = QueueItem.objects.select_related("round", "task", "trajectory", "trajectory__task", "claimed_by")
    return get_or_404(qs, item_id, "queue item")


def _manifest_ids(value: Any, out: set[str]) -> None:
    """Every UUID-looking string in a dataset manifest (its layout is the curation job's business)."""
    if isinstance(value, dict):
        for v in value.values():
            _manifest_ids(v, out)
    elif isinstance(value, list):
        for v in value:
            _manifest_ids(v, out)
    elif isinstance(value, str) and len(value) == 36:
        out.add(value)


def round_funnel(*, round: Round) -> dict[str, int]:
    """generated → validated → approved → collected → accepted → in dataset, as counts."""
    tasks = TaskSpec.objects.filter(round=round).aggregate(
        generated=Count("id"),
        validated=Count("id", filter=~Q(status=TaskStatus.INVALID)),
        approved=Count("id", filter=Q(status=TaskStatus.APPROVED)),
    )
    trajectories = Trajectory.objects.filter(round=round).aggregate(
        collected=Count("id"), accepted=Count("id", filter=Q(status=TrajectoryStatus.ACCEPTED))
    )
    in_dataset: set[str] = set()
    for manifest in DatasetVersion.objects.filter(rounds__contains=[round.pk]).values_list("manifest", flat=True):
        _manifest_ids(manifest, in_dataset)
    if in_dataset:
        valid = []
        for value in in_dataset:
            try:
                valid.append(uuid.UUID(value))
            except ValueError:
                continue
        n_in_dataset = Trajectory.objects.filter(round=round, pk__in=valid).count()
    else:
        n_in_dataset = 0
    return {**tasks, **trajectories, "in_dataset": n_in_dataset}


# ---------------------------------------------------------------------------------------------
# Review queues


def review_log(
    *,
    queue: str | None = None,
    user: User | None = None,
    reviewer: str = "",
    task: Any = None,
    trajectory: Any = None,
    gate: str = "",
    decision: str = "",
) -> QuerySet[Review]:
    """The decision log, newest first; ``user`` (or the user name ``reviewer``) narrows it to one reviewer's
    decisions, ``task`` / ``trajectory`` (instances or ids) to one object's."""
    reviews = Review.objects.select_related("reviewer", "item").order_by("-created_at")
    if queue:
        reviews = reviews.filter(queue=queue)
    if user is not None:
        reviews = reviews.filter(reviewer=user)
    if reviewer:
        reviews = reviews.filter(reviewer__username=reviewer)
    if gate:
        reviews = reviews.filter(gate=gate)
    if decision:
        reviews = reviews.filter(decision=decision)
    if task is not None:
        reviews = reviews.filter(task=task)
    if trajectory is not None:
        reviews = reviews.filter(trajectory=trajectory)
    return reviews


def review_get(*, review_id: Any, user: User | None = None) -> Review:
    return get_or_404(Review.objects.select_related("reviewer", "item"), review_id, "review")


def review_queue_progress(*, queue: str, round: Round | None = None) -> dict[str, Any]:
    """Slots pending (free), claimed (live lease) and done; objects decided; per annotator what they
    decided and hold now."""
    now = timezone.now()
    items = QueueItem.objects.filter(queue=queue)
    reviews = Review.objects.filter(queue=queue, gate=Gate.HUMAN)
    if round is not None:
        items = items.filter(round=round)
        reviews = reviews.filter(item__round=round)
    live = Q(status=ItemStatus.PENDING, claimed_by__isnull=False, lease_expires_at__gt=now)
    counts = items.aggregate(
        total=Count("id"), done=Count("id", filter=Q(status=ItemStatus.DONE)), claimed=Count("id", filter=live)
    )
    field = "task" if queue == Queue.TASK else "trajectory"
    objects = items.values(field).annotate(open=Count("id", filter=Q(status=ItemStatus.PENDING)))
    n_objects = objects.count()
    n_decided = objects.filter(open=0).count()

    per: dict[str, dict[str, int]] = defaultdict(lambda: {d: 0 for d in Decision.values} | {"claimed": 0})
    for row in reviews.values("reviewer__username", "decision").annotate(n=Count("id")):
        per[row["reviewer__username"]][row["decision"]] += row["n"]
    for row in items.filter(live).values("claimed_by__username").annotate(n=Count("id")):
        per[row["claimed_by__username"]]["claimed"] += row["n"]
    annotators = [
        {
            "username": name,
            "decided": sum(c[d] for d in (Decision.APPROVE, Decision.EDIT, Decision.REJECT)),
            **c,
        }
        for name, c in sorted(per.items())
    ]
    return {
        "queue": queue,
        "round": str(round.pk) if round is not None else None,
        "total": counts["total"],
        "pending": counts["total"] - counts["done"] - counts["claimed"],
        "claimed": counts["claimed"],
        "done": counts["done"],
        "objects": n_objects,
        "objects_decided": n_decided,
        "annotators": annotators,
    }


def cohen_kappa(a: list[bool], b: list[bool]) -> float | None:
    """Cohen's κ of two raters' binary labels on the same items: (p_o − p_e) / (1 − p_e), where p_o is the
    observed agreement and p_e = p_a·p_b + (1 − p_a)(1 − p_b) the agreement expected by chance from each
    rater's approve rate. ``None`` when undefined (no items, or both raters gave one same label to all,
    p_e = 1). Written here rather than importing scikit-learn for four lines."""
    n = len(a)
    if n == 0 or n != len(b):
        return None
    p_o = sum(x == y for x, y in zip(a, b, strict=True)) / n
    p_a, p_b = sum(a) / n, sum(b) / n
    p_e = p_a * p_b + (1 - p_a) * (1 - p_b)
    if p_e >= 1.0:
        return None
    return (p_o - p_e) / (1 - p_e)


def review_agreement(*, queue: str, round: Round | None = None) -> dict[str, Any]:
    """Cohen's κ for every pair of reviewers on the objects both decided (approve or edit vs reject),
    and the queue's κ as the mean over pairs where it is defined; with the counts behind each."""
    field = "task_id" if queue == Queue.TASK else "trajectory_id"
    reviews = Review.objects.filter(
        queue=queue, gate=Gate.HUMAN, decision__in=(Decision.APPROVE, Decision.EDIT, Decision.REJECT)
    )
    if round is not None:
        reviews = reviews.filter(item__round=round)
    votes: dict[str, dict[Any, bool]] = defaultdict(dict)
    for name, obj, decision in reviews.order_by("created_at").values_list("reviewer__username", field, "decision"):
        votes[name][obj] = decision != Decision.REJECT  # the latest decision of a reviewer counts
    pairs = []
    for a, b in combinations(sorted(votes), 2):
        common = sorted(set(votes[a]) & set(votes[b]), key=str)
        if not common:
            continue
        va = [votes[a][o] for o in common]
        vb = [votes[b][o] for o in common]
        pairs.append(
            {
                "a": a,
                "b": b,
                "n": len(common),
                "agree": sum(x == y for x, y in zip(va, vb, strict=True)),
                "kappa": cohen_kappa(va, vb),
            }
        )
    defined = [p["kappa"] for p in pairs if p["kappa"] is not None]
    overlapping = defaultdict(int)
    for per in votes.values():
        for obj in per:
            overlapping[obj] += 1
    return {
        "queue": queue,
        "kappa": sum(defined) / len(defined) if defined else None,
        "pairs": pairs,
        "annotators": len(votes),
        "objects_with_overlap": sum(1 for n in overlapping.values() if n >= 2),
    }
