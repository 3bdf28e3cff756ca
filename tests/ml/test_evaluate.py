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
