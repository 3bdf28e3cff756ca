"""Shared fixtures: real PostgreSQL and Redis (embedded under FLYWHEEL_VAR_DIR, or external via
DATABASE_URL / REDIS_URL), Celery worker and Daphne subprocesses the tests can kill.

Nothing here is autouse: tests that need no database (tests/harness, tests/devices) start nothing.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.db.backends.signals import connection_created
from django.dispatch import receiver

from tests import processes


@receiver(connection_created)
def _allow_purge(sender, connection, **kwargs):
    """Let this process empty append-only tables between tests (see migration 0003); the
    application never sets this, and tests of immutability switch it off again."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET flywheel.allow_purge = 'on'")


@pytest.fixture(scope="session")
def flywheel_services():
    """Start the embedded servers this environment relies on; stop at the end those we started."""
    from webapp.embedded import EmbeddedServices, ensure_for_environment

    started = ensure_for_environment()
    yield
    services = EmbeddedServices.default()
    if "redis" in started:
        services.redis.stop()
    if "postgres" in started:
        services.postgres.stop()


@pytest.fixture(scope="session")
def django_db_setup(flywheel_services, django_db_setup):
    """pytest-django's test database, created on the server flywheel_services made sure runs."""
    yield


@pytest.fixture
def data_dir(settings, tmp_path) -> Path:
    """FLYWHEEL_DATA_DIR (screens, checkpoints, exports) in this test's own temporary folder."""
    settings.FLYWHEEL_DATA_DIR = tmp_path
    return tmp_path


@pytest.fixture(scope="session")
def log_dir() -> Path:
    path = Path(settings.VAR_DIR) / "test-logs"
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def worker_factory(transactional_db, log_dir):
    """Start Celery worker subprocesses (against the test database); all are stopped afterwards."""
    started: list[processes.Proc] = []

    def start(name: str = "worker") -> processes.Proc:
        proc = processes.start_worker(f"{name}-{uuid.uuid4().hex[:6]}", log_dir)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.stop()


@pytest.fixture
def worker(worker_factory):
    return worker_factory()


@pytest.fixture(scope="session")
def daphne_url(django_db_setup, django_db_blocker, log_dir):
    """A Daphne subprocess serving HTTP and websockets from the test database."""
    proc, url = processes.start_daphne(log_dir)
    yield url
    proc.stop()
