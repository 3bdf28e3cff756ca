"""Accessibility domain: one screen reader at a time, colour conflicts, font steps, and showcase 4."""

from __future__ import annotations

from devices.virtual.phone import VirtualPhone
from devices.virtual.registry import catalog
from devices.virtual.state import set_path
from harness.contract import PlannerTurn, ToolCall
from harness.episode import run_episode
from harness.memory import MemoryStore
from harness.planner import ScriptedPlanner
from harness.reference import ReferenceSolver
from harness.subagents import ScriptedGuiExecutor

SHOWCASE = "accessibility.reading_aid_from_memory"
SETTER = {"talkback": "set_talkback", "select_to_speak": "set_select_to_speak"}


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


def test_only_one_screen_reader_at_a_time():
    phone = _phone(accessibility__select_to_speak__enabled=True)
    assert phone.call(("set_talkback", {"enabled": True})).code == 409
    assert phone.call(("set_select_to_speak", {"enabled": False})).success
    assert phone.call(("set_talkback", {"enabled": True, "speech_rate": 1.5})).success
    assert phone.call(("set_select_to_speak", {"enabled": True})).code == 409
    assert phone.state["accessibility"]["talkback"] == {"enabled": True, "speech_rate": 1.5}


def test_color_correction_and_inversion_exclude_each_other():
    phone = _phone(accessibility__color_inversion=True)
    assert phone.call(("set_color_correction", {"enabled": True, "mode": "tritanomaly"})).code == 409
    phone.call(("set_color_inversion", {"enabled": False}))
    assert phone.call(("set_color_correction", {"enabled": True, "mode": "tritanomaly"})).success
    assert phone.call(("set_color_inversion", {"enabled": True})).code == 409


def test_font_size_accepts_only_offered_steps():
    phone = _phone()
    assert phone.call(("set_font_size", {"scale": 1.4})).code == 400
    assert phone.call(("set_font_size", {"scale": 1.3})).success
    assert phone.state["accessibility"]["font_scale"] == 1.3


def test_showcase_4_memory_names_the_aid_and_the_plan_queries_both_in_one_turn():
    tpl = catalog().templates[SHOWCASE]
    golds = set()
    for seed in range(20):
        task = tpl.instantiate(seed)
        gold, other = task.params["gold"], task.params["other"]
        golds.add(gold)
        assert task.setup[f"accessibility.{other}.enabled"] is True  # the wrong aid is on
        store = MemoryStore(task.memory)
        query = next(
            c.args for a in tpl.plan(task) if hasattr(a, "calls") for c in a.calls if c.tool == "search_user_memory"
        )
        assert store.call("search_user_memory", query).data["results"][0]["memory_id"] == "m-reading-routine"
        ep = run_episode(task, ReferenceSolver())
        assert ep.verdict.success, ep.verdict.reason
        parallel = [s for s in ep.steps if len(s.calls) == 2]
        assert {c.call.name for c in parallel[0].calls} == {"get_talkback_status", "get_select_to_speak_status"}
    assert golds == {"talkback", "select_to_speak"}


def test_showcase_4_changing_the_font_is_caught():
    task = catalog().templates[SHOWCASE].instantiate(7)
    gold, other = task.params["gold"], task.params["other"]
    turns = [
        _turn(("get_talkback_status", {}), ("get_select_to_speak_status", {})),
        _turn((SETTER[other], {"enabled": False})),
        _turn((SETTER[gold], {"enabled": True}), ("set_font_size", {"scale": 1.0})),
        _turn(content="Fixed your reading aid."),
    ]
    verdict = run_episode(task, ScriptedPlanner(turns)).verdict
    assert not verdict.success and "accessibility.font_scale" in verdict.reason
    assert run_episode(
        task, ScriptedPlanner(turns[:2] + [_turn((SETTER[gold], {"enabled": True}))] + turns[3:])
    ).verdict.success


def test_showcase_4_enabling_the_wrong_aid_fails():
    task = catalog().templates[SHOWCASE].instantiate(11)
    other = task.params["other"]
    turns = [_turn((SETTER[other], {"enabled": True})), _turn(content="Your reading aid is on.")]
    assert not run_episode(task, ScriptedPlanner(turns)).verdict.success


def test_gui_agent_sets_font_size():
    phone = _phone()
    run = ScriptedGuiExecutor().run(phone, "Accessibility", "Set the font size to 1.5", budget=8)
    assert run.status == "completed"
    assert phone.state["accessibility"]["font_scale"] == 1.5
