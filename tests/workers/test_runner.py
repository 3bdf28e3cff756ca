"""The runner's compare-and-swap claims, requeue of abandoned jobs, and the prune job's policy.

These call runner functions directly in the test process (no worker): they test the functions.
"""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from console.models import Job, JobStatus
from tests import factories
from workers import runner


def test_only_one_claim_wins(db):
    job = factories.job_create()
    assert runner.claim(job.id, "host:1") is not None
    assert runner.claim(job.id, "host:2") is None
    job.refresh_from_db()
    assert job.claimed_by == "host:1" and job.attempts == 1 and job.status == JobStatus.RUNNING


def test_abandoned_running_job_can_be_claimed_again(db, settings):
    job = factories.job_create(status=JobStatus.RUNNING, claimed_by="elsewhere:1", attempts=1,
                               heartbeat_at=timezone.now() - timedelta(seconds=settings.JOB_STALE_AFTER_SECONDS + 5))
    claimed = runner.claim(job.id, "host:2")
    assert claimed is not None and claimed.attempts == 2


def test_finished_job_is_never_run_again(db, data_dir):
    job = factories.job_create(status=JobStatus.SUCCEEDED, result={"ok": 1})
    runner.run_job(job.id)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and job.attempts == 0 and job.result == {"ok": 1}


def test_run_job_runs_a_queued_job_to_success(db, data_dir):
    job = factories.job_create(config={"seconds": 0, "steps": 3, "marker": "unit"})
    runner.run_job(job.id)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and job.progress == 1.0
    assert [h[2] for h in job.progress_history] == ["step 1 of 3", "step 2 of 3", "step 3 of 3"]
    runner.run_job(job.id)  # a redelivered message changes nothing
    assert len((data_dir / "demo" / "unit.log").read_text().splitlines()) == 4


def test_unknown_job_id_is_ignored(db):
    runner.run_job("00000000-0000-4000-8000-000000000000")
    assert Job.objects.count() == 0


def test_requeue_gives_up_after_max_attempts(db, settings):
    old = timezone.now() - timedelta(seconds=settings.JOB_STALE_AFTER_SECONDS + 5)
    retry = factories.job_create(status=JobStatus.RUNNING, claimed_by="gone:1", attempts=1, heartbeat_at=old)
    spent = factories.job_create(status=JobStatus.RUNNING, claimed_by="gone:2",
                                 attempts=settings.JOB_MAX_ATTEMPTS, heartbeat_at=old)
    fresh = factories.job_create(status=JobStatus.RUNNING, claimed_by="busy:3", attempts=1,
                                 heartbeat_at=timezone.now())
    assert runner.requeue_stale_jobs() == 2
    retry.refresh_from_db()
    spent.refresh_from_db()
    fresh.refresh_from_db()
    assert retry.status == JobStatus.QUEUED and retry.claimed_by == ""
    assert spent.status == JobStatus.FAILED and "gave up" in spent.error
    assert fresh.status == JobStatus.RUNNING


def test_cancel_requested_is_honoured_at_next_progress_point(db, data_dir):
    job = factories.job_create(config={"seconds": 0, "steps": 5})
    claimed = runner.claim(job.id, runner.worker_identity())
    Job.objects.filter(id=job.id).update(cancel_requested=True)
    ctx = runner.JobContext(claimed, runner.worker_identity())
    with pytest.raises(runner.JobCancelled):
        ctx.progress(0.2, "first step")


def _touch(path: Path, age_days: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("x" * 10)
    then = time.time() - age_days * 86400
    os.utime(path, (then, then))


def test_prune_deletes_only_expired_scratch_files_and_old_log_tails(db, data_dir):
    _touch(data_dir / "tmp" / "old.bin", 10)
    _touch(data_dir / "exports" / "nested" / "old.jsonl", 30)
    _touch(data_dir / "tmp" / "new.bin", 1)
    _touch(data_dir / "checkpoints" / "ancient.pt", 400)
    outside = data_dir.parent / f"{data_dir.name}-outside.txt"
    _touch(outside, 400)
    (data_dir / "tmp" / "link").symlink_to(outside)
    old_job = factories.job_create(status=JobStatus.SUCCEEDED, log_tail="old log",
                                   finished_at=timezone.now() - timedelta(days=40))
    new_job = factories.job_create(status=JobStatus.SUCCEEDED, log_tail="new log", finished_at=timezone.now())
    prune = factories.job_create(kind="maintenance.prune", config={})
    runner.run_job(prune.id)
    prune.refresh_from_db()
    assert prune.status == JobStatus.SUCCEEDED, prune.error
    assert prune.result == {"deleted_files": 2, "freed_bytes": 20, "cleared_log_tails": 1, "dry_run": False}
    assert not (data_dir / "tmp" / "old.bin").exists() and not (data_dir / "exports" / "nested").exists()
    assert (data_dir / "tmp" / "new.bin").exists() and (data_dir / "checkpoints" / "ancient.pt").exists()
    assert outside.exists()
    old_job.refresh_from_db()
    new_job.refresh_from_db()
    assert old_job.log_tail == "" and new_job.log_tail == "new log"


def test_prune_dry_run_deletes_nothing(db, data_dir):
    _touch(data_dir / "tmp" / "old.bin", 10)
    prune = factories.job_create(kind="maintenance.prune", config={"dry_run": True})
    runner.run_job(prune.id)
    prune.refresh_from_db()
    assert prune.result["deleted_files"] == 1 and (data_dir / "tmp" / "old.bin").exists()
