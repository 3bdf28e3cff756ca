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


def _report(name, rows):
    """An EvalReport holding only per-task rows: (id, category, solved, output_tokens, tool_calls)."""
    from ml.evaluate import EvalReport

    tasks = [{"id": i, "category": c, "solved": s, "output_tokens": o, "tool_calls": k} for i, c, s, o, k in rows]
    return EvalReport(name, [], {}, {}, 0.0, tasks=tasks)


def test_paired_comparison_matches_hand_computed_figures():
    from ml.evaluate import paired_comparison

    # tool_use: a solves 2 of 2, b 1 of 2; memory: a 0 of 1, b 1 of 1; skills and sub_agent: both solve their one task
    a = _report("a", [("t1", "tool_use", True, 100, 2), ("t2", "tool_use", True, 100, 2),
                      ("m1", "memory", False, 100, 4), ("s1", "skills", True, 100, 2), ("g1", "sub_agent", True, 0, 2)])
    b = _report("b", [("t1", "tool_use", True, 200, 3), ("t2", "tool_use", False, 200, 3),
                      ("m1", "memory", True, 100, 3), ("s1", "skills", True, 100, 3), ("g1", "sub_agent", True, 0, 3)])
    figs = paired_comparison(a, b, resamples=500)
    # 0.5 * (100 - 50) + 0.2 * (0 - 100) = 25 - 20 = +5 points
    assert figs["overall_diff"][0] == pytest.approx(5.0)
    assert figs["output_tokens_cut"][0] == pytest.approx(100 * (1 - 400 / 600))
    assert figs["tool_calls_cut"][0] == pytest.approx(100 * (1 - 12 / 15))
    for est, lo, hi in figs.values():
        assert lo <= est <= hi
    # a task resampled alone: tool_use draws (t1, t1), (t1, t2) or (t2, t2), memory's one pair is fixed
    assert figs["overall_diff"][1] == pytest.approx(-20.0) and figs["overall_diff"][2] == pytest.approx(30.0)
    same = paired_comparison(a, a, resamples=50)
    assert all(v == (0.0, 0.0, 0.0) for v in same.values())


def test_paired_interval_has_the_analytic_stratified_width_and_refuses_unmatched_reports():
    import math
    import random

    from harness.bench import WEIGHTS
    from ml.evaluate import paired_comparison

    rng = random.Random(3)
    rows_a, rows_b = [], []
    for c in WEIGHTS:
        for i in range(60):
            sa, sb = rng.random() < 0.7, rng.random() < 0.55
            rows_a.append((f"{c}{i}", c, sa, 100, 3))
            rows_b.append((f"{c}{i}", c, sb, 100, 4))
    a, b = _report("care", rows_a), _report("sft", rows_b)
    est, lo, hi = paired_comparison(a, b, resamples=4000, seed=1)["overall_diff"]
    # normal approximation: var = sum_c w_c^2 * var(d_c) / n_c with d = 100 * (s_a - s_b) per task
    var = 0.0
    for c, w in WEIGHTS.items():
        d = [100 * (x[2] - y[2]) for x, y in zip(rows_a, rows_b, strict=True) if x[1] == c]
        m = sum(d) / len(d)
        var += w * w * sum((v - m) ** 2 for v in d) / len(d) / len(d)
    assert (hi - lo) == pytest.approx(2 * 1.96 * math.sqrt(var), rel=0.15)
    assert lo < est < hi
    with pytest.raises(ValueError, match="different tasks"):
        paired_comparison(a, _report("other", rows_b[1:]))
    with pytest.raises(ValueError, match="per-task outcomes"):
        paired_comparison(a, _report("old", []))


def test_evaluate_keeps_every_task_outcome_and_pairs_reproduce_the_means():
    from ml.evaluate import paired_comparison

    cfg = EvalConfig(per_category=1)
    ref = evaluate(lambda seed: ReferenceSolver(), cfg)
    none = evaluate(lambda seed: DoNothingPlanner(), cfg)
    assert len(ref.tasks) == 12 and {t["id"] for t in ref.tasks} == {t["id"] for t in none.tasks}
    assert all(t["solved"] for t in ref.tasks) and not any(t["solved"] for t in none.tasks)
    figs = paired_comparison(ref, none, resamples=20)
    assert figs["overall_diff"][0] == pytest.approx(ref.mean["overall"] - none.mean["overall"]) == 100.0
    assert sum(t["tool_calls"] for t in ref.tasks) / 12 == pytest.approx(ref.mean["mean_tool_calls"])
