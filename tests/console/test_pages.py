"""Console pages: the jobs list with filters, the start form's errors, job detail, 404s."""

from __future__ import annotations

import uuid

import pytest

from console.models import Job, JobStatus, Role
from tests import factories


@pytest.fixture
def manager_client(client, db):
    user = factories.user_create(role=Role.MANAGER)
    client.force_login(user)
    client.user = user
    return client


def test_jobs_page_lists_and_filters(manager_client):
    done = factories.job_create(status=JobStatus.SUCCEEDED, created_by=manager_client.user)
    queued = factories.job_create(kind="maintenance.prune", config={})
    html = manager_client.get("/jobs/").content.decode()
    assert str(done.id) in html and str(queued.id) in html
    html = manager_client.get("/jobs/?status=succeeded").content.decode()
    assert str(done.id) in html and str(queued.id) not in html
    html = manager_client.get("/jobs/?kind=maintenance.prune").content.decode()
    assert str(queued.id) in html and str(done.id) not in html
    html = manager_client.get("/jobs/?mine=1").content.decode()
    assert str(done.id) in html and str(queued.id) not in html
    assert "No jobs match these filters" in manager_client.get("/jobs/?status=failed").content.decode()


def test_start_form_shows_field_errors_and_keeps_input(manager_client):
    response = manager_client.post("/jobs/start/", {"kind": "demo.sleep", "config": '{"seconds": -3}'})
    assert response.status_code == 400
    html = response.content.decode()
    assert "seconds: must be at least 0." in html
    assert "-3" in html
    assert Job.objects.count() == 0


def test_start_form_rejects_malformed_json(manager_client):
    response = manager_client.post("/jobs/start/", {"kind": "demo.sleep", "config": '{"seconds": '})
    assert response.status_code == 400
    assert "Not valid JSON" in response.content.decode()


def test_start_form_creates_job_and_redirects_to_it(manager_client):
    response = manager_client.post("/jobs/start/", {"kind": "demo.sleep", "config": '{"seconds": 1}'})
    job = Job.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/jobs/{job.id}/"
    assert job.config["seconds"] == 1.0 and job.created_by == manager_client.user


def test_job_detail_shows_status_config_history_log_and_result(manager_client):
    job = factories.job_create(status=JobStatus.SUCCEEDED, result={"answer": 42}, log_tail="line one\n",
                               progress=1.0, progress_history=[["2026-01-01T00:00:00", 0.5, "halfway"]])
    html = manager_client.get(f"/jobs/{job.id}/").content.decode()
    for text in ("succeeded", "&quot;answer&quot;: 42", "line one", "halfway", "100%", "&quot;seconds&quot;"):
        assert text in html
    assert 'data-testid="cancel-job"' not in html  # finished jobs cannot be cancelled


def test_unknown_job_page_is_404(manager_client):
    assert manager_client.get(f"/jobs/{uuid.uuid4()}/").status_code == 404
    assert manager_client.get("/jobs/not-a-uuid/").status_code == 404


def test_cancel_button_only_for_managers(client, db):
    job = factories.job_create(status=JobStatus.RUNNING)
    for role, shown in ((Role.MANAGER, True), (Role.ANALYST, False), (Role.ANNOTATOR, False)):
        client.force_login(factories.user_create(role=role))
        assert ('data-testid="cancel-job"' in client.get(f"/jobs/{job.id}/").content.decode()) is shown


def test_static_files_are_served_with_debug_off(client, settings):
    settings.DEBUG = False
    response = client.get("/static/console/app.js")
    assert response.status_code == 200
    assert b"WebSocket" in b"".join(response.streaming_content)
