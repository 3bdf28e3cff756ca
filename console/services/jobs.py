"""Writes of the console: every change to users and jobs made on behalf of a person goes through here."""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from typing import Any

from asgiref.sync import async_to_sync
from celery import current_app
from channels.layers import get_channel_layer
from django.db import transaction
from django.utils import timezone

from console import job_kinds
from console.job_config import config_to_json
from console.models import Job, JobStatus, Role, User

log = logging.getLogger(__name__)

JOBS_GROUP = "jobs"


def job_group(job_id: Any) -> str:
    return f"job.{job_id}"


def user_group(user_id: Any) -> str:
    return f"user.{user_id}"


class PermissionDenied(Exception):
    pass


class JobStateError(Exception):
    """The job is not in a state that allows what was asked (e.g. cancelling a finished job)."""


def _send(group: str, message: dict[str, Any]) -> None:
    # Live updates are a convenience: a Redis hiccup must never fail the job or the request.
    try:
        async_to_sync(get_channel_layer().group_send)(group, message)
    except Exception:  # noqa: BLE001
        log.warning("could not broadcast to %s", group, exc_info=True)


def job_broadcast(*, job: Job, history_entry: list | None = None) -> None:
    """Tell every open jobs page (and this job's detail page) what the job looks like now."""
    payload = job.to_dict()
    _send(JOBS_GROUP, {"type": "job.update", "job": payload})
    _send(job_group(job.id), {"type": "job.update", "job": payload, "history": history_entry})


def job_log_broadcast(*, job_id: Any, text: str) -> None:
    """Append ``text`` to the log tail shown on the job's open detail pages."""
    _send(job_group(job_id), {"type": "job.log", "text": text})


def user_sockets_close(*, user_id: Any) -> None:
    """Close every websocket this user has open (called on logout)."""
    _send(user_group(user_id), {"type": "session.closed"})


def job_enqueue(*, kind: str, config: Any, created_by: User | None) -> Job:
    """Validate ``config`` for ``kind``, store the job and send it to its queue once committed.

    Raises UnknownJobKind, ConfigError (with field errors) or PermissionDenied.
    """
    if created_by is not None and not created_by.can_run_jobs:
        raise PermissionDenied("Only managers can start jobs.")
    spec = job_kinds.get(kind)
    typed = spec.validate(config)
    job = Job.objects.create(
        kind=spec.name, queue=spec.queue, config=config_to_json(typed), created_by=created_by
    )

    def send() -> None:
        current_app.send_task(spec.task_name, args=[str(job.id)], queue=spec.queue)
        job_broadcast(job=job)

    # robust: the job is stored either way; a broker outage is logged, not turned into a 500.
    transaction.on_commit(send, robust=True)
    return job


def job_requeue(*, job: Job) -> None:
    """Send an already stored, queued job to its queue again (after its worker was lost)."""
    spec = job_kinds.get(job.kind)
    transaction.on_commit(
        lambda: current_app.send_task(spec.task_name, args=[str(job.id)], queue=spec.queue)
    )


def job_cancel(*, job: Job, by: User) -> Job:
    """Cancel a queued job now, or ask a running one to stop at its next progress point."""
    if not by.can_run_jobs:
        raise PermissionDenied("Only managers can cancel jobs.")
    now = timezone.now()
    updated = Job.objects.filter(id=job.id, status=JobStatus.QUEUED).update(
        status=JobStatus.CANCELLED, cancel_requested=True, finished_at=now, message=f"cancelled by {by.username}"
    )
    if not updated:
        updated = Job.objects.filter(id=job.id, status=JobStatus.RUNNING).update(cancel_requested=True)
    job.refresh_from_db()
    if not updated:
        raise JobStateError(f"The job is already {job.status}; only queued or running jobs can be cancelled.")
    transaction.on_commit(lambda: job_broadcast(job=job))
    return job


@dataclass(frozen=True)
class DemoAccount:
    username: str
    role: Role
    password: str | None  # None when the account existed already


DEMO_ACCOUNTS = (("annotator", Role.ANNOTATOR), ("manager", Role.MANAGER), ("analyst", Role.ANALYST))


def demo_accounts_ensure() -> list[DemoAccount]:
    """Create the three demo accounts that do not exist yet, each with a fresh random password."""
    out = []
    for username, role in DEMO_ACCOUNTS:
        with transaction.atomic():
            user = User.objects.select_for_update().filter(username=username).first()
            if user is not None:
                out.append(DemoAccount(username, role, None))
                continue
            password = secrets.token_urlsafe(12)
            User.objects.create_user(username=username, password=password, role=role)
            out.append(DemoAccount(username, role, password))
    return out
