"""``bench/credit_audit.py``: which calls turn credit charges, by tool kind, and which groups teach to drop a kind."""

from __future__ import annotations

import json

import pytest

from ml.care import Rollout
from ml.care_config import CAREConfig
from tests.ml.bench_scripts import load_bench

RECALL = json.dumps(["search_user_memory", {"query": "wake up"}], sort_keys=True)
ALARM = json.dumps(["create_alarm", {"time": "06:15"}], sort_keys=True)
LIST = json.dumps(["list_alarms", {}], sort_keys=True)


def _win(*steps: tuple[str, ...], tokens: int = 100) -> Rollout:
    return Rollout(success=True, progress=1.0, output_tokens=tokens, tool_calls=sum(map(len, steps)), calls=steps)


def test_a_lucky_success_without_the_recall_charges_the_recalling_ones():
    ca = load_bench("credit_audit")
    guessed = _win((ALARM,), tokens=60)
    recalled = _win((RECALL,), (ALARM,), tokens=120)
    assert ca.charged_by_kind(recalled, guessed) == {"memory": 1.0}
    assert ca.charged_by_kind(guessed, guessed) == {}
    cfg = CAREConfig(efficiency_credit="turn")
    fail = Rollout(success=False, progress=0.0, output_tokens=200, tool_calls=1, calls=((LIST,),))
    row = ca.audit([("memory", [guessed, recalled, recalled, fail])], cfg)["memory"]
    assert row["groups"] == 1 and row["mixed"] == 1.0
    assert row["skip_memory"] == 1.0 and row["skip_business"] == 0.0
    assert row["charged_memory"] == 1.0  # both recalls counted as excess
    assert row["charged_business"] == 0.0
    assert row["pen_with_memory"] > row["pen_without_memory"] == 0.0  # the longer recalling successes pay tokens


def test_another_path_spreads_its_excess_and_an_all_failure_group_is_skipped():
    ca = load_bench("credit_audit")
    cheapest = _win((RECALL,), (ALARM,))
    other = _win((LIST,), (RECALL,), (json.dumps(["set_alarm_enabled", {"alarm_id": "a4"}]),))
    # 3 calls against 2: one excess call spread over the two it does not share with the cheapest.
    assert ca.charged_by_kind(other, cheapest) == {"business": pytest.approx(1.0)}
    fail = Rollout(success=False, calls=((LIST,),), tool_calls=1)
    rows = ca.audit([("memory", [cheapest, other]), ("tool_use", [fail, fail])], CAREConfig(efficiency_credit="turn"))
    assert set(rows) == {"memory", "all"}
    assert rows["memory"]["skip_memory"] == 0.0 and rows["memory"]["charged_memory"] == 0.0
    assert rows["all"]["charged_all"] == pytest.approx(1 / 5)


def test_failure_audit_reads_whether_the_scoring_favours_longer_failures():
    ca = load_bench("credit_audit")
    win = _win((RECALL,), (ALARM,))

    def fail(calls: int, progress: float) -> Rollout:
        return Rollout(success=False, progress=progress, output_tokens=50 * calls, tool_calls=calls,
                       calls=((RECALL,), *((LIST,) for _ in range(calls - 1))))

    # Under CARE's progress term the longer failure reached more of the goal: calls and advantage rise together.
    group = [win, fail(2, 0.2), fail(4, 0.6)]
    care = ca.failure_audit([("memory", group)], CAREConfig(failure_credit="turn"))["memory"]
    assert care["corr_calls_progress"] == pytest.approx(1.0) and care["corr_calls_adv"] == pytest.approx(1.0)
    assert care["adv_per_call"] > 0 and care["kept_all_fail"] == 0.0 and care["failures"] == 2
    assert care["moved"] == 1.0  # both recall as the success does, then list: their push moves onto the lists
    assert care["wander"] == pytest.approx((1 + 3) / 2) and care["near_miss"] == 0.0  # lists: a tool it never calls
    # A failure that recalls and sets another time: a near miss of the success's alarm, no wander.
    wrong = Rollout(success=False, output_tokens=100, tool_calls=2,
                    calls=((RECALL,), (json.dumps(["create_alarm", {"time": "07:15"}], sort_keys=True),)))
    near = ca.failure_audit([("memory", [win, wrong])], CAREConfig(failure_credit="wander"))["memory"]
    assert near["near_miss"] == 1.0 and near["wander"] == 0.0 and near["moved"] == 0.0
    # Plain GRPO scores a group's failures alike.
    grpo = ca.failure_audit([("memory", group)], CAREConfig.grpo())["memory"]
    assert grpo["corr_calls_adv"] == 0.0 and grpo["adv_per_call"] == 0.0


def test_heldout_kinds_finds_the_reference_recalls_in_memory_tasks():
    import copy

    from harness.bench import suite_tasks
    from harness.episode import run_episodes
    from harness.reference import ReferenceSolver, ReferenceStyle

    ca = load_bench("credit_audit")
    eps = run_episodes(suite_tasks("pa-sim", "test", 2), ReferenceSolver(ReferenceStyle()))
    rows = ca.heldout_kinds(eps)
    assert set(rows) == {"memory", "skills", "sub_agent", "tool_use"}
    assert rows["memory"]["success"] == 1.0 and rows["memory"]["recall_win"] == 1.0
    assert rows["tool_use"]["recall_win"] == 0.0 and "recall_fail" not in rows["tool_use"]
    assert rows["memory"]["thought_turns"] > 0.5  # concise reasoning: a short thought before most turns
    silent = run_episodes(suite_tasks("pa-sim", "test", 1), ReferenceSolver(ReferenceStyle(reasoning="none")))
    assert {row["thought_turns"] for row in ca.heldout_kinds(silent).values()} == {0.0}
    memory = [e for e in eps if e.task["category"] == "memory"]
    failed = copy.deepcopy(memory[0])
    failed.verdict.success = False
    failed.steps = [s for s in failed.steps if all(c.call.name != "search_user_memory" for c in s.calls)]
    row = ca.heldout_kinds([*memory, failed])["memory"]
    assert row["success"] == 2 / 3 and row["recall_fail"] == 0.0 and row["recall_win"] == 1.0
    assert row["fail_goal"] == 0.0 and row["fail_answer"] == 0.0  # its verdict's reason still says "goal reached"
    failed.verdict.reason = "calendar.alarms.alarm_0005 is None, expected {...}; final answer does not mention '06:15'"
    row = ca.heldout_kinds([*memory, failed])["memory"]
    assert row["fail_goal"] == row["fail_answer"] == 1.0 and row["fail_collateral"] == 0.0
    # By template: the failed copy shares its template with memory[0] only, whose row alone falls to 1/2.
    by_template = ca.heldout_kinds([*memory, failed], "template")
    assert set(by_template) == {e.task["template"] for e in memory} and len(by_template) == 2
    assert by_template[memory[0].task["template"]]["success"] == 0.5
    assert by_template[memory[1].task["template"]]["success"] == 1.0
    assert by_template[memory[0].task["template"]]["reasoning"] > 0  # the reference solver reasons
    with pytest.raises(SystemExit):  # per template needs the held-out episodes it reads
        ca.main(["unused-checkpoint", "--by-template"])
