"""Evaluation: disjoint held-out slices per seed, mean ± std, costs, and the comparison table."""

from __future__ import annotations

import pytest

from harness.bench import held_out_ids
from harness.planner import DoNothingPlanner
from harness.reference import ReferenceSolver
from ml.evaluate import METRICS, EvalConfig, evaluate, markdown_table, seed_tasks


def test_seeds_take_disjoint_held_out_slices():
    cfg = EvalConfig(per_category=2)
    slices = [{t.id for t in seed_tasks(cfg, k)} for k in range(3)]
    assert all(len(s) == 8 for s in slices)
    assert not (slices[0] & slices[1]) and not (slices[1] & slices[2])
    assert set().union(*slices) <= held_out_ids()


def test_reference_scores_full_marks_and_do_nothing_zero():
    cfg = EvalConfig(per_category=1, price_per_million_output_tokens=2.0)
    ref = evaluate(lambda seed: ReferenceSolver(), cfg)
    assert all(ref.mean[k] == 100.0 and ref.std[k] == 0.0 for k in METRICS)
    assert ref.mean["mean_tool_calls"] > 0 and ref.mean["mean_output_tokens"] > 0
    assert ref.mean["cost_per_1k_tasks"] == pytest.approx(ref.mean["mean_model_tokens"] * 1000 * 2.0 / 1e6)
    none = evaluate(lambda seed: DoNothingPlanner(), cfg)
    assert none.mean["overall"] == 0.0
    table = markdown_table([ref, none])
    assert table.count("\n") == 3 and "| reference | 100.00 ± 0.00" in table
    assert "overall=100.00±0.00" in ref.line()


def test_invalid_eval_config_names_fields():
    with pytest.raises(ValueError) as err:
        EvalConfig(seeds=(1, 1), per_category=0, price_per_million_output_tokens=-1)
    assert set(err.value.field_errors) == {"seeds", "per_category", "price_per_million_output_tokens"}


def test_episodes_run_under_the_given_harness_and_the_report_names_it():
    from harness.planner import ScriptedPlanner
    from harness.version import HarnessVersion

    seen = []

    class Recording(ScriptedPlanner):
        def generate(self, contexts):
            seen.extend(c.to_openai()["messages"][0]["content"] for c in contexts)
            return super().generate(contexts)

    cfg = EvalConfig(seeds=(0,), per_category=1)
    terse = HarnessVersion(name="terse", policy="Answer in one word.")
    report = evaluate(lambda seed: Recording([]), cfg, harness=terse)
    assert report.harness == terse.id != HarnessVersion.default().id and f"harness={terse.id}" in report.line()
    assert seen and set(seen) == {"Answer in one word."}
    assert evaluate(lambda seed: ReferenceSolver(), cfg).harness == HarnessVersion.default().id


def _reference_episode():
    from harness.episode import run_episodes

    tasks = [t for t in seed_tasks(EvalConfig(per_category=4), 0) if t.category == "memory"]
    ep = next(e for e in run_episodes(tasks, ReferenceSolver()) if len(e.steps) >= 3)
    return ep


def test_first_divergence_names_the_first_turn_that_leaves_the_reference():
    from harness.contract import Episode, PlannerTurn, Step, ToolCall
    from ml.evaluate import call_keys, first_divergence

    ref = _reference_episode()
    copy = lambda: Episode.from_dict(ref.to_dict())  # noqa: E731
    assert first_divergence(copy(), ref) == (len(ref.steps) - 1, "after_reference")

    calls_at = next(i for i, s in enumerate(ref.steps) if s.turn.tool_calls and i > 0)
    ep = copy()
    call = ep.steps[calls_at].turn.tool_calls[0]
    call.arguments = {**call.arguments, "invented": 1}
    assert first_divergence(ep, ref) == (calls_at, "wrong_value")
    ep.steps[calls_at].turn.tool_calls[0].name = "no_such_tool"
    assert first_divergence(ep, ref) == (calls_at, "wrong_tool")

    ep = copy()
    ep.steps[0].turn = PlannerTurn(content="Done.")
    assert first_divergence(ep, ref) == (0, "stopped_early")
    ep.steps[0].turn = PlannerTurn(raw="<tool_call>{oops", parse_errors=["bad json"])
    assert first_divergence(ep, ref) == (0, "parse_error")

    ep = copy()  # every reference turn matched, then one more call
    extra = PlannerTurn(tool_calls=[ToolCall(id="c9", name="list_alarms")])
    ep.steps[-1].turn = extra
    assert first_divergence(ep, ref) == (len(ref.steps) - 1, "extra_call")
    ep.steps.append(Step(index=len(ep.steps), turn=extra))
    assert first_divergence(ep, ref)[1] == "extra_call"

    # the order of parallel calls does not matter; the arguments do
    a, b = ToolCall("1", "x", {"k": 1}), ToolCall("2", "y", {})
    assert call_keys([a, b]) == call_keys([b.to_dict(), a.to_dict()])
    assert call_keys([a]) != call_keys([ToolCall("1", "x", {"k": 2})])
