"""Worker liveness: each worker refreshes a Redis key (read by /healthz) and requeues jobs whose
worker vanished. Runs as a thread in the worker's main process, started by Celery's worker_ready.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time

from celery.signals import worker_ready, worker_shutdown

log = logging.getLogger(__name__)

KEY_PREFIX = "flywheel:worker:"
_stop = threading.Event()


def redis_client():
    import redis
    from django.conf import settings

    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=5, socket_connect_timeout=5)


def live_workers() -> list[dict]:
    """The workers whose heartbeat key has not expired."""
    client = redis_client()
    out = []
    for key in client.scan_iter(match=f"{KEY_PREFIX}*", count=100):
        raw = client.get(key)
        if raw:
            out.append(json.loads(raw))
    return out


def _beat(name: str, queues: list[str]) -> None:
    from django.conf import settings
    from django.db import close_old_connections

    from workers.runner import requeue_stale_jobs

    ttl = settings.WORKER_HEARTBEAT_TTL_SECONDS
    interval = max(1.0, min(ttl / 3, settings.JOB_HEARTBEAT_SECONDS))
    client = redis_client()
    while not _stop.is_set():
        try:
            client.set(
                KEY_PREFIX + name,
                json.dumps({"name": name, "pid": os.getpid(), "queues": queues, "at": time.time()}),
                ex=ttl,
            )
        except Exception:  # noqa: BLE001  (Redis may be restarting; try again next beat)
            log.warning("worker heartbeat failed", exc_info=True)
        try:
            close_old_connections()
            requeued = requeue_stale_jobs()
            if requeued:
                log.warning("requeued %d job(s) whose worker was lost", requeued)
        except Exception:  # noqa: BLE001
            log.warning("stale job check failed", exc_info=True)
        _stop.wait(interval)


def _on_ready(sender=None, **kwargs) -> None:
    consumer = getattr(sender, "consumer", None)
    queues = []
    if consumer is not None and getattr(consumer, "task_consumer", None) is not None:
        queues = [q.name for q in consumer.task_consumer.queues]
    name = getattr(sender, "hostname", None) or f"worker@{socket.gethostname()}:{os.getpid()}"
    _stop.clear()
    threading.Thread(target=_beat, args=(name, queues), daemon=True, name="flywheel-liveness").start()


def _on_shutdown(sender=None, **kwargs) -> None:
    _stop.set()
    name = getattr(sender, "hostname", None)
    if name:
        try:
            redis_client().delete(KEY_PREFIX + name)
        except Exception:  # noqa: BLE001
            pass


def connect() -> None:
    worker_ready.connect(_on_ready, weak=False, dispatch_uid="flywheel-liveness-ready")
    worker_shutdown.connect(_on_shutdown, weak=False, dispatch_uid="flywheel-liveness-shutdown")
