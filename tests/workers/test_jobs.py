"""Jobs on a real Celery worker subprocess: progress over websockets, kill -9, cancel, failure."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client
from websockets.sync.client import connect

from console import services
from console.models import Job, JobStatus, Role
from tests import factories
from tests.processes import wait_for

pytestmark = [pytest.mark.slow]


def _job(job_id) -> Job:
    return Job.objects.get(id=job_id)


def _finished(job_id) -> Job | None:
    job = _job(job_id)
    return job if job.is_terminal else None


def test_worker_runs_demo_sleep_and_websocket_delivers_progress(worker_factory, daphne_url):
    manager = factories.user_create(role=Role.MANAGER)
    job = services.job_enqueue(kind="demo.sleep", config={"seconds": 2, "steps": 5}, created_by=manager)
    browser = Client()
    browser.force_login(manager)
    headers = {"Origin": daphne_url, "Cookie": f"sessionid={browser.cookies['sessionid'].value}"}
    seen: list[dict] = []
    logs: list[str] = []
    url = daphne_url.replace("http://", "ws://") + f"/ws/jobs/{job.id}/"
    with connect(url, additional_headers=headers, open_timeout=30) as ws:
        worker_factory()
        while not seen or seen[-1]["job"]["status"] not in ("succeeded", "failed", "cancelled"):
            message = json.loads(ws.recv(timeout=60))
            if message["type"] == "log":
                logs.append(message["text"])
            else:
                seen.append(message)
    progress = [m["job"]["progress"] for m in seen]
    assert seen[-1]["job"]["status"] == "succeeded"
    assert progress[-1] == 1.0
    assert any(0 < p < 1 for p in progress), progress
    assert progress == sorted(progress)
    assert [m["history"][2] for m in seen if m.get("history")][-1] == "step 5 of 5"
    stored = _job(job.id)
    assert stored.status == JobStatus.SUCCEEDED and stored.result["steps"] == 5
    assert "step 5/5" in stored.log_tail
    assert "step 5/5\n" in logs


def test_kill_9_mid_job_completes_once_without_duplicate_effects(worker_factory):
    marker = f"kill-{uuid.uuid4().hex[:8]}"
    steps = 8
    job = services.job_enqueue(kind="demo.sleep", config={"seconds": 6, "steps": steps, "marker": marker},
                               created_by=None)
    first = worker_factory("doomed")
    wait_for(lambda: _job(job.id).progress >= 0.25, what="first worker's progress")
    first.kill9()
    assert _job(job.id).status == JobStatus.RUNNING  # the dead worker could not finish it
    worker_factory("rescuer")
    done = wait_for(lambda: _finished(job.id), timeout=180, what="job completion after restart")
    assert done.status == JobStatus.SUCCEEDED, done.error
    assert done.attempts == 2
    lines = (Path(settings.FLYWHEEL_DATA_DIR) / "demo" / f"{marker}.log").read_text().splitlines()
    expected = [f"{job.id} step-{i}" for i in range(1, steps + 1)] + [f"{job.id} done"]
    assert lines == expected
    assert done.effects.count() == steps + 1


def test_cancel_stops_a_running_job(worker, client):
    manager = factories.user_create(role=Role.MANAGER)
    job = services.job_enqueue(kind="demo.sleep", config={"seconds": 120, "steps": 240}, created_by=manager)
    wait_for(lambda: _job(job.id).progress > 0, what="job to start")
    client.force_login(manager)
    response = client.post(f"/api/jobs/{job.id}/cancel/")
    assert response.status_code == 200
    assert response.json()["cancel_requested"] is True
    done = wait_for(lambda: _finished(job.id), what="cancelled job")
    assert done.status == JobStatus.CANCELLED
    assert done.progress < 1
    assert client.post(f"/api/jobs/{job.id}/cancel/").status_code == 409


def test_cancel_of_a_queued_job_is_immediate(transactional_db, client):
    manager = factories.user_create(role=Role.MANAGER)
    job = factories.job_create(created_by=manager)
    client.force_login(manager)
    assert client.post(f"/api/jobs/{job.id}/cancel/").json()["status"] == "cancelled"


def test_failing_job_is_recorded_as_failed(worker):
    job = services.job_enqueue(kind="demo.sleep", config={"seconds": 0.2, "steps": 4, "fail_at_step": 2},
                               created_by=None)
    done = wait_for(lambda: _finished(job.id), what="failed job")
    assert done.status == JobStatus.FAILED
    assert "demo failure at step 2" in done.error
    assert "Traceback" in done.log_tail


def test_healthz_reports_worker(worker, client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json()["worker"]["ok"] is True
