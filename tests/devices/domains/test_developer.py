"""Developer domain: unlocking, prerequisites, async bug reports, and showcase 1 (memory-guided, ordered routine)."""

from __future__ import annotations

from devices.virtual.phone import VirtualPhone
from devices.virtual.registry import catalog
from devices.virtual.state import set_path
from harness.contract import PlannerTurn, ToolCall
from harness.episode import run_episode
from harness.memory import MemoryStore
from harness.planner import ScriptedPlanner
from harness.reference import ReferenceSolver

ROUTINE = "developer.laptop_work_routine"


def _phone(**setup) -> VirtualPhone:
    phone = VirtualPhone(strict=True)
    phone.reset()
    for key, value in setup.items():
        set_path(phone.state, key.replace("__", "."), value)
    return phone


def _turn(*calls, content: str = "") -> PlannerTurn:
    return PlannerTurn(
        content=content, tool_calls=[ToolCall(id=f"c{i}", name=n, arguments=a) for i, (n, a) in enumerate(calls)]
    )


def test_seven_build_number_taps_unlock_and_enable_developer_options():
    phone = _phone()
    assert phone.call(("set_developer_options", {"enabled": True})).code == 412
    results = [phone.call(("tap_build_number", {})) for _ in range(7)]
    assert [r.data["steps_left"] for r in results] == [6, 5, 4, 3, 2, 1, 0]
    assert results[-1].data["developer"] and phone.state["developer"]["enabled"]
    assert "already a developer" in phone.call(("tap_build_number", {})).message


def test_usb_debugging_needs_developer_options_and_is_reset_when_they_go_off():
    phone = _phone(developer__unlocked=True)
    assert phone.call(("set_usb_debugging", {"enabled": True})).code == 412
    assert phone.call(("set_developer_options", {"enabled": True})).success
    assert phone.call(("set_usb_debugging", {"enabled": True})).success
    assert phone.call(("set_developer_options", {"enabled": False})).success
    assert phone.state["developer"]["usb_debugging"] is False


def test_wireless_debugging_needs_a_wifi_connection():
    phone = _phone(developer__unlocked=True, developer__enabled=True)
    phone.call(("set_wifi", {"enabled": False}))
    res = phone.call(("set_wireless_debugging", {"enabled": True}))
    assert res.code == 412 and "Wi-Fi" in res.error
    phone.call(("set_wifi", {"enabled": True}))
    assert phone.call(("set_wireless_debugging", {"enabled": True})).success


def test_mock_location_app_needs_location_permission_from_the_apps_domain():
    phone = _phone(developer__unlocked=True, developer__enabled=True)
    assert phone.call(("set_mock_location_app", {"app": "GPS Joystick"})).code == 412
    assert phone.call(("set_mock_location_app", {"app": "Maps"})).code == 409
    phone.call(("set_app_permission", {"app": "GPS Joystick", "permission": "location", "granted": True}))
    assert phone.call(("set_mock_location_app", {"app": "GPS Joystick"})).success


def test_bug_report_completes_over_steps_and_a_slow_fault_delays_it():
    for slow, steps in ((False, 4), (True, 7)):
        tpl = catalog().templates["developer.bug_report_async"]
        task = next(
            t
            for t in (tpl.instantiate(s) for s in range(200))
            if t.params["slow"] == slow and t.params["kind"] == "full"
        )
        phone = VirtualPhone(strict=True)
        phone.reset(task)
        assert phone.call(("take_bug_report", {"kind": "full"})).success
        assert phone.call(("take_bug_report", {"kind": "full"})).code == 409  # one at a time
        phone.advance(steps - 1)
        assert phone.call(("get_bug_report_status", {})).data["status"] == "in_progress"
        phone.advance(1)
        assert phone.call(("get_bug_report_status", {})).data["status"] == "ready"


def test_showcase_1_first_search_finds_only_the_fragment_second_finds_the_routine():
    tpl = catalog().templates[ROUTINE]
    assert tpl.category == "memory" and set(tpl.domains) == {"developer", "connectivity", "apps"}
    for seed in range(30):
        task = tpl.instantiate(seed)
        store = MemoryStore(task.memory)
        queries = [
            c.args for a in tpl.plan(task) if hasattr(a, "calls") for c in a.calls if c.tool == "search_user_memory"
        ]
        assert len(queries) == 2
        first = [r["memory_id"] for r in store.call("search_user_memory", queries[0]).data["results"]]
        second = [r["memory_id"] for r in store.call("search_user_memory", queries[1]).data["results"]]
        assert first[0] == "m-laptop-fragment" and "m-routine-full" not in first
        assert second[0] == "m-routine-full"
        assert task.order == ["apps.open", "connectivity.sharing", "developer.usb_debugging"]


def test_showcase_1_usb_debugging_before_the_other_steps_fails():
    tpl = catalog().templates[ROUTINE]
    task = next(
        t for t in (tpl.instantiate(s) for s in range(50)) if t.params["dev_on"] and t.params["method"] == "wifi"
    )
    p = task.params
    share = (
        "set_keyboard_mouse_sharing",
        {"enabled": True, "peer": p["peer"], "direction": "laptop_to_phone", "method": "wifi"},
    )
    good = [
        _turn(("launch_app", {"app": p["editor"]})),
        _turn(share),
        _turn(("set_usb_debugging", {"enabled": True})),
        _turn(content="Done."),
    ]
    assert run_episode(task, ScriptedPlanner(good)).verdict.success
    usb_first = [
        _turn(("set_usb_debugging", {"enabled": True})),
        _turn(("launch_app", {"app": p["editor"]})),
        _turn(share),
        _turn(content="Done."),
    ]
    verdict = run_episode(task, ScriptedPlanner(usb_first)).verdict
    assert not verdict.success and "order" in verdict.reason


def test_showcase_1_reference_enables_developer_options_when_off():
    tpl = catalog().templates[ROUTINE]
    task = next(t for t in (tpl.instantiate(s) for s in range(50)) if not t.params["dev_on"])
    phone = VirtualPhone()
    ep = run_episode(task, ReferenceSolver(), env=phone)
    assert ep.verdict.success, ep.verdict.reason
    names = [c.call.name for s in ep.steps for c in s.calls]
    assert names.index("set_developer_options") < names.index("set_usb_debugging")
    assert names[-1] == "set_usb_debugging"
