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
    care_points = [json.loads(line) for line in (_run_dir(care.id) / "metrics.jsonl").read_text().splitlines()]
    assert [p["step"] for p in care_points] == [1]
    assert len(care_points[0]["competence_hist"]) == 10 and sum(care_points[0]["competence_hist"]) >= 1
    assert {"reward", "success", "output_tokens", "tool_calls", "kl", "loss"} <= set(care_points[0])
    child = Checkpoint.objects.get(job=care)
    assert child.kind == "care" and child.parent_id == ckpt.id
    ckpt.refresh_from_db()
    assert ckpt.scores["job"] == str(evals[0].id) and "overall" in ckpt.scores["mean"]
    from harness.version import HarnessVersion

    assert ckpt.scores["harness"] == HarnessVersion.default().id  # shown in the comparison row
    from django.test import Client

    from console.models import Role
    from tests import factories

    browser = Client()
    browser.force_login(factories.user_create(role=Role.ANALYST))
    markdown = browser.get("/training/compare.md").content.decode()
    assert f"| {ckpt.name} | sft |" in markdown and "| reference solver | reference | 100.00 ± 0.00" in markdown


def test_endpoint_evaluation_of_a_served_checkpoint_matches_in_process(db, data_dir):
    """A checkpoint behind a vLLM-like completions server scores exactly as the same checkpoint in-process."""
    from dataclasses import asdict

    from ml.backends import TransformersPlanner
    from ml.chat import ChatFormat
    from ml.model import ModelConfig, build_model, save_checkpoint
    from ml.tokenizer import TokenizerConfig, build_tokenizer
    from tests.openai_standin import OpenAIStandIn, served_checkpoint

    tokenizer = build_tokenizer(TokenizerConfig(vocab_size=1024, seeds=1))
    model = build_model(ModelConfig(hidden_size=64, intermediate_size=128, num_layers=2, num_heads=4,
                                    num_kv_heads=2, max_positions=1024), tokenizer)
    save_checkpoint(model, tokenizer, data_dir / "checkpoints/served/last",
                    card={"config": {"chat": asdict(ChatFormat(max_new_tokens=24))}})
    ckpt = Checkpoint.objects.create(name="served", path="checkpoints/served/last", kind="sft")
    small = {"seeds": 1, "per_category": 1, "batch_size": 8}
    in_process = _run_here(services.job_enqueue(kind="train.evaluate", config={**small, "checkpoint": str(ckpt.id)},
                                                created_by=None))
    local = TransformersPlanner.from_pretrained(data_dir / ckpt.path)
    with OpenAIStandIn(respond=served_checkpoint(local)) as endpoint:
        served = _run_here(services.job_enqueue(kind="train.evaluate", config={
            **small, "checkpoint": "endpoint", "endpoint_url": endpoint.url, "endpoint_model": "flywheel",
            "endpoint_checkpoint": str(ckpt.id)}, created_by=None))
    assert served.status == JobStatus.SUCCEEDED, (served.error, served.log_tail[-2000:])
    assert len(endpoint.requests) >= 4 and all(r["model"] == "flywheel" for r in endpoint.requests)
    assert served.result["endpoint"]["checkpoint"] == str(ckpt.id)
    keys = ("overall", "tool_use", "memory", "skills", "sub_agent", "mean_model_tokens", "mean_tool_calls")
    assert {k: served.result["mean"][k] for k in keys} == {k: in_process.result["mean"][k] for k in keys}
    assert served.result["mean"]["mean_model_tokens"] > 0


def test_metrics_points_keep_numbers_and_lists_of_numbers(db):
    from workers.kinds.training import _Metrics
    from workers.runner import JobContext

    job = Job.objects.create(kind="train.care", queue="train", status=JobStatus.RUNNING, claimed_by="here",
                             attempts=2)
    metrics = _Metrics(JobContext(job, "here"), _run_dir(job.id), 4, "iteration")
    metrics({"iteration": 1, "mode": "care", "success": 0.5, "reward": 0.25, "pg_loss": -0.1, "kl": 0.01,
             "competence_hist": [1, 0, 0, 0, 0, 2, 0, 0, 0, 1], "schedules": {"balanced": 2}})
    (point,) = [json.loads(line) for line in (_run_dir(job.id) / "metrics.jsonl").read_text().splitlines()]
    assert point["step"] == 1 and point["attempt"] == 2 and point["loss"] == -0.1 and point["success"] == 0.5
    assert point["competence_hist"] == [1, 0, 0, 0, 0, 2, 0, 0, 0, 1] and "schedules" not in point
    job.refresh_from_db()
    assert job.message == "iteration 1/4 loss -0.1000" and job.progress == pytest.approx(0.05 + 0.9 / 4)


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


# Evaluations of an endpoint model and under another harness. These call the worker's entry point
# (``runner.run_job``: claim, config validated again from the stored row, run, result) in the test
# process against a local OpenAI-compatible stand-in, so each takes seconds.

SMALL_EVAL = {"seeds": 3, "per_category": 1, "batch_size": 8}


def _run_here(job: Job) -> Job:
    from workers import runner

    runner.run_job(job.id)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, (job.error, job.log_tail[-2000:])
    return job


def test_endpoint_evaluation_is_compared_and_exported_and_never_shows_its_key(db, data_dir, client):
    import csv
    import io
    import uuid

    from console.models import Role
    from console.selectors.training import compare_rows
    from harness.version import HarnessVersion
    from tests import factories
    from tests.openai_standin import OpenAIStandIn

    manager = factories.user_create(role=Role.MANAGER)
    client.force_login(manager)
    secret = f"sk-test-{uuid.uuid4().hex}"
    with OpenAIStandIn() as endpoint:
        config = {**SMALL_EVAL, "checkpoint": "endpoint", "endpoint_url": endpoint.url, "endpoint_model": "stand-in-7b",
                  "endpoint_key": secret, "price_per_million_output_tokens": 2.0}
        job = _run_here(services.job_enqueue(kind="train.evaluate", config=config, created_by=manager))
        first_requests = len(endpoint.requests)
        terse = {"name": "terse", "policy": "Answer the user in one word."}
        again = _run_here(services.job_enqueue(
            kind="train.evaluate", config={**config, "seeds": 1, "harness_version": terse}, created_by=manager))

    # The endpoint got the key as a bearer token and the model name, for every episode of 3 seeds x 4 categories.
    assert first_requests >= 12
    assert all(r["auth"] == f"Bearer {secret}" and r["model"] == "stand-in-7b" for r in endpoint.requests)
    result = job.result
    assert result["checkpoint"] == "endpoint" and result["endpoint"] == {"url": endpoint.url, "model": "stand-in-7b"}
    assert len(result["per_seed"]) == 3
    assert {"overall", "tool_use", "memory", "skills", "sub_agent"} <= set(result["std"])
    tokens = result["mean"]["mean_model_tokens"]  # the stand-in's usage.completion_tokens, 7 per turn
    assert tokens >= 7.0 and tokens * 12 == pytest.approx(7.0 * first_requests)
    assert result["mean"]["cost_per_1k_tasks"] == pytest.approx(tokens * 1000 * 2.0 / 1e6)
    assert result["harness"] == HarnessVersion.default().id

    # The harness override reached the planner (its policy is the system message) and changed the recorded id.
    assert all(r["messages"][0]["content"] == terse["policy"] for r in endpoint.requests[first_requests:])
    assert again.result["harness"] == HarnessVersion.from_dict(terse).id != HarnessVersion.default().id

    # The key is stored only sealed, and shows nowhere: job rows, results, logs, pages, API, exports.
    assert job.config["endpoint_key"].startswith("sealed:") and job.config["endpoint_url"] == endpoint.url
    shown = [json.dumps(j.config) + json.dumps(j.result) + j.log_tail + j.message + j.error for j in (job, again)]
    for url in ("/training/", job.get_absolute_url(), f"/api/jobs/{job.id}/", "/api/jobs/", "/training/compare.md",
                "/training/compare.csv"):
        response = client.get(url)
        assert response.status_code == 200, url
        shown.append(response.content.decode())
    assert not [text for text in shown if secret in text]

    # One comparison row per (url, model): its latest evaluation, named after the model, with its harness id.
    (row,) = [r for r in compare_rows() if r["kind"] == "endpoint"]
    assert row["name"] == "stand-in-7b" and row["url"] == endpoint.url and row["harness"] == again.result["harness"]
    assert row["cells"][0]["mean"] == again.result["mean"]["overall"]
    page = client.get("/training/").content.decode()
    assert "stand-in-7b" in page and again.result["harness"] in page
    markdown = client.get("/training/compare.md").content.decode().splitlines()
    line = next(m for m in markdown if m.startswith("| stand-in-7b | endpoint | "))
    assert line.endswith(f" | {again.result['harness']} |") and markdown[0].endswith("| Harness |")
    rows = list(csv.DictReader(io.StringIO(client.get("/training/compare.csv").content.decode())))
    (mine,) = [r for r in rows if r["kind"] == "endpoint"]
    assert mine["planner"] == "stand-in-7b" and mine["endpoint_url"] == endpoint.url
    assert mine["harness"] == again.result["harness"] and float(mine["overall_mean"]) == again.result["mean"]["overall"]


def test_reference_evaluation_records_its_harness_version(db, data_dir):
    from console.selectors.training import compare_rows, paired_rows
    from harness.version import HarnessVersion

    memory_always = {"name": "memory-always", "offer_memory": "always"}
    job = _run_here(services.job_enqueue(kind="train.evaluate", config={
        "checkpoint": "reference", "seeds": 1, "per_category": 1, "harness_version": memory_always}, created_by=None))
    assert job.result["harness"] == HarnessVersion.from_dict(memory_always).id != HarnessVersion.default().id
    assert job.result["mean"]["overall"] == 100.0
    (row,) = [r for r in compare_rows() if r["kind"] == "reference"]
    assert row["harness"] == job.result["harness"]
    # the stored result keeps each task's outcome, so the comparison can pair it with another evaluation
    assert len(job.result["tasks"]) == 4 and all(t["solved"] for t in job.result["tasks"])
    rows = compare_rows()
    paired_rows(rows, "reference")
    (paired,) = [r for r in rows if r["kind"] == "reference"]
    assert paired["paired_note"] == "baseline" and row["job"] == str(job.id)
