"""The console's records: users with a role, and the Job row that is the truth about background work."""

from __future__ import annotations

import uuid
from typing import TypedDict

from django.contrib.auth.models import AbstractUser
from django.db import models


class Role(models.TextChoices):
    """What a user may do; docs/roles.md is the matrix these properties implement."""

    ANNOTATOR = "annotator", "Annotator"
    MANAGER = "manager", "Manager"
    ANALYST = "analyst", "Analyst"

    @property
    def can_review(self) -> bool:
        return self in (Role.ANNOTATOR, Role.MANAGER)

    @property
    def can_run_jobs(self) -> bool:
        return self is Role.MANAGER

    @property
    def can_comment(self) -> bool:
        return True

    @property
    def can_propose(self) -> bool:
        return self in (Role.MANAGER, Role.ANALYST)


class User(AbstractUser):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.ANNOTATOR)

    @property
    def role_enum(self) -> Role:
        return Role(self.role)

    @property
    def can_run_jobs(self) -> bool:
        """Start and cancel jobs: managers, and superusers (admins) who may do everything."""
        return self.is_superuser or self.role_enum.can_run_jobs

    @property
    def can_review(self) -> bool:
        return self.is_superuser or self.role_enum.can_review

    @property
    def role_label(self) -> str:
        return "Admin" if self.is_superuser else self.get_role_display()


class JobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"

    @property
    def is_terminal(self) -> bool:
        return self in (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)


TERMINAL_STATUSES = [s.value for s in JobStatus if s.is_terminal]


class JobDict(TypedDict):
    id: str
    kind: str
    status: str
    progress: float
    message: str
    attempts: int
    cancel_requested: bool
    created_by: str | None
    created_at: str
    started_at: str | None
    finished_at: str | None
    url: str


class Job(models.Model):
    """One piece of background work. Celery only carries the id; this row carries everything else."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    kind = models.CharField(max_length=64, db_index=True)
    queue = models.CharField(max_length=32, default="default")
    config = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.QUEUED, db_index=True)
    progress = models.FloatField(default=0.0)
    message = models.CharField(max_length=500, blank=True)
    progress_history = models.JSONField(default=list, blank=True)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    log_tail = models.TextField(blank=True)
    attempts = models.PositiveIntegerField(default=0)
    cancel_requested = models.BooleanField(default=False)
    claimed_by = models.CharField(max_length=200, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        "console.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="jobs"
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "heartbeat_at"])]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(progress__gte=0) & models.Q(progress__lte=1), name="job_progress_0_1"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.id} ({self.status})"

    def get_absolute_url(self) -> str:
        from django.urls import reverse

        return reverse("console:job-detail", kwargs={"job_id": self.id})

    @property
    def status_enum(self) -> JobStatus:
        return JobStatus(self.status)

    @property
    def is_terminal(self) -> bool:
        return self.status_enum.is_terminal

    @property
    def percent(self) -> int:
        return int(round(self.progress * 100))

    def to_dict(self) -> JobDict:
        return JobDict(
            id=str(self.id),
            kind=self.kind,
            status=self.status,
            progress=self.progress,
            message=self.message,
            attempts=self.attempts,
            cancel_requested=self.cancel_requested,
            created_by=self.created_by.username if self.created_by_id and self.created_by else None,
            created_at=self.created_at.isoformat(),
            started_at=self.started_at.isoformat() if self.started_at else None,
            finished_at=self.finished_at.isoformat() if self.finished_at else None,
            url=self.get_absolute_url(),
        )


class JobEffect(models.Model):
    """A side effect a job has performed, by key, so a re-run after a crash performs it only once."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="effects")
    key = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "key"], name="job_effect_once")]

    def __str__(self) -> str:
        return f"{self.job_id} {self.key}"
