"""``manage.py up``: start Flywheel on this machine (embedded servers, migrations, demo accounts,
Daphne and one Celery worker) and stop all of it cleanly on Ctrl-C."""

from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from webapp.celery import QUEUES
from webapp.embedded import EmbeddedServiceError, EmbeddedServices, embedded_mode

PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    # Linux: if `up` itself is killed (even with -9), its children get SIGTERM instead of lingering.
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass


class _Stop(Exception):
    pass


class Command(BaseCommand):
    help = "Start Flywheel: embedded PostgreSQL and Redis when needed, migrations, demo accounts, Daphne and a worker."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--host", default=os.environ.get("FLYWHEEL_HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("FLYWHEEL_PORT", "8000")))
        parser.add_argument("--concurrency", type=int, default=settings.CELERY_WORKER_CONCURRENCY,
                            help="processes of the Celery worker")
        parser.add_argument("--keep-services", action="store_true",
                            help="leave the embedded PostgreSQL and Redis running on exit")

    def handle(self, *args, host: str, port: int, concurrency: int, keep_services: bool, **options) -> None:
        self.children: dict[str, subprocess.Popen] = {}
        self.services = EmbeddedServices.default()
        self.keep_services = keep_services
        self.var_dir = Path(settings.VAR_DIR)
        (self.var_dir / "log").mkdir(parents=True, exist_ok=True)
        self._refuse_second_instance()
        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            self._start(host, port, concurrency)
            self._supervise()
        except _Stop:
            pass
        finally:
            self._shutdown()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        if getattr(self, "failed", None):
            raise CommandError(self.failed)

    # -- start -------------------------------------------------------------------------------------

    def _start(self, host: str, port: int, concurrency: int) -> None:
        pg, redis = embedded_mode()
        try:
            started = self.services.ensure_started(postgres=pg, redis=redis)
        except EmbeddedServiceError as exc:
            raise CommandError(str(exc)) from None
        self._say(f"PostgreSQL: {'embedded in ' + str(self.services.postgres.data_dir) if pg else 'DATABASE_URL'}"
                  + (" (started)" if "postgres" in started else ""))
        self._say(f"Redis:      {'embedded in ' + str(self.services.redis.data_dir) if redis else 'REDIS_URL'}"
                  + (" (started)" if "redis" in started else ""))
        self._stop_leftovers()
        self._say("Applying migrations…")
        call_command("migrate", interactive=False, verbosity=0)
        from console.services import demo_accounts_ensure

        accounts = demo_accounts_ensure()
        self._check_port(host, port)
        env = os.environ.copy()
        # `up` serves plain HTTP to a local browser; secure-only cookies would never be sent back.
        env.setdefault("SECURE_COOKIES", "false")
        python = sys.executable
        self._spawn("worker", [python, "-m", "celery", "-A", "webapp", "worker", "-Q", ",".join(QUEUES),
                               "--concurrency", str(concurrency), "-n", f"flywheel-{os.getpid()}@%h",
                               "--loglevel", "INFO", "--without-gossip", "--without-mingle"], env)
        self._spawn("daphne", [python, "-m", "daphne", "-b", host, "-p", str(port), "webapp.asgi:application"], env)
        shown_host = "localhost" if host in ("127.0.0.1", "0.0.0.0") else host
        url = f"http://{shown_host}:{port}/"
        self._write_pids(url)
        self._wait_http(f"http://{'127.0.0.1' if host == '0.0.0.0' else host}:{port}/healthz")
        self._say("")
        self._say(f"Flywheel is running at {url}", style=self.style.SUCCESS)
        new = [a for a in accounts if a.password]
        if new:
            self._say("Demo accounts (passwords are shown only this once):")
            for account in new:
                self._say(f"  {account.username:<10} {account.role.label:<10} password: {account.password}")
        else:
            self._say("Demo accounts: " + ", ".join(a.username for a in accounts) + " (created earlier).")
        self._say("Change a password with: python manage.py changepassword <name>")
        self._say(f"Logs: {self.var_dir / 'log'}   Stop: Ctrl-C")

    def _spawn(self, name: str, cmd: list[str], env: dict[str, str]) -> None:
        log = open(self.var_dir / "log" / f"{name}.log", "ab")  # noqa: SIM115  (kept open for the child)
        self.children[name] = subprocess.Popen(
            cmd, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, preexec_fn=_die_with_parent, cwd=settings.BASE_DIR,
        )

    def _pid_file(self) -> Path:
        return self.var_dir / "up.pids.json"

    def _write_pids(self, url: str) -> None:
        pids = {name: p.pid for name, p in self.children.items()}
        self._pid_file().write_text(json.dumps({**pids, "up": os.getpid(), "url": url}))

    def _refuse_second_instance(self) -> None:
        """A second `up` on the same var directory must not touch the first one's processes."""
        import psutil

        try:
            previous = json.loads(self._pid_file().read_text())
            launcher = psutil.Process(previous["up"])
            if launcher.pid != os.getpid() and "up" in launcher.cmdline() and launcher.status() != "zombie":
                raise CommandError(
                    f"Flywheel is already running from {self.var_dir} (pid {launcher.pid}) at {previous['url']}; "
                    "stop it with Ctrl-C there first."
                )
        except (FileNotFoundError, ValueError, KeyError, psutil.NoSuchProcess, psutil.AccessDenied):
            return

    def _stop_leftovers(self) -> None:
        """Stop Daphne and worker processes a crashed earlier `up` left behind."""
        import psutil

        try:
            pids = json.loads(self._pid_file().read_text())
        except (FileNotFoundError, ValueError):
            return
        for name, pid in pids.items():
            if name in ("up", "url"):
                continue
            try:
                proc = psutil.Process(pid)
                if not any(part in " ".join(proc.cmdline()) for part in ("daphne", "celery")):
                    continue
                self._say(f"Stopping {name} (pid {pid}) left by an earlier run")
                os.killpg(pid, signal.SIGTERM)
                proc.wait(15)
            except (psutil.NoSuchProcess, ProcessLookupError, PermissionError):
                continue
            except psutil.TimeoutExpired:
                os.killpg(pid, signal.SIGKILL)
        self._pid_file().unlink(missing_ok=True)

    def _check_port(self, host: str, port: int) -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((host, port))
            except OSError:
                raise CommandError(f"Port {port} on {host} is in use; pass --port to use another.") from None

    def _wait_http(self, url: str) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            self._check_children()
            try:
                urllib.request.urlopen(url, timeout=2)
                return
            except urllib.error.HTTPError:
                return  # it answered (503 until the worker's first heartbeat)
            except OSError:
                time.sleep(0.2)
        self.failed = f"Daphne did not answer on {url}; see {self.var_dir / 'log' / 'daphne.log'}"
        raise _Stop

    # -- run and stop ------------------------------------------------------------------------------

    def _on_signal(self, signum, frame) -> None:
        raise _Stop

    def _check_children(self) -> None:
        for name, proc in self.children.items():
            if proc.poll() is not None:
                tail = (self.var_dir / "log" / f"{name}.log").read_text(errors="replace")[-3000:]
                self.failed = f"{name} exited with status {proc.returncode}:\n{tail}"
                raise _Stop

    def _supervise(self) -> None:
        while True:
            self._check_children()
            time.sleep(0.5)

    def _shutdown(self) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not leave half-stopped servers
        if self.children:
            self._say("\nStopping Daphne and the worker…")
        for proc in self.children.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.children.values():
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                # A job still running after a warm shutdown is cut; its row is requeued on the next start.
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # reap grandchildren of the group, if any are left
            except ProcessLookupError:
                pass
        self._pid_file().unlink(missing_ok=True)
        pg, redis = embedded_mode()
        if not self.keep_services and (pg or redis):
            self._say("Stopping embedded PostgreSQL and Redis…")
            if redis:
                self.services.redis.stop()
            if pg:
                self.services.postgres.stop()
        self._say("Stopped.")

    def _say(self, text: str, style=None) -> None:
        self.stdout.write(style(text) if style else text)
        self.stdout.flush()
