"""Websockets: origin and session checks, and logout closing the account's sockets."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from console.models import Role
from tests import factories

pytestmark = [pytest.mark.slow]


def _session(user) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


def _ws(daphne_url: str, path: str) -> str:
    return daphne_url.replace("http://", "ws://") + path


@pytest.mark.parametrize("origin", ["http://evil.example.com", "null", None])
def test_wrong_or_missing_origin_is_refused(transactional_db, daphne_url, origin):
    user = factories.user_create(role=Role.MANAGER)
    headers = {"Cookie": f"sessionid={_session(user)}"}
    if origin is not None:
        headers["Origin"] = origin
    with pytest.raises(InvalidStatus) as refused:
        connect(_ws(daphne_url, "/ws/jobs/"), additional_headers=headers, open_timeout=30)
    assert refused.value.response.status_code == 403


def test_unknown_session_is_refused(transactional_db, daphne_url):
    headers = {"Origin": daphne_url, "Cookie": "sessionid=not-a-session"}
    with pytest.raises(InvalidStatus) as refused:
        connect(_ws(daphne_url, "/ws/jobs/"), additional_headers=headers, open_timeout=30)
    assert refused.value.response.status_code == 403


def test_unknown_job_socket_is_refused(transactional_db, daphne_url):
    user = factories.user_create(role=Role.ANALYST)
    headers = {"Origin": daphne_url, "Cookie": f"sessionid={_session(user)}"}
    with pytest.raises(InvalidStatus):
        connect(_ws(daphne_url, "/ws/jobs/00000000-0000-4000-8000-000000000000/"), additional_headers=headers,
                open_timeout=30)


def test_logout_closes_the_accounts_sockets(transactional_db, daphne_url):
    user = factories.user_create(role=Role.ANNOTATOR)
    other = factories.user_create(role=Role.ANNOTATOR)
    browser = Client()
    browser.force_login(user)
    mine = {"Origin": daphne_url, "Cookie": f"sessionid={browser.cookies['sessionid'].value}"}
    theirs = {"Origin": daphne_url, "Cookie": f"sessionid={_session(other)}"}
    with connect(_ws(daphne_url, "/ws/jobs/"), additional_headers=mine, open_timeout=30) as ws, \
            connect(_ws(daphne_url, "/ws/jobs/"), additional_headers=theirs, open_timeout=30) as ws_other:
        ws.send(json.dumps({"type": "ping"}))
        assert json.loads(ws.recv(timeout=30))["type"] == "pong"
        assert browser.post("/logout/").status_code == 302
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                ws.recv(timeout=30)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4001
        # Another account's socket stays open.
        ws_other.send(json.dumps({"type": "ping"}))
        assert json.loads(ws_other.recv(timeout=30))["type"] == "pong"
    # The logged-out session cannot open a new socket.
    with pytest.raises(InvalidStatus):
        connect(_ws(daphne_url, "/ws/jobs/"), additional_headers=mine, open_timeout=30)
