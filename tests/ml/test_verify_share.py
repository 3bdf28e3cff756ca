"""``bench/verify_share.py``: its check count tells the reference that confirms each change from the one that does
not, and a group mixing the two counts as the contrast CARE's efficiency term can reward."""

from __future__ import annotations

from harness.bench import suite_tasks
from harness.episode import run_episodes
from harness.reference import ReferenceSolver, ReferenceStyle
from tests.ml.bench_scripts import load_bench


def _verify_share():
    return load_bench("verify_share")


def test_checks_after_changes_are_counted_and_split_groups_found():
    vs = _verify_share()
    tasks = suite_tasks("pa-sim", "test", 3)
    plain = run_episodes(tasks, ReferenceSolver(ReferenceStyle()))
    verify = run_episodes(tasks, ReferenceSolver(ReferenceStyle(verify=True)))
    lo, hi = vs.shares(plain), vs.shares(verify)
    assert hi["checked_share"] > 0.7 > 0.2 > lo["checked_share"]
    assert hi["calls"] > lo["calls"] and lo["success"] == hi["success"] == 1.0
    # One group per task: the confirming attempt beside the plain one, which succeeds with fewer calls.
    pairs = [[v, p] for v, p in zip(verify, plain, strict=True) if any(vs._checks(v)) and not any(vs._checks(p))]
    assert pairs
    assert vs.splits(pairs) == {"groups_split": 1.0, "split_cheaper_success": 1.0}
    assert vs.splits([[v, v] for v, _ in pairs])["groups_split"] == 0.0


def test_calls_and_tokens_are_split_by_outcome():
    import copy

    vs = _verify_share()
    tasks = suite_tasks("pa-sim", "test", 1)
    plain = run_episodes(tasks, ReferenceSolver(ReferenceStyle()))
    verify = run_episodes(tasks, ReferenceSolver(ReferenceStyle(verify=True)))
    failed = copy.deepcopy(verify[0])
    failed.verdict.success = False
    eps = [*plain, failed]
    got = vs.shares(eps)
    assert got["calls_success"] == sum(e.costs.total_tool_calls for e in plain) / len(plain)
    assert got["calls_failure"] == failed.costs.total_tool_calls
    assert got["out_tokens_failure"] == failed.costs.output_tokens
    assert got["success"] == len(plain) / len(eps)
    assert got["failures_at_budget"] == 0.0  # the failure ended on its answer, well inside the budget
    failed.task = {**failed.task, "budget": len(failed.steps)}
    assert vs.shares(eps)["failures_at_budget"] == 1.0
