"""The job runner: claim a Job row, run its kind, report progress, heartbeat, honour cancel.

Claims are compare-and-swap updates on the row (Healthchecks' ``sendalerts`` habit): a message
delivered twice, or to a second worker after the first died, is run at most once at a time, and a
finished job is never run again. A job whose worker vanished (no heartbeat for
JOB_STALE_AFTER_SECONDS, or its process is gone on this host) is put back on its queue by
``requeue_stale_jobs``, up to JOB_MAX_ATTEMPTS attempts in all.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import threading
import traceback
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import psutil
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import IntegrityError, OperationalError, connection, transaction
from django.db.models import F, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from console import job_kinds
from console.models import Job, JobEffect, JobStatus
from console.services import job_broadcast, job_log_broadcast, job_requeue

log = logging.getLogger(__name__)


class JobCancelled(Exception):
    """Raised inside a job at a progress point after someone asked to cancel it."""


class JobLost(Exception):
    """This worker no longer holds the job's claim (it was requeued or finished elsewhere)."""


def worker_identity() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class JobContext:
    """What a job kind's function gets: progress, log, idempotent effects, the data directory."""

    def __init__(self, job: Job, worker: str):
        self.job_id = job.id
        self.kind = job.kind
        self.attempt = job.attempts
        self.worker = worker
        self._last_history: tuple[float, str] | None = None

    @property
    def data_dir(self) -> Path:
        return Path(settings.FLYWHEEL_DATA_DIR)

    def progress(self, fraction: float, message: str = "") -> None:
        """Record progress in [0, 1]; the point where a cancel request stops the job."""
        fraction = min(1.0, max(0.0, float(fraction)))
        message = message[:500]
        entry = [timezone.now().isoformat(), round(fraction, 4), message]
        last = self._last_history
        keep = last is None or message != last[1] or fraction - last[0] >= 0.01 or fraction == 1.0
        with connection.cursor() as cursor:
            cursor.execute(
                """
                UPDATE console_job
                   SET progress = %s, message = %s, heartbeat_at = now(),
                       progress_history = CASE WHEN %s THEN progress_history || %s::jsonb
                                               ELSE progress_history END
                 WHERE id = %s AND status = 'running' AND claimed_by = %s
             RETURNING cancel_requested
                """,
                [fraction, message, keep, json.dumps([entry]), self.job_id, self.worker],
            )
            row = cursor.fetchone()
        if row is None:
            raise JobLost(f"job {self.job_id} is no longer claimed by {self.worker}")
        if keep:
            self._last_history = (fraction, message)
        job_broadcast(job=Job.objects.select_related("created_by").get(id=self.job_id),
                      history_entry=entry if keep else None)
        if row[0]:
            raise JobCancelled()

    def log(self, line: str) -> None:
        """Append a line to the job's log tail (the last JOB_LOG_TAIL_CHARS characters are kept)."""
        text = line.rstrip("\n") + "\n"
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE console_job SET log_tail = right(log_tail || %s, %s) WHERE id = %s AND claimed_by = %s",
                [text, settings.JOB_LOG_TAIL_CHARS, self.job_id, self.worker],
            )
        job_log_broadcast(job_id=self.job_id, text=text)

    def effect_done(self, key: str) -> bool:
        return JobEffect.objects.filter(job_id=self.job_id, key=key).exists()

    @contextlib.contextmanager
    def effect_once(self, key: str) -> Iterator[bool]:
        """Perform a side effect once per job across attempts: yields True the first time only.

        The key is committed together with whatever the block writes to the database, so database
        effects happen exactly once; a file written in the block could be repeated only if the
        process dies between writing it and the commit.
        """
        with transaction.atomic():
            try:
                with transaction.atomic():
                    JobEffect.objects.create(job_id=self.job_id, key=key)
                first = True
            except IntegrityError:
                first = False
            yield first


def claim(job_id: Any, worker: str) -> Job | None:
    """Take the job for ``worker`` if it is queued, or running but abandoned; else None."""
    now = timezone.now()
    stale = now - timedelta(seconds=settings.JOB_STALE_AFTER_SECONDS)
    claimable = Q(status=JobStatus.QUEUED) | Q(status=JobStatus.RUNNING, heartbeat_at__lt=stale)
    dead_owner = _dead_local_owner(job_id)
    if dead_owner:
        claimable |= Q(status=JobStatus.RUNNING, claimed_by=dead_owner)
    updated = (
        Job.objects.filter(claimable, id=job_id, attempts__lt=settings.JOB_MAX_ATTEMPTS, cancel_requested=False)
        .update(
            status=JobStatus.RUNNING, attempts=F("attempts") + 1, claimed_by=worker, heartbeat_at=now,
            started_at=Coalesce("started_at", now), message="started",
        )
    )
    if updated != 1:
        return None
    return Job.objects.select_related("created_by").get(id=job_id)


def _dead_local_owner(job_id: Any) -> str:
    owner = Job.objects.filter(id=job_id, status=JobStatus.RUNNING).values_list("claimed_by", flat=True).first()
    if owner and _owner_is_dead(owner):
        return owner
    return ""


def _owner_is_dead(owner: str) -> bool:
    """True when ``owner`` names a process on this host that no longer runs."""
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        return psutil.Process(int(pid)).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _finish(job_id: Any, worker: str, **fields: Any) -> bool:
    fields.setdefault("finished_at", timezone.now())
    fields["heartbeat_at"] = timezone.now()
    updated = Job.objects.filter(id=job_id, status=JobStatus.RUNNING, claimed_by=worker).update(**fields)
    if updated:
        job_broadcast(job=Job.objects.select_related("created_by").get(id=job_id))
    return bool(updated)


def _give_up_if_exhausted(job_id: Any) -> None:
    stale = timezone.now() - timedelta(seconds=settings.JOB_STALE_AFTER_SECONDS)
    updated = Job.objects.filter(
        Q(status=JobStatus.QUEUED) | Q(status=JobStatus.RUNNING, heartbeat_at__lt=stale),
        id=job_id, attempts__gte=settings.JOB_MAX_ATTEMPTS,
    ).update(
        status=JobStatus.FAILED, finished_at=timezone.now(),
        error=f"gave up after {settings.JOB_MAX_ATTEMPTS} attempts (its worker was lost each time)",
    )
    if updated:
        job_broadcast(job=Job.objects.select_related("created_by").get(id=job_id))


class _Heartbeat(threading.Thread):
    """Keeps the job's heartbeat fresh while a long step runs between progress points."""

    def __init__(self, job_id: Any, worker: str):
        super().__init__(daemon=True, name=f"heartbeat-{job_id}")
        self.job_id, self.worker = job_id, worker
        self.stopped = threading.Event()

    def run(self) -> None:
        try:
            while not self.stopped.wait(settings.JOB_HEARTBEAT_SECONDS):
                Job.objects.filter(id=self.job_id, status=JobStatus.RUNNING, claimed_by=self.worker).update(
                    heartbeat_at=timezone.now()
                )
        except Exception:  # noqa: BLE001  (the job itself reports real failures)
            log.warning("heartbeat of job %s stopped", self.job_id, exc_info=True)
        finally:
            connection.close()


def run_job(job_id: Any, *, task: Any = None) -> None:
    """Run the job ``job_id`` if this worker can claim it. Safe to call for any id, any number of times."""
    worker = worker_identity()
    try:
        job = claim(job_id, worker)
    except OperationalError as exc:
        # The database is unreachable: the one error worth retrying, with a bound.
        if task is not None:
            raise task.retry(exc=exc, countdown=5) from exc
        raise
    if job is None:
        _give_up_if_exhausted(job_id)
        log.info("job %s not claimed by %s (finished, running elsewhere, or gone)", job_id, worker)
        return
    job_broadcast(job=job)
    spec = job_kinds.get(job.kind)
    from workers.kinds import runner_for

    ctx = JobContext(job, worker)
    heartbeat = _Heartbeat(job.id, worker)
    heartbeat.start()
    try:
        config = spec.validate(job.config)
        result = runner_for(job.kind)(ctx, config)
    except JobCancelled:
        _finish(job.id, worker, status=JobStatus.CANCELLED, message="cancelled")
    except JobLost:
        log.warning("job %s was taken from %s while running", job.id, worker)
    except SoftTimeLimitExceeded:
        _finish(job.id, worker, status=JobStatus.FAILED, error=f"time limit of {spec.time_limit_s}s exceeded")
    except Exception as exc:  # noqa: BLE001  (any failure of the job's own code fails the job)
        ctx.log(traceback.format_exc())
        _finish(job.id, worker, status=JobStatus.FAILED, error=f"{type(exc).__name__}: {exc}")
    else:
        _finish(job.id, worker, status=JobStatus.SUCCEEDED, progress=1.0, message="done",
                result=result if result is not None else {})
    finally:
        heartbeat.stopped.set()
        heartbeat.join(timeout=5)


def requeue_stale_jobs() -> int:
    """Put jobs whose worker vanished back on their queue (or fail them when out of attempts)."""
    stale = timezone.now() - timedelta(seconds=settings.JOB_STALE_AFTER_SECONDS)
    count = 0
    running = Job.objects.filter(status=JobStatus.RUNNING).only(
        "id", "kind", "claimed_by", "heartbeat_at", "attempts", "cancel_requested"
    )
    for job in running:
        abandoned = (job.heartbeat_at is not None and job.heartbeat_at < stale) or _owner_is_dead(job.claimed_by)
        if not abandoned:
            continue
        if job.cancel_requested:
            updated = Job.objects.filter(id=job.id, status=JobStatus.RUNNING, claimed_by=job.claimed_by).update(
                status=JobStatus.CANCELLED, finished_at=timezone.now(), message="cancelled (its worker was lost)",
            )
        elif job.attempts >= settings.JOB_MAX_ATTEMPTS:
            updated = Job.objects.filter(id=job.id, status=JobStatus.RUNNING, claimed_by=job.claimed_by).update(
                status=JobStatus.FAILED, finished_at=timezone.now(),
                error=f"gave up after {job.attempts} attempts (its worker was lost each time)",
            )
        else:
            updated = Job.objects.filter(id=job.id, status=JobStatus.RUNNING, claimed_by=job.claimed_by).update(
                status=JobStatus.QUEUED, claimed_by="", message=f"requeued: worker {job.claimed_by} was lost",
            )
            if updated:
                job_requeue(job=job)
        if updated:
            count += 1
            job_broadcast(job=Job.objects.select_related("created_by").get(id=job.id))
    return count
