"""In Chromium: a running CARE job's training curves (reward, success, output tokens, tool calls) and its
competence histogram are drawn from its stored metrics points, and a new point appears without a reload."""

from __future__ import annotations

import os

import pytest

from console.models import Job, JobStatus, Role
from tests import factories
from tests.console.test_browser import _login, browser  # noqa: F401 - the Chromium fixture

pytestmark = [pytest.mark.slow]

SCREENSHOT = os.environ.get("FLYWHEEL_SCREENSHOT", "/tmp/flywheel-training-curves.png")
LINES = ("reward", "success", "output_tokens", "tool_calls")


def _line_points(page, row: str) -> dict[str, int]:
    return {m: len(page.locator(f'{row} svg.curve[data-metric="{m}"] polyline').get_attribute("points").split())
            for m in LINES}


def _bars(page, row: str) -> list[tuple[int, float]]:
    return page.locator(f"{row} svg.histogram rect.bar").evaluate_all(
        "rects => rects.map(r => [Number(r.dataset.count), r.height.baseVal.value])")


def test_care_run_curves_and_histogram_draw_and_follow_new_points(browser, transactional_db, daphne_url):  # noqa: F811
    from playwright.sync_api import expect

    job = factories.job_create(kind="train.care", status=JobStatus.RUNNING, config={"care": True},
                               message="iteration 3/20")
    factories.metrics_points_append(job=job, points=[factories.care_metrics_point(i) for i in (1, 2, 3)])
    analyst = factories.user_create(role=Role.ANALYST)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    _login(page, daphne_url, analyst.username)
    page.goto(f"{daphne_url}/training/")
    row = f'tr[data-run-id="{job.id}"]'
    expect(page.locator(f"{row} .run-curves")).to_have_attribute("data-points", "3")

    assert _line_points(page, row) == dict.fromkeys(LINES, 3)
    expect(page.locator(f'{row} svg[data-metric="reward"] .chart-label')).to_have_text("reward 0.300")
    expect(page.locator(f'{row} svg[data-metric="success"] .chart-label')).to_have_text("success 75.0%")
    expect(page.locator(f'{row} svg[data-metric="output_tokens"] .chart-label')).to_have_text("output tokens 43.0")
    expect(page.locator(f'{row} svg[data-metric="tool_calls"] .chart-value')).to_have_text("iteration 3")
    bars = _bars(page, row)
    assert [count for count, _ in bars] == [2, 1, 0, 0, 0, 0, 0, 1, 0, 3]
    heights = [height for _, height in bars]
    assert heights[9] == max(heights) > heights[0] > heights[1] > 0 and heights[2] == 0
    expect(page.locator(f"{row} svg.histogram .chart-label")).to_have_text("competence, 7 tasks")
    expect(page.locator(f"{row} svg.histogram .chart-value")).to_have_text("iteration 3")
    assert "0.9–1.0: 3" in page.locator(f"{row} svg.histogram").get_attribute("aria-label")
    page.locator('[data-testid="runs"]').screenshot(path=SCREENSHOT)

    # The trainer logs iteration 4 and the run finishes: the page follows without a reload.
    page.evaluate("window.__noReload = 'still here'")
    factories.metrics_points_append(job=job, points=[factories.care_metrics_point(4, hist=[0] * 9 + [5])])
    Job.objects.filter(id=job.id).update(status=JobStatus.SUCCEEDED, message="checkpoint saved at iteration 4")
    expect(page.locator(f"{row} .run-curves")).to_have_attribute("data-points", "4", timeout=10_000)
    assert _line_points(page, row) == dict.fromkeys(LINES, 4)
    expect(page.locator(f'{row} svg[data-metric="success"] .chart-label')).to_have_text("success 100.0%")
    assert [count for count, _ in _bars(page, row)] == [0] * 9 + [5]
    expect(page.locator(f'[data-run-status="{job.id}"]')).to_have_text("succeeded")
    expect(page.locator(f'[data-run-message="{job.id}"]')).to_have_text("checkpoint saved at iteration 4")
    assert page.evaluate("window.__noReload") == "still here"
    assert page.request.get(f"{daphne_url}/training/runs/{job.id}/metrics/").json()["terminal"] is True


def test_comparison_pairs_against_a_baseline_chosen_by_keyboard_and_sorts_by_the_difference(
        browser, transactional_db, daphne_url):  # noqa: F811
    from playwright.sync_api import expect

    from console.models import Checkpoint
    from tests.console.test_training_pages import MEAN, STD, _tasks

    def scored(name: str, solved: list[bool], calls: int) -> Checkpoint:
        ev = factories.job_create(kind="train.evaluate", status=JobStatus.SUCCEEDED, config={"checkpoint": name},
                                  result={"mean": MEAN, "std": STD, "tasks": _tasks(solved, calls)})
        return Checkpoint.objects.create(name=name, path=name, kind="care",
                                         scores={"mean": MEAN, "std": STD, "job": str(ev.id)})

    scored("base", [True, False] * 20, 4)
    scored("better", [True, True, True, False] * 10, 3)  # +20 points (memory), 25% fewer calls
    scored("worse", [True, False, False, False] * 10, 5)  # -20 points (skills), 25% more calls
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    _login(page, daphne_url, factories.user_create(role=Role.ANNOTATOR).username)
    page.goto(f"{daphne_url}/training/")
    select = page.locator('[data-testid="baseline"]')
    select.focus()
    select.select_option(label="base")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")  # the Pair button
    expect(page.locator("#compare-table th", has_text="Δ Overall vs base")).to_be_visible()
    header = page.locator("#compare-table th", has_text="Δ Overall vs base")
    header.click()  # ascending
    names = page.locator("#compare-table tbody tr td:first-child").all_inner_texts()
    assert names == ["base", "worse", "better"]  # the baseline has no figure and sorts first
    expect(page.locator("#compare-table tbody tr", has_text="better").locator("td.clear").first).to_have_text(
        "+20.00 [+20.00, +20.00]")
    header.click()  # descending
    assert page.locator("#compare-table tbody tr td:first-child").all_inner_texts()[0] == "better"
