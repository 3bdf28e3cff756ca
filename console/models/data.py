"""The data flywheel's records: rounds, task specs, trajectories, review queues, the decision log, datasets.

Decisions (``Review``) and dataset versions are append-only: the model refuses updates and deletes,
and a Postgres trigger (migration) refuses them for any other client too.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib.postgres.fields import ArrayField
from django.db import models


class AppendOnlyError(Exception):
    """An attempt to change or delete a record that is kept forever as written."""


class AppendOnlyModel(models.Model):
    """Rows are inserted once; saving an existing row or deleting one raises ``AppendOnlyError``."""

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AppendOnlyError(f"{type(self).__name__} records cannot be changed once written")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        raise AppendOnlyError(f"{type(self).__name__} records cannot be deleted")


class RoundStatus(models.TextChoices):
    OPEN = "open", "Open"
    CLOSED = "closed", "Closed"


class Round(models.Model):
    """One pass of the loop: its generation weights, and everything generated and collected in it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    number = models.PositiveIntegerField(unique=True)
    name = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=16, choices=RoundStatus.choices, default=RoundStatus.OPEN)
    # {"category": {name: w}, "domain": {name: w}, "difficulty": {"1": w, ...}}; missing keys weigh 1.
    generation_weights = models.JSONField(default=dict, blank=True)
    # What the feedback job proposes for the next round (managers edit before starting it).
    suggested_weights = models.JSONField(default=dict, blank=True)
    config = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey("console.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-number"]

    def __str__(self) -> str:
        return f"Round {self.number}"


class TaskStatus(models.TextChoices):
    INVALID = "invalid", "Rejected by validation"
    PENDING = "pending_review", "Pending review"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"


class TaskSpec(models.Model):
    """One executable task instance (``devices.virtual.tasks.Task`` in ``spec``) and its review state."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="tasks")
    template = models.CharField(max_length=120, db_index=True)
    category = models.CharField(max_length=32, db_index=True)
    domains = ArrayField(models.CharField(max_length=40), default=list)
    tags = ArrayField(models.CharField(max_length=40), default=list, blank=True)
    difficulty = models.PositiveSmallIntegerField(default=1)
    seed = models.BigIntegerField()
    instruction = models.TextField()
    spec = models.JSONField()
    param_hash = models.CharField(max_length=64, db_index=True)  # template + normalised parameters
    state_hash = models.CharField(max_length=64, db_index=True)  # initial device state
    source = models.CharField(max_length=32, default="template")  # template | llm:<model>
    status = models.CharField(max_length=20, choices=TaskStatus.choices, default=TaskStatus.PENDING, db_index=True)
    validation = models.JSONField(default=dict, blank=True)  # reference / do-nothing results, reason
    priority = models.FloatField(default=1.0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["round", "template", "seed"], name="task_once_per_round")]

    def __str__(self) -> str:
        return f"{self.template}#{self.seed}"


class TrajectoryStatus(models.TextChoices):
    PENDING = "pending_review", "Pending review"
    ACCEPTED = "accepted", "Accepted"
    REJECTED = "rejected", "Rejected"


class Trajectory(models.Model):
    """One collected episode of a task: outcome from the verifier only, costs, and its steps."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    task = models.ForeignKey(TaskSpec, on_delete=models.CASCADE, related_name="trajectories")
    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="trajectories")
    job = models.ForeignKey("console.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    attempt = models.PositiveSmallIntegerField(default=0)
    planner = models.CharField(max_length=200)
    environment = models.CharField(max_length=64, default="virtual")  # virtual | android:<serial>
    success = models.BooleanField()
    progress = models.FloatField()
    reason = models.TextField(blank=True)
    output_tokens = models.PositiveIntegerField(default=0)
    reasoning_tokens = models.PositiveIntegerField(default=0)
    tool_calls = models.PositiveIntegerField(default=0)
    costs = models.JSONField(default=dict)  # contract.Costs
    n_steps = models.PositiveSmallIntegerField(default=0)
    episode = models.JSONField()  # contract.Episode without steps (they live in TrajectoryStep)
    status = models.CharField(
        max_length=20, choices=TrajectoryStatus.choices, default=TrajectoryStatus.PENDING, db_index=True
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        # A redelivered collect job writes the same (job, task, attempt) again: it must not duplicate.
        constraints = [models.UniqueConstraint(fields=["job", "task", "attempt"], name="trajectory_once_per_job")]

    def __str__(self) -> str:
        return f"trajectory {self.pk} (attempt {self.attempt})"


class StepLabel(models.TextChoices):
    NONE = "", "Unlabelled"
    CORRECT = "correct", "Correct"
    ERRONEOUS = "erroneous", "Erroneous"
    RECOVERY = "recovery", "Recovery"


class TrajectoryStep(models.Model):
    trajectory = models.ForeignKey(Trajectory, on_delete=models.CASCADE, related_name="steps")
    index = models.PositiveSmallIntegerField()
    data = models.JSONField()  # contract.Step
    screen = models.CharField(max_length=300, blank=True)  # path under FLYWHEEL_DATA_DIR
    label = models.CharField(max_length=16, choices=StepLabel.choices, blank=True, default="")
    comment = models.TextField(blank=True)

    class Meta:
        ordering = ["trajectory", "index"]
        constraints = [models.UniqueConstraint(fields=["trajectory", "index"], name="step_index_unique")]

    def __str__(self) -> str:
        return f"step {self.index} of trajectory {self.trajectory_id}"


class Queue(models.TextChoices):
    TASK = "task", "Task review"
    TRAJECTORY = "trajectory", "Trajectory review"


class ItemStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    DONE = "done", "Done"


class QueueItem(models.Model):
    """One review slot. Overlap N means N items (slots) for the same object, each for another person.

    A claim is ``claimed_by`` + ``lease_expires_at``; an expired lease is free to claim again.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    queue = models.CharField(max_length=16, choices=Queue.choices)
    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="queue_items")
    task = models.ForeignKey(TaskSpec, null=True, blank=True, on_delete=models.CASCADE, related_name="queue_items")
    trajectory = models.ForeignKey(
        Trajectory, null=True, blank=True, on_delete=models.CASCADE, related_name="queue_items"
    )
    slot = models.PositiveSmallIntegerField(default=0)
    priority = models.FloatField(default=1.0)
    status = models.CharField(max_length=16, choices=ItemStatus.choices, default=ItemStatus.PENDING)
    claimed_by = models.ForeignKey("console.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            models.Index(
                fields=["queue", "status", "-priority", "created_at"],
                name="queue_claim_order",
                condition=models.Q(status="pending"),
            )
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["queue", "task", "trajectory", "slot"], name="queue_item_slot_once", nulls_distinct=False
            ),
            models.CheckConstraint(
                condition=(models.Q(queue="task", task__isnull=False, trajectory__isnull=True))
                | (models.Q(queue="trajectory", trajectory__isnull=False)),
                name="queue_item_subject",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.queue} queue item {self.pk} (slot {self.slot})"


class ReasonCode(models.Model):
    """The configurable reject reasons of each queue (keys 1–9 pick them by position)."""

    queue = models.CharField(max_length=16, choices=Queue.choices)
    code = models.SlugField(max_length=40)
    label = models.CharField(max_length=120)
    position = models.PositiveSmallIntegerField(default=0)
    active = models.BooleanField(default=True)

    class Meta:
        ordering = ["queue", "position"]
        constraints = [models.UniqueConstraint(fields=["queue", "code"], name="reason_code_once")]

    def __str__(self) -> str:
        return f"{self.queue}: {self.code}"


class Decision(models.TextChoices):
    APPROVE = "approve", "Approve"
    REJECT = "reject", "Reject"
    EDIT = "edit", "Edit"
    SKIP = "skip", "Skip"
    LABEL = "label", "Step labels"


class Gate(models.TextChoices):
    HUMAN = "human", "Person"
    AUTO_VERIFIER = "auto:verifier", "Automatic gate (verifier)"


class Review(AppendOnlyModel):
    """The decision log: who decided what, when, why, and the before/after of any edit."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    queue = models.CharField(max_length=16, choices=Queue.choices)
    item = models.ForeignKey(QueueItem, null=True, blank=True, on_delete=models.PROTECT, related_name="reviews")
    task = models.ForeignKey(TaskSpec, null=True, blank=True, on_delete=models.PROTECT, related_name="reviews")
    trajectory = models.ForeignKey(
        Trajectory, null=True, blank=True, on_delete=models.PROTECT, related_name="reviews"
    )
    reviewer = models.ForeignKey("console.User", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    gate = models.CharField(max_length=20, choices=Gate.choices, default=Gate.HUMAN)
    decision = models.CharField(max_length=16, choices=Decision.choices)
    reason_code = models.CharField(max_length=40, blank=True)
    comment = models.TextField(blank=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(gate="human", reviewer__isnull=False) | ~models.Q(gate="human"),
                name="review_human_has_reviewer",
            )
        ]

    def __str__(self) -> str:
        return f"{self.decision} on the {self.queue} queue ({self.gate})"


class DatasetVersion(AppendOnlyModel):
    """An immutable, versioned training set: manifest, composition (achieved vs target), exported files."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.SlugField(max_length=80)
    version = models.PositiveIntegerField()
    rounds = ArrayField(models.UUIDField(), default=list)
    job = models.ForeignKey("console.Job", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    config = models.JSONField(default=dict)  # target mix, tolerance, split, seed
    manifest = models.JSONField(default=dict)  # trajectory ids per split, masked turns
    stats = models.JSONField(default=dict)  # composition: achieved vs target per category/domain/difficulty
    files = models.JSONField(default=dict)  # relative path -> sha256
    export_dir = models.CharField(max_length=300)  # under FLYWHEEL_DATA_DIR
    created_by = models.ForeignKey("console.User", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["name", "version"], name="dataset_version_once")]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"
