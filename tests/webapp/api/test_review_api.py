"""The data flywheel's API: reviewing through claim-next / renew / decide, role permissions with real records,
and clear 4xx answers (never 500) for malformed edits, unknown ids, unclaimed items, unknown reasons and
malformed JSON."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from console.models import QueueItem, Review, Role, Round, TaskStatus
from console.services.review import review_items_create
from tests import factories


def _api(role: Role | None = None, superuser: bool = False) -> APIClient:
    api = APIClient()
    api.force_authenticate(factories.user_create(role=role or Role.ANNOTATOR, superuser=superuser))
    return api


@pytest.fixture
def rnd(db):
    return factories.round_create()


@pytest.fixture
def task_queue(rnd):
    tasks = factories.task_specs_create(round=rnd, n=3)
    review_items_create(queue="task", round=rnd, objects=tasks)
    return tasks


def test_annotator_claims_renews_and_decides_a_task(task_queue):
    api = _api(Role.ANNOTATOR)
    claim = api.post("/api/queues/task/claim-next/", format="json")
    assert claim.status_code == 200, claim.content
    body = claim.json()
    item_id = body["item"]["id"]
    assert body["task"]["spec"]["template"] == body["task"]["template"] and body["trajectory"] is None
    assert body["lease_seconds"] == 300 and body["item"]["claimed_by"].startswith("annotator")
    assert api.post("/api/queues/task/claim-next/", format="json").json()["item"]["id"] == item_id  # reload
    renew = api.post(f"/api/queue-items/{item_id}/renew/")
    assert renew.status_code == 200 and renew.json()["lease_expires_at"]
    decided = api.post(f"/api/queue-items/{item_id}/decide/", {"decision": "reject", "reason_code": "ambiguous",
                                                                 "comment": "which one?"}, format="json")
    assert decided.status_code == 201, decided.content
    assert decided.json()["decision"] == "reject" and decided.json()["reviewer"].startswith("annotator")
    assert api.get(f"/api/tasks/{body['task']['id']}/").json()["status"] == TaskStatus.REJECTED
    log = api.get("/api/reviews/?queue=task").json()
    assert log["count"] == 1 and log["results"][0]["reason_code"] == "ambiguous"
    progress = api.get("/api/queues/task/progress/").json()
    assert (progress["done"], progress["pending"]) == (1, 2)


def test_trajectory_review_with_step_labels(rnd):
    trajectory = factories.trajectory_create(task=factories.task_spec_create(round=rnd, status=TaskStatus.APPROVED))
    review_items_create(queue="trajectory", round=rnd, objects=[trajectory])
    api = _api(Role.MANAGER)
    body = api.post("/api/queues/trajectory/claim-next/", {"round": str(rnd.pk)}, format="json").json()
    steps = body["trajectory"]["steps"]
    assert len(steps) == trajectory.n_steps >= 2 and steps[0]["data"]["turn"]
    labels = [{"index": 0, "label": "correct"}, {"index": 1, "label": "erroneous", "comment": "premature"}]
    decided = api.post(f"/api/queue-items/{body['item']['id']}/decide/",
                       {"decision": "approve", "step_labels": labels}, format="json")
    assert decided.status_code == 201, decided.content
    detail = api.get(f"/api/trajectories/{trajectory.pk}/").json()
    assert [s["label"] for s in detail["steps"][:2]] == ["correct", "erroneous"]
    assert detail["status"] == "accepted"
    assert api.post("/api/queues/trajectory/claim-next/", format="json").status_code == 204


def test_stale_submission_is_409_and_saves_nothing(task_queue):
    alice, bob = _api(), _api()
    item_id = alice.post("/api/queues/task/claim-next/", format="json").json()["item"]["id"]
    QueueItem.objects.filter(pk=item_id).update(lease_expires_at=timezone.now() - timedelta(seconds=5))
    assert bob.post("/api/queues/task/claim-next/", format="json").json()["item"]["id"] == item_id  # reclaimed
    stale = alice.post(f"/api/queue-items/{item_id}/decide/", {"decision": "approve"}, format="json")
    assert stale.status_code == 409
    assert "Another reviewer holds this item" in stale.json()["detail"]
    assert alice.post(f"/api/queue-items/{item_id}/renew/").status_code == 409
    assert Review.objects.count() == 0


# ---------------------------------------------------------------------------------------------
# Permissions with real records


def test_annotators_review_but_cannot_start_rounds_or_set_weights(task_queue, rnd):
    api = _api(Role.ANNOTATOR)
    refused = api.post("/api/rounds/", {"name": "mine"}, format="json")
    assert refused.status_code == 403 and "Only managers" in refused.json()["detail"]
    assert api.post(f"/api/rounds/{rnd.pk}/weights/", {"weights": {}}, format="json").status_code == 403
    assert api.get(f"/api/rounds/{rnd.pk}/").status_code == 200
    assert api.post("/api/queues/task/claim-next/", format="json").status_code == 200


def test_analysts_read_everything_but_cannot_claim_or_decide(task_queue, rnd):
    reviewer = _api()
    item_id = reviewer.post("/api/queues/task/claim-next/", format="json").json()["item"]["id"]
    analyst = _api(Role.ANALYST)
    for path in ("/api/queues/task/claim-next/", f"/api/queue-items/{item_id}/renew/",
                 f"/api/queue-items/{item_id}/release/", f"/api/queue-items/{item_id}/decide/"):
        response = analyst.post(path, {"decision": "approve"}, format="json")
        assert response.status_code == 403, path
        assert "analysts read the queues" in response.json()["detail"]
    assert analyst.post("/api/rounds/", format="json").status_code == 403
    for path in (f"/api/rounds/{rnd.pk}/", f"/api/tasks/{task_queue[0].pk}/", f"/api/queue-items/{item_id}/",
                 "/api/reviews/", "/api/reason-codes/?queue=task", "/api/queues/task/agreement/",
                 "/api/tasks/?status=pending_review", "/api/trajectories/", "/api/datasets/"):
        assert analyst.get(path).status_code == 200, path
    assert Review.objects.count() == 0


def test_managers_start_rounds_and_set_weights(db):
    api = _api(Role.MANAGER)
    created = api.post("/api/rounds/", {"name": "spring", "generation_weights": {"category": {"memory": 2}},
                                        "config": {"overlap": 2}}, format="json")
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["name"] == "spring" and body["config"] == {"overlap": 2} and body["funnel"]["generated"] == 0
    weights = api.post(f"/api/rounds/{body['id']}/weights/", {"weights": {"difficulty": {"3": 4}}}, format="json")
    assert weights.status_code == 200, weights.content
    assert Round.objects.get(pk=body["id"]).generation_weights == {"difficulty": {"3": 4.0}}
    bad = api.post(f"/api/rounds/{body['id']}/weights/", {"weights": {"colour": {"red": 1}}}, format="json")
    assert bad.status_code == 400 and "colour" in bad.json()["weights"][0]
    bad = api.post("/api/rounds/", {"config": {"overlap": 0}}, format="json")
    assert bad.status_code == 400 and "overlap" in bad.json()["config"][0]


# ---------------------------------------------------------------------------------------------
# Bad input: clear 4xx, never 500


def test_malformed_edit_is_400_and_changes_nothing(task_queue):
    api = _api()
    body = api.post("/api/queues/task/claim-next/", format="json").json()
    url = f"/api/queue-items/{body['item']['id']}/decide/"
    for edit, words in (
        ({"colour": "red"}, "Cannot edit colour"),
        ({"instruction": ""}, "non-empty"),
        ({"goal": {"no.such.goal": 1}}, "is not a goal of this task"),
        ("make it harder", "must be"),
        ([1, 2], "must be"),
    ):
        response = api.post(url, {"decision": "edit", "edit": edit}, format="json")
        assert response.status_code == 400, (edit, response.content)
        assert words in response.json()["detail"], (edit, response.json())
    response = api.post(url, {"decision": "approve", "step_labels": [{"index": 0, "label": "correct"}]},
                        format="json")
    assert response.status_code == 400 and "trajectory queue" in response.json()["detail"]
    assert Review.objects.count() == 0
    assert api.get(f"/api/tasks/{body['task']['id']}/").json()["instruction"] == body["task"]["instruction"]


@pytest.mark.parametrize("bad_id", [str(uuid.uuid4()), "not-a-uuid", "1"])
def test_unknown_ids_are_404(db, bad_id):
    api = _api(Role.MANAGER)
    for path in ("rounds/{}/", "tasks/{}/", "trajectories/{}/", "queue-items/{}/", "reviews/{}/", "datasets/{}/"):
        response = api.get("/api/" + path.format(bad_id))
        assert response.status_code == 404, path
        assert response.json()["detail"].startswith("No ")
    for action in ("renew", "release", "decide"):
        response = api.post(f"/api/queue-items/{bad_id}/{action}/", {"decision": "approve"}, format="json")
        assert response.status_code == 404 and response.json()["detail"] == "No queue item with this id."
    assert api.post(f"/api/rounds/{bad_id}/weights/", {"weights": {}}, format="json").status_code == 404
    assert api.get(f"/api/tasks/?round={uuid.uuid4()}").status_code == 404


def test_decision_on_an_item_not_claimed_is_409(task_queue):
    api = _api()
    item = QueueItem.objects.first()
    response = api.post(f"/api/queue-items/{item.pk}/decide/", {"decision": "approve"}, format="json")
    assert response.status_code == 409 and "claim it first" in response.json()["detail"]


def test_unknown_reason_and_decision_are_400(task_queue):
    api = _api()
    item_id = api.post("/api/queues/task/claim-next/", format="json").json()["item"]["id"]
    url = f"/api/queue-items/{item_id}/decide/"
    response = api.post(url, {"decision": "reject", "reason_code": "because"}, format="json")
    assert response.status_code == 400 and "Unknown reason code 'because'" in response.json()["detail"]
    assert "ambiguous" in response.json()["detail"]  # says what to use
    response = api.post(url, {"decision": "reject"}, format="json")
    assert response.status_code == 400 and "needs a reason code" in response.json()["detail"]
    response = api.post(url, {"decision": "maybe"}, format="json")
    assert response.status_code == 400 and "decision" in response.json()
    response = api.post(url, {}, format="json")
    assert response.status_code == 400 and "decision" in response.json()
    assert Review.objects.count() == 0


def test_malformed_json_is_400(task_queue):
    api = _api(Role.MANAGER)
    item_id = api.post("/api/queues/task/claim-next/", format="json").json()["item"]["id"]
    for path in (f"/api/queue-items/{item_id}/decide/", "/api/queues/task/claim-next/", "/api/rounds/"):
        response = api.post(path, data='{"decision": "approve",', content_type="application/json")
        assert response.status_code == 400, path
        assert "not valid JSON" in response.json()["detail"]
    response = api.post(f"/api/queue-items/{item_id}/decide/", data="[1, 2]", content_type="application/json")
    assert response.status_code == 400


def test_bad_filters_are_400(db):
    api = _api()
    assert api.get("/api/tasks/?status=sleeping").status_code == 400
    assert api.get("/api/reviews/?queue=proposals").status_code == 400
    assert api.get("/api/reviews/?task=nope").status_code == 400
    assert api.get("/api/tasks/?round=nope").status_code == 400


def test_reason_codes_list_in_key_order(db):
    codes = _api().get("/api/reason-codes/?queue=task").json()
    assert [c["code"] for c in codes][:2] == ["infeasible", "ambiguous"]
    assert {c["queue"] for c in codes} == {"task"}


def test_schema_documents_the_review_routes(db):
    schema = _api().get("/api/schema/?format=json").json()
    for path in ("/api/queues/task/claim-next/", "/api/queue-items/{item_id}/decide/", "/api/reviews/"):
        assert path in schema["paths"], path
    assert set(schema["paths"]["/api/reviews/{review_id}/"]) == {"get"}
