"""Parsing model text: Qwen/Hermes tool calls, malformed output as errors the episode survives, exact rendering."""

from __future__ import annotations

import pytest

from devices.virtual.registry import catalog
from harness.contract import PlannerTurn, ToolCall
from harness.episode import run_episode
from harness.parse import estimate_tokens, parse_turn, render_turn
from harness.planner import ScriptedPlanner
from harness.reference import ReferenceSolver

TURNS = [
    PlannerTurn(content="All done: the cast is on the Bedroom TV."),
    PlannerTurn(reasoning="Check the cast first.", tool_calls=[ToolCall("", "get_cast_status", {})]),
    PlannerTurn(
        reasoning="Two independent queries.\nRun them together.",
        content="Checking both.",
        tool_calls=[
            ToolCall("", "get_wifi_status", {}),
            ToolCall("", "start_screen_cast", {"target": "Wohnzimmer-Fernseher ✓", "mode": "extend"}),
        ],
    ),
    PlannerTurn(tool_calls=[ToolCall("", "search_user_memory", {"query": "laptop", "x": [1, {"y": None}]})]),
]


@pytest.mark.parametrize("turn", TURNS)
def test_render_then_parse_round_trips(turn):
    raw = render_turn(turn)
    back = parse_turn(raw)
    assert (back.reasoning, back.content, back.parse_errors) == (turn.reasoning, turn.content, [])
    assert [(c.name, c.arguments) for c in back.tool_calls] == [(c.name, c.arguments) for c in turn.tool_calls]
    assert render_turn(back) == raw
    assert back.output_tokens == estimate_tokens(raw) and back.reasoning_tokens == estimate_tokens(turn.reasoning)


def test_qwen_shaped_text_parses():
    raw = ('<think>\nThe cast is active.\n</think>\n\n<tool_call>\n{"name": "stop_screen_cast", "arguments": {}}\n'
           '</tool_call>\n<tool_call>\n{"name": "get_wifi_status", "arguments": "{}"}\n</tool_call>')
    t = parse_turn(raw)
    assert t.reasoning == "The cast is active." and t.content == "" and not t.parse_errors
    assert [c.name for c in t.tool_calls] == ["stop_screen_cast", "get_wifi_status"]
    # A bare closing tag (the opening one sat in the prompt) is accepted too.
    assert parse_turn("thinking\n</think>\n\nHello.").reasoning == "thinking"


@pytest.mark.parametrize("raw,needle", [
    ('<tool_call>\n{"name": "get_cast_status", "arguments": {]\n</tool_call>', "malformed JSON"),
    ('<tool_call>\n{"arguments": {}}\n</tool_call>', 'no "name"'),
    ('<tool_call>\n["get_cast_status"]\n</tool_call>', "JSON object"),
    ('<tool_call>\n{"name": "x", "arguments": [1]}\n</tool_call>', "must be a JSON object"),
    ('<tool_call>\n{"name": "get_cast_status", "arguments": {}}', "unterminated"),
    ("<think>\nI was cut off mid-thou", "unterminated <think>"),
])
def test_malformed_output_becomes_parse_errors_never_an_exception(raw, needle):
    t = parse_turn(raw)
    assert t.parse_errors and needle in t.parse_errors[0] and not t.is_final
    assert not t.tool_calls


def test_malformed_block_stays_in_content_so_rendering_keeps_what_was_said():
    raw = 'Let me try.\n<tool_call>\n{"name": oops}\n</tool_call>'
    t = parse_turn(raw)
    assert "oops" in t.content and len(t.parse_errors) == 1
    assert parse_turn(render_turn(t)).parse_errors == t.parse_errors


def test_episode_survives_bad_json_unknown_tool_and_missing_argument_then_succeeds():
    task = catalog().templates["connectivity.cast_switch_after_false_claim"].instantiate(7)
    good = run_episode(task, ReferenceSolver())
    assert good.verdict.success
    bad = [
        '<think>\nCheck the cast.\n</think>\n\n<tool_call>\n{"name": "get_cast_status", "arguments": {\n</tool_call>',
        '<tool_call>\n{"name": "cast_everything_now", "arguments": {}}\n</tool_call>',
        '<tool_call>\n{"name": "start_screen_cast", "arguments": {"mode": "mirror"}}\n</tool_call>',
    ]
    planner = ScriptedPlanner(bad + [render_turn(s.turn) for s in good.steps])
    ep = run_episode(task, planner)
    s0, s1, s2 = ep.steps[:3]
    assert s0.parse_errors[0].code == 400 and "malformed JSON" in s0.parse_errors[0].error and not s0.calls
    assert s1.calls[0].result.code == 404
    assert s2.calls[0].result.code == 400 and "missing required argument 'target'" in s2.calls[0].result.error
    assert any(m["role"] == "system" and "could not be fully parsed" in m["content"] for m in ep.messages)
    assert ep.verdict.success, ep.verdict.reason
    assert ep.final_answer == good.final_answer
