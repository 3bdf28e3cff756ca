"""Apps domain: lifecycle events, real conflicts and prerequisites, and the GUI agent on the Apps screens."""

from __future__ import annotations

from devices.virtual.phone import VirtualPhone
from devices.virtual.registry import catalog
from devices.virtual.state import set_path
from harness.episode import run_episode
from harness.reference import ReferenceSolver
from harness.subagents import ScriptedGuiExecutor


def _phone(**setup) -> VirtualPhone:
    phone = VirtualPhone(strict=True)
    phone.reset()
    for key, value in setup.items():
        set_path(phone.state, key.replace("__", "."), value)
    return phone


def _events(phone: VirtualPhone, name: str) -> list[dict]:
    return [e for e in phone.state["_meta"]["events"] if e["event"] == name]


def test_launch_logs_apps_open_and_brings_app_to_foreground():
    phone = _phone()
    res = phone.call(("launch_app", {"app": "acode"}))
    assert res.success and res.data["app"] == "Acode"
    assert phone.state["apps"]["foreground"] == "Acode"
    assert [e["app"] for e in _events(phone, "apps.open")] == ["Acode"]


def test_launch_needs_installed_and_enabled_app():
    phone = _phone(apps__installed__YouTube__enabled=False)
    assert phone.call(("launch_app", {"app": "Notion"})).code == 412  # in the store only
    assert phone.call(("launch_app", {"app": "YouTube"})).code == 409  # disabled
    assert phone.call(("launch_app", {"app": "Teleporter"})).code == 404
    assert not _events(phone, "apps.open")


def test_clear_data_of_running_app_conflicts_until_force_stopped():
    phone = _phone(apps__installed__Slack__running=True)
    first = phone.call(("clear_app_data", {"app": "Slack"}))
    assert first.code == 409 and "force stop" in first.error
    assert phone.call(("force_stop_app", {"app": "Slack"})).success
    res = phone.call(("clear_app_data", {"app": "Slack"}))
    assert res.success and phone.state["apps"]["installed"]["Slack"]["storage"]["data_mb"] == 0


def test_default_app_rules():
    phone = _phone()
    assert phone.call(("uninstall_app", {"app": "Chrome"})).code == 409  # system app
    assert phone.call(("set_default_app", {"role": "browser", "app": "Slack"})).code == 409  # can't be a browser
    assert phone.call(("set_default_app", {"role": "browser", "app": "Firefox"})).success
    assert phone.call(("uninstall_app", {"app": "Firefox"})).code == 409  # it is the default now
    assert phone.call(("install_app", {"app": "Brave"})).success
    assert phone.call(("install_app", {"app": "Brave"})).code == 409
    assert phone.call(("set_default_app", {"role": "browser", "app": "Brave"})).success
    assert phone.call(("uninstall_app", {"app": "Firefox"})).success


def test_permission_must_be_requested_by_the_app():
    phone = _phone()
    assert phone.call(("set_app_permission", {"app": "Acode", "permission": "camera", "granted": True})).code == 404
    res = phone.call(("set_app_permission", {"app": "Instagram", "permission": "location", "granted": False}))
    assert res.success and phone.state["apps"]["installed"]["Instagram"]["permissions"]["location"] is False


def test_storage_is_sorted_largest_first():
    rows = _phone().call(("get_app_storage", {})).data["apps"]
    totals = [r["total_mb"] for r in rows]
    assert totals == sorted(totals, reverse=True)


def test_gui_agent_clears_cache_through_the_apps_screens():
    phone = _phone()
    run = ScriptedGuiExecutor().run(phone, "Apps", "Clear the cache of Instagram", budget=10)
    assert run.status == "completed", run.error if hasattr(run, "error") else run
    assert phone.state["apps"]["installed"]["Instagram"]["storage"]["cache_mb"] == 0
    assert catalog().apps["Apps"].script("do a barrel roll") is None


def test_install_outage_is_retried_by_the_reference_plan():
    tpl = catalog().templates["apps.install_after_outage"]
    task = tpl.instantiate(3)
    phone = VirtualPhone()
    ep = run_episode(task, ReferenceSolver(), env=phone)
    assert ep.verdict.success, ep.verdict.reason
    codes = [c.result.code for s in ep.steps for c in s.calls if c.call.name == "install_app"]
    assert codes == [503, 0]
