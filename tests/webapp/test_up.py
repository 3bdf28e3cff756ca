"""`manage.py up` on the embedded servers: first start, clean Ctrl-C, restart with data kept, and a
restart after a crash (killed launcher, killed PostgreSQL and Redis leaving stale pid files/sockets)."""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import psutil
import pytest

from tests.processes import BASE_DIR, free_port, wait_for
from webapp.embedded import EmbeddedServices

pytestmark = [pytest.mark.slow]


class Up:
    def __init__(self, var_dir: Path, port: int):
        env = {k: v for k, v in os.environ.items()
               if k not in {"DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "FLYWHEEL_DATA_DIR", "SECRET_KEY"}}
        env.update(FLYWHEEL_VAR_DIR=str(var_dir), PYTHONUNBUFFERED="1", CELERY_WORKER_CONCURRENCY="1")
        self.proc = subprocess.Popen([sys.executable, "manage.py", "up", "--port", str(port)], cwd=BASE_DIR, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     stdin=subprocess.DEVNULL)
        self.lines: queue.Queue[str] = queue.Queue()
        self.output: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put("")

    def wait_for_line(self, pattern: str) -> str:
        while True:
            try:
                line = self.lines.get(timeout=180)
            except queue.Empty:
                raise AssertionError("no output from up:\n" + "".join(self.output)) from None
            self.output.append(line)
            if line == "":
                raise AssertionError(f"up exited without {pattern!r}:\n" + "".join(self.output))
            if re.search(pattern, line):
                return line

    def rest(self) -> str:
        self.proc.wait(120)
        while True:
            line = self.lines.get(timeout=30)
            if line == "":
                return "".join(self.output)
            self.output.append(line)


def _api(url: str, token: str | None = None, body: dict | None = None) -> tuple[int, dict]:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Token {token}"
    request = urllib.request.Request(url, data=json.dumps(body).encode() if body is not None else None,
                                     headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}")


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.fixture
def var_dir():
    path = BASE_DIR / "var" / f"t-up-{uuid.uuid4().hex[:6]}"
    yield path
    services = EmbeddedServices(path)
    services.stop()
    shutil.rmtree(path, ignore_errors=True)


def test_up_starts_restarts_and_keeps_data(var_dir):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    services = EmbeddedServices(var_dir)

    # First start: servers created, accounts printed with passwords.
    up = Up(var_dir, port)
    passwords = {}
    up.wait_for_line(rf"Flywheel is running at http://localhost:{port}/")
    for _ in range(3):
        line = up.wait_for_line(r"password: ")
        name, _role, _label, password = line.split()[0], line.split()[1], line.split()[2], line.split()[-1]
        passwords[name] = password
    assert set(passwords) == {"annotator", "manager", "analyst"}
    up.wait_for_line(r"changepassword")
    status, body = _api(f"{base}/api/token/", body={"username": "manager", "password": passwords["manager"]})
    assert status == 200
    token = body["token"]
    status, job = _api(f"{base}/api/jobs/", token, {"kind": "demo.sleep", "config": {"seconds": 0.5, "steps": 2}})
    assert status == 201
    done = wait_for(lambda: (r := _api(f"{base}/api/jobs/{job['id']}/", token)[1])["status"] == "succeeded" and r,
                    timeout=180, what="job run by up's worker")
    assert done["progress"] == 1.0
    assert wait_for(lambda: _api(f"{base}/healthz")[0] == 200, what="healthz 200")
    pids = json.loads((var_dir / "up.pids.json").read_text())
    children = {name: pids[name] for name in ("daphne", "worker")}

    # Starting it twice: the second refuses and leaves the first one running.
    second = Up(var_dir, free_port())
    assert "already running" in second.rest()
    assert second.proc.returncode != 0
    assert _api(f"{base}/healthz")[0] == 200
    services.redis._client().set("flywheel:test:kept", "yes")

    # Ctrl-C: everything stops, nothing is left running.
    up.proc.send_signal(signal.SIGINT)
    output = up.rest()
    assert up.proc.returncode == 0, output
    assert "Stopped." in output
    assert not any(_alive(pid) for pid in children.values())
    assert not services.postgres.is_running() and not services.redis.is_running()
    assert not (var_dir / "pg" / "postmaster.pid").exists()

    # Second start: the data is there, the accounts are not re-created, no password is printed.
    up = Up(var_dir, port)
    up.wait_for_line(r"Flywheel is running at")
    line = up.wait_for_line(r"Demo accounts")
    assert "created earlier" in line
    status, again = _api(f"{base}/api/jobs/{job['id']}/", token)
    assert status == 200 and again["status"] == "succeeded"
    assert _api(f"{base}/api/token/", body={"username": "manager", "password": passwords["manager"]})[0] == 200
    assert services.redis._client().get("flywheel:test:kept") == b"yes"

    # A crash: the launcher, PostgreSQL and Redis are killed with SIGKILL.
    pg_pid = int((var_dir / "pg" / "postmaster.pid").read_text().split()[0])
    redis_pid = int((var_dir / "redis" / "redis.pid").read_text())
    up.proc.kill()
    up.proc.wait(30)
    os.kill(pg_pid, signal.SIGKILL)
    os.kill(redis_pid, signal.SIGKILL)
    wait_for(lambda: not _alive(pg_pid) and not _alive(redis_pid), what="servers to die")
    assert (var_dir / "pg" / "postmaster.pid").exists() and (var_dir / "redis" / "redis.sock").exists()

    # Third start after the crash just works, with the data intact.
    up = Up(var_dir, port)
    up.wait_for_line(r"Flywheel is running at")
    status, again = _api(f"{base}/api/jobs/{job['id']}/", token)
    assert status == 200 and again["status"] == "succeeded"
    up.proc.send_signal(signal.SIGINT)
    output = up.rest()
    assert up.proc.returncode == 0, output
    assert not services.postgres.is_running() and not services.redis.is_running()
