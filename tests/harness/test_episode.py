"""The episode loop: reference and do-nothing verdicts, OpenAI chat export, notices, multi-turn, batching."""

from __future__ import annotations

import json

import pytest

from devices.virtual.registry import catalog
from harness.bench import assert_no_test_overlap, score, suite_tasks
from harness.contract import PlannerTurn, ToolCall
from harness.episode import run_episode, run_episodes
from harness.planner import DoNothingPlanner, ScriptedPlanner
from harness.reference import ReferenceSolver, ReferenceStyle

TEMPLATES = sorted(catalog().templates)
STYLES = [ReferenceStyle(), ReferenceStyle("verbose", redundant_checks=True, mistake=True),
          ReferenceStyle("none", redundant_checks=True, mistake=True),
          ReferenceStyle.from_label("verbose+checks+verify")]


def call(name: str, **args) -> ToolCall:
    return ToolCall("", name, args)


@pytest.mark.parametrize("tid", TEMPLATES)
def test_reference_succeeds_in_every_style_and_do_nothing_fails(tid):
    tpl = catalog().templates[tid]
    for seed in range(4):
        task = tpl.instantiate(seed)
        for style in STYLES:
            ep = run_episode(task, ReferenceSolver(style))
            assert ep.verdict.success, (tid, seed, style, ep.verdict.reason)
        assert not run_episode(task, DoNothingPlanner()).verdict.success


def test_style_knobs_change_the_trajectory():
    task = catalog().templates["connectivity.start_cast"].instantiate(2)
    plain = run_episode(task, ReferenceSolver())
    fancy = run_episode(task, ReferenceSolver(reasoning="verbose", redundant_checks=True, mistake=True))
    assert fancy.costs.reasoning_tokens > plain.costs.reasoning_tokens
    assert fancy.costs.total_tool_calls >= plain.costs.total_tool_calls + 2
    codes = [c.result.code for s in fancy.steps for c in s.calls if not c.result.success]
    assert 400 in codes
    assert ReferenceSolver(mistake=True).name == "reference[mistake]"


def test_verify_checks_each_change_read_only():
    tools = catalog().tools
    task = catalog().templates["connectivity.start_cast"].instantiate(2)
    plain = run_episode(task, ReferenceSolver())
    checked = run_episode(task, ReferenceSolver(verify=True))
    assert checked.verdict.success
    confirms = [i for i, s in enumerate(checked.steps) if s.turn.reasoning == "Confirm that the change took effect."]
    assert confirms and checked.costs.total_tool_calls == plain.costs.total_tool_calls + len(confirms)
    for i in confirms:
        (probe,) = checked.steps[i].calls
        assert tools[probe.call.name].spec.read_only and probe.result.success
        assert any(not tools[c.call.name].spec.read_only for c in checked.steps[i - 1].calls)


@pytest.mark.parametrize("label", ["", "concise", "verbose+checks+verify", "none,mistake", "checks+verify"])
def test_style_labels_round_trip(label):
    style = ReferenceStyle.from_label(label)
    assert ReferenceStyle.from_label(style.label) == style


@pytest.mark.parametrize("label", ["loud", "verbose+none", "checks+checks"])
def test_bad_style_labels_are_refused(label):
    with pytest.raises(ValueError, match="parts are one of"):
        ReferenceStyle.from_label(label)


def assert_openai_chat(messages: list[dict], tools: list[dict]) -> None:
    assert messages[0]["role"] == "system"
    open_ids: list[str] = []
    for m in messages:
        assert m["role"] in ("system", "user", "assistant", "tool")
        if m["role"] == "tool":
            assert open_ids and m["tool_call_id"] == open_ids.pop(0), "tool reply out of order or unpaired"
            assert isinstance(m["content"], str) and "success" in json.loads(m["content"])
            continue
        assert not open_ids, f"tool calls {open_ids} left unanswered"
        assert isinstance(m.get("content", ""), str)
        for c in m.get("tool_calls", []) or []:
            assert c["type"] == "function" and isinstance(json.loads(c["function"]["arguments"]), dict)
            open_ids.append(c["id"])
    assert not open_ids
    ids = [c["id"] for m in messages for c in m.get("tool_calls", []) or []]
    assert len(ids) == len(set(ids)), "tool call ids must be unique"
    for t in tools:
        assert t["type"] == "function" and {"name", "description", "parameters"} <= set(t["function"])


def test_exported_chat_is_valid_openai_format_for_every_template():
    for tid in TEMPLATES:
        ep = run_episode(catalog().templates[tid].instantiate(1), ReferenceSolver(reasoning="verbose", mistake=True))
        chat = ep.to_chat()
        assert_openai_chat(chat["messages"], chat["tools"])
        json.dumps(chat)


def test_history_is_prepended_and_ids_do_not_clash():
    task = catalog().templates["connectivity.cast_switch_after_false_claim"].instantiate(3)
    ep = run_episode(task, ReferenceSolver())
    assert ep.messages[1:1 + len(task.history)] == task.history
    assert ep.messages[1 + len(task.history)] == {"role": "user", "content": task.instruction}
    assert ep.steps[0].user == task.instruction
    assert_openai_chat(ep.messages, ep.tools)


def test_followups_arrive_after_each_final_answer():
    tids = [t for t in TEMPLATES if catalog().templates[t].instantiate(0).followups]
    assert tids, "no multi-turn template with follow-ups"
    task = catalog().templates[tids[0]].instantiate(0)
    ep = run_episode(task, ReferenceSolver())
    assert ep.verdict.success
    users = [s.user for s in ep.steps if s.user]
    assert users == [task.instruction, *task.followups]
    finals = [i for i, s in enumerate(ep.steps) if s.turn.is_final]
    assert len(finals) == len(task.followups) + 1 and finals[-1] == len(ep.steps) - 1
    for i, text in zip(finals[:-1], task.followups, strict=True):
        assert ep.steps[i + 1].user == text


def test_notices_fire_after_repeated_failures():
    task = catalog().templates["connectivity.start_cast"].instantiate(0)
    turn = PlannerTurn(tool_calls=[call("stop_screen_cast")])  # no cast is active: 409 every time
    ep = run_episode(task, ScriptedPlanner([turn, turn, turn]))
    assert ep.steps[0].notices == []
    assert any("Stop guessing variations of stop_screen_cast" in n for n in ep.steps[1].notices)
    assert any(m["role"] == "system" and "Stop guessing" in m["content"] for m in ep.messages)
    assert not any("Stop guessing" in n for n in ep.steps[2].notices), "fires once per tool"
    assert any("same arguments 3 times" in n for n in ep.steps[2].notices)


def test_parallel_calls_run_in_the_order_given():
    task = catalog().templates["connectivity.cast_switch_after_false_claim"].instantiate(4)
    new, mode = task.params["new"], task.params["mode"]
    right = [call("stop_screen_cast"), call("start_screen_cast", target=new, mode=mode)]
    ep = run_episode(task, ScriptedPlanner([PlannerTurn(tool_calls=right), PlannerTurn(content="Switched.")]))
    assert ep.verdict.success and [c.result.success for c in ep.steps[0].calls] == [True, True]
    wrong = ScriptedPlanner([PlannerTurn(tool_calls=right[::-1]), PlannerTurn(content="Switched.")])
    ep = run_episode(task, wrong)
    assert ep.steps[0].calls[0].result.code == 409 and not ep.verdict.success


def test_step_budget_ends_the_episode_and_verification_is_recorded():
    task = catalog().templates["connectivity.bluetooth_connect"].instantiate(0)
    loop = PlannerTurn(tool_calls=[call("get_bluetooth_status")])
    ep = run_episode(task, ScriptedPlanner([loop] * 100))
    assert len(ep.steps) == task.budget and not ep.verdict.success and ep.final_answer == ""
    notices = [n for s in ep.steps for n in s.notices]
    assert not any("same arguments" in n for n in notices), "polling a query is not a loop"
    assert any("steps left" in n for n in notices)
    ep = run_episode(task, ReferenceSolver(), record_diffs=True)
    mutating = [c for s in ep.steps for c in s.calls if c.verification.verified is not None]
    assert mutating and all(c.verification.verified for c in mutating)
    assert any(s.state_diff for s in ep.steps)
    assert all(not s.state_diff for s in run_episode(task, ReferenceSolver()).steps)


def test_costs_count_tool_calls_by_kind_and_tokens():
    tids = {tpl.category: t for t, tpl in sorted(catalog().templates.items())}
    for category, tid in tids.items():
        ep = run_episode(catalog().templates[tid].instantiate(0), ReferenceSolver())
        kinds = {c.kind for s in ep.steps for c in s.calls}
        for kind in kinds:
            assert ep.costs.tool_calls[kind] > 0
        assert ep.costs.output_tokens == sum(s.turn.output_tokens for s in ep.steps) > 0
        assert ep.costs.wall_time_s > 0
        if category == "skills":
            assert "skill" in kinds


class CountingPlanner:
    def __init__(self, inner):
        self.inner = inner
        self.name = inner.name
        self.batches: list[int] = []

    def generate(self, contexts):
        self.batches.append(len(contexts))
        return self.inner.generate(contexts)

    def end_episode(self, episode_id):
        getattr(self.inner, "end_episode", lambda _: None)(episode_id)


@pytest.mark.parametrize("make", [lambda: ReferenceSolver(), lambda: ReferenceSolver(reasoning="verbose", mistake=True),
                                  lambda: DoNothingPlanner()])
def test_lock_step_batch_gives_the_same_verdicts_as_single_runs(make):
    tasks = suite_tasks("pa-sim", "test", per_category=12)
    single = [run_episode(t, make()) for t in tasks]
    counting = CountingPlanner(make())
    batched = run_episodes(tasks, counting, batch_size=16)
    assert [e.task["id"] for e in batched] == [t.id for t in tasks]
    assert [e.verdict.to_dict() for e in batched] == [e.verdict.to_dict() for e in single]
    assert [e.messages for e in batched] == [e.messages for e in single]
    assert max(counting.batches) == 16 and sum(counting.batches) == sum(len(e.steps) for e in batched)


def test_bench_suite_is_fixed_large_enough_and_held_out():
    test = suite_tasks("pa-sim", "test")
    assert [t.id for t in test] == [t.id for t in suite_tasks("pa-sim", "test")]
    by_cat: dict[str, int] = {}
    for t in test:
        by_cat[t.category] = by_cat.get(t.category, 0) + 1
    assert all(n >= 100 for n in by_cat.values()) and set(by_cat) == {"tool_use", "memory", "skills", "sub_agent"}
    train = suite_tasks("pa-sim", "train")
    assert_no_test_overlap(train)
    with pytest.raises(AssertionError):
        assert_no_test_overlap(train[:5] + test[:1])
    with pytest.raises(ValueError):
        suite_tasks("pa-sim", "train", suite_seed=1)
    s = score(run_episodes(suite_tasks("pa-sim", "test", per_category=3), DoNothingPlanner()))
    assert s["overall"] == 0.0 and s["episodes"] == 12
