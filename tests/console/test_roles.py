"""The role matrix of docs/roles.md, checked cell by cell for every page, API endpoint and websocket."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import pytest
from django.test import Client
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from console.models import Role
from tests import factories
from tests.processes import BASE_DIR
from workers.liveness import KEY_PREFIX, redis_client

ROLES = ("anonymous", "annotator", "manager", "analyst", "admin")


@dataclass(frozen=True)
class Cell:
    surface: str
    method: str
    path: str
    role: str
    expected: str

    @property
    def id(self) -> str:
        return f"{self.method} {self.path} as {self.role}"


def _matrix() -> list[Cell]:
    text = (BASE_DIR / "docs" / "roles.md").read_text()
    block = text.split("<!-- matrix:start -->")[1].split("<!-- matrix:end -->")[0]
    rows = [line for line in block.strip().splitlines() if line.startswith("|")][2:]
    cells = []
    for row in rows:
        parts = [p.strip() for p in row.strip("|").split("|")]
        surface, method, path, *expected = parts
        assert len(expected) == len(ROLES), row
        for role, value in zip(ROLES, expected, strict=True):
            cells.append(Cell(surface, method, path.strip("`"), role, value))
    return cells


MATRIX = _matrix()
HTTP_CELLS = [c for c in MATRIX if c.surface in ("page", "api")]
WS_CELLS = [c for c in MATRIX if c.surface == "websocket"]


def test_matrix_covers_every_route():
    """Every URL the project serves appears in docs/roles.md (so a new page cannot skip the matrix)."""
    from django.urls import get_resolver

    from console.routing import websocket_urlpatterns

    documented = {re.sub(r"\{job\}", "<job>", c.path) for c in MATRIX}

    def walk(patterns, prefix=""):
        for p in patterns:
            route = prefix + str(p.pattern)
            if hasattr(p, "url_patterns"):
                if route.startswith("admin/"):
                    yield "/admin/"
                    continue
                yield from walk(p.url_patterns, route)
            else:
                yield "/" + re.sub(r"<[^>]+>", "<job>", route).replace("^", "").replace("$", "")

    served = set(walk(get_resolver().url_patterns)) | {
        "/" + re.sub(r"<[^>]+>", "<job>", str(p.pattern)) for p in websocket_urlpatterns
    }
    served.discard("/api/token/")  # documented in prose: open to anyone, like a login form
    assert served - documented == set()


def _user(role: str):
    if role == "anonymous":
        return None
    if role == "admin":
        return factories.user_create(superuser=True)
    return factories.user_create(role=Role(role))


def _body(cell: Cell) -> tuple[dict | str | None, str | None]:
    if cell.method != "POST":
        return None, None
    if cell.path == "/api/jobs/":
        return json.dumps({"kind": "demo.sleep", "config": {"seconds": 0, "steps": 1}}), "application/json"
    if cell.path == "/jobs/start/":
        return {"kind": "demo.sleep", "config": '{"seconds": 0, "steps": 1}'}, None
    return None, None


@pytest.fixture
def fake_worker_heartbeat(db):
    """A live worker as /healthz sees one, so the health row reads 200."""
    client = redis_client()
    key = KEY_PREFIX + "roles-test"
    client.set(key, json.dumps({"name": "roles-test", "pid": 0, "queues": [], "at": 0}), ex=60)
    yield
    client.delete(key)


@pytest.mark.parametrize("cell", HTTP_CELLS, ids=lambda c: c.id)
def test_http_matrix(cell: Cell, client: Client, fake_worker_heartbeat):
    user = _user(cell.role)
    if user is not None:
        client.force_login(user)
    job = factories.job_create(created_by=None)
    path = cell.path.replace("{job}", str(job.id))
    data, content_type = _body(cell)
    if cell.method == "GET":
        response = client.get(path)
    elif content_type:
        response = client.post(path, data=data, content_type=content_type)
    else:
        response = client.post(path, data=data or {})
    assert str(response.status_code) == cell.expected, (cell.id, response.content[:300])
    if cell.expected == "302" and cell.role == "anonymous" and not path.startswith(("/logout", "/admin")):
        assert response["Location"].startswith("/login/")


@pytest.mark.slow
@pytest.mark.parametrize("cell", WS_CELLS, ids=lambda c: c.id)
def test_websocket_matrix(cell: Cell, transactional_db, daphne_url):
    user = _user(cell.role)
    client = Client()
    if user is not None:
        client.force_login(user)
    job = factories.job_create()
    headers = {"Origin": daphne_url}
    if "sessionid" in client.cookies:
        headers["Cookie"] = f"sessionid={client.cookies['sessionid'].value}"
    url = daphne_url.replace("http://", "ws://") + cell.path.replace("{job}", str(job.id))
    if cell.expected == "ok":
        with connect(url, additional_headers=headers, open_timeout=30) as ws:
            ws.send(json.dumps({"type": "ping"}))
            replies = []
            while {"type": "pong"} not in replies:  # a job page's socket first sends the job's state
                replies.append(json.loads(ws.recv(timeout=30)))
    else:
        assert cell.expected == "refused"
        with pytest.raises(InvalidStatus) as refused:
            connect(url, additional_headers=headers, open_timeout=30)
        assert refused.value.response.status_code == 403
