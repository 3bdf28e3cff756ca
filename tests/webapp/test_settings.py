"""Settings read the environment strictly: a bad value stops start-up naming the variable."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from tests.processes import BASE_DIR
from webapp.env import envbool, envint, envlist, envurl

STRONG_KEY = secrets.token_urlsafe(64)


def _start_django(env_overrides: dict[str, str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in env_overrides}
    env.update(env_overrides)
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); print('started')"],
        env=env | {"DJANGO_SETTINGS_MODULE": "webapp.settings"}, cwd=BASE_DIR, capture_output=True, text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("DEBUG", "maybe"),
        ("DEBUG", "2"),
        ("SECURE_COOKIES", "yes please"),
        ("JOB_MAX_ATTEMPTS", "three"),
        ("JOB_MAX_ATTEMPTS", "0"),
        ("API_PAGE_SIZE", "1.5"),
        ("CELERY_TASK_TIME_LIMIT", "-5"),
        ("JOB_STALE_AFTER_SECONDS", ""),
        ("DATABASE_URL", "mysql://root@localhost/flywheel"),
        ("REDIS_URL", "http://localhost:6379"),
        ("CELERY_BROKER_URL", "sqs://queue"),
        ("ALLOWED_HOSTS", "example.com,,other.com"),
        ("SECRET_KEY", "short"),
    ],
)
def test_bad_environment_value_names_the_variable(name, value):
    result = _start_django({name: value})
    if value == "":
        # An empty value means "use the default": start-up succeeds.
        assert result.returncode == 0, result.stderr
        return
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert name in result.stderr.splitlines()[-1], result.stderr[-500:]


def test_good_environment_starts():
    result = _start_django({"DEBUG": "false", "SECRET_KEY": STRONG_KEY, "JOB_MAX_ATTEMPTS": "5",
                            "ALLOWED_HOSTS": "flywheel.example.com"})
    assert result.returncode == 0, result.stderr
    assert "started" in result.stdout


@pytest.mark.parametrize(("raw", "expected"), [("true", True), ("False", False), ("1", True), ("off", False)])
def test_envbool_accepts_booleans(monkeypatch, raw, expected):
    monkeypatch.setenv("X_FLAG", raw)
    assert envbool("X_FLAG", not expected) is expected


def test_envbool_default_when_unset(monkeypatch):
    monkeypatch.delenv("X_FLAG", raising=False)
    assert envbool("X_FLAG", True) is True


@pytest.mark.parametrize("raw", ["ture", "y", "2", "enabled"])
def test_envbool_rejects_anything_else(monkeypatch, raw):
    monkeypatch.setenv("X_FLAG", raw)
    with pytest.raises(ImproperlyConfigured, match="X_FLAG"):
        envbool("X_FLAG", False)


def test_envint_bounds(monkeypatch):
    monkeypatch.setenv("X_NUM", "7")
    assert envint("X_NUM", 1, minimum=1, maximum=10) == 7
    monkeypatch.setenv("X_NUM", "70")
    with pytest.raises(ImproperlyConfigured, match="X_NUM=70 must be at most 10"):
        envint("X_NUM", 1, minimum=1, maximum=10)
    monkeypatch.setenv("X_NUM", "7x")
    with pytest.raises(ImproperlyConfigured, match="X_NUM='7x' is not an integer"):
        envint("X_NUM", 1)


def test_envlist_and_envurl(monkeypatch):
    monkeypatch.setenv("X_LIST", "a, b,c")
    assert envlist("X_LIST", []) == ["a", "b", "c"]
    monkeypatch.setenv("X_URL", "redis://h:1/0")
    assert envurl("X_URL", ("redis",)) == "redis://h:1/0"
    monkeypatch.setenv("X_URL", "h:1")
    with pytest.raises(ImproperlyConfigured, match="X_URL"):
        envurl("X_URL", ("redis",))


def test_check_deploy_passes_with_production_variables():
    env = {k: v for k, v in os.environ.items() if k not in {"SECURE_COOKIES"}}
    env.update(DEBUG="false", SECRET_KEY=STRONG_KEY, ALLOWED_HOSTS="flywheel.example.com")
    result = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                            env=env, cwd=BASE_DIR, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_check_deploy_fails_with_debug_on():
    env = os.environ | {"DEBUG": "true", "SECRET_KEY": STRONG_KEY, "ALLOWED_HOSTS": "flywheel.example.com"}
    result = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                            env=env, cwd=BASE_DIR, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "DEBUG" in result.stdout + result.stderr
