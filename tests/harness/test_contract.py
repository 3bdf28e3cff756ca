"""Contract records round-trip through JSON and validate against SCHEMAS; HarnessVersion is content-addressed."""

from __future__ import annotations

import json

import jsonschema
import pytest

from devices.virtual.registry import catalog
from harness.contract import (
    SCHEMAS,
    CallRecord,
    Costs,
    Episode,
    PlannerTurn,
    Step,
    ToolCall,
    ToolResult,
    ToolSpec,
    Verdict,
)
from harness.episode import run_episode
from harness.memory import MEMORY_TOOLS
from harness.reference import ReferenceSolver
from harness.skills import SkillLibrary
from harness.subagents import GUI_AGENT_SPEC
from harness.version import HarnessVersion


def validate(kind: str, obj: dict) -> None:
    jsonschema.Draft202012Validator(SCHEMAS[kind]).validate(obj)


def json_round(d: dict) -> dict:
    return json.loads(json.dumps(d))


@pytest.fixture(scope="module")
def episodes() -> list[Episode]:
    out = []
    for tid in sorted(catalog().templates):
        out.append(run_episode(catalog().templates[tid].instantiate(2),
                               ReferenceSolver(reasoning="verbose", redundant_checks=True, mistake=True)))
    return out


def test_every_tool_spec_validates_and_round_trips():
    lib = SkillLibrary()
    specs = [t.spec for t in catalog().tools.values()] + list(MEMORY_TOOLS.values()) + [GUI_AGENT_SPEC]
    specs += [lib.spec(name) for name in lib.skills]
    for spec in specs:
        d = json_round(spec.to_dict())
        validate("ToolSpec", d)
        assert ToolSpec.from_dict(d) == spec
        jsonschema.Draft202012Validator.check_schema(spec.parameters)


def test_episode_records_round_trip_and_validate(episodes):
    for ep in episodes:
        d = json_round(ep.to_dict())
        validate("Episode", d)
        back = Episode.from_dict(d)
        # Stored form in, stored form out (task JSON-safety has its own test below).
        assert json_round(back.to_dict()) == d
        validate("Costs", d["costs"])
        validate("Verdict", d["verdict"])
        assert Costs.from_dict(d["costs"]) == ep.costs and Verdict.from_dict(d["verdict"]) == ep.verdict
        for step in d["steps"]:
            validate("Step", step)
            assert Step.from_dict(step).to_dict() == step
            validate("PlannerTurn", step["turn"])
            assert PlannerTurn.from_dict(step["turn"]).to_dict() == step["turn"]
            for rec in step["calls"]:
                validate("ToolCall", rec["call"])
                validate("ToolResult", rec["result"])
                assert CallRecord.from_dict(rec).to_dict() == rec
                assert ToolResult.from_dict(rec["result"]).to_dict() == rec["result"]


def test_every_template_builds_json_safe_tasks():
    """A task is stored as JSON (TaskSpec): tuples, sets or non-string keys would not come back equal."""
    unsafe = []
    for tid in sorted(catalog().templates):
        task = catalog().templates[tid].instantiate(2).to_dict()
        if json_round(task) != task:
            unsafe.append(f"{tid}: " + ", ".join(k for k in task if json_round({k: task[k]})[k] != task[k]))
    assert not unsafe, f"tasks that do not survive JSON: {unsafe}"


def test_failures_and_codes_appear_in_real_episodes(episodes):
    codes = {c.result.code for ep in episodes for s in ep.steps for c in s.calls if not c.result.success}
    assert 400 in codes  # the mistake style's missing argument
    assert {ep.harness_version for ep in episodes} == {HarnessVersion.default().id}


def test_tool_call_accepts_openai_string_arguments():
    c = ToolCall.from_dict({"id": "call_1", "name": "set_wifi", "arguments": '{"enabled": true}'})
    assert c.arguments == {"enabled": True}
    assert json.loads(c.to_openai()["function"]["arguments"]) == {"enabled": True}


def test_harness_version_is_data_with_a_stable_content_hash():
    a, b = HarnessVersion.default(), HarnessVersion.default()
    assert a.id == b.id and a.id.startswith("hv-")
    d = json_round(a.to_dict())
    assert HarnessVersion.from_dict(d).to_dict() == a.to_dict()
    assert HarnessVersion(name="renamed").id == a.id, "the name is a label, not content"
    changed = HarnessVersion(policy=a.policy + "\n- Be brief.")
    assert changed.id != a.id
    assert "wait for the earlier result before issuing dependent calls" in a.policy
    assert "after a tool fails, make at most one correction supported by the schema, user input or returned evidence" \
        in a.policy.lower()
    with pytest.raises(ValueError):
        HarnessVersion.from_dict({**d, "policy": "tampered"})
