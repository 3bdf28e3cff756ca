"""Skills: tool-conditioned context (hidden until loaded, 412 before), rules, overrides, loading twice."""

from __future__ import annotations

from devices.virtual.registry import catalog
from harness.contract import PlannerTurn, ToolCall
from harness.episode import run_episode
from harness.planner import ScriptedPlanner
from harness.skills import SkillLibrary
from harness.version import HarnessVersion

TASK = catalog().templates["connectivity.skill_cast_switch"].instantiate(5)


def call(name: str, **args) -> PlannerTurn:
    return PlannerTurn(tool_calls=[ToolCall("", name, args)])


def test_skill_tools_are_hidden_until_loaded_and_412_says_which_skill():
    target = TASK.params["target"]
    planner = ScriptedPlanner([
        call("stop_screen_cast"),
        call("skill__screen_casting", reason="switch the cast display"),
        call("stop_screen_cast"),
        call("start_screen_cast", target=target),
        PlannerTurn(content=f"Now casting to {target}."),
    ])
    ep = run_episode(TASK, planner)
    first = ep.steps[0].calls[0].result
    assert not first.success and first.code == 412
    assert first.error == "tool stop_screen_cast is not available; load skill__screen_casting first"
    loaded = ep.steps[1].calls[0].result
    assert loaded.success and loaded.data["status"] == "loaded"
    assert "stop_screen_cast" in loaded.data["loaded_tools"]
    assert loaded.data["instructions"].startswith("# Screen casting\n## Rules\n- ")
    offered = {t["function"]["name"] for t in ep.tools}
    assert {"stop_screen_cast", "start_screen_cast", "skill__screen_casting"} <= offered
    assert ep.verdict.success, ep.verdict.reason


def test_tools_of_unloaded_skills_are_not_in_the_first_context():
    seen = []

    class Spy(ScriptedPlanner):
        def generate(self, contexts):
            seen.append([t.name for t in contexts[0].tools])
            return super().generate(contexts)

    run_episode(TASK, Spy([call("skill__screen_casting", reason="cast")]))
    assert "start_screen_cast" not in seen[0] and "skill__screen_casting" in seen[0]
    assert "start_screen_cast" in seen[1]


def test_loading_twice_is_fine_and_reason_is_required():
    lib = SkillLibrary()
    loaded: set[str] = set()
    assert lib.load("screen_casting", {"reason": "x"}, loaded).success
    again = lib.load("screen_casting", {"reason": "x"}, loaded)
    assert again.success and again.data["already_loaded"] and "already loaded" in again.message
    assert lib.load("screen_casting", {}, set()).code == 400
    assert lib.load("screen_casting", {"reason": "x", "why": "y"}, set()).code == 400
    assert lib.load("no_such_skill", {"reason": "x"}, set()).code == 404


def test_not_offered_tool_without_a_skill_is_404():
    ep = run_episode(TASK, ScriptedPlanner([call("set_hotspot", enabled=True)]))
    res = ep.steps[0].calls[0].result
    assert res.code == 404 and "not available" in res.error


def test_overrides_patch_rules_and_add_a_pure_procedure_skill():
    lib = SkillLibrary({
        "screen_casting": {"rules": ["Always stop first."]},
        "conflict_rules": {"title": "Conflicts", "description": "Order conflicting requests.", "tools": [],
                           "rules": ["Later requests win."]},
    })
    loaded: set[str] = set()
    assert lib.load("screen_casting", {"reason": "x"}, loaded).data["instructions"].endswith("- Always stop first.")
    pure = lib.load("conflict_rules", {"reason": "x"}, loaded)
    assert pure.data["loaded_tools"] == [] and "Later requests win." in pure.data["instructions"]
    assert "Procedure only" in lib.spec("conflict_rules").description
    # The catalogue's own skill objects are untouched by a version's overrides.
    assert catalog().skills["screen_casting"].rules != ["Always stop first."]
    assert SkillLibrary().skills["screen_casting"].rules == catalog().skills["screen_casting"].rules


def test_harness_version_overrides_reach_the_episode():
    version = HarnessVersion(skill_overrides={"screen_casting": {"rules": ["Custom rule."]}},
                             tool_description_overrides={"get_wifi_status": "Wi-Fi, custom."})
    ep = run_episode(TASK, ScriptedPlanner([call("skill__screen_casting", reason="cast")]), harness=version)
    assert "Custom rule." in ep.steps[0].calls[0].result.data["instructions"]
    desc = {t["function"]["name"]: t["function"]["description"] for t in ep.tools}
    assert desc["get_wifi_status"] == "Wi-Fi, custom."
    assert ep.harness_version == version.id != HarnessVersion.default().id
