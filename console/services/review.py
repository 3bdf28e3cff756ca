"""Writes of the review queues: queue items (slots), claims with leases, decisions into the append-only log.

A claim is ``select_for_update(skip_locked=True)`` on the next free slot plus a stored lease
(``claimed_by`` + ``lease_expires_at``, ``settings.FLYWHEEL_REVIEW_LEASE_SECONDS``); the open review
page renews it, an expired lease is free for anyone, and a decision on a slot that is no longer
yours is refused with ``LeaseLost``. Locks are always taken in one order: the reviewer's advisory
lock for the queue (claims only), then queue items, then the task or trajectory under review.

Overlap N gives an object N slots (0..N-1), each for another person. When its last slot is
decided, the object's status follows the majority of the slot decisions (approve or edit vs
reject); a tie rejects, because a task or trajectory half the reviewers refuse should not reach
training. A skip is logged but hands the slot back to the queue for someone else.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from console.models import (
    Decision,
    Gate,
    ItemStatus,
    Queue,
    QueueItem,
    ReasonCode,
    Review,
    Round,
    StepLabel,
    TaskSpec,
    TaskStatus,
    Trajectory,
    TrajectoryStatus,
    TrajectoryStep,
    User,
)
from console.selectors.rounds import generation_weight
from console.services.jobs import PermissionDenied

__all__ = [
    "LeaseLost",
    "ReviewError",
    "lease_seconds",
    "review_auto_gate",
    "review_claim_next",
    "review_decide",
    "review_items_create",
    "review_lease_renew",
    "review_priority",
    "review_release",
]


class LeaseLost(Exception):
    """The slot is not (or no longer) claimed by this reviewer: nothing was saved (HTTP 409)."""


class ReviewError(ValueError):
    """A decision the service refuses because of what was sent (HTTP 400); the message says what to fix."""


# What a reviewer may send; "edit" is an approve that changes the task, "label" saves step labels and keeps
# the claim.
DECISIONS = (Decision.APPROVE, Decision.REJECT, Decision.EDIT, Decision.SKIP, Decision.LABEL)
# The decisions that complete a slot, and how they vote.
APPROVING = (Decision.APPROVE, Decision.EDIT)
FINAL_DECISIONS = (Decision.APPROVE, Decision.EDIT, Decision.REJECT)


def lease_seconds() -> int:
    return int(getattr(settings, "FLYWHEEL_REVIEW_LEASE_SECONDS", 300))


def _lease_until() -> Any:
    return timezone.now() + timedelta(seconds=lease_seconds())


def _queue(queue: str) -> str:
    if queue not in Queue.values:
        raise ReviewError(f"Unknown queue {queue!r}: use one of {', '.join(Queue.values)}.")
    return queue


def _subject_field(queue: str) -> str:
    """The QueueItem / Review column holding the object under review in ``queue``."""
    return "task_id" if queue == Queue.TASK else "trajectory_id"


def _require_reviewer(user: User) -> None:
    if not user.can_review:
        raise PermissionDenied("Only annotators and managers review; analysts read the queues.")


# ---------------------------------------------------------------------------------------------
# Queue items


def review_priority(*, round: Round, task: TaskSpec) -> float:
    """How early a task (or its trajectories) is offered: the round's generation weight of the task
    (``generation_weight``), so reviewers see first what the round was built to produce."""
    return generation_weight(weights=round.generation_weights or {}, category=task.category,
                             domains=task.domains, difficulty=task.difficulty)


def review_items_create(*, queue: str, round: Round, objects: Iterable[Any], overlap: int | None = None) -> int:
    """Give every object (TaskSpecs for ``task``, Trajectories for ``trajectory``; instances or ids)
    ``overlap`` review slots; default ``round.config["overlap"]`` or 1. Idempotent: slots that exist
    already are kept. Returns how many slots were created."""
    _queue(queue)
    if overlap is None:
        overlap = (round.config or {}).get("overlap", 1)
    if isinstance(overlap, bool) or not isinstance(overlap, int) or not 1 <= overlap <= 20:
        raise ReviewError(f"overlap must be a whole number from 1 to 20, not {overlap!r}.")
    ids = [getattr(o, "pk", o) for o in objects]
    if not ids:
        return 0
    field = _subject_field(queue)
    if queue == Queue.TASK:
        subjects = {t.pk: (t, t) for t in TaskSpec.objects.filter(pk__in=ids)}
    else:
        subjects = {t.pk: (t, t.task) for t in Trajectory.objects.select_related("task").filter(pk__in=ids)}
    missing = {str(i) for i in ids} - {str(k) for k in subjects}
    if missing:
        raise ReviewError(f"{len(missing)} object(s) for the {queue} queue do not exist, e.g. {sorted(missing)[0]}.")
    existing = set(
        QueueItem.objects.filter(queue=queue, **{f"{field}__in": list(subjects)}).values_list(field, "slot")
    )
    new = []
    for pk, (subject, task) in subjects.items():
        priority = review_priority(round=round, task=task)
        for slot in range(overlap):
            if (pk, slot) in existing:
                continue
            new.append(
                QueueItem(
                    queue=queue, round=round, slot=slot, priority=priority,
                    task=subject if queue == Queue.TASK else None,
                    trajectory=subject if queue == Queue.TRAJECTORY else None,
                )
            )
    # ignore_conflicts: a concurrent call creating the same slots is harmless (queue_item_slot_once).
    QueueItem.objects.bulk_create(new, batch_size=2000, ignore_conflicts=True)
    return len(new)


# ---------------------------------------------------------------------------------------------
# Claims and leases


@contextmanager
def _soft_state_transaction() -> Iterator[Any]:
    """A transaction (and its cursor) for leases, which are soft state: if the server crashes right after
    a commit and forgets a claim, the item is simply free again (a later decision on it is refused, nothing
    else is lost), so the commit does not wait for its WAL flush. Only when this is the outermost
    transaction: a caller's own writes (and every decision) keep full durability."""
    outermost = not connection.in_atomic_block
    with transaction.atomic(), connection.cursor() as cursor:
        if outermost:
            cursor.execute("SET LOCAL synchronous_commit = off")
        yield cursor


def _claim_lock_key(user: User, queue: str) -> int:
    """A signed 64-bit advisory-lock key for (reviewer, queue)."""
    digest = hashlib.blake2b(f"review-claim:{queue}:{user.pk}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def review_claim_next(*, queue: str, user: User, round: Round | None = None) -> QueueItem | None:
    """The reviewer's current slot in ``queue`` (a reload keeps it), else the next free one by priority,
    claimed for ``lease_seconds()``; ``None`` when nothing is left for this reviewer.

    Never offers an object the reviewer has already decided (or skipped) or holds another slot of.
    """
    _require_reviewer(user)
    _queue(queue)
    field = _subject_field(queue)
    with _soft_state_transaction() as cursor:
        # One claim at a time per reviewer and queue (two tabs must not take two items); taken first.
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_claim_lock_key(user, queue)])
        now = timezone.now()
        scope = QueueItem.objects.filter(queue=queue, status=ItemStatus.PENDING)
        if round is not None:
            scope = scope.filter(round=round)
        # Still ours if nobody has taken it since, even when the lease ran out while the page was closed.
        own = scope.select_for_update(skip_locked=True).filter(claimed_by=user).order_by(
            "-lease_expires_at", "-priority", "created_at"
        ).first()
        if own is None:
            reviewed = Review.objects.filter(reviewer=user, queue=queue, **{f"{field}__isnull": False}).values(field)
            held = QueueItem.objects.filter(queue=queue, claimed_by=user).values(field)
            own = (
                scope.select_for_update(skip_locked=True)
                .filter(Q(claimed_by__isnull=True) | Q(lease_expires_at__lte=now))
                .exclude(**{f"{field}__in": reviewed})
                .exclude(**{f"{field}__in": held})
                .order_by("-priority", "created_at")  # the partial index queue_claim_order
                .first()
            )
            if own is None:
                return None
        own.claimed_by = user
        own.lease_expires_at = now + timedelta(seconds=lease_seconds())
        own.save(update_fields=["claimed_by", "lease_expires_at"])
    return own


def review_lease_renew(*, item: QueueItem, user: User) -> QueueItem:
    """Extend the reviewer's lease on ``item`` (the open page calls this); ``LeaseLost`` when it is not
    theirs any more (decided, released, or claimed by someone else after it expired)."""
    _require_reviewer(user)
    until = _lease_until()
    with _soft_state_transaction():
        renewed = QueueItem.objects.filter(pk=item.pk, status=ItemStatus.PENDING, claimed_by=user).update(
            lease_expires_at=until
        )
    if renewed != 1:
        raise LeaseLost(_lost_message(item.pk, user))
    item.claimed_by = user
    item.lease_expires_at = until
    return item


def review_release(*, item: QueueItem, user: User) -> None:
    """Hand the reviewer's slot back to the queue without deciding (closing the page). Releasing a slot
    that is already free or decided does nothing; one held by someone else raises ``LeaseLost``."""
    _require_reviewer(user)
    released = QueueItem.objects.filter(pk=item.pk, status=ItemStatus.PENDING, claimed_by=user).update(
        claimed_by=None, lease_expires_at=None
    )
    if released:
        item.claimed_by = None
        item.lease_expires_at = None
        return
    current = QueueItem.objects.filter(pk=item.pk).values("status", "claimed_by", "lease_expires_at").first()
    if (
        current is not None
        and current["status"] == ItemStatus.PENDING
        and current["claimed_by"] is not None
        and current["lease_expires_at"] is not None
        and current["lease_expires_at"] > timezone.now()
    ):
        raise LeaseLost("This item is claimed by another reviewer; only they can release it.")


def _lost_message(item_id: Any, user: User) -> str:
    current = QueueItem.objects.filter(pk=item_id).values("status", "claimed_by").first()
    if current is None:
        return "This queue item no longer exists."
    if current["status"] == ItemStatus.DONE:
        return "This item has already been decided; nothing was saved. Claim the next item."
    if current["claimed_by"] is None:
        return "This item is not claimed by you: claim it first (claim-next), then decide."
    return (
        "Another reviewer holds this item now (your lease expired or you released it); nothing was saved. "
        "Claim the next item."
    )


# ---------------------------------------------------------------------------------------------
# Decisions


def _decision(decision: Any, edit: Any) -> str:
    if decision not in DECISIONS:
        raise ReviewError(f"Unknown decision {decision!r}: use one of {', '.join(DECISIONS)}.")
    if decision == Decision.APPROVE and edit:
        return Decision.EDIT
    return str(decision)


def _reason(queue: str, decision: str, reason_code: Any) -> str:
    if reason_code in (None, ""):
        if decision == Decision.REJECT:
            codes = ", ".join(ReasonCode.objects.filter(queue=queue, active=True).values_list("code", flat=True))
            raise ReviewError(f"A rejection needs a reason code: one of {codes}.")
        return ""
    if not isinstance(reason_code, str) or not ReasonCode.objects.filter(
        queue=queue, code=reason_code, active=True
    ).exists():
        codes = ", ".join(ReasonCode.objects.filter(queue=queue, active=True).values_list("code", flat=True))
        raise ReviewError(f"Unknown reason code {reason_code!r} for the {queue} queue: use one of {codes}.")
    return reason_code


def _step_labels(raw: Any) -> dict[int, dict[str, str | None]]:
    """``[{"index", "label", "comment"?}]`` or ``{"<index>": label | {"label", "comment"?}}`` ->
    ``{index: {"label", "comment"}}`` (comment ``None`` = keep the stored one)."""
    if isinstance(raw, dict):
        entries = [
            {"index": k, **(v if isinstance(v, dict) else {"label": v})} for k, v in raw.items()
        ]
    elif isinstance(raw, list):
        entries = raw
    else:
        raise ReviewError("step_labels must be a list of {index, label, comment} objects.")
    out: dict[int, dict[str, str | None]] = {}
    for entry in entries:
        if not isinstance(entry, dict):
            raise ReviewError("Each step label must be an object with index, label and optionally comment.")
        index = entry.get("index")
        try:
            index = int(index)
        except (TypeError, ValueError):
            raise ReviewError(f"A step label's index must be a whole number, not {index!r}.") from None
        label = entry.get("label", "")
        if label is None:
            label = ""
        if label not in StepLabel.values:
            allowed = ", ".join(v for v in StepLabel.values if v)
            raise ReviewError(f"Unknown step label {label!r} for step {index}: use {allowed} (or empty to clear).")
        comment = entry.get("comment")
        if comment is not None and not isinstance(comment, str):
            raise ReviewError(f"The comment of step {index} must be text.")
        out[index] = {"label": label, "comment": comment}
    return out


def _apply_step_labels(trajectory: Trajectory, labels: dict[int, dict[str, str | None]]) -> tuple[dict, dict]:
    steps = {s.index: s for s in TrajectoryStep.objects.filter(trajectory=trajectory, index__in=list(labels))}
    unknown = sorted(set(labels) - set(steps))
    if unknown:
        raise ReviewError(
            f"This trajectory has no step {unknown[0]}: steps are numbered 0 to {trajectory.n_steps - 1}."
        )
    before, after = {}, {}
    for index, change in sorted(labels.items()):
        step = steps[index]
        before[str(index)] = {"label": step.label, "comment": step.comment}
        step.label = change["label"] or ""
        if change["comment"] is not None:
            step.comment = change["comment"]
        after[str(index)] = {"label": step.label, "comment": step.comment}
    TrajectoryStep.objects.bulk_update(list(steps.values()), ["label", "comment"])
    return {"steps": before}, {"steps": after}


def _apply_task_edit(task: TaskSpec, edit: Any) -> tuple[dict | None, dict | None]:
    """Validate and save an edit; ``(before, after)`` of what changed, ``(None, None)`` when nothing did.

    The near-duplicate hashes are recomputed from the edited spec, as generation computes them."""
    # Imported here: console.services.rounds imports this module (generation creates review items).
    from console.services.rounds import param_hash, state_hash, task_edit_apply

    if not isinstance(edit, dict) or not edit:
        raise ReviewError('An edit must be an object such as {"instruction": "..."} or {"goal": {...}}.')
    try:
        new_spec, validation = task_edit_apply(task=task, changes=edit)
    except ValueError as exc:
        raise ReviewError(f"The edit was not saved: {exc}") from None
    if not (validation or {}).get("ok", False):
        reason = (validation or {}).get("reason") or "the edited task does not validate"
        raise ReviewError(f"The edit was not saved: the edited task fails validation ({reason}).")
    old_spec = task.spec or {}
    changed = sorted(k for k in set(old_spec) | set(new_spec) if old_spec.get(k) != new_spec.get(k))
    if not changed:
        return None, None
    before = {"instruction": task.instruction, "spec": {k: old_spec.get(k) for k in changed}}
    task.spec = new_spec
    task.instruction = new_spec.get("instruction", task.instruction)
    task.validation = validation
    task.param_hash = param_hash(new_spec)
    task.state_hash = state_hash(new_spec)
    task.save(update_fields=["spec", "instruction", "validation", "param_hash", "state_hash", "updated_at"])
    after = {"instruction": task.instruction, "spec": {k: new_spec.get(k) for k in changed}}
    return before, after


def _settle(queue: str, subject: TaskSpec | Trajectory) -> None:
    """When every slot of ``subject`` is decided, set its status by majority (a tie rejects)."""
    field = _subject_field(queue)
    items = QueueItem.objects.filter(queue=queue, **{field: subject.pk})
    if items.filter(status=ItemStatus.PENDING).exists():
        return
    votes = list(
        Review.objects.filter(item__in=items, gate=Gate.HUMAN, decision__in=FINAL_DECISIONS).values_list(
            "decision", flat=True
        )
    )
    approve = sum(1 for d in votes if d in APPROVING)
    _subject_decided(queue, subject, accepted=approve > len(votes) - approve)


def _subject_decided(queue: str, subject: TaskSpec | Trajectory, *, accepted: bool) -> None:
    """Save the outcome of review on the object: a task approved or rejected, a trajectory accepted or not."""
    if queue == Queue.TASK:
        subject.status = TaskStatus.APPROVED if accepted else TaskStatus.REJECTED
        subject.save(update_fields=["status", "updated_at"])
    else:
        subject.status = TrajectoryStatus.ACCEPTED if accepted else TrajectoryStatus.REJECTED
        subject.save(update_fields=["status"])


def review_decide(
    *,
    item: QueueItem,
    user: User,
    decision: str,
    reason_code: str = "",
    comment: str = "",
    edit: dict[str, Any] | None = None,
    step_labels: Any = None,
) -> Review:
    """Record the reviewer's decision on their claimed slot and write it to the decision log.

    approve / reject (needs an active reason code of the queue) / edit (an approve that changes a task's
    instruction or goal/setup values, re-validated; refused when invalid) / skip (logged; the slot goes
    back to the queue for someone else) / label (trajectory step labels saved; the claim is kept).
    Step labels may also accompany approve or reject. Raises ``LeaseLost`` when the slot is not the
    reviewer's (never claimed, decided, or re-claimed by someone after the lease expired), ``ReviewError``
    for input to fix, ``PermissionDenied`` for analysts.
    """
    _require_reviewer(user)
    decision = _decision(decision, edit)
    if comment is None:
        comment = ""
    if not isinstance(comment, str):
        raise ReviewError("comment must be text.")
    with transaction.atomic():
        locked = QueueItem.objects.select_for_update().filter(pk=item.pk).first()
        if locked is None or locked.status != ItemStatus.PENDING or locked.claimed_by_id != user.pk:
            raise LeaseLost(_lost_message(item.pk, user))
        queue = locked.queue
        if queue == Queue.TASK:
            subject: TaskSpec | Trajectory = TaskSpec.objects.select_for_update().get(pk=locked.task_id)
        else:
            subject = Trajectory.objects.select_for_update().get(pk=locked.trajectory_id)
        reason = _reason(queue, decision, reason_code)
        if decision == Decision.EDIT and not edit:
            raise ReviewError('An edit needs the changes, e.g. {"instruction": "..."}.')
        if edit and queue != Queue.TASK:
            raise ReviewError("Only tasks are edited; label a trajectory's steps with step_labels.")
        if edit and decision != Decision.EDIT:
            raise ReviewError("An edit is saved with approve (or edit); a rejection cannot carry an edit.")
        if step_labels not in (None, [], {}) and queue != Queue.TRAJECTORY:
            raise ReviewError("step_labels belong to the trajectory queue.")
        if decision == Decision.LABEL and queue != Queue.TRAJECTORY:
            raise ReviewError("The label decision saves trajectory step labels; tasks are approved or rejected.")
        labels = _step_labels(step_labels) if step_labels not in (None, [], {}) else {}
        if decision == Decision.SKIP and labels:
            raise ReviewError("A skip saves nothing: send step labels with approve, reject or label.")
        if decision == Decision.LABEL and not labels:
            raise ReviewError("The label decision needs step_labels.")

        before = after = None
        if decision == Decision.EDIT:
            before, after = _apply_task_edit(subject, edit)
            if before is None:  # an "edit" that changes nothing is an approve
                decision = Decision.APPROVE
        elif labels:
            before, after = _apply_step_labels(subject, labels)

        review = Review.objects.create(
            queue=queue, item=locked, reviewer=user, gate=Gate.HUMAN, decision=decision, reason_code=reason,
            comment=comment, before=before, after=after,
            task=subject if queue == Queue.TASK else subject.task,
            trajectory=subject if queue == Queue.TRAJECTORY else None,
        )
        if decision == Decision.SKIP:
            locked.claimed_by = None
            locked.lease_expires_at = None
            locked.save(update_fields=["claimed_by", "lease_expires_at"])
        elif decision == Decision.LABEL:
            locked.lease_expires_at = _lease_until()
            locked.save(update_fields=["lease_expires_at"])
        else:
            locked.status = ItemStatus.DONE
            locked.lease_expires_at = None
            locked.save(update_fields=["status", "lease_expires_at"])
            _settle(queue, subject)
    item.status, item.lease_expires_at = locked.status, locked.lease_expires_at
    item.claimed_by_id = locked.claimed_by_id
    return review


def review_auto_gate(*, queue: str, objects: Iterable[Any]) -> int:
    """Decide objects without people, from the verifier: a task passes when its executable validation
    passed, a trajectory when the verifier says it succeeded. Logged with gate ``auto:verifier`` and no
    reviewer (never as a person); every open slot of the object is closed. Objects already decided are
    left alone. Returns how many objects were decided."""
    _queue(queue)
    field = _subject_field(queue)
    ids = [getattr(o, "pk", o) for o in objects]
    decided = 0
    model = TaskSpec if queue == Queue.TASK else Trajectory
    pending = TaskStatus.PENDING if queue == Queue.TASK else TrajectoryStatus.PENDING
    for pk in ids:
        with transaction.atomic():
            items = list(QueueItem.objects.select_for_update().filter(queue=queue, **{field: pk}).order_by("slot"))
            subject = model.objects.select_for_update().filter(pk=pk).first()
            if subject is None or subject.status != pending:
                continue
            if queue == Queue.TASK:
                validation = subject.validation or {}
                ok = bool(validation.get("ok", True))
                note = validation.get("reason", "") or ("validation passed" if ok else "validation failed")
            else:
                ok = bool(subject.success)
                note = subject.reason
            Review.objects.create(
                queue=queue, item=items[0] if items else None, reviewer=None, gate=Gate.AUTO_VERIFIER,
                decision=Decision.APPROVE if ok else Decision.REJECT, comment=f"verifier: {note}"[:2000],
                task=subject if queue == Queue.TASK else subject.task,
                trajectory=subject if queue == Queue.TRAJECTORY else None,
            )
            QueueItem.objects.filter(pk__in=[i.pk for i in items], status=ItemStatus.PENDING).update(
                status=ItemStatus.DONE, claimed_by=None, lease_expires_at=None
            )
            _subject_decided(queue, subject, accepted=ok)
            decided += 1
    return decided
