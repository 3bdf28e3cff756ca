"""In Chromium: a manager starts demo.sleep and watches its bar reach 100% without reloading; an
annotator is offered no start control and the API refuses them."""

from __future__ import annotations

import os
import shutil

import pytest

from console.models import Role
from tests import factories

pytestmark = [pytest.mark.slow]

CHROMIUM = os.environ.get("FLYWHEEL_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
        "--disable-dev-shm-usage"]


@pytest.fixture
def browser(monkeypatch):
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the test's own ORM calls are still
    # plain synchronous code (the documented Playwright + Django setting).
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"Chromium not found at {CHROMIUM}; install it (apt-get install chromium) or set FLYWHEEL_CHROMIUM")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield browser
        browser.close()


def _login(page, base: str, username: str) -> None:
    page.goto(f"{base}/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", factories.PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/jobs/")


def test_manager_starts_job_and_watches_it_finish_live(browser, worker, daphne_url):
    from playwright.sync_api import expect

    manager = factories.user_create(role=Role.MANAGER)
    page = browser.new_page()
    _login(page, daphne_url, manager.username)
    page.keyboard.press("n")  # the keyboard shortcut opens the start form
    page.select_option("select[name=kind]", "demo.sleep")
    page.fill("textarea[name=config]", '{"seconds": 6, "steps": 6}')
    page.click("[data-testid=start-job]")
    page.wait_for_url(f"{daphne_url}/jobs/*/")
    page.evaluate("""() => {
        window.__noReload = 'still here';
        window.__seen = [];
        const el = document.querySelector('[data-testid=percent]');
        new MutationObserver(() => window.__seen.push(el.textContent)).observe(el, {childList: true});
    }""")
    expect(page.locator("body[data-live='1']")).to_have_count(1, timeout=30_000)
    expect(page.locator("[data-testid=percent]")).to_have_text("100%", timeout=90_000)
    expect(page.locator("#job [data-field=status]")).to_contain_text("succeeded")
    assert page.evaluate("document.getElementById('job-progress').value") == 1
    assert page.evaluate("window.__noReload") == "still here"
    seen = page.evaluate("window.__seen")
    assert any(p not in ("0%", "100%") for p in seen), seen  # the bar moved through intermediate values
    assert page.locator("#job-history li").count() >= 6
    expect(page.locator("#job-log")).to_contain_text("step 6/6")  # the log tail arrived live too
    # The jobs list shows the finished job too.
    page.goto(f"{daphne_url}/jobs/")
    expect(page.locator("#jobs-table tbody tr").first).to_have_attribute("data-status", "succeeded")


def test_annotator_is_not_offered_start_and_api_refuses(browser, transactional_db, daphne_url):
    annotator = factories.user_create(role=Role.ANNOTATOR)
    context = browser.new_context()
    page = context.new_page()
    _login(page, daphne_url, annotator.username)
    assert page.locator("[data-testid=start-job]").count() == 0
    assert page.locator("#start-job").count() == 0
    assert page.locator("[data-testid=whoami]").inner_text().endswith("Annotator")
    csrf = next(c["value"] for c in context.cookies() if c["name"] == "csrftoken")
    response = page.request.post(f"{daphne_url}/api/jobs/", data={"kind": "demo.sleep"},
                                 headers={"X-CSRFToken": csrf, "Referer": f"{daphne_url}/jobs/"})
    assert response.status == 403
    assert response.json()["detail"] == "Only managers can start or cancel jobs."
    page_post = page.request.post(f"{daphne_url}/jobs/start/", form={"kind": "demo.sleep", "config": "{}"},
                                  headers={"X-CSRFToken": csrf, "Referer": f"{daphne_url}/jobs/"})
    assert page_post.status == 403
    context.close()
