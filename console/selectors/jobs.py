"""Reads of the console: querysets and lookups the pages, API and consumers render."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from console.models import Job, JobStatus, User
from console.selectors.lookup import get_or_404


def job_list(*, user: User, status: str = "", kind: str = "", mine: bool = False) -> QuerySet[Job]:
    """Jobs visible to ``user`` (every role reads every job), newest first, filtered."""
    jobs = Job.objects.select_related("created_by").order_by("-created_at")
    if status:
        jobs = jobs.filter(status=status)
    if kind:
        jobs = jobs.filter(kind=kind)
    if mine:
        jobs = jobs.filter(created_by=user)
    return jobs


def job_get(*, job_id: Any, user: User) -> Job:
    """The job with this id, or 404 (also for ids that are not UUIDs)."""
    return get_or_404(Job.objects.select_related("created_by"), job_id, "job")


def job_status_choices() -> list[tuple[str, str]]:
    return list(JobStatus.choices)


def job_kinds_in_use() -> list[str]:
    return list(Job.objects.order_by().values_list("kind", flat=True).distinct())
