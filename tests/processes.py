"""Real server processes for tests: Celery workers and Daphne, started against the test database."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from django.conf import settings
from django.db import connection

BASE_DIR = Path(__file__).resolve().parent.parent
WAIT_S = 90  # generous bound on waits; nothing asserts on how long things take


def wait_for(predicate: Callable[[], Any], *, timeout: float = WAIT_S, interval: float = 0.1, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what or predicate}")
        time.sleep(interval)


def database_url() -> str:
    """A DATABASE_URL for the database this test process uses (the test database)."""
    params = connection.settings_dict
    host = params.get("HOST") or ""
    host = quote(host, safe="") if host.startswith("/") else host
    auth = quote(params.get("USER") or "postgres", safe="")
    if params.get("PASSWORD"):
        auth += ":" + quote(params["PASSWORD"], safe="")
    port = f":{params['PORT']}" if params.get("PORT") else ""
    return f"postgresql://{auth}@{host}{port}/{params['NAME']}"


def child_env(**extra: str) -> dict[str, str]:
    env = os.environ.copy()
    env.update(
        DATABASE_URL=database_url(),
        REDIS_URL=settings.REDIS_URL,
        CELERY_BROKER_URL=settings.CELERY_BROKER_URL,
        FLYWHEEL_DATA_DIR=str(settings.FLYWHEEL_DATA_DIR),
        JOB_STALE_AFTER_SECONDS="4",
        WORKER_HEARTBEAT_TTL_SECONDS="5",
        SECURE_COOKIES="false",
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Proc:
    """A child process in its own process group, so a test can kill it with everything it forked."""

    def __init__(self, name: str, cmd: list[str], env: dict[str, str], log_dir: Path):
        log_dir.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.log_path = log_dir / f"{name}-{os.getpid()}-{time.monotonic_ns()}.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115
        self.popen = subprocess.Popen(cmd, env=env, stdout=self._log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, cwd=BASE_DIR, start_new_session=True)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill9(self) -> None:
        """SIGKILL the whole process group (the worker and its pool processes)."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.popen.wait(30)

    def stop(self) -> None:
        if self.popen.poll() is None:
            try:
                os.killpg(self.pid, signal.SIGTERM)
                self.popen.wait(20)
            except subprocess.TimeoutExpired:
                pass
            except ProcessLookupError:
                pass
        self.kill9()
        self._log.close()


def start_worker(name: str, log_dir: Path, concurrency: int = 1) -> Proc:
    from workers.liveness import live_workers

    proc = Proc(
        name,
        [sys.executable, "-m", "celery", "-A", "webapp", "worker", "-Q", "default,collect,train",
         "--concurrency", str(concurrency), "-n", f"{name}@%h", "--loglevel", "INFO",
         "--without-gossip", "--without-mingle", "--pool", "prefork"],
        child_env(), log_dir,
    )
    hostname = f"{name}@{socket.gethostname()}"

    def ready() -> bool:
        if proc.popen.poll() is not None:
            raise AssertionError(f"worker {name} exited:\n{proc.log()[-3000:]}")
        return any(w["name"] == hostname for w in live_workers())

    wait_for(ready, what=f"worker {name} heartbeat")
    return proc


def start_daphne(log_dir: Path) -> tuple[Proc, str]:
    port = free_port()
    proc = Proc("daphne", [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                           "webapp.asgi:application"], child_env(), log_dir)
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        if proc.popen.poll() is not None:
            raise AssertionError(f"daphne exited:\n{proc.log()[-3000:]}")
        try:
            urllib.request.urlopen(url + "/login/", timeout=2)
            return True
        except urllib.error.HTTPError:
            return True
        except OSError:
            return False

    wait_for(ready, what="daphne")
    return proc, url
