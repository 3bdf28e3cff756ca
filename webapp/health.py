"""``/healthz``: is the database reachable, is Redis, and has a worker beaten recently."""

from __future__ import annotations

from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET


def _database() -> dict:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return {"ok": True}
    except Exception as exc:  # noqa: BLE001  (any failure is "down", reported, not raised)
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}


def _redis() -> dict:
    from workers.liveness import redis_client

    try:
        redis_client().ping()
        return {"ok": True}
    except Exception as exc:  # noqa: BLE001
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}


def _worker(redis_ok: bool) -> dict:
    from workers.liveness import live_workers

    if not redis_ok:
        return {"ok": False, "error": "unknown: Redis is down"}
    try:
        workers = live_workers()
    except Exception as exc:  # noqa: BLE001
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
    if not workers:
        return {"ok": False, "error": "no worker heartbeat; start one with `manage.py up` or celery -A webapp worker"}
    return {"ok": True, "workers": sorted(w["name"] for w in workers)}


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    database = _database()
    redis = _redis()
    worker = _worker(redis["ok"])
    ok = database["ok"] and redis["ok"] and worker["ok"]
    return JsonResponse(
        {"status": "ok" if ok else "down", "database": database, "redis": redis, "worker": worker},
        status=200 if ok else 503,
    )
