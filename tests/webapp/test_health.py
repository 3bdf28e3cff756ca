"""/healthz: 200 when database, Redis and a worker are up; 503 naming what is down."""

from __future__ import annotations

import json

import pytest
from django.db import OperationalError

from workers.liveness import KEY_PREFIX, redis_client


@pytest.fixture
def no_workers(db):
    client = redis_client()
    saved = {key: client.get(key) for key in client.scan_iter(match=f"{KEY_PREFIX}*")}
    for key in saved:
        client.delete(key)
    yield
    for key, value in saved.items():
        if value:
            client.set(key, value, ex=5)


@pytest.fixture
def one_worker(db):
    client = redis_client()
    client.set(KEY_PREFIX + "health-test", json.dumps({"name": "health-test"}), ex=60)
    yield
    client.delete(KEY_PREFIX + "health-test")


def test_all_up_is_200(client, one_worker):
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok" and body["database"]["ok"] and body["redis"]["ok"]
    assert "health-test" in body["worker"]["workers"]


def test_no_worker_is_503(client, no_workers):
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["worker"]["ok"] is False and response.json()["database"]["ok"] is True


def test_redis_down_is_503(client, one_worker, settings):
    settings.REDIS_URL = "redis://127.0.0.1:9/0"  # nothing listens on the discard port
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["redis"]["ok"] is False


def test_database_down_is_503(client, one_worker, monkeypatch):
    from django.db.backends.postgresql.base import DatabaseWrapper

    def refuse(self, *args, **kwargs):
        raise OperationalError("connection refused")

    response_ok = client.get("/healthz")
    assert response_ok.status_code == 200
    with monkeypatch.context() as patch:
        patch.setattr(DatabaseWrapper, "cursor", refuse)
        response = client.get("/healthz")
    assert response.status_code == 503
    assert "connection refused" in response.json()["database"]["error"]
