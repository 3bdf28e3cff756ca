"""Pages of the data flywheel: review queues (claim, decide, lease), the trajectory viewer and its screens,
rounds (funnel, weights, starting jobs), review progress and the log, datasets and their downloads; who
may do what, and clear 4xx answers for bad input."""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from console.models import (
    DatasetVersion,
    Decision,
    ItemStatus,
    Job,
    Queue,
    QueueItem,
    ReasonCode,
    Review,
    Role,
    Round,
    TaskStatus,
    TrajectoryStep,
)
from console.services.review import review_items_create
from tests import factories

REASONS = {
    Queue.TASK: [("infeasible", "Infeasible"), ("ambiguous", "Ambiguous instruction"), ("trivial", "Trivial")],
    Queue.TRAJECTORY: [("wrong_outcome", "Wrong outcome"), ("unsafe", "Unsafe action")],
}


@pytest.fixture
def reasons(db):
    """The reject reasons (seeded by a migration; a flushed transactional test may have removed them)."""
    for queue, rows in REASONS.items():
        if not ReasonCode.objects.filter(queue=queue, active=True).exists():
            for position, (code, label) in enumerate(rows):
                ReasonCode.objects.get_or_create(queue=queue, code=code,
                                                 defaults={"label": label, "position": position})
    return {q: list(ReasonCode.objects.filter(queue=q, active=True).order_by("position", "code")) for q in REASONS}


def _client(role: Role | None = None, superuser: bool = False) -> Client:
    client = Client()
    user = factories.user_create(role=role or Role.ANNOTATOR, superuser=superuser)
    client.force_login(user)
    client.user = user
    return client


@pytest.fixture
def annotator(db):
    return _client(Role.ANNOTATOR)


@pytest.fixture
def analyst(db):
    return _client(Role.ANALYST)


@pytest.fixture
def manager(db):
    return _client(Role.MANAGER)


@pytest.fixture
def tasks(db, reasons):
    rnd = factories.round_create()
    specs = [factories.task_spec_create(round=rnd) for _ in range(3)]
    review_items_create(queue=Queue.TASK, round=rnd, objects=specs)
    return specs


@pytest.fixture
def trajectory(db, reasons):
    traj = factories.trajectory_create(mistake=True)
    review_items_create(queue=Queue.TRAJECTORY, round=traj.round, objects=[traj])
    return traj


# ---------------------------------------------------------------------------------------------
# Task queue


def test_annotator_claims_the_next_task_on_open_and_approves_it(annotator, tasks):
    response = annotator.get("/review/tasks/")
    assert response.status_code == 200
    item = QueueItem.objects.get(queue=Queue.TASK, claimed_by=annotator.user)
    html = response.content.decode()
    assert item.task.instruction in html
    assert f'data-item-id="{item.id}"' in html
    assert "Ambiguous" in html or ReasonCode.objects.filter(queue=Queue.TASK).first().label in html
    # Reloading keeps the same claim (no second item taken).
    annotator.get("/review/tasks/")
    assert QueueItem.objects.filter(queue=Queue.TASK, claimed_by=annotator.user).count() == 1

    response = annotator.post(f"/review/items/{item.id}/decide/", {"decision": "approve", "comment": "fine"})
    assert response.status_code == 302 and response["Location"] == "/review/tasks/"
    review = Review.objects.get(item=item)
    assert (review.reviewer, review.decision, review.comment) == (annotator.user, Decision.APPROVE, "fine")
    item.refresh_from_db()
    assert item.status == ItemStatus.DONE
    item.task.refresh_from_db()
    assert item.task.status == TaskStatus.APPROVED
    # The next open claims another task.
    annotator.get("/review/tasks/")
    nxt = QueueItem.objects.get(queue=Queue.TASK, claimed_by=annotator.user, status=ItemStatus.PENDING)
    assert nxt.pk != item.pk


def test_reject_needs_a_reason_and_records_it(annotator, tasks, reasons):
    annotator.get("/review/tasks/")
    item = QueueItem.objects.get(claimed_by=annotator.user)
    response = annotator.post(f"/review/items/{item.id}/decide/", {"decision": "reject"})
    assert response.status_code == 400
    assert "needs a reason code" in response.content.decode()
    assert not Review.objects.filter(item=item).exists()
    code = reasons[Queue.TASK][1].code
    response = annotator.post(f"/review/items/{item.id}/decide/", {"decision": "reject", "reason_code": code})
    assert response.status_code == 302
    assert Review.objects.get(item=item).reason_code == code


def test_edit_is_revalidated_and_malformed_edits_are_400(annotator, tasks):
    annotator.get("/review/tasks/")
    item = QueueItem.objects.select_related("task").get(claimed_by=annotator.user)
    url = f"/review/items/{item.id}/decide/"
    bad_json = annotator.post(url, {"decision": "edit", "instruction": item.task.instruction, "goal": "{not json"})
    assert bad_json.status_code == 400
    html = bad_json.content.decode()
    assert "Goal is not valid JSON" in html
    assert "{not json" in html  # what was typed is kept in the form
    unchanged = annotator.post(url, {"decision": "edit", "instruction": item.task.instruction})
    assert unchanged.status_code == 400 and "changes nothing" in unchanged.content.decode()
    unknown_goal = annotator.post(url, {"decision": "edit", "goal": json.dumps({**item.task.spec["goal"],
                                                                               "no.such.path": 1})})
    assert unknown_goal.status_code == 400 and "is not a goal of this task" in unknown_goal.content.decode()
    assert not Review.objects.filter(item=item).exists()

    new_text = item.task.instruction.rstrip(".") + ", please."
    response = annotator.post(url, {"decision": "edit", "instruction": new_text})
    assert response.status_code == 302, response.content.decode()[:2000]
    review = Review.objects.get(item=item)
    assert review.decision == Decision.EDIT
    assert review.after["instruction"] == new_text and review.before["instruction"] == item.task.instruction
    item.task.refresh_from_db()
    assert item.task.instruction == new_text


def test_decision_on_an_item_not_claimed_is_409_with_the_banner(annotator, tasks):
    item = QueueItem.objects.filter(queue=Queue.TASK).first()
    response = annotator.post(f"/review/items/{item.id}/decide/", {"decision": "approve"})
    assert response.status_code == 409
    html = response.content.decode()
    banner_tag = html.split('id="lease-banner"')[1].split(">")[0]
    assert "hidden" not in banner_tag
    assert "claim it first" in html
    assert not Review.objects.filter(item=item).exists()


def test_lease_renewal_and_a_lost_lease(annotator, tasks):
    annotator.get("/review/tasks/")
    item = QueueItem.objects.get(claimed_by=annotator.user)
    QueueItem.objects.filter(pk=item.pk).update(lease_expires_at=timezone.now() + timedelta(seconds=5))
    response = annotator.post(f"/review/items/{item.id}/renew/")
    assert response.status_code == 200 and response.json()["ok"] is True
    item.refresh_from_db()
    assert item.lease_expires_at > timezone.now() + timedelta(seconds=60)
    # Someone else takes it after the lease expired: renewing and deciding are refused.
    other = factories.user_create(role=Role.ANNOTATOR)
    QueueItem.objects.filter(pk=item.pk).update(claimed_by=other,
                                                lease_expires_at=timezone.now() + timedelta(minutes=5))
    lost = annotator.post(f"/review/items/{item.id}/renew/")
    assert lost.status_code == 409 and lost.json()["ok"] is False
    assert "another reviewer" in lost.json()["detail"].lower()
    stale = annotator.post(f"/review/items/{item.id}/decide/", {"decision": "approve"})
    assert stale.status_code == 409
    assert not Review.objects.filter(item=item).exists()


def test_bad_input_is_a_clear_4xx(annotator, tasks):
    annotator.get("/review/tasks/")
    item = QueueItem.objects.get(claimed_by=annotator.user)
    no_decision = annotator.post(f"/review/items/{item.id}/decide/", {"decision": "maybe"})
    assert no_decision.status_code == 400 and "Choose a decision" in no_decision.content.decode()
    assert annotator.post(f"/review/items/{uuid.uuid4()}/decide/", {"decision": "approve"}).status_code == 404
    assert annotator.post("/review/items/not-a-uuid/decide/", {"decision": "approve"}).status_code == 404
    assert annotator.post(f"/review/items/{uuid.uuid4()}/renew/").status_code == 404
    assert annotator.get(f"/review/tasks/?round={uuid.uuid4()}").status_code == 404
    assert annotator.get("/review/tasks/?round=nope").status_code == 404


def test_empty_queue_says_so(annotator, reasons):
    response = annotator.get("/review/trajectories/")
    assert response.status_code == 200
    assert 'data-testid="queue-empty"' in response.content.decode()


# ---------------------------------------------------------------------------------------------
# Trajectory queue and viewer


def test_trajectory_review_saves_step_labels_with_the_decision(annotator, trajectory):
    response = annotator.get("/review/trajectories/")
    assert response.status_code == 200
    html = response.content.decode()
    item = QueueItem.objects.get(queue=Queue.TRAJECTORY, claimed_by=annotator.user)
    first = trajectory.steps.order_by("index").first()
    assert first.data["calls"][0]["call"]["name"] in html
    assert 'data-testid="call-error"' in html  # the deliberate mistake is shown as an error
    labels = [{"index": 0, "label": "erroneous", "comment": "wrong tool first"},
              {"index": 1, "label": "recovery", "comment": ""}]
    response = annotator.post(f"/review/items/{item.id}/decide/",
                              {"decision": "approve", "step_labels": json.dumps(labels)})
    assert response.status_code == 302, response.content.decode()[:2000]
    steps = {s.index: s for s in TrajectoryStep.objects.filter(trajectory=trajectory)}
    assert (steps[0].label, steps[0].comment) == ("erroneous", "wrong tool first")
    assert steps[1].label == "recovery"
    review = Review.objects.get(item=item)
    assert review.after["steps"]["0"]["label"] == "erroneous"


def test_bad_step_labels_are_400(annotator, trajectory):
    annotator.get("/review/trajectories/")
    item = QueueItem.objects.get(queue=Queue.TRAJECTORY, claimed_by=annotator.user)
    url = f"/review/items/{item.id}/decide/"
    assert annotator.post(url, {"decision": "approve", "step_labels": "[{"}).status_code == 400
    response = annotator.post(url, {"decision": "approve",
                                    "step_labels": json.dumps([{"index": 0, "label": "great"}])})
    assert response.status_code == 400 and "Unknown step label" in response.content.decode()
    response = annotator.post(url, {"decision": "approve",
                                    "step_labels": json.dumps([{"index": 999, "label": "correct"}])})
    assert response.status_code == 400 and "has no step 999" in response.content.decode()
    assert not Review.objects.filter(item=item).exists()


def test_standalone_viewer_shows_steps_verdict_costs_and_404s(analyst, trajectory):
    response = analyst.get(f"/trajectories/{trajectory.id}/")
    assert response.status_code == 200
    html = response.content.decode()
    for step in trajectory.steps.all():
        for rec in step.data["calls"]:
            assert rec["call"]["name"] in html
    assert trajectory.reason in html
    assert 'data-testid="costs"' in html and "wall time" in html.lower()
    assert 'id="decide-form"' not in html  # read only
    assert analyst.get(f"/trajectories/{uuid.uuid4()}/").status_code == 404
    assert analyst.get("/trajectories/12345/").status_code == 404


def test_screens_are_served_only_from_the_data_dir(analyst, trajectory, settings, tmp_path):
    settings.FLYWHEEL_DATA_DIR = tmp_path
    png = b"\x89PNG\r\n\x1a\n" + b"0" * 32
    (tmp_path / "screens" / str(trajectory.id)).mkdir(parents=True)
    (tmp_path / "screens" / str(trajectory.id) / "0.png").write_bytes(png)
    (tmp_path / "secret.txt").write_text("nope")
    TrajectoryStep.objects.filter(trajectory=trajectory, index=0).update(screen=f"screens/{trajectory.id}/0.png")
    TrajectoryStep.objects.filter(trajectory=trajectory, index=1).update(screen="screens/../secret.txt")
    response = analyst.get(f"/trajectories/{trajectory.id}/steps/0/screen.png")
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    assert b"".join(response.streaming_content) == png
    assert analyst.get(f"/trajectories/{trajectory.id}/steps/1/screen.png").status_code == 404  # escapes screens/
    assert analyst.get(f"/trajectories/{trajectory.id}/steps/2/screen.png").status_code == 404  # none recorded
    assert analyst.get(f"/trajectories/{uuid.uuid4()}/steps/0/screen.png").status_code == 404
    assert Client().get(f"/trajectories/{trajectory.id}/steps/0/screen.png").status_code == 302  # to login
    assert f"/trajectories/{trajectory.id}/steps/0/screen.png" in analyst.get(f"/trajectories/{trajectory.id}/")\
        .content.decode()


# ---------------------------------------------------------------------------------------------
# Roles


def test_analyst_reads_but_cannot_claim_or_decide(analyst, tasks, trajectory):
    assert analyst.get("/review/tasks/").status_code == 403
    assert analyst.get("/review/trajectories/").status_code == 403
    assert not QueueItem.objects.filter(claimed_by=analyst.user).exists()
    item = QueueItem.objects.filter(queue=Queue.TASK).first()
    assert analyst.post(f"/review/items/{item.id}/decide/", {"decision": "approve"}).status_code == 403
    assert analyst.post(f"/review/items/{item.id}/renew/").status_code == 403
    for url in ("/review/progress/", "/review/log/", "/rounds/", f"/rounds/{item.round_id}/", "/datasets/"):
        response = analyst.get(url)
        assert response.status_code == 200, url
        assert "start-round" not in response.content.decode() and 'action="/rounds/' not in response.content.decode()
    assert analyst.post("/rounds/start/", {"name": "x"}).status_code == 403
    assert analyst.post(f"/rounds/{item.round_id}/weights/", {"weights": "{}"}).status_code == 403
    assert analyst.post(f"/rounds/{item.round_id}/jobs/", {"kind": "flywheel.generate"}).status_code == 403
    assert not Review.objects.exists()


def test_annotator_cannot_start_rounds_or_jobs(annotator, tasks):
    rnd = tasks[0].round
    html = annotator.get(f"/rounds/{rnd.id}/").content.decode()
    assert "start-generate" not in html and "weights-form" not in html
    assert annotator.post("/rounds/start/", {"name": "mine"}).status_code == 403
    assert annotator.post(f"/rounds/{rnd.id}/weights/", {"weights": "{}"}).status_code == 403
    assert annotator.post(f"/rounds/{rnd.id}/jobs/", {"kind": "flywheel.generate", "config": "{}"}).status_code == 403
    assert Round.objects.count() == 1 and not Job.objects.exists()


def test_manager_starts_a_round_sets_weights_and_starts_jobs(manager, reasons):
    bad = manager.post("/rounds/start/", {"name": "pilot", "weights": '{"category": {"no_such_category": 1}}'})
    assert bad.status_code == 400 and 'data-testid="start-round-error"' in bad.content.decode()
    assert "no_such_category" in bad.content.decode() and not Round.objects.exists()
    response = manager.post("/rounds/start/", {"name": "pilot", "weights": '{"category": {"tool_use": 2}}'})
    assert response.status_code == 302
    rnd = Round.objects.get(name="pilot")
    assert response["Location"] == f"/rounds/{rnd.id}/"
    assert rnd.generation_weights["category"]["tool_use"] == 2
    page = manager.get(f"/rounds/{rnd.id}/").content.decode()
    assert 'data-testid="funnel"' in page and "<svg" in page and "weights-form" in page

    bad = manager.post(f"/rounds/{rnd.id}/weights/", {"weights": '{"category": {"tool_use": -1}}'})
    assert bad.status_code == 400 and 'data-testid="weights-error"' in bad.content.decode()
    bad = manager.post(f"/rounds/{rnd.id}/weights/", {"weights": "[1, 2"})
    assert bad.status_code == 400 and "not valid JSON" in bad.content.decode()
    ok = manager.post(f"/rounds/{rnd.id}/weights/", {"weights": '{"difficulty": {"3": 4}}'})
    assert ok.status_code == 302
    rnd.refresh_from_db()
    assert rnd.generation_weights["difficulty"]["3"] == 4

    unknown = manager.post(f"/rounds/{rnd.id}/jobs/", {"kind": "demo.sleep", "config": "{}"})
    assert unknown.status_code == 400 and "Unknown round job" in unknown.content.decode()
    assert manager.post(f"/rounds/{uuid.uuid4()}/jobs/", {"kind": "flywheel.generate"}).status_code == 404
    from console import job_kinds

    try:
        job_kinds.get("flywheel.feedback")
    except job_kinds.UnknownJobKind:
        pytest.skip("flywheel job kinds not registered yet")
    bad_config = manager.post(f"/rounds/{rnd.id}/jobs/", {"kind": "flywheel.feedback", "config": '{"nope": 1}'})
    assert bad_config.status_code == 400 and 'data-testid="job-error"' in bad_config.content.decode()
    started = manager.post(f"/rounds/{rnd.id}/jobs/",
                           {"kind": "flywheel.feedback", "config": json.dumps({"round_id": str(rnd.id)})})
    assert started.status_code == 302, started.content.decode()[:3000]
    job = Job.objects.get(kind="flywheel.feedback")
    assert started["Location"] == f"/jobs/{job.id}/" and job.created_by == manager.user


def test_unknown_round_and_dataset_ids_are_404(manager):
    for url in (f"/rounds/{uuid.uuid4()}/", "/rounds/x/", f"/datasets/{uuid.uuid4()}/", "/datasets/7/",
                f"/datasets/{uuid.uuid4()}/files/train.jsonl"):
        assert manager.get(url).status_code == 404, url


# ---------------------------------------------------------------------------------------------
# Progress, log, datasets


def test_progress_and_log_show_who_decided_what(annotator, tasks, reasons):
    for decision in ("approve", "reject"):
        annotator.get("/review/tasks/")
        item = QueueItem.objects.get(claimed_by=annotator.user, status=ItemStatus.PENDING)
        code = reasons[Queue.TASK][0].code if decision == "reject" else ""
        assert annotator.post(f"/review/items/{item.id}/decide/",
                              {"decision": decision, "reason_code": code}).status_code == 302
    html = annotator.get("/review/progress/").content.decode()
    row = html.split(f'data-annotator="{annotator.user.username}"')[1].split("</tr>")[0]
    assert '<td class="num">2</td><td class="num">1</td><td class="num">0</td><td class="num">1</td>' in row
    log = annotator.get(f"/review/log/?reviewer={annotator.user.username}").content.decode()
    assert log.count(f'data-reviewer="{annotator.user.username}"') == 2
    assert 'data-decision="reject"' in log and reasons[Queue.TASK][0].code in log
    assert "No decisions" in annotator.get("/review/log/?reviewer=nobody-here").content.decode()


def test_dataset_detail_composition_files_and_download(analyst, settings, tmp_path):
    settings.FLYWHEEL_DATA_DIR = tmp_path
    folder = tmp_path / "datasets" / "demo" / "v1"
    (folder / "hf").mkdir(parents=True)
    body = b'{"messages": []}\n'
    (folder / "train.jsonl").write_bytes(body)
    (folder / "hf" / "README.md").write_text("card")
    (tmp_path / "outside.txt").write_text("secret")
    files = {"train.jsonl": hashlib.sha256(body).hexdigest(), "hf/README.md": "ab" * 32, "../../../outside.txt": "x"}
    stats = {"achieved": {"category": {"tool_use": 0.6, "memory": 0.4}, "difficulty": {"1": 1.0}},
             "effective_target": {"category": {"tool_use": 0.5, "memory": 0.5}},
             "deviation": {"category": {"tool_use": 0.1, "memory": -0.1}}, "tolerance": 0.05,
             "within_tolerance": False, "kept": 10, "train": 9, "test": 1}
    ds = DatasetVersion.objects.create(name="demo", version=1, files=files, stats=stats,
                                       export_dir="datasets/demo/v1", config={"seed": 0})
    assert str(ds.id) in analyst.get("/datasets/").content.decode()
    html = analyst.get(f"/datasets/{ds.id}/").content.decode()
    assert files["train.jsonl"] in html and f"/datasets/{ds.id}/files/hf/README.md" in html
    assert "tool_use" in html and "target 0.500" in html and "bar achieved off" in html
    assert "outside ±0.05" in html
    response = analyst.get(f"/datasets/{ds.id}/files/train.jsonl")
    assert response.status_code == 200 and b"".join(response.streaming_content) == body
    assert 'attachment; filename="train.jsonl"' in response["Content-Disposition"]
    assert analyst.get(f"/datasets/{ds.id}/files/hf/README.md").status_code == 200
    assert analyst.get(f"/datasets/{ds.id}/files/../../../outside.txt").status_code == 404
    assert analyst.get(f"/datasets/{ds.id}/files/test.jsonl").status_code == 404  # not in its manifest
