"""Training jobs on real Celery worker subprocesses: a tiny SFT run registers a loadable checkpoint;
a ``kill -9`` of the training worker after its first saved checkpoint resumes there on a new worker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.conf import settings

from console import services
from console.models import Checkpoint, Job, JobStatus
from tests.processes import wait_for

pytestmark = [pytest.mark.slow]

TINY = {"model_size": "tiny", "reference_seeds": 1, "batch_rows": 2, "warmup_steps": 1, "threads": 1}


def _finished(job_id) -> Job | None:
    job = Job.objects.get(id=job_id)
    return job if job.is_terminal else None


def _run_dir(job_id) -> Path:
    return Path(settings.FLYWHEEL_DATA_DIR) / "checkpoints" / str(job_id)


def test_tiny_sft_job_registers_a_loadable_checkpoint(worker):
    import torch

    from ml.model import load_checkpoint

    job = services.job_enqueue(kind="train.sft", config={**TINY, "max_steps": 6, "save_every": 3, "log_every": 1},
                               created_by=None)
    done = wait_for(lambda: _finished(job.id), timeout=240, what="tiny SFT job")
    assert done.status == JobStatus.SUCCEEDED, (done.error, done.log_tail[-2000:])
    assert done.result["steps"] == 6 and done.result["start_step"] == 0
    ckpt = Checkpoint.objects.get(job=done)
    assert ckpt.kind == "sft" and ckpt.parent is None and ckpt.dataset is None
    assert str(ckpt.id) == done.result["checkpoint"]
    assert ckpt.path == f"checkpoints/{job.id}/last"
    model, tokenizer = load_checkpoint(Path(settings.FLYWHEEL_DATA_DIR) / ckpt.path)
    ids = torch.tensor([tokenizer.encode("hello")])
    assert model(input_ids=ids).logits.shape[-1] >= len(tokenizer)
    points = [json.loads(line) for line in (_run_dir(job.id) / "metrics.jsonl").read_text().splitlines()]
    assert [p["step"] for p in points] == [1, 2, 3, 4, 5, 6]

    # Then CARE from it, and evaluations of it and of the reference solver; the comparison exports them.
    care = services.job_enqueue(kind="train.care", config={
        "init_checkpoint_id": str(ckpt.id), "iterations": 1, "tasks_per_iter": 2, "group_size": 2, "save_every": 1,
        "threads": 1}, created_by=None)
    tiny_eval = {"seeds": 1, "per_category": 1, "batch_size": 8}
    evals = [services.job_enqueue(kind="train.evaluate", config={**tiny_eval, "checkpoint": target}, created_by=None)
             for target in (str(ckpt.id), "reference")]
    for job in (care, *evals):
        done = wait_for(lambda job=job: _finished(job.id), timeout=240, what=f"{job.kind} job")
        assert done.status == JobStatus.SUCCEEDED, (done.kind, done.error, done.log_tail[-2000:])
    child = Checkpoint.objects.get(job=care)
    assert child.kind == "care" and child.parent_id == ckpt.id
    ckpt.refresh_from_db()
    assert ckpt.scores["job"] == str(evals[0].id) and "overall" in ckpt.scores["mean"]
    from django.test import Client

    from console.models import Role
    from tests import factories

    browser = Client()
    browser.force_login(factories.user_create(role=Role.ANALYST))
    markdown = browser.get("/training/compare.md").content.decode()
    assert f"| {ckpt.name} | sft |" in markdown and "| reference solver | reference | 100.00 ± 0.00" in markdown


def test_kill_9_of_training_worker_resumes_from_checkpoint(worker_factory):
    steps, save_every = 400, 20
    job = services.job_enqueue(kind="train.sft", config={**TINY, "max_steps": steps, "save_every": save_every,
                                                         "log_every": 5}, created_by=None)
    first = worker_factory("doomed-trainer")
    state = _run_dir(job.id) / "last" / "trainer_state.pt"
    wait_for(state.exists, timeout=240, what="first saved checkpoint")
    first.kill9()
    assert Job.objects.get(id=job.id).status == JobStatus.RUNNING, "finished before the kill: make the run longer"
    worker_factory("rescuer-trainer")
    done = wait_for(lambda: _finished(job.id), timeout=300, what="resumed training job")
    assert done.status == JobStatus.SUCCEEDED, (done.error, done.log_tail[-2000:])
    assert done.attempts == 2
    assert done.result["start_step"] >= save_every and done.result["start_step"] % save_every == 0
    assert done.result["steps"] == steps
    assert Checkpoint.objects.filter(job=done).count() == 1
    points = [json.loads(line) for line in (_run_dir(job.id) / "metrics.jsonl").read_text().splitlines()]
    second = [p["step"] for p in points if p["attempt"] == 2]
    assert second and second[0] > done.result["start_step"] > 0  # the new worker did not restart at step 0
    assert second[-1] == steps
    assert f"starting at step {done.result['start_step']}" in done.log_tail


def test_cancel_stops_a_training_run_without_registering_a_checkpoint(worker):
    from console.models import Role
    from tests import factories

    manager = factories.user_create(role=Role.MANAGER)
    job = services.job_enqueue(kind="train.sft", config={**TINY, "max_steps": 5000, "log_every": 5},
                               created_by=manager)
    metrics = _run_dir(job.id) / "metrics.jsonl"
    wait_for(metrics.exists, timeout=240, what="first metrics point")
    services.job_cancel(job=Job.objects.get(id=job.id), by=manager)
    done = wait_for(lambda: _finished(job.id), timeout=120, what="cancelled training run")
    assert done.status == JobStatus.CANCELLED
    assert not Checkpoint.objects.filter(job=done).exists()
