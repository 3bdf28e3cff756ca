"""Power domain: power off only after pending writes are saved, mode conflicts, schedules, and showcase 5."""

from __future__ import annotations

from devices.virtual.phone import VirtualPhone
from devices.virtual.registry import catalog
from devices.virtual.state import set_path
from harness.contract import PlannerTurn, ToolCall
from harness.episode import run_episode
from harness.planner import ScriptedPlanner
from harness.reference import ReferenceSolver

SHOWCASE = "power.skills_note_then_power_off"


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


def test_power_off_waits_for_pending_note_writes():
    phone = _phone()
    nid = phone.call(("create_note", {"title": "Meter", "body": "48213"})).data["note_id"]
    refused = phone.call(("power_off_phone", {}))
    assert refused.code == 409 and "power off only after pending writes are saved" in refused.error
    assert nid in refused.error
    assert phone.call(("check_pending_writes", {})).data["safe_to_power_off"] is False
    assert phone.call(("restart_phone", {})).code == 409
    phone.advance(1)  # the notes sync saves the write
    assert phone.call(("power_off_phone", {})).success
    assert phone.state["power"]["device"]["state"] == "off"
    assert phone.call(("power_off_phone", {})).code == 412
    assert phone.call(("set_battery_saver", {"enabled": True})).code == 412


def test_battery_saver_and_high_performance_exclude_each_other():
    phone = _phone(power__performance_mode="high_performance")
    assert phone.call(("set_battery_saver", {"enabled": True})).code == 409
    assert phone.call(("set_performance_mode", {"mode": "balanced"})).success
    assert phone.call(("set_battery_saver", {"enabled": True})).success
    assert phone.call(("set_performance_mode", {"mode": "high_performance"})).code == 409


def test_charging_limit_and_timer_accept_only_offered_values():
    phone = _phone()
    assert phone.call(("set_charging_limit", {"percent": 87})).code == 400
    assert phone.call(("set_charging_limit", {"percent": 85})).data == {"enabled": True, "percent": 85}
    assert phone.call(("set_charging_limit", {"percent": 100})).data == {"enabled": False, "percent": 100}
    assert phone.call(("set_screen_off_timer", {"seconds": 45})).code == 400


def test_schedules_clash_only_on_shared_days():
    phone = _phone()
    assert phone.call(("schedule_power_off", {"time": "23:00", "days": ["sat", "sun"]})).success
    assert phone.call(("schedule_power_on", {"time": "23:00", "days": ["sun"]})).code == 409
    assert phone.call(("schedule_power_on", {"time": "23:00", "days": ["mon"]})).success
    assert phone.call(("cancel_power_schedule", {"which": "power_on"})).success
    assert phone.call(("cancel_power_schedule", {"which": "power_on"})).code == 404


def test_showcase_loads_three_skills_in_one_turn_and_confirms_the_note_before_power_off():
    tpl = catalog().templates[SHOWCASE]
    for seed in range(20):
        task = tpl.instantiate(seed)
        ep = run_episode(task, ReferenceSolver())
        assert ep.verdict.success, ep.verdict.reason
        first = [c.call.name for c in ep.steps[0].calls]
        assert sorted(first) == ["skill__note_taking", "skill__power_management", "skill__task_ordering"]
        names = [c.call.name for s in ep.steps for c in s.calls]
        assert names.index("create_note") < names.index("get_note") < names.index("power_off_phone")
        get = next(c for s in ep.steps for c in s.calls if c.call.name == "get_note")
        assert get.call.arguments["note_id"] == task.params["note_id"]  # the id came from create_note's result


def test_showcase_power_off_before_the_note_fails():
    task = catalog().templates[SHOWCASE].instantiate(3)
    skills = [
        ("skill__note_taking", {"reason": "r"}),
        ("skill__power_management", {"reason": "r"}),
        ("skill__task_ordering", {"reason": "r"}),
    ]
    turns = [
        _turn(*skills),
        _turn(("power_off_phone", {})),
        _turn(("create_note", {"title": task.params["title"], "body": task.params["body"]})),
        _turn(content="Done."),
    ]
    ep = run_episode(task, ScriptedPlanner(turns))
    assert not ep.verdict.success
    create = ep.steps[2].calls[0].result
    assert create.code == 412  # a powered-off phone takes no writes


def test_showcase_power_off_in_the_same_turn_as_the_write_is_refused():
    task = catalog().templates[SHOWCASE].instantiate(4)
    skills = [("skill__note_taking", {"reason": "r"}), ("skill__power_management", {"reason": "r"})]
    turns = [
        _turn(*skills),
        _turn(("create_note", {"title": task.params["title"], "body": task.params["body"]}), ("power_off_phone", {})),
        _turn(content="Done."),
    ]
    ep = run_episode(task, ScriptedPlanner(turns))
    assert ep.steps[1].calls[1].result.code == 409
    assert not ep.verdict.success


def test_battery_gui_script_sets_the_charging_limit():
    from harness.subagents import ScriptedGuiExecutor

    phone = _phone()
    run = ScriptedGuiExecutor().run(phone, "Battery", "Set the charging limit to 85%", 10)
    assert run.status == "completed", run.error
    assert phone.state["power"]["charging_limit"] == {"enabled": True, "percent": 85}
