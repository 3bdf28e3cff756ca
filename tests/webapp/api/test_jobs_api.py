"""The jobs API: creation with validated configs, clear 400/404 answers (never 500), tokens, schema."""

from __future__ import annotations

import uuid

import pytest
from rest_framework.test import APIClient

from console.models import Job, JobStatus, Role
from tests import factories


@pytest.fixture
def manager_api(db) -> APIClient:
    api = APIClient()
    api.force_authenticate(factories.user_create(role=Role.MANAGER))
    return api


def test_create_job_stores_typed_config_with_defaults(manager_api):
    response = manager_api.post("/api/jobs/", {"kind": "demo.sleep", "config": {"seconds": 3}}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "queued"
    assert body["config"] == {"seconds": 3.0, "steps": 10, "marker": None, "fail_at_step": None}
    assert Job.objects.get(id=body["id"]).created_by.role == "manager"


@pytest.mark.parametrize(
    ("config", "field", "words"),
    [
        ({"seconds": -1}, "seconds", "at least 0"),
        ({"seconds": "soon"}, "seconds", "must be a number"),
        ({"steps": 2.5}, "steps", "whole number"),
        ({"steps": True}, "steps", "whole number"),
        ({"marker": "../../etc"}, "marker", "letters, digits"),
        ({"colour": "red"}, "colour", "not a field"),
        ([1, 2], "config", "JSON object"),
    ],
)
def test_invalid_config_gets_field_errors(manager_api, config, field, words):
    response = manager_api.post("/api/jobs/", {"kind": "demo.sleep", "config": config}, format="json")
    assert response.status_code == 400
    errors = response.json()["config"]
    assert words in " ".join(errors[field])
    assert Job.objects.count() == 0


def test_unknown_kind_is_400_naming_known_kinds(manager_api):
    response = manager_api.post("/api/jobs/", {"kind": "demo.nap"}, format="json")
    assert response.status_code == 400
    message = response.json()["kind"][0]
    assert "demo.nap" in message and "demo.sleep" in message


def test_missing_kind_is_400(manager_api):
    response = manager_api.post("/api/jobs/", {}, format="json")
    assert response.status_code == 400
    assert "kind" in response.json()


def test_malformed_json_is_400_with_message(manager_api):
    response = manager_api.post("/api/jobs/", data='{"kind": "demo.sleep",', content_type="application/json")
    assert response.status_code == 400
    assert "not valid JSON" in response.json()["detail"]


@pytest.mark.parametrize("job_id", [str(uuid.uuid4()), "not-a-uuid", "1"])
def test_unknown_job_ids_are_404(manager_api, job_id):
    for response in (manager_api.get(f"/api/jobs/{job_id}/"), manager_api.post(f"/api/jobs/{job_id}/cancel/")):
        assert response.status_code == 404
        assert response.json()["detail"] == "No job with this id."


def test_bad_status_filter_is_400(manager_api):
    response = manager_api.get("/api/jobs/?status=sleeping")
    assert response.status_code == 400
    assert "status" in response.json()


def test_list_filters_and_paginates(manager_api, settings):
    factories.job_create(status=JobStatus.SUCCEEDED)
    factories.job_create(status=JobStatus.QUEUED, kind="maintenance.prune", config={})
    body = manager_api.get("/api/jobs/?status=succeeded").json()
    assert body["count"] == 1 and body["results"][0]["status"] == "succeeded"
    assert manager_api.get("/api/jobs/?kind=maintenance.prune").json()["count"] == 1
    assert {"count", "next", "previous", "results"} <= set(manager_api.get("/api/jobs/").json())


def test_token_authentication(db):
    user = factories.user_create(role=Role.ANALYST)
    api = APIClient()
    response = api.post("/api/token/", {"username": user.username, "password": factories.PASSWORD}, format="json")
    assert response.status_code == 200
    api.credentials(HTTP_AUTHORIZATION=f"Token {response.json()['token']}")
    me = api.get("/api/me/").json()
    assert me["username"] == user.username and me["role"] == "analyst" and me["can_run_jobs"] is False
    refused = api.post("/api/jobs/", {"kind": "demo.sleep"}, format="json")
    assert refused.status_code == 403
    assert refused.json()["detail"] == "Only managers can start or cancel jobs."


def test_wrong_password_gets_no_token(db):
    user = factories.user_create()
    response = APIClient().post("/api/token/", {"username": user.username, "password": "nope"}, format="json")
    assert response.status_code == 400


def test_schema_documents_job_endpoints(manager_api):
    response = manager_api.get("/api/schema/?format=json")
    assert response.status_code == 200
    paths = response.json()["paths"]
    assert {"/api/jobs/", "/api/jobs/{job_id}/", "/api/jobs/{job_id}/cancel/", "/api/me/"} <= set(paths)


def test_docs_page_uses_local_assets(manager_api):
    html = manager_api.get("/api/docs/").content.decode()
    assert "swagger-ui" in html
    assert "cdn." not in html and "unpkg" not in html


def test_anonymous_token_requests_are_throttled_in_redis(db, settings):
    from django.core.cache import cache

    cache.clear()
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK,
                               "DEFAULT_THROTTLE_RATES": {"anon": "3/minute", "user": "1000/minute"}}
    from rest_framework.settings import api_settings
    from rest_framework.throttling import SimpleRateThrottle

    SimpleRateThrottle.THROTTLE_RATES = api_settings.DEFAULT_THROTTLE_RATES
    try:
        api = APIClient(REMOTE_ADDR="203.0.113.9")
        codes = [api.post("/api/token/", {"username": "x", "password": "y"}).status_code for _ in range(5)]
        assert codes[:3] == [400, 400, 400] and codes[3] == 429
        assert any(key for key in cache._cache.get_client().scan_iter("flywheel:*throttle*"))
    finally:
        SimpleRateThrottle.THROTTLE_RATES = api_settings.DEFAULT_THROTTLE_RATES
        cache.clear()
