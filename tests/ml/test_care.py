"""CARE against hand-computed numbers, its invariants, the loss, and one RL step that raises success."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest
import torch

from ml.care import (
    CompetenceTracker,
    EfficiencyGuard,
    LLMController,
    Rollout,
    care_group,
    pick_schedule,
    policy_loss,
    signal_weights,
    weighted_sample,
)
from ml.care_config import CAREConfig, Schedule
from ml.chat import ChatFormat, Encoded

CFG = CAREConfig()
GRPO = CAREConfig(care=False)


def approx(xs):
    return pytest.approx(xs, abs=1e-6)


def test_all_fail_uses_progress_and_all_fail_without_progress_is_dropped():
    g = [Rollout(False, 0.0), Rollout(False, 0.5), Rollout(False, 0.5), Rollout(False, 0.25)]
    r = care_group(g, CFG)
    assert r.schedule == "progress" and r.competence == 0.0
    assert r.rewards == approx([0.0, 0.25, 0.25, 0.125])
    std = math.sqrt(0.0107421875)  # by hand: deviations -0.15625, 0.09375, 0.09375, -0.03125
    assert r.normaliser == pytest.approx(std)
    assert r.advantages == approx([-0.15625 / std, 0.09375 / std, 0.09375 / std, -0.03125 / std])
    flat = care_group([Rollout(False, 0.0)] * 4, CFG)
    assert flat.dropped and flat.advantages == [0.0] * 4
    assert care_group(g, GRPO).dropped  # binary reward: no signal


def test_all_success_penalises_excess_cost_gently():
    g = [Rollout(True, 1, 100, 20, 2), Rollout(True, 1, 150, 20, 3), Rollout(True, 1, 100, 40, 2)]
    r = care_group(g, CFG, history=0.8)
    assert r.competence == pytest.approx(0.9) and r.schedule == "efficient"
    # e = 0.3·x_o + 0.2·x_r + 0.5·x_c: B = 0.3·0.5 + 0.5·0.5; C = 0.2·(20/20)
    assert r.penalties == approx([0.0, 0.4, 0.2])
    assert r.efficiency_weight == pytest.approx(0.36)  # min(0.4·0.9, 0.5·1)
    assert r.rewards == approx([1.0, 0.856, 0.928])
    assert r.normaliser == pytest.approx(0.55)  # the floor 0.05 + 0.5·1 beats std 0.0588
    assert r.advantages == approx([0.072 / 0.55, -0.072 / 0.55, 0.0])
    assert care_group(g, GRPO).dropped


def test_success_advantages_clipped_at_zero_leave_costlier_successes_alone():
    nonneg = CAREConfig(success_adv_nonneg=True)
    # The all-success group above: the cheapest success keeps +0.072/0.55, the costlier ones get 0, not less.
    g = [Rollout(True, 1, 100, 20, 2), Rollout(True, 1, 150, 20, 3), Rollout(True, 1, 100, 40, 2)]
    assert care_group(g, nonneg, history=0.8).advantages == approx([0.072 / 0.55, 0.0, 0.0])
    # A mixed group: κ = 0.5·1 + 0.5·0.75 = 0.875, λ = 0.35; the third success has every excess at 1 (e = 1).
    g = [Rollout(True, 1, 100, 0, 2), Rollout(True, 1, 100, 0, 2), Rollout(True, 1, 300, 40, 6),
         Rollout(False, 0.5, 100, 0, 2)]
    plain, clipped = care_group(g, CFG, history=1.0), care_group(g, nonneg, history=1.0)
    assert plain.rewards == approx([1.0, 1.0, 0.65, 0.0]) and plain.normaliser == pytest.approx(0.425)
    # mean 0.6625: the costly success sits below the mean (-0.0125 / 0.425) without the clip, at 0 with it.
    assert plain.advantages == approx([0.3375 / 0.425, 0.3375 / 0.425, -0.0125 / 0.425, -0.6625 / 0.425])
    assert clipped.advantages == approx([0.3375 / 0.425, 0.3375 / 0.425, 0.0, -0.6625 / 0.425])
    assert clipped.rewards == plain.rewards  # only the advantages change


def test_turn_credit_charges_the_excess_calls_to_their_steps():
    turn = CAREConfig(efficiency_credit="turn")
    # Equal token costs, so only calls differ. The cheapest success A calls a, b; B adds a status query s
    # between them; C queries s beside a and repeats b. κ = 0.5·1 + 0.5·0.75 = 0.875: "efficient", λ = 0.35.
    a = Rollout(True, 1, 100, 0, 2, calls=(("a",), ("b",)))
    b = Rollout(True, 1, 100, 0, 3, calls=(("a",), ("s",), ("b",)))
    c = Rollout(True, 1, 100, 0, 4, calls=(("a", "s"), ("b",), ("b",)))
    d = Rollout(False, 0.5, 100, 0, 1, calls=(("a",),))
    r = care_group([a, b, c, d], turn, history=1.0)
    assert r.penalties == [0.0] * 4  # the calls term left the episode rewards
    assert r.rewards == approx([1.0, 1.0, 1.0, 0.0])
    sd = math.sqrt(3 / 16)  # beats the floor 0.05 + 0.5·0.75
    assert r.normaliser == pytest.approx(sd) and r.efficiency_weight == pytest.approx(0.35)
    assert r.advantages == approx([0.25 / sd] * 3 + [-0.75 / sd])
    per_call = 0.35 * 0.5 / (2 * sd)  # λ·α_c / (max(m_c, f_c)·σ), m_c = 2
    assert r.turn_advantages == [approx([0, 0]), approx([0, -per_call, 0]), approx([-per_call, 0, -per_call]),
                                 approx([0])]
    assert r.info["excess_calls"] == 3
    # Per episode, the same group charges B and C as a whole: x_c = 0.5 and 1.
    assert care_group([a, b, c, d], CFG, history=1.0).penalties == approx([0.0, 0.25, 0.5, 0.0])
    # Equal rewards but an excess call: kept (not dropped), no episode advantage, the step still charged.
    two = care_group([a, b], turn, history=1.0)  # κ = 1: λ = 0.4, σ = the floor 0.55
    assert not two.dropped and two.advantages == [0.0, 0.0]
    assert two.turn_advantages == [approx([0, 0]), approx([0, -0.4 * 0.5 / (2 * 0.55), 0])]
    # Another path: e shares a with A but calls e, f for b. One call more than A, spread over its two unmatched.
    e = Rollout(True, 1, 100, 0, 3, calls=(("a",), ("e",), ("f",)))
    pc = 0.4 * 0.5 / (2 * 0.55)
    assert care_group([a, e], turn, history=1.0).turn_advantages == [approx([0, 0]), approx([0, -pc / 2, -pc / 2])]
    same_length = Rollout(True, 1, 100, 0, 2, calls=(("a",), ("e",)))
    assert care_group([a, same_length], turn, history=1.0).dropped  # equal length: nothing charged, no signal
    # The clip protects a costlier success's other steps, not its excess ones.
    clipped = care_group([a, b, c, d], CAREConfig(efficiency_credit="turn", success_adv_nonneg=True), history=1.0)
    assert clipped.turn_advantages == r.turn_advantages
    # No success, or plain GRPO: nothing charged per step.
    assert care_group([d, d], turn).turn_advantages == [[0], [0]]
    assert care_group([a, b, c, d], GRPO).turn_advantages == []


def test_failure_credit_moves_a_failures_push_onto_the_steps_a_success_did_without():
    fail_turn = CAREConfig(failure_credit="turn")
    # The success A calls a, b. Failure F calls a (matched, 30 tokens), then x and y (unmatched, 10 each), then
    # answers (no call, 20 tokens): the wrong path. Failure H calls only a (every call matched): nothing to move.
    # κ = ŝ = 1/3: "balanced".
    a = Rollout(True, 1, 60, 0, 2, calls=(("a",), ("b",)), step_tokens=(30, 30))
    f = Rollout(False, 0.5, 70, 0, 3, calls=(("a",), ("x",), ("y",), ()), step_tokens=(30, 10, 10, 20))
    h = Rollout(False, 0.5, 30, 0, 1, calls=(("a",),), step_tokens=(30,))
    r = care_group([a, f, h], fail_turn)
    plain = care_group([a, f, h], CFG)
    assert r.rewards == plain.rewards and r.advantages == plain.advantages  # no failure priced on its cost
    adv = r.advantages[1]
    assert adv < 0
    # T_M = 30, T_U = 20, ρ = 0.5 (under (4 − 1)·20/30 = 2): matched −ρ·A, unmatched +ρ·A·30/20, the answer kept.
    assert r.turn_advantages == [approx([0, 0]), approx([-0.5 * adv, 0.75 * adv, 0.75 * adv, 0]), approx([0])]
    assert r.info["failures_moved"] == 1
    moved = [adv + x for x in r.turn_advantages[1]]
    assert sum(t * m for t, m in zip(f.step_tokens, moved, strict=True)) / 70 == pytest.approx(adv)  # mean kept
    # A short unmatched step: ρ shrinks so that no step's advantage passes FAILURE_CREDIT_MAX·A.
    g = Rollout(False, 0.5, 100, 0, 2, calls=(("a",), ("x",)), step_tokens=(90, 10))
    r2 = care_group([a, g], fail_turn)
    adv2 = r2.advantages[1]
    rho = 3 * 10 / 90
    assert r2.turn_advantages[1] == approx([-rho * adv2, rho * adv2 * 9])
    assert adv2 + r2.turn_advantages[1][1] == pytest.approx(4 * adv2)
    # With guard_failure_credit the guard's factor g scales ρ as it scales λ: g = 1/2 moves half as much, and a
    # category the guard has not relaxed (g = 1) moves what it moved before; without it g leaves ρ alone.
    guarded = CAREConfig(failure_credit="turn", guard_failure_credit=True)
    halved = care_group([a, f, h], guarded, efficiency_scale=0.5)
    assert halved.advantages == r.advantages
    assert halved.turn_advantages == [approx([0, 0]), approx([-0.25 * adv, 0.375 * adv, 0.375 * adv, 0]),
                                      approx([0])]
    assert care_group([a, f, h], guarded).turn_advantages == r.turn_advantages
    assert care_group([a, f, h], fail_turn, efficiency_scale=0.5).turn_advantages == r.turn_advantages
    # No success to measure against, or a failure with a non-negative advantage, or no matched step: nothing moves.
    assert care_group([f, h], fail_turn).turn_advantages == []
    assert care_group([a, f, h], GRPO).turn_advantages == []
    from ml.care import failure_turn_advantages
    assert failure_turn_advantages(f, a, 0.3, 0.5) == [] and failure_turn_advantages(f, a, -1.0, 0.0) == []
    assert failure_turn_advantages(Rollout(False, 0, 20, 0, 1, calls=(("x",), ())), a, -1.0, 0.5) == []


def test_excess_calls_match_the_cheapest_successs_calls_in_order():
    from ml.care import excess_calls

    cheapest = Rollout(True, calls=(("q", "a"), ("b",)))
    assert excess_calls(Rollout(True, calls=(("q",), ("a",), ("q",), ("b", "c"))), cheapest) == [0, 0, 1, 1]
    assert excess_calls(Rollout(True, calls=((), ("b",), ("a", "q"))), cheapest) == [0, 0, 0]  # order free
    assert excess_calls(cheapest, cheapest) == [0, 0]


def test_turn_advantages_land_on_their_steps_tokens_and_move_only_that_turn(tokenizer, tiny_model_config):
    from devices.virtual.registry import catalog
    from harness.reference import ReferenceStyle
    from ml.care_trainer import advantage_tensor, encode_actions, token_advantages, token_logprobs
    from ml.model import build_model
    from ml.sft import reference_episodes, step_messages

    task = catalog().templates["connectivity.start_cast"].instantiate(5)
    ep = reference_episodes([task], [ReferenceStyle(redundant_checks=True)])[0]
    assert len(ep.steps) >= 3
    fmt = ChatFormat(max_context_tokens=1024, max_new_tokens=64)
    views = encode_actions(ep, tokenizer, CAREConfig(chat=fmt))
    k = 1  # charge the second step only
    extra = [0.0] * len(ep.steps)
    extra[k] = -2.0
    assert token_advantages(views[0], 0.5, {}) == 0.5  # nothing charged: one number
    msg = step_messages(ep)[k]
    charges = {m: x for m, x in zip(step_messages(ep), extra, strict=True) if x}
    charged = []
    for v in views:
        adv = token_advantages(v, 0.5, charges)
        assert isinstance(adv, list) and len(adv) == len(v.ids)
        for t in v.turns:
            want = -1.5 if t.message == msg else 0.5
            assert set(adv[t.start:t.end]) == {want}
            charged += [t] if t.message == msg else []
    assert len(charged) == 1
    # Pushed with only that step's tokens negative (episode advantage 0), that turn loses probability and
    # the tensor carries the numbers to the right positions.
    model = build_model(tiny_model_config, tokenizer)
    pad = tokenizer.pad_token_id
    advs = [token_advantages(v, 0.0, charges) for v in views]

    def turn_logps():
        with torch.no_grad():
            lp, _ = token_logprobs(model, views, pad, "cpu")
        return [float(lp[i, t.start:t.end].sum()) for i, v in enumerate(views) for t in v.turns]

    before = turn_logps()
    logp, mask = token_logprobs(model, views, pad, "cpu")
    adv = advantage_tensor(advs, logp)
    assert float(adv.sum()) == pytest.approx(-2.0 * (charged[0].end - charged[0].start))
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    loss, _ = policy_loss(logp, logp.detach(), adv, mask, eps_low=0.2, eps_high=0.28)
    loss.backward()
    opt.step()
    after = turn_logps()
    spans = [t for v in views for t in v.turns]
    i = spans.index(charged[0])
    assert after[i] < before[i] - 0.05


def test_one_success():
    g = [Rollout(True, 1.0), Rollout(False, 0.5), Rollout(False, 0.0), Rollout(False, 0.0)]
    r = care_group(g, CFG)
    assert r.schedule == "progress" and r.rewards == approx([1.5, 0.25, 0.0, 0.0])
    std = math.sqrt(0.38671875)
    assert r.advantages == approx([1.0625 / std, -0.1875 / std, -0.4375 / std, -0.4375 / std])
    b = care_group(g, GRPO)
    assert b.rewards == [1.0, 0.0, 0.0, 0.0]
    sd = math.sqrt(0.1875) + GRPO.eps
    assert b.advantages == approx([0.75 / sd] + [-0.25 / sd] * 3)


def test_ties_carry_no_signal_and_are_dropped():
    g = [Rollout(True, 1, 50, 10, 2)] * 4
    for cfg in (CFG, GRPO):
        r = care_group(g, cfg, history=1.0)
        assert r.dropped and r.advantages == [0.0] * 4
    kept = care_group(g, CAREConfig(drop_no_signal=False), history=1.0)
    assert not kept.dropped and kept.advantages == [0.0] * 4


def test_cost_floors_bound_the_relative_excess():
    g = [Rollout(True, 1, 10, 0, 1), Rollout(True, 1, 20, 4, 1)]
    r = care_group(g, CFG, history=1.0)
    # x_o = 10 / max(10, 32), x_r = 4 / max(0, 16): without floors these would be 1.0 and infinite.
    assert r.penalties == approx([0.0, 0.3 * 10 / 32 + 0.2 * 4 / 16])
    assert r.efficiency_weight == pytest.approx(0.4)
    assert r.rewards == approx([1.0, 1.0 - 0.4 * 0.14375])
    assert r.advantages == approx([0.02875 / 0.55, -0.02875 / 0.55])


def test_reasoning_allowance_leaves_a_short_plan_unpriced():
    # Same calls; B thinks 30 tokens, C 50. Output tokens count the reasoning too.
    g = [Rollout(True, 1, 100, 0, 2), Rollout(True, 1, 130, 30, 2), Rollout(True, 1, 160, 50, 2)]
    plain = care_group(g, CFG, history=1.0)
    # No allowance: B x_o = 30/100, x_r = min(1, 30/16); C x_o = 60/100, x_r = 1.
    assert plain.penalties == approx([0.0, 0.3 * 0.3 + 0.2, 0.3 * 0.6 + 0.2])
    r = care_group(g, CAREConfig(reasoning_allowance=32), history=1.0)
    # a = 32: B's 30 are free (ř = 0, ǒ = 100: the cheapest's cost); C keeps ř = 18, ǒ = 160 − 32 = 128.
    assert r.penalties == approx([0.0, 0.0, 0.3 * 28 / 100 + 0.2 * min(1.0, 18 / 16)])
    assert r.efficiency_weight == pytest.approx(0.4)
    assert r.rewards == approx([1.0, 1.0, 1.0 - 0.4 * 0.284])
    mu = (2.0 + 1.0 - 0.4 * 0.284) / 3
    assert r.advantages == approx([(1.0 - mu) / 0.55, (1.0 - mu) / 0.55, (0.8864 - mu) / 0.55])
    # An allowance above every episode's reasoning leaves only the non-reasoning output to price.
    wide = care_group(g, CAREConfig(reasoning_allowance=64), history=1.0)
    assert wide.penalties == approx([0.0, 0.0, 0.3 * 10 / 100])


def test_reasoning_allowance_per_turn_frees_each_turns_short_thought():
    # Two turns each: B thinks 20 + 20 tokens, C 50 + 10; a = 24.
    g = [Rollout(True, 1, 100, 0, 2, step_reasoning=(0, 0)), Rollout(True, 1, 140, 40, 2, step_reasoning=(20, 20)),
         Rollout(True, 1, 160, 60, 2, step_reasoning=(50, 10))]
    turn = care_group(g, CAREConfig(reasoning_allowance=24, reasoning_allowance_unit="turn"), history=1.0)
    # Per turn: B's 40 all free (ǒ = 100); C frees 24 + 10, keeping ř = 26, ǒ = 126.
    assert turn.penalties == approx([0.0, 0.0, 0.3 * 26 / 100 + 0.2 * min(1.0, 26 / 16)])
    episode = care_group(g, CAREConfig(reasoning_allowance=24), history=1.0)
    # Per episode: B keeps ř = 16 (ǒ = 116), C ř = 36 (ǒ = 136).
    assert episode.penalties == approx([0.0, 0.3 * 16 / 100 + 0.2 * 16 / 16, 0.3 * 36 / 100 + 0.2])
    # A rollout that does not say its turns' reasoning is read as one turn.
    bare = [Rollout(True, 1, 100, 0, 2), Rollout(True, 1, 140, 40, 2)]
    assert care_group(bare, CAREConfig(reasoning_allowance=24, reasoning_allowance_unit="turn"),
                      history=1.0).penalties == approx([0.0, 0.3 * 16 / 100 + 0.2])


def test_rollouts_read_each_turns_reasoning_and_tokens_off_the_episode():
    from harness.bench import suite_tasks
    from harness.episode import run_episodes
    from harness.reference import ReferenceSolver

    eps = run_episodes(suite_tasks("pa-sim", "test", 2), ReferenceSolver(), batch_size=8)
    for ep in eps:
        r = Rollout.from_episode(ep)
        assert len(r.step_reasoning) == len(r.step_tokens) == len(ep.steps) > 0
        assert sum(r.step_reasoning) == r.reasoning_tokens > 0 and sum(r.step_tokens) == r.output_tokens


def test_no_failure_ever_outscores_a_success():
    greedy = CAREConfig(schedules=(Schedule("x", 0.0, 1.0, 0.9, 50.0),), efficiency_cap=0.99)
    rng = random.Random(0)
    for _ in range(500):
        g = [Rollout(rng.random() < 0.6, rng.random(), rng.randint(1, 500), rng.randint(0, 200), rng.randint(0, 9))
             for _ in range(rng.randint(2, 8))]
        for cfg in (CFG, greedy, CAREConfig(success_adv_nonneg=True), CAREConfig(reasoning_allowance=40)):
            r = care_group(g, cfg, history=rng.random(), efficiency_scale=rng.choice([1.0, 0.5]))
            wins = [x for x, ro in zip(r.rewards, g, strict=True) if ro.success]
            fails = [x for x, ro in zip(r.rewards, g, strict=True) if not ro.success]
            if wins and fails:
                assert min(wins) > max(fails)
                if not r.dropped:
                    assert min(a for a, ro in zip(r.advantages, g, strict=True) if ro.success) > max(
                        a for a, ro in zip(r.advantages, g, strict=True) if not ro.success)


def test_competence_history_schedules_and_guard():
    assert [pick_schedule(k, CFG.schedules).name for k in (0.0, 0.29, 0.3, 0.69, 0.7, 1.0)] == [
        "progress", "progress", "balanced", "balanced", "efficient", "efficient"]
    tr = CompetenceTracker("template")
    task = {"template": "t.a", "id": "t.a#1"}
    g = [Rollout(True, 1)] * 3 + [Rollout(False, 0)]
    r = care_group(g, CFG, history=tr.get(task))
    assert r.competence == 0.75
    tr.update(task, r.competence)
    assert care_group(g[:1] + g[3:], CFG, history=tr.get({"template": "t.a", "id": "t.a#2"})).competence == 0.625
    for name, kappa in (("t.b", 0.0), ("t.c", 0.1), ("t.d", 0.99), ("t.e", 1.0)):
        tr.update({"template": name}, kappa)
    assert tr.histogram() == [1, 1, 0, 0, 0, 0, 0, 1, 0, 2]  # 0.75 in [.7, .8); κ = 1 in the last tenth
    guard = EfficiencyGuard(baseline=80.0, drop_points=1.0)
    assert [guard.observe(x) for x in (79.5, 78.9, 70.0, 85.0)] == [1.0, 0.5, 0.25, 0.25]
    halved = care_group([Rollout(True, 1, 100, 0, 2), Rollout(True, 1, 100, 0, 3)], CFG, history=1.0,
                        efficiency_scale=0.5)
    assert halved.efficiency_weight == pytest.approx(0.2)


def test_task_sampling_weights_follow_the_chance_of_a_mixed_group():
    # G = 4: floor + 1 − κ⁴ − (1 − κ)⁴; an untried task counts as κ = ½ (1 − 2/16 = 0.875).
    w = signal_weights([None, 0.0, 1.0, 0.5, 0.25], group_size=4, floor=0.1)
    assert w == approx([0.975, 0.1, 0.1, 0.975, 0.1 + 1 - 0.00390625 - 0.31640625])
    rng = random.Random(0)
    items = ["mixed", "solved", "hopeless"]
    first = Counter(weighted_sample(rng, items, [0.975, 0.1, 0.1], 1)[0] for _ in range(4000))
    assert first["mixed"] / 4000 == pytest.approx(0.975 / 1.175, abs=0.03)
    assert first["solved"] > 0 and first["hopeless"] > 0  # the floor keeps every task in the draw
    assert sorted(weighted_sample(rng, items, [1, 1, 1], 3)) == sorted(items)  # without replacement
    assert weighted_sample(rng, items, [0, 1, 0], 1) == ["solved"]


def test_trainer_draws_tasks_with_mixed_outcomes_more_often(tokenizer, tiny_model_config):
    from devices.virtual.registry import catalog
    from ml.care_trainer import CARETrainer
    from ml.model import build_model

    names = ["connectivity.start_cast", "connectivity.bluetooth_connect"]
    tasks = [catalog().templates[n].instantiate(s) for n in names for s in range(3)]
    counts = {}
    for mode in ("signal", "uniform"):
        trainer = CARETrainer(CAREConfig(tasks_per_iter=1, kl_coef=0, task_sampling=mode),
                              model=build_model(tiny_model_config, tokenizer), tokenizer=tokenizer, tasks=tasks)
        trainer.tracker.update(tasks[0], 0.5)  # the first template's groups often mix outcomes
        trainer.tracker.update(tasks[-1], 1.0)  # the second's are always all successes
        counts[mode] = Counter(trainer.draw_tasks()[0].template for _ in range(2000))
    share = {m: c[names[0]] / 2000 for m, c in counts.items()}
    assert share["signal"] == pytest.approx(0.975 / 1.075, abs=0.03)
    assert share["uniform"] == pytest.approx(0.5, abs=0.04)


def test_llm_controller_falls_back_to_the_rule():
    class Stub:
        model = "m"

        def __init__(self, answer):
            self.answer = answer

        def post(self, body):
            return {"choices": [{"message": {"content": self.answer}}]}

    cfg = CAREConfig(controller="llm", controller_url="http://x", controller_model="m")
    assert LLMController(cfg, Stub("Use efficient.")).choose(0.1, {}).name == "efficient"
    assert LLMController(cfg, Stub("no idea")).choose(0.1, {}).name == "progress"


def test_policy_loss_clip_higher_and_kl():
    mask = torch.ones(2, 3)
    adv = torch.tensor([[1.0] * 3, [-1.0] * 3])
    logp = torch.zeros(2, 3)
    loss, info = policy_loss(logp, logp, adv, mask, eps_low=0.2, eps_high=0.28, ref_logp=logp, kl_coef=0.1)
    assert float(loss) == pytest.approx(0.0) and info["kl"] == pytest.approx(0.0)
    old = torch.stack([torch.full((3,), -math.log(1.5)), torch.full((3,), math.log(2.0))])
    loss, info = policy_loss(logp, old, adv, mask, eps_low=0.2, eps_high=0.28)
    # ratio 1.5 on A=+1 clips at 1.28; ratio 0.5 on A=-1: min(-0.5, -0.8) = -0.8.
    assert float(loss) == pytest.approx((-1.28 + 0.8) / 2) and info["clip_frac"] == 1.0
    half = torch.tensor([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
    loss, _ = policy_loss(logp, logp, adv, half, eps_low=0.2, eps_high=0.28)
    assert float(loss) == pytest.approx(-1.0)


def test_kl_term_is_bounded_per_token():
    from ml.care import KL_TOKEN_CAP

    mask = torch.ones(1, 3)
    adv = torch.zeros(1, 3)
    ref = torch.zeros(1, 3)
    # d = ref - logp: 1 (k3 = e - 2), 12 (exp(12) - 13 ~ 162,742 uncapped) and 300 (overflows to inf uncapped)
    logp = torch.tensor([[-1.0, -12.0, -300.0]], requires_grad=True)
    loss, info = policy_loss(logp, logp.detach(), adv, mask, eps_low=0.2, eps_high=0.28, ref_logp=ref, kl_coef=1.0)
    assert info["kl"] == pytest.approx((math.e - 2 + 2 * KL_TOKEN_CAP) / 3)
    loss.backward()
    grad = logp.grad[0]
    assert torch.isfinite(grad).all()
    # the in-range token keeps its KL gradient d k3 / d logp = (1 - e^d) / 3; the capped ones get none
    assert float(grad[0]) == pytest.approx((1 - math.e) / 3)
    assert float(grad[1]) == 0.0 and float(grad[2]) == 0.0


def test_one_care_step_raises_the_success_probability(tokenizer, tiny_model_config):
    from ml.care_trainer import token_logprobs
    from ml.model import build_model

    model = build_model(tiny_model_config, tokenizer)
    prompt = tokenizer.encode("<|im_start|>user\nTurn Wi-Fi on.<|im_end|>\n<|im_start|>assistant\n",
                              add_special_tokens=False)
    good = tokenizer.encode('<tool_call>\n{"name": "set_wifi", "arguments": {"enabled": true}}\n</tool_call><|im_end|>',
                            add_special_tokens=False)
    bad = tokenizer.encode("Done.<|im_end|>", add_special_tokens=False)

    def ex(done):
        return Encoded(prompt + done, [0] * len(prompt) + [1] * len(done))

    def success_logp():
        with torch.no_grad():
            lp, m = token_logprobs(model, [ex(good)], tokenizer.pad_token_id, "cpu")
        return float((lp * m).sum())

    # The group as sampled: one success, three failures (as in an early, low-competence group).
    group = [Rollout(True, 1.0, len(good), 0, 1)] + [Rollout(False, 0.0, len(bad), 0, 0)] * 3
    res = care_group(group, CFG)
    exs = [ex(good)] + [ex(bad)] * 3
    before = success_logp()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    logp, mask = token_logprobs(model, exs, tokenizer.pad_token_id, "cpu")
    adv = torch.tensor(res.advantages)[:, None].expand_as(logp)
    loss, _ = policy_loss(logp, logp.detach(), adv, mask, eps_low=0.2, eps_high=0.28)
    loss.backward()
    opt.step()
    assert success_logp() > before + 0.1


def test_care_trainer_iteration_records_environment_and_resumes(tokenizer, tiny_model_config, tmp_path):
    from devices.virtual.registry import catalog
    from ml.care_trainer import CARETrainer
    from ml.model import build_model, read_card, save_checkpoint

    init = save_checkpoint(build_model(tiny_model_config, tokenizer), tokenizer, tmp_path / "sft")
    task = catalog().templates["connectivity.start_cast"].instantiate(5)
    cfg = CAREConfig(iterations=1, tasks_per_iter=1, group_size=2, out_dir=str(tmp_path / "rl"), save_every=1,
                     chat=ChatFormat(max_new_tokens=8))
    seen = []
    trainer = CARETrainer(cfg, init_from=init, tasks=[task], on_metrics=seen.append)
    res = trainer.train()
    assert res.iterations == 1 and seen[0]["environments"] == {"virtual": 2}
    assert {"success", "reward", "output_tokens", "tool_calls", "competence_hist", "schedules"} <= set(seen[0])
    hist = seen[0]["competence_hist"]  # one count per tenth of competence, over every tracked task
    assert len(hist) == 10 and sum(hist) == len(trainer.tracker.values) == 1
    assert hist[min(9, int(trainer.tracker.values["connectivity.start_cast"] * 10))] == 1
    again = CARETrainer(CAREConfig(**{**cfg.to_dict(), "iterations": 2}), init_from=init, tasks=[task])
    assert again.iteration == 1 and again.tracker.values == {"connectivity.start_cast": 0.0}
    assert again.train().iterations == 2
    # The wall-clock budget is the run's, not each attempt's: a run resumed at the end of its hour takes one
    # more iteration (the check comes after it), not another hour.
    state_file = tmp_path / "rl" / "last" / "trainer_state.pt"
    state = torch.load(state_file, weights_only=True)
    elapsed = state["extra"]["care"]["elapsed_s"]
    # The card's seconds are the same reading, rounded to 0.1 s (so a run this short may read 0.0).
    assert 0 < elapsed < 3600 and abs(read_card(tmp_path / "rl" / "last")["seconds"] - elapsed) <= 0.1
    state["extra"]["care"]["elapsed_s"] = 3600.0 - 1e-3
    torch.save(state, state_file)
    late = CARETrainer(CAREConfig(**{**cfg.to_dict(), "iterations": 50, "max_minutes": 60.0}), init_from=init,
                       tasks=[task])
    res = late.train()
    assert res.iterations == 3 and res.seconds >= 3600


def test_efficiency_guard_per_category_halves_only_the_category_that_fell():
    guard = EfficiencyGuard(baseline={"memory": 70.0, "tool_use": 50.0}, drop_points=1.0)
    assert guard.observe({"memory": 60.0, "tool_use": 55.0}) == 0.5
    assert (guard.scale_for("memory"), guard.scale_for("tool_use"), guard.scale_for("skills")) == (0.5, 1.0, 1.0)
    assert guard.observe({"memory": 69.5, "tool_use": 48.0}) == 0.5  # memory within a point; tool_use fell
    assert guard.scales == {"memory": 0.5, "tool_use": 0.5} and guard.trips == 2
    overall = EfficiencyGuard(baseline=60.0)
    overall.observe(50.0)
    assert overall.scale_for("memory") == overall.scale_for("tool_use") == 0.5


def test_guard_reads_the_validation_split_per_category_and_resumes(tokenizer, tiny_model_config, tmp_path,
                                                                    monkeypatch):
    from devices.virtual.registry import catalog
    from harness.bench import held_out_ids
    from harness.episode import run_episodes
    from harness.reference import ReferenceSolver, ReferenceStyle
    from ml.care_trainer import CARETrainer
    from ml.model import build_model, save_checkpoint

    init = save_checkpoint(build_model(tiny_model_config, tokenizer), tokenizer, tmp_path / "sft")
    task = catalog().templates["connectivity.start_cast"].instantiate(5)
    cfg = CAREConfig(iterations=1, tasks_per_iter=1, group_size=2, out_dir=str(tmp_path / "rl"), save_every=1,
                     eval_every=1, eval_per_category=1, guard_per_category=True, chat=ChatFormat(max_new_tokens=8))
    seen = []
    trainer = CARETrainer(cfg, init_from=init, tasks=[task], on_metrics=seen.append)
    ran = []
    real = run_episodes

    def spy(tasks, *a, **kw):  # noqa: ANN001, ANN002, ANN003
        ran.append(tasks)
        return real(tasks, *a, **kw)

    monkeypatch.setattr("harness.episode.run_episodes", spy)
    got = trainer.heldout_success()
    assert set(got) == {"all", "memory", "skills", "sub_agent", "tool_use"}
    assert len(ran[0]) == 4 and not {t.id for t in ran[0]} & held_out_ids()  # val, never test
    monkeypatch.undo()
    readings = iter([{"all": 60.0, "memory": 70.0, "tool_use": 50.0}, {"all": 55.0, "memory": 60.0, "tool_use": 50.0}])
    monkeypatch.setattr(trainer, "heldout_success", lambda: next(readings))
    trainer.train()
    assert trainer.guard.baseline == {"memory": 70.0, "tool_use": 50.0}
    assert seen[0]["heldout_success"] == 55.0
    assert seen[0]["heldout_by_category"] == {"memory": 60.0, "tool_use": 50.0}
    assert seen[0]["efficiency_scales"] == {"memory": 0.5, "tool_use": 1.0} and seen[0]["efficiency_scale"] == 0.5
    # Scoring: λ on a memory task is halved, on a tool-use task not (all-success groups: κ = 1, "efficient").
    # (Two templates the run has not tried, so neither has a competence history.)
    fresh = [next(t for k, t in sorted(catalog().templates.items()) if t.category == cat and k != task.template)
             .instantiate(5) for cat in ("memory", "tool_use")]
    groups = [run_episodes([t, t], ReferenceSolver(ReferenceStyle())) for t in fresh]
    lam = [r.efficiency_weight for r in trainer.score_groups(groups)]
    assert lam == [pytest.approx(0.2), pytest.approx(0.4)]
    again = CARETrainer(CAREConfig(**{**cfg.to_dict(), "iterations": 2}), init_from=init, tasks=[task])
    assert again.iteration == 1 and again.guard.baseline == {"memory": 70.0, "tool_use": 50.0}
    assert again.guard.scales == {"memory": 0.5}
    assert again.guard.scale_for("memory") == 0.5
    # A per-category baseline cannot be compared with an overall reading: resuming with the flag off says so.
    with pytest.raises(ValueError, match="guard_per_category=True"):
        CARETrainer(CAREConfig(**{**cfg.to_dict(), "iterations": 2, "guard_per_category": False}), init_from=init,
                    tasks=[task])


def test_guard_checks_stay_off_the_training_clock(tokenizer, tiny_model_config, tmp_path, monkeypatch):
    """max_minutes budgets training: a guarded run's held-out checks do not eat its iterations."""
    import time

    from devices.virtual.registry import catalog
    from ml.care_trainer import CARETrainer
    from ml.model import build_model, save_checkpoint

    init = save_checkpoint(build_model(tiny_model_config, tokenizer), tokenizer, tmp_path / "sft")
    task = catalog().templates["connectivity.start_cast"].instantiate(5)
    cfg = CAREConfig(iterations=2, tasks_per_iter=1, group_size=2, eval_every=1, eval_per_category=1,
                     chat=ChatFormat(max_new_tokens=8))
    seen = []
    trainer = CARETrainer(cfg, init_from=init, tasks=[task], on_metrics=seen.append)

    def slow_check() -> dict[str, float]:
        time.sleep(1.0)
        return {"all": 50.0}

    monkeypatch.setattr(trainer, "heldout_success", slow_check)
    t = time.perf_counter()
    trainer.train()
    wall = time.perf_counter() - t
    # Three checks (the baseline, then one per iteration) slept 3 s; none of them is training time.
    assert trainer.guard_seconds >= 3.0 and seen[-1]["guard_check_s"] == trainer.guard_seconds
    assert trainer.elapsed() <= wall - 2.9


def test_greedy_anchor_puts_the_greedy_attempt_first_in_every_group(tokenizer, tiny_model_config):
    from devices.virtual.registry import catalog
    from ml.backends import TransformersPlanner
    from ml.care_trainer import EnvPool, GreedyAnchor, rollout_groups
    from ml.model import build_model

    model = build_model(tiny_model_config, tokenizer)
    fmt = ChatFormat(max_new_tokens=10)
    tasks = [catalog().templates[t].instantiate(5) for t in ("connectivity.start_cast", "apps.default_browser")]
    anchored = TransformersPlanner(model, tokenizer, fmt=fmt, temperature=1.5, seed=1, greedy_rows=GreedyAnchor())
    groups = rollout_groups(tasks, anchored, 3, EnvPool({"virtual": 1.0}))
    greedy = rollout_groups(tasks, TransformersPlanner(model, tokenizer, fmt=fmt), 1, EnvPool({"virtual": 1.0}))

    def raws(ep):
        return [s.turn.raw for s in ep.steps]

    for g, (ref,) in zip(groups, greedy, strict=True):
        assert raws(g[0]) == raws(ref)  # the anchor is the policy's greedy episode
        assert all(raws(e) != raws(ref) for e in g[1:])  # the others sample


def test_screened_groups_hold_only_tasks_the_greedy_attempt_fails(tokenizer, tiny_model_config, tmp_path):
    from devices.virtual.registry import catalog
    from harness.episode import run_episodes
    from harness.reference import ReferenceSolver
    from ml.care_trainer import CARETrainer
    from ml.model import build_model

    model = build_model(tiny_model_config, tokenizer)
    tasks = [catalog().templates[t].instantiate(5) for t in ("connectivity.start_cast", "apps.default_browser")]
    cfg = CAREConfig(iterations=1, tasks_per_iter=1, group_size=3, screen_tasks=2, kl_coef=0,
                     chat=ChatFormat(max_new_tokens=10))
    trainer = CARETrainer(cfg, model=model, tokenizer=tokenizer, tasks=tasks)
    # Make the greedy attempt solve the first task: the screen must skip it and roll a group for the other.
    solved = run_episodes(tasks[:1], ReferenceSolver())[0]
    real = trainer.planner

    def planner(temperature=None, seed=None, greedy_rows=None):
        p = real(temperature, seed, greedy_rows)
        if temperature == 0.0:
            turns = {tasks[0].id: iter([s.turn for s in solved.steps])}
            gen = p.generate
            p.generate = lambda ctxs: [next(turns[c.task.id]) if c.task.id in turns else t
                                       for c, t in zip(ctxs, gen(ctxs), strict=True)]
        return p

    trainer.planner = planner
    groups, info = trainer.screened_groups(seed=0)
    assert info == {"screened": 2, "screen_success": 0.5}
    assert [[e.task["id"] for e in g] for g in groups] == [[tasks[1].id] * 3]
    assert not groups[0][0].verdict.success
    assert trainer.tracker.get(tasks[0]) == 1.0 and trainer.tracker.get(tasks[1]) is None
    m = trainer.step()  # a whole screened iteration: the groups are scored and trained on
    assert m["screened"] == 2 and m["greedy_success"] == 0.0 and m["groups_kept"] + m["groups_dropped"] >= 0
    with pytest.raises(ValueError, match="screen_tasks"):
        CAREConfig(tasks_per_iter=4, screen_tasks=2)


@pytest.mark.parametrize("mode", ["group", "demo"])
def test_guidance_adds_the_reference_episode_to_all_failure_groups_and_trains_on_it(tokenizer, tiny_model_config,
                                                                                   monkeypatch, mode):
    import ml.care_trainer as ct
    from devices.virtual.registry import catalog
    from harness.episode import run_episodes
    from harness.reference import ReferenceSolver
    from ml.care_trainer import CARETrainer, encode_actions, rollout_groups, token_logprobs
    from ml.model import build_model

    torch.manual_seed(0)
    model = build_model(tiny_model_config, tokenizer)  # untrained: every attempt fails
    tasks = [catalog().templates[t].instantiate(5) for t in ("connectivity.start_cast", "apps.default_browser")]
    cfg = CAREConfig(care=False, iterations=1, tasks_per_iter=2, group_size=2, guide=mode, kl_coef=0,
                     lr=1e-3, chat=ChatFormat(max_new_tokens=10))
    trainer = CARETrainer(cfg, model=model, tokenizer=tokenizer, tasks=tasks)
    groups = rollout_groups(tasks, trainer.planner(seed=0), 2, trainer.pool)
    assert not any(e.verdict.success for g in groups for e in g)
    guided, own = trainer.guided(groups)
    assert own == [2, 2] and [len(g) for g in guided] == [3, 3]
    demos = run_episodes(tasks, ReferenceSolver())
    for g, demo in zip(guided, demos, strict=True):
        assert g[2].verdict.success and [s.turn.raw for s in g[2].steps] == [s.turn.raw for s in demo.steps]

    views = [v for d in demos for v in encode_actions(d, tokenizer, cfg)]

    def demo_logp() -> float:
        with torch.no_grad():
            lp, mask = token_logprobs(trainer.model, views, tokenizer.pad_token_id, "cpu")
        return float((lp * mask).sum() / mask.sum())

    before = demo_logp()
    trained = []  # the episodes the update encodes (those with a non-zero advantage)
    monkeypatch.setattr(ct, "encode_actions", lambda ep, *a: trained.append(ep) or encode_actions(ep, *a))
    m = trainer.step()
    # "group": the two demonstrations and the four failures beside them; "demo": the demonstrations alone.
    assert sorted(e.verdict.success for e in trained) == ([False] * 4 if mode == "group" else []) + [True] * 2
    # The metrics describe the policy's own attempts; competence too (no success of its own: κ = 0).
    assert m["guided"] == 2 and m["success"] == 0.0 and m["groups_kept"] == 2 and m["updates"] == 1
    assert all(trainer.tracker.get(t) == 0.0 for t in tasks)
    assert demo_logp() > before + 0.01  # the update moved the policy towards the demonstrations


def test_old_logprobs_are_the_policy_before_the_update(tokenizer, tiny_model_config, tmp_path, monkeypatch):
    """Every minibatch of every epoch is clipped against the policy as it was before the iteration's first
    optimiser step, including the first minibatch, whose old log-probs come from its own gradient pass."""
    import copy

    import ml.care_trainer as ct
    from devices.virtual.registry import catalog
    from ml.care import GroupResult
    from ml.model import build_model, save_checkpoint

    init = save_checkpoint(build_model(tiny_model_config, tokenizer), tokenizer, tmp_path / "sft")
    task = catalog().templates["connectivity.start_cast"].instantiate(5)
    cfg = CAREConfig(iterations=1, tasks_per_iter=1, group_size=4, minibatch_episodes=1, ppo_epochs=2, kl_coef=0,
                     lr=1e-2, chat=ChatFormat(max_new_tokens=8))
    trainer = ct.CARETrainer(cfg, init_from=init, tasks=[task])
    # A random model fails every rollout alike (a dropped group); hand the update a group with signal instead.
    monkeypatch.setattr(trainer, "score_groups", lambda groups, own=None: [
        GroupResult([1, 0, 1, 0], [1.0, -1.0, 0.5, -0.5], 0.5, 0.5, "progress", 0.0, [0] * 4, 1.0, False)
        for _ in groups])
    before = copy.deepcopy(trainer.model)
    seen_exs, seen_old, seen_logp = [], [], []
    real_logprobs, real_loss = ct.token_logprobs, ct.policy_loss

    def logprobs(model, exs, *a):
        if torch.is_grad_enabled():
            seen_exs.append(exs)
        return real_logprobs(model, exs, *a)

    def loss(logp, old, *a, **kw):
        seen_logp.append(logp.detach().clone())
        seen_old.append(old.clone())
        return real_loss(logp, old, *a, **kw)

    monkeypatch.setattr(ct, "token_logprobs", logprobs)
    monkeypatch.setattr(ct, "policy_loss", loss)
    m = trainer.step()
    assert m["updates"] == 8 and len(seen_old) == 8  # 4 episodes, one per minibatch, 2 epochs
    for exs, old in zip(seen_exs, seen_old, strict=True):
        with torch.no_grad():  # scored as sampled: softmax(logits / the rollout temperature)
            want, _ = real_logprobs(before, exs, tokenizer.pad_token_id, "cpu", cfg.temperature)
            flat, _ = real_logprobs(before, exs, tokenizer.pad_token_id, "cpu")
        assert torch.allclose(old, want, atol=1e-5)
        assert not torch.allclose(old, flat, atol=1e-3)
    assert torch.equal(seen_logp[0], seen_old[0])  # nothing had moved yet
    assert not torch.allclose(seen_logp[4], seen_old[4], atol=1e-4)  # the second epoch sees the updated policy


def test_token_logprobs_score_the_sampled_distribution(tokenizer, tiny_model_config):
    """At temperature T a token's log-prob is log softmax(logits / T) of the full model's logits at its prefix,
    so the trainer's ratio and gradient belong to the policy the sampler drew from (T = 1: the model as is)."""
    from ml.care_trainer import token_logprobs
    from ml.model import build_model

    torch.manual_seed(0)
    model = build_model(tiny_model_config, tokenizer).eval()
    ids = tokenizer.encode("<|im_start|>assistant\nTurn Wi-Fi on.<|im_end|>", add_special_tokens=False)
    ex = Encoded(ids, [0] * 3 + [1] * (len(ids) - 3))
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0, :-1].float()  # position t predicts token t+1
        for t in (1.0, 0.8, 0.5):
            lp, mask = token_logprobs(model, [ex], tokenizer.pad_token_id, "cpu", t)
            full = torch.log_softmax(logits / t, dim=-1).gather(-1, torch.tensor(ids[1:])[:, None]).squeeze(-1)
            assert mask[0].tolist() == [0.0] * 3 + [1.0] * (len(ids) - 3)
            assert torch.allclose(lp[0, 1:] * mask[0, 1:], full * mask[0, 1:], atol=1e-5)


def test_micro_batches_sort_by_length_and_bound_the_padded_size():
    from ml.care_trainer import micro_batches

    views = [(Encoded(ids=[1] * n, mask=[1] * n), float(n)) for n in (5, 3, 9, 4)]
    cut = micro_batches(views, 12)
    assert [[len(e.ids) for e, _ in mb] for mb in cut] == [[3, 4], [5], [9]]  # 2 × 4 ≤ 12 < 3 × 5; 9 alone
    assert [a for mb in cut for _, a in mb] == [3.0, 4.0, 5.0, 9.0]  # each sequence keeps its advantage
    assert micro_batches(views, 0) == [views]


@pytest.mark.parametrize("aggregation", ["token", "episode"])
def test_micro_batches_change_the_forwards_not_the_update(tokenizer, tiny_model_config, tmp_path, monkeypatch,
                                                          aggregation):
    """Cutting each minibatch into micro-batches accumulates the same weighted-mean gradient: every optimiser step
    of one iteration (two minibatches, two epochs, KL on) gets the gradient one forward per minibatch gives."""
    import ml.care_trainer as ct
    from devices.virtual.registry import catalog
    from ml.care import GroupResult
    from ml.model import build_model, save_checkpoint

    init = save_checkpoint(build_model(tiny_model_config, tokenizer), tokenizer, tmp_path / "sft")
    task = catalog().templates["connectivity.start_cast"].instantiate(5)
    real_logprobs, real_encode = ct.token_logprobs, ct.encode_actions

    encoded: list[int] = []  # episodes encoded so far in this run (both runs encode the same rollouts in order)

    def uneven(ep, *a):  # every other episode scores only its first 3 action tokens: micro-batches of unequal weight
        views = real_encode(ep, *a)
        encoded.append(1)
        if len(encoded) % 2:
            for v in views:
                ones = [k for k, x in enumerate(v.mask) if x]
                v.mask = [1 if k in ones[:3] else 0 for k in range(len(v.mask))]
        return views

    monkeypatch.setattr(ct, "encode_actions", uneven)
    runs = []
    for tokens in (0, 200):  # 200: below every sequence's length, so each sequence is a micro-batch of its own
        cfg = CAREConfig(iterations=1, tasks_per_iter=1, group_size=4, minibatch_episodes=2, ppo_epochs=2,
                         kl_coef=0.05, lr=1e-2, grad_clip=1e9, chat=ChatFormat(max_new_tokens=8),
                         microbatch_tokens=tokens, loss_aggregation=aggregation)
        trainer = ct.CARETrainer(cfg, init_from=init, tasks=[task])
        monkeypatch.setattr(trainer, "score_groups", lambda groups, own=None: [
            GroupResult([1, 0, 1, 0], [1.0, -1.0, 0.5, -0.5], 0.5, 0.5, "progress", 0.0, [0] * 4, 1.0, False)
            for _ in groups])
        encoded.clear()
        forwards: list[int] = []
        grads: list[list[torch.Tensor]] = []

        def counted(model, exs, *a, forwards=forwards):
            forwards.append(len(exs))
            return real_logprobs(model, exs, *a)

        def step(real=trainer.opt.step, grads=grads, model=trainer.model):
            grads.append([q.grad.clone() for q in model.parameters() if q.grad is not None])
            return real()

        monkeypatch.setattr(ct, "token_logprobs", counted)
        monkeypatch.setattr(trainer.opt, "step", step)
        m = trainer.step()
        runs.append((grads, m, forwards))
    (g0, m0, f0), (g1, m1, f1) = runs
    assert m0["updates"] == m1["updates"] == len(g0) == len(g1) == 4  # 2 minibatches × 2 epochs
    assert max(f1) == 1 < max(f0) and sum(f1) == sum(f0)  # split to single rows, the same sequences scored
    for a, b in zip(g0, g1, strict=True):
        # Float sums in another order differ by up to ~1e-4 of a small tensor's gradient norm (1.1e-4 measured on an
        # AMD EPYC host); a mis-weighted micro-batch (3 tokens weighed as a full row) by far more.
        assert all((x - y).norm() <= 1e-3 * x.norm() + 1e-9 for x, y in zip(a, b, strict=True))
    for k in ("pg_loss", "kl", "clip_frac", "adv_token_mean"):
        assert m1[k] == pytest.approx(m0[k], abs=1e-6), k


def test_adv_token_mean_weighs_each_episode_by_its_action_tokens(tokenizer, tiny_model_config, tmp_path):
    """A 2-token success at +1 and a 6-token failure at −1 in one minibatch: the loss's token mean sees
    (2 − 6) / 8 = −0.5 of advantage per token, though the two episodes' advantages sum to zero."""
    from ml.care_trainer import CARETrainer
    from ml.model import build_model, save_checkpoint

    init = save_checkpoint(build_model(tiny_model_config, tokenizer), tokenizer, tmp_path / "sft")
    trainer = CARETrainer(CAREConfig(kl_coef=0, minibatch_episodes=16), init_from=init, tasks=[])
    ids = tokenizer.encode("<|im_start|>assistant\nTurn Wi-Fi on now please.<|im_end|>", add_special_tokens=False)
    assert len(ids) > 8

    def ex(n):  # the last n tokens are the action
        return Encoded(ids, [0] * (len(ids) - n) + [1] * n)

    stats, updates = trainer.update([[(ex(2), 1.0)], [(ex(6), -1.0)]])
    assert updates == 1 and stats["adv_token_mean"] == pytest.approx(-0.5)


def _update_grads(trainer, batch, monkeypatch):
    """The gradient ``trainer.update(batch)`` steps with (one optimiser step), and its stats."""
    grads = []

    def step(real=trainer.opt.step):
        grads.append([q.grad.clone() for q in trainer.model.parameters() if q.grad is not None])
        return real()

    monkeypatch.setattr(trainer.opt, "step", step)
    stats, updates = trainer.update(batch)
    assert updates == len(grads) == 1
    return grads[0], stats


@pytest.mark.parametrize("microbatch_tokens", [0, 1])
def test_episode_aggregation_weighs_every_episode_alike(tokenizer, tiny_model_config, tmp_path, monkeypatch,
                                                        microbatch_tokens):
    """loss_aggregation="episode": a 3-token success at +1 (two turns of 2 and 1 tokens) and a 6-token failure at
    −1 cancel (advantage per token 0, where the token mean sees (3 − 6) / 9 = −1/3), and the step's gradient is
    the mean of each episode's own token-mean gradient, however the rows are cut into micro-batches."""
    from ml.care_trainer import CARETrainer
    from ml.model import build_model, save_checkpoint

    init = save_checkpoint(build_model(tiny_model_config, tokenizer), tokenizer, tmp_path / "sft")
    ids = tokenizer.encode("<|im_start|>assistant\nTurn Wi-Fi on now please.<|im_end|>", add_special_tokens=False)

    def ex(n):
        return Encoded(ids, [0] * (len(ids) - n) + [1] * n)

    success, failure = [(ex(2), 1.0), (ex(1), 1.0)], [(ex(6), -1.0)]

    def grads(aggregation, batch):
        torch.manual_seed(0)
        cfg = CAREConfig(kl_coef=0, minibatch_episodes=16, grad_clip=1e9, loss_aggregation=aggregation,
                         microbatch_tokens=microbatch_tokens)
        return _update_grads(CARETrainer(cfg, init_from=init, tasks=[]), batch, monkeypatch)

    g_ep, s_ep = grads("episode", [success, failure])
    g_tok, s_tok = grads("token", [success, failure])
    assert s_ep["adv_token_mean"] == pytest.approx(0.0, abs=1e-7)
    assert s_tok["adv_token_mean"] == pytest.approx(-1 / 3)
    g_s, _ = grads("token", [success])
    g_f, _ = grads("token", [failure])
    for e, t, a, b in zip(g_ep, g_tok, g_s, g_f, strict=True):
        assert torch.allclose(e, (a + b) / 2, atol=1e-6, rtol=1e-4)
        assert torch.allclose(t, (3 * a + 6 * b) / 9, atol=1e-6, rtol=1e-4)  # the token mean, for contrast
    assert any((e - t).norm() > 1e-3 * t.norm() for e, t in zip(g_ep, g_tok, strict=True))


def test_invalid_care_config_names_every_bad_field():
    with pytest.raises(ValueError) as err:
        CAREConfig(group_size=1, efficiency_cap=1.0, eps_low=0, w_tool_calls=0.9, temperature=0, controller="x",
                   task_sampling="hard", sampling_floor=0, success_adv_nonneg="yes", guide=True,
                   loss_aggregation="sequence", guard_split="holdout", guard_per_category="yes",
                   failure_credit="step", failure_credit_share=1.5, guard_failure_credit="yes",
                   reasoning_allowance=-1, reasoning_allowance_unit="step")
    assert set(err.value.field_errors) >= {"group_size", "efficiency_cap", "eps_low", "w_output_tokens",
                                           "temperature", "controller", "task_sampling", "sampling_floor",
                                           "success_adv_nonneg", "guide", "loss_aggregation", "guard_split",
                                           "guard_per_category", "failure_credit", "failure_credit_share",
                                           "guard_failure_credit", "reasoning_allowance",
                                           "reasoning_allowance_unit"}
    with pytest.raises(ValueError) as err:
        CAREConfig(schedules=(Schedule("a", 0.2, 1, 0, 0),))
    assert "schedules" in err.value.field_errors
    with pytest.raises(ValueError) as err:
        CAREConfig.from_dict({"clip": 0.2})
    assert "clip" in err.value.field_errors
    assert CAREConfig.grpo().care is False
    for bad in (True, "32", float("nan")):
        with pytest.raises(ValueError) as err:
            CAREConfig(reasoning_allowance=bad)
        assert set(err.value.field_errors) == {"reasoning_allowance"}


def test_rl_scores_every_turn_after_the_prompt_it_was_sampled_from(tokenizer):
    """The action tokens of an RL episode sit behind exactly the prompt generation built for each turn (its
    own tools, its own compaction), every planner turn trained, the mistaken ones too (they carry the
    advantage); the whole-episode rendering would have put some turns behind other contexts."""
    from devices.virtual.registry import catalog
    from harness.reference import ReferenceStyle
    from ml.care_trainer import encode_actions
    from ml.chat import encode_conversation, encode_prompt
    from ml.sft import erroneous_steps, reference_episodes, step_messages, step_tools
    from ml.sft_config import SFTConfig

    fmt = ChatFormat(max_context_tokens=160, max_new_tokens=48)
    cfg = CAREConfig(chat=fmt)
    for tid in ("media.skill_build_playlist", "apps.skill_revoke_permissions"):
        task = catalog().templates[tid].instantiate(3)
        ep = reference_episodes([task], [ReferenceStyle(mistake=True)])[0]
        assert erroneous_steps(ep, SFTConfig())  # a turn SFT would mask: RL must still score it
        views = encode_actions(ep, tokenizer, cfg)
        tools_at = dict(zip(step_messages(ep), step_tools(ep), strict=True))
        spans = [(v, t) for v in views for t in v.turns]
        assert [t.message for _, t in spans] == step_messages(ep)
        for v, t in spans:
            assert v.ids[:t.start] == encode_prompt(ep.messages[:t.message], tools_at[t.message], tokenizer, fmt)
            assert all(v.mask[t.start:t.end])  # erroneous and over-long turns too: RL scores what was sampled
        assert sum(sum(v.mask) for v in views) == sum(t.end - t.start for _, t in spans)
        whole = encode_conversation(ep.messages, ep.tools, tokenizer, fmt, train_messages=set(step_messages(ep)))
        moved = [t for t in whole.turns if whole.ids[:t.start] != encode_prompt(
            ep.messages[:t.message], tools_at[t.message], tokenizer, fmt)]
        assert moved, f"{tid}: the old rendering would have matched every turn; the test shows nothing"


def test_wander_credit_spares_a_failures_near_miss_and_moves_its_push_onto_the_wander():
    from harness.contract import ToolCall
    from ml.care import wander_calls

    def k(name: str, **args: object) -> str:
        return ToolCall(id="c", name=name, arguments=dict(args)).key()

    recall, set_right, set_wrong = k("memory.recall", q="pin"), k("app.set", v="42"), k("app.set", v="41")
    status = k("app.status")
    # The success recalls, then sets the right value. Failure F recalls (matched, 30 tokens), sets a wrong value
    # (a near miss: the success's tool, other arguments; 20 tokens), queries the status twice (wander: a tool the
    # success never calls; 10 each), then answers (no call, 20 tokens).
    a = Rollout(True, 1, 50, 0, 2, calls=((recall,), (set_right,)), step_tokens=(30, 20))
    f = Rollout(False, 0.5, 90, 0, 4, calls=((recall,), (set_wrong,), (status,), (status,), ()),
                step_tokens=(30, 20, 10, 10, 20))
    assert wander_calls(f, a) == ([0, 1, 0, 0, 0], [0, 0, 1, 1, 0])
    # A second set of the success's tool after the first near miss is wander: only one call stands in for one.
    assert wander_calls(Rollout(False, calls=((set_wrong,), (set_wrong,))), a) == ([1, 0], [0, 1])
    wander = care_group([a, f], CAREConfig(failure_credit="wander"))
    turn = care_group([a, f], CAREConfig(failure_credit="turn"))
    assert wander.rewards == turn.rewards and wander.advantages == turn.advantages
    adv = wander.advantages[1]
    assert adv < 0
    # "wander": T_M = 30 (the recall), T_U = 20 (the status queries), ρ = 0.5: the near miss and the answer keep A.
    assert wander.turn_advantages[1] == approx([-0.5 * adv, 0, 0.75 * adv, 0.75 * adv, 0])
    # "turn" counts the near miss as unmatched too: T_U = 40, so it takes its share of the push.
    assert turn.turn_advantages[1] == approx([-0.5 * adv, 0.375 * adv, 0.375 * adv, 0.375 * adv, 0])
    moved = [adv + x for x in wander.turn_advantages[1]]
    assert sum(t * m for t, m in zip(f.step_tokens, moved, strict=True)) / 90 == pytest.approx(adv)
    # A failure whose only unmatched call is a near miss has no wander to move the push onto: nothing moves.
    near_only = Rollout(False, 0.5, 50, 0, 2, calls=((recall,), (set_wrong,)), step_tokens=(30, 20))
    assert care_group([a, near_only], CAREConfig(failure_credit="wander")).turn_advantages == []
