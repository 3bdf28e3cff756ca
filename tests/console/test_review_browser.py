"""In Chromium, keyboard only: an annotator reviews 5 tasks and 3 collected trajectories (approve, reject
with a reason by digit, edit, skip, step labels and a step comment), and the decisions are in the log."""

from __future__ import annotations

import os

import pytest

from console.models import Decision, Queue, QueueItem, ReasonCode, Review, Role, TaskStatus, TrajectoryStep
from console.services.collection import collection_run
from console.services.review import review_items_create
from tests import factories
from tests.console.test_browser import _login, browser  # noqa: F401 - the Chromium fixture

pytestmark = [pytest.mark.slow]

SCREENSHOT = os.environ.get("FLYWHEEL_SCREENSHOT", "/tmp/flywheel-trajectory-viewer.png")


def _ensure_reasons() -> None:
    """Reject reasons are seeded by a migration; an earlier transactional test's flush may have removed them."""
    from importlib import import_module

    seed = import_module("console.migrations.0003_append_only_and_reasons")
    for queue, rows in seed.REASONS.items():
        for position, (code, label) in enumerate(rows):
            ReasonCode.objects.get_or_create(queue=queue, code=code, defaults={"label": label, "position": position})


def _item_id(page) -> str:
    page.wait_for_selector("body[data-review-ready='1']")
    return page.locator("#review").get_attribute("data-item-id")


def _submit_and_wait(page, keys: str = "Control+Enter") -> None:
    before = page.locator("#review").get_attribute("data-item-id")
    with page.expect_navigation():
        page.keyboard.press(keys)
    page.wait_for_load_state("domcontentloaded")
    if page.locator("#review").count():
        assert page.locator("#review").get_attribute("data-item-id") != before


def test_annotator_reviews_tasks_and_trajectories_with_the_keyboard(browser, transactional_db, daphne_url):  # noqa: F811
    from playwright.sync_api import expect

    _ensure_reasons()
    rnd = factories.round_create()
    tasks = [factories.task_spec_create(round=rnd) for _ in range(5)]
    review_items_create(queue=Queue.TASK, round=rnd, objects=tasks)
    collected = [factories.task_spec_create(round=rnd, status=TaskStatus.APPROVED) for _ in range(3)]
    planner = {"kind": "reference", "style": {"mistake": True, "reasoning": "verbose"}}
    result = collection_run(round=rnd, planner=planner, task_ids=[t.id for t in collected], parallel=3)
    assert result["episodes"] == 3
    task_reasons = list(ReasonCode.objects.filter(queue=Queue.TASK, active=True).order_by("position", "code"))
    traj_reasons = list(ReasonCode.objects.filter(queue=Queue.TRAJECTORY, active=True).order_by("position", "code"))

    annotator = factories.user_create(role=Role.ANNOTATOR)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    _login(page, daphne_url, annotator.username)
    page.goto(f"{daphne_url}/review/tasks/")

    # 1: approve.
    _item_id(page)
    page.keyboard.press("a")
    expect(page.locator("#chosen")).to_contain_text("Approve")
    _submit_and_wait(page)
    # 2: reject; the digit picks the second reason.
    _item_id(page)
    page.keyboard.press("r")
    expect(page.locator("#reasons")).to_be_visible()
    page.keyboard.press("2")
    expect(page.locator(".reason-btn.on")).to_contain_text(task_reasons[1].label)
    _submit_and_wait(page)
    # 3: edit the instruction (shortcuts are off while typing: "a" and "s" are just letters here).
    edited_id = _item_id(page)
    page.keyboard.press("e")
    expect(page.locator("#f-instruction")).to_be_focused()
    page.keyboard.type(" Thanks, as soon as possible.")
    _submit_and_wait(page)
    # 4: the cheat-sheet, then skip with plain Enter.
    _item_id(page)
    page.keyboard.press("?")
    expect(page.locator("#cheatsheet")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#cheatsheet")).to_be_hidden()
    page.keyboard.press("s")
    _submit_and_wait(page, "Enter")
    # 5: approve, submitting with no decision first is refused on the page.
    _item_id(page)
    page.keyboard.press("Control+Enter")
    expect(page.locator("#chosen")).to_contain_text("Choose a decision first")
    page.keyboard.press("a")
    _submit_and_wait(page)
    expect(page.locator("[data-testid=queue-empty]")).to_be_visible()

    page.goto(f"{daphne_url}/review/trajectories/")
    # 1: label steps (erroneous, then recovery), comment on the second, approve.
    first_traj_item = _item_id(page)
    expect(page.locator("[data-testid=call-error]").first).to_be_visible()
    expect(page.locator("#steps img").first).to_be_visible()
    page.keyboard.press("x")
    page.keyboard.press("j")
    page.keyboard.press("v")
    page.keyboard.press("m")
    page.keyboard.type("recovered from the failed call")
    page.keyboard.press("Escape")
    expect(page.locator("#steps li.step").nth(0)).to_have_attribute("data-label", "erroneous")
    expect(page.locator("#steps li.step").nth(1)).to_have_attribute("data-label", "recovery")
    page.keyboard.press("ArrowUp")
    page.keyboard.press("k")
    page.keyboard.press("a")
    page.screenshot(path=SCREENSHOT, full_page=False)
    _submit_and_wait(page)
    # 2: reject with the first reason.
    _item_id(page)
    page.keyboard.press("r")
    page.keyboard.press("1")
    expect(page.locator(".reason-btn.on")).to_contain_text(traj_reasons[0].label)
    _submit_and_wait(page)
    # 3: approve with ⌘+Enter's other spelling.
    _item_id(page)
    page.keyboard.press("a")
    _submit_and_wait(page, "Meta+Enter")
    expect(page.locator("[data-testid=queue-empty]")).to_be_visible()

    # The decision log holds exactly these decisions, by this annotator, in this order.
    reviews = list(Review.objects.filter(reviewer=annotator).order_by("created_at"))
    assert [(r.queue, r.decision, r.reason_code) for r in reviews] == [
        (Queue.TASK, Decision.APPROVE, ""),
        (Queue.TASK, Decision.REJECT, task_reasons[1].code),
        (Queue.TASK, Decision.EDIT, ""),
        (Queue.TASK, Decision.SKIP, ""),
        (Queue.TASK, Decision.APPROVE, ""),
        (Queue.TRAJECTORY, Decision.APPROVE, ""),
        (Queue.TRAJECTORY, Decision.REJECT, traj_reasons[0].code),
        (Queue.TRAJECTORY, Decision.APPROVE, ""),
    ]
    assert all(r.gate == "human" for r in reviews)
    edit = reviews[2]
    assert str(edit.item_id) == edited_id
    assert edit.after["instruction"].endswith("Thanks, as soon as possible.")
    labelled = reviews[5]
    assert str(labelled.item_id) == first_traj_item
    steps = {s.index: s for s in TrajectoryStep.objects.filter(trajectory=labelled.trajectory)}
    assert steps[0].label == "erroneous" and steps[1].label == "recovery"
    assert steps[1].comment == "recovered from the failed call"
    assert not QueueItem.objects.filter(claimed_by=annotator, status="pending").exists()  # the skip handed it back
    page.goto(f"{daphne_url}/review/log/?reviewer={annotator.username}")
    expect(page.locator(f"#review-log tbody tr[data-reviewer='{annotator.username}']")).to_have_count(8)


def test_a_lost_lease_shows_the_banner_and_stops_submission(browser, transactional_db, daphne_url):  # noqa: F811
    from playwright.sync_api import expect

    _ensure_reasons()
    rnd = factories.round_create()
    review_items_create(queue=Queue.TASK, round=rnd, objects=[factories.task_spec_create(round=rnd)])
    annotator = factories.user_create(role=Role.ANNOTATOR)
    page = browser.new_page()
    _login(page, daphne_url, annotator.username)
    page.goto(f"{daphne_url}/review/tasks/")
    item_id = _item_id(page)
    expect(page.locator("#lease-banner")).to_be_hidden()
    page.evaluate("window.__flywheelRenew()")  # the heartbeat, now rather than in 60 s
    expect(page.locator("body[data-lease='held']")).to_have_count(1)
    # The lease ran out and someone else claimed the item.
    other = factories.user_create(role=Role.ANNOTATOR)
    QueueItem.objects.filter(pk=item_id).update(claimed_by=other)
    page.evaluate("window.__flywheelRenew()")
    expect(page.locator("#lease-banner")).to_be_visible()
    expect(page.locator("#submit-decision")).to_be_disabled()
    page.keyboard.press("a")
    page.keyboard.press("Control+Enter")
    expect(page.locator("#chosen")).to_contain_text("claim expired")
    assert page.locator("#review").get_attribute("data-item-id") == item_id  # still here, nothing submitted
    assert not Review.objects.exists()
