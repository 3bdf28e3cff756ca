"""Every tool of the virtual phone: schema valid, happy path, and every error code it can return."""

from __future__ import annotations

import copy

import jsonschema
import pytest

from devices.virtual.phone import VirtualPhone
from devices.virtual.registry import catalog
from devices.virtual.state import set_path
from devices.virtual.tasks import Task
from harness.contract import SCHEMAS

TOOLS = sorted(catalog().tools)


def _phone_for(case) -> VirtualPhone:
    phone = VirtualPhone(strict=True)
    phone.reset()
    for path, value in case.setup.items():
        set_path(phone.state, path, copy.deepcopy(value))  # cases are shared; handlers mutate state
    return phone


@pytest.mark.parametrize("name", TOOLS)
def test_tool_schema_is_valid(name):
    tool = catalog().tools[name]
    jsonschema.validate(tool.spec.to_dict(), SCHEMAS["ToolSpec"])
    jsonschema.Draft202012Validator.check_schema(tool.spec.parameters)
    assert tool.spec.description.strip(), f"{name} has no description"
    for key, prop in tool.spec.parameters["properties"].items():
        assert prop.get("description"), f"{name}.{key} has no description"


@pytest.mark.parametrize("name", TOOLS)
def test_tool_cases_cover_success_and_every_code(name):
    tool = catalog().tools[name]
    assert any(c.code is None for c in tool.cases), f"{name} has no success case"
    covered = {c.code for c in tool.cases if c.code is not None}
    missing = set(tool.codes) - covered
    assert not missing, f"{name} declares codes {sorted(missing)} without a case"


@pytest.mark.parametrize("name", TOOLS)
def test_tool_cases_behave_as_declared(name):
    tool = catalog().tools[name]
    for case in tool.cases:
        phone = _phone_for(case)
        result = phone.call((name, case.args))
        jsonschema.validate(result.to_dict(), SCHEMAS["ToolResult"])
        label = f"{name}({case.args}) setup={case.setup}"
        if case.code is None:
            assert result.success, f"{label} failed: {result.error}"
            if tool.check is not None:
                assert tool.check(phone, case.args), f"{label}: effect not visible in state"
        else:
            assert not result.success, f"{label} should fail with {case.code}"
            assert result.code == case.code, f"{label}: got {result.code} {result.error!r}, expected {case.code}"
            assert result.code in set(tool.codes) | {400}, f"{label}: undeclared code {result.code}"
            assert result.error, f"{label}: a failure needs an error message"


@pytest.mark.parametrize("name", TOOLS)
def test_tool_outage_gives_503_then_recovers(name):
    tool = catalog().tools[name]
    case = next(c for c in tool.cases if c.code is None)
    task = Task.from_dict(
        {
            **{
                k: []
                for k in (
                    "domains",
                    "tags",
                    "allowed",
                    "tools",
                    "skills",
                    "memory",
                    "history",
                    "followups",
                    "order",
                    "answer",
                )
            },
            "id": "t",
            "template": "x",
            "category": "tool_use",
            "difficulty": 1,
            "seed": 0,
            "instruction": "",
            "params": {},
            "goal": {},
            "setup": case.setup,
            "faults": [{"tool": name, "kind": "outage", "times": 1}],
            "subagent": False,
            "budget": 4,
        }
    )
    phone = VirtualPhone(strict=True)
    phone.reset(task)
    first = phone.call((name, case.args))
    assert not first.success and first.code == 503
    assert phone.call((name, case.args)).success


def test_unknown_tool_and_bad_arguments_are_clear():
    phone = VirtualPhone(strict=True)
    phone.reset()
    r = phone.call(("no_such_tool", {}))
    assert (r.success, r.code) == (False, 404) and "no_such_tool" in r.error
    r = phone.call(("start_screen_cast", {}))
    assert r.code == 400 and "target" in r.error
    r = phone.call(("start_screen_cast", {"target": "Bedroom TV", "colour": "red"}))
    assert r.code == 400 and "colour" in r.error
    r = phone.call(("set_wifi", {"enabled": 1}))
    assert r.code == 400 and "boolean" in r.error
