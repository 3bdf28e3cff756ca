"""CARE: Competence-Aware Reward-and-Advantage Engineering (the math), its schedule controllers, guard and loss.

``care_group`` is the one place the reward and advantage formulas live (stated in its docstring
and in ``docs/care.md``); ``CAREConfig(care=False)`` turns it into plain GRPO. ``policy_loss`` is
the token-level clipped policy-gradient objective with clip-higher and an optional k3 KL term.
Pure Python for the group math (tested against hand-computed numbers); torch only in the loss.
"""

from __future__ import annotations

import heapq
import json
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ml.care_config import CAREConfig, Schedule

# Per-token bounds of the KL term: the log-ratio is clipped to ±KL_LOG_RATIO_CAP and k3 to KL_TOKEN_CAP.
# A token the policy has made nearly impossible while the reference still likes it gives
# exp(ref − logp) in the thousands (a 1.1M model once logged a batch-mean k3 of 11,076), and that
# one term swamps the policy gradient of the whole batch. Clipped, such a token adds at most
# β·KL_TOKEN_CAP to the loss and no gradient (as verl's low_var_kl does).
KL_LOG_RATIO_CAP = 20.0
KL_TOKEN_CAP = 10.0


@dataclass
class Rollout:
    """What the verifier and the cost meter say about one attempt (never what the agent claims)."""

    success: bool
    progress: float = 0.0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    tool_calls: int = 0
    calls: tuple[tuple[str, ...], ...] = ()  # per step, what each of its calls did (``ToolCall.key``)
    step_tokens: tuple[int, ...] = ()  # per step, the output tokens of its turn (the cost meter's count)
    step_reasoning: tuple[int, ...] = ()  # per step, the reasoning tokens of its turn

    @classmethod
    def from_episode(cls, ep: Any) -> Rollout:
        v = ep.verdict
        return cls(success=bool(v and v.success), progress=float(v.progress) if v else 0.0,
                   output_tokens=ep.costs.output_tokens, reasoning_tokens=ep.costs.reasoning_tokens,
                   tool_calls=ep.costs.total_tool_calls,
                   calls=tuple(tuple(c.call.key() for c in s.calls) for s in ep.steps),
                   step_tokens=tuple(s.turn.output_tokens for s in ep.steps),
                   step_reasoning=tuple(s.turn.reasoning_tokens for s in ep.steps))


@dataclass
class GroupResult:
    """Rewards and advantages of one group, and the quantities that produced them (for metrics)."""

    rewards: list[float]
    advantages: list[float]
    success_rate: float
    competence: float
    schedule: str
    efficiency_weight: float  # λ actually applied
    penalties: list[float]  # e_i (0 for failures)
    normaliser: float
    dropped: bool
    info: dict[str, Any] = field(default_factory=dict)
    # efficiency_credit="turn" (≤ 0, successes) / failure_credit="turn" (failures): per rollout, per step, the
    # advantage added to that step's tokens
    turn_advantages: list[list[float]] = field(default_factory=list)


def pick_schedule(competence: float, schedules: tuple[Schedule, ...]) -> Schedule:
    """The rule-based controller: the schedule with the highest ``min_competence`` <= competence."""
    chosen = schedules[0]
    for s in schedules:
        if competence >= s.min_competence:
            chosen = s
    return chosen


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def _std(xs: list[float]) -> float:
    m = _mean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs))


def competence(history: float | None, rate: float, beta: float) -> float:
    """κ = β·h + (1−β)·ŝ from the task's previous competence h and this group's success rate ŝ (κ = ŝ with no h)."""
    return rate if history is None else beta * history + (1 - beta) * rate


def care_group(
    group: list[Rollout],
    cfg: CAREConfig,
    *,
    history: float | None = None,
    schedule: Schedule | None = None,
    efficiency_scale: float = 1.0,
) -> GroupResult:
    r"""Rewards and advantages for one task's group of G rollouts (CARE, or plain GRPO when ``cfg.care`` is off).

    Notation: rollout i has success s_i ∈ {0,1}, verifier progress p_i ∈ [0,1] (1 on success),
    output tokens o_i, reasoning tokens r_i, tool calls c_i.

    Plain GRPO (``care=False``): R_i = s_i, A_i = (R_i − mean R) / (std R + eps); std is the
    population std. The group is dropped (``dropped=True``, all A_i = 0) when std R = 0.

    CARE:

    1. Competence. ŝ = (1/G) Σ s_i; κ = β·h + (1−β)·ŝ with h the task's previous competence
       (``history``; κ = ŝ when there is none) and β = ``competence_ema``.
    2. Schedule. The controller's choice, else the rule: the schedule with the largest
       min_competence ≤ κ. It gives weights (w_c, w_p, w_e) for completion, progress, efficiency.
    3. Efficiency penalty, successes only. Over the successful rollouts S (if any), with the
       cheapest costs m_o = min_{j∈S} o_j, m_r = min_{j∈S} r_j, m_c = min_{j∈S} c_j and floors
       f_o, f_r, f_c::

           x_i^d = min(1, (d_i − m_d) / max(m_d, f_d))              for d ∈ {o, r, c}
           e_i   = s_i · (α_o·x_i^o + α_r·x_i^r + α_c·x_i^c)   ∈ [0, 1]   (Σα ≤ 1)

       With a reasoning allowance a (``reasoning_allowance``, tokens per episode) the first a reasoning tokens
       of every episode are not charged: r_i and o_i above (and in the minima) are ř_i = max(0, r_i − a) and
       ǒ_i = o_i − (r_i − ř_i) (``charged_tokens``), so a plan of up to a tokens costs a success nothing. With
       ``reasoning_allowance_unit="turn"`` the allowance is per turn: ř_i = Σ_t max(0, r_i,t − a) over the
       reasoning r_i,t of each of i's turns, so short thoughts before every call are free and only long ones pay.

    4. Reward. λ = min(w_e · κ · g, efficiency_cap · w_c), with g = ``efficiency_scale`` (the
       guard's factor, 1 or halved)::

           R_i = w_c·s_i + w_p·p_i − λ·e_i

       No failure can outscore a success: a success gets R ≥ w_c + w_p − λ and a failure
       R ≤ w_p·p_i ≤ w_p, and λ ≤ efficiency_cap·w_c < w_c.
    5. Advantage with a success-derived floor on the normaliser::

           σ = max(std R, σ_min + σ_s·ŝ),   A_i = (R_i − mean R) / σ

       With all rollouts successful the floor σ_min + σ_s is large, so small efficiency
       differences give small advantages and completion stays the dominant signal; with none
       successful the floor is σ_min and progress differences keep their scale. With
       ``success_adv_nonneg`` a success's advantage is max(A_i, 0): cheaper successes are rewarded,
       costlier ones are left alone rather than pushed down.
    6. Dynamic sampling: a group whose rewards are all equal (std R < 1e-9) carries no signal and
       is dropped (``dropped=True``, all A_i = 0) when ``drop_no_signal``.

    With ``efficiency_credit="turn"`` the tool-call term is charged to the turns that made the excess
    calls instead of to the whole episode: e_i keeps only α_o·x_i^o + α_r·x_i^r, and for a success i,
    with k* the cheapest success (fewest calls, then fewest output tokens) and X_i,t the calls of
    step t that k*'s calls do not cover (``excess_calls``: i's calls matched in order against the
    multiset of k*'s) and n_i = (calls of i − calls of k*) / Σ_t |X_i,t| (another path than k*'s is
    not all excess), step t's tokens get A_i − λ·α_c·n_i·|X_i,t| / (max(m_c, f_c)·σ) (after the clip
    above; ``turn_advantages``). A group whose rewards are equal but holds such a step is kept.

    With ``failure_credit="turn"`` a failure i with A_i < 0 in a group with a success keeps A_i as its
    token-weighted mean but moves a share ρ of it from its matched steps M (calls, all covered by k*'s) to its
    unmatched steps U (a call k* does not make; ``failure_turn_advantages``): with τ_t its turns' output tokens
    and T_M, T_U their sums, step t gets A_i − ρ·A_i on M and A_i + ρ·A_i·T_M/T_U on U, steps without a call keep
    A_i, ρ = min(``failure_credit_share``, (FAILURE_CREDIT_MAX − 1)·T_U/T_M) so no step's advantage exceeds
    FAILURE_CREDIT_MAX·A_i. Its reward and its episode advantage are unchanged: a failure is never priced on its
    cost. With ``guard_failure_credit`` the share is ``failure_credit_share``·g, the guard's factor g scaling it
    as it scales λ.
    """
    if not group:
        raise ValueError("a group needs at least one rollout")
    G = len(group)
    s = [1.0 if r.success else 0.0 for r in group]
    rate = _mean(s)
    if not cfg.care:
        R = s
        sd = _std(R)
        dropped = cfg.drop_no_signal and sd < 1e-9
        adv = [0.0] * G if dropped else [(x - _mean(R)) / (sd + cfg.eps) for x in R]
        return GroupResult(R, adv, rate, rate, "grpo", 0.0, [0.0] * G, sd + cfg.eps, dropped)

    kappa = competence(history, rate, cfg.competence_ema)
    sched = schedule or pick_schedule(kappa, cfg.schedules)
    p = [1.0 if r.success else min(1.0, max(0.0, float(r.progress))) for r in group]
    wins = [r for r in group if r.success]
    pen = [0.0] * G
    by_turn = cfg.efficiency_credit == "turn"
    credit = by_turn or cfg.failure_credit != "episode"
    cheapest = cheapest_success(wins) if wins and credit else None  # what turn and failure credit measure against
    if wins:
        o, rs = charged_tokens(group, cfg.reasoning_allowance, cfg.reasoning_allowance_unit)
        m_o = min(o[i] for i in range(G) if s[i])
        m_r = min(rs[i] for i in range(G) if s[i])
        m_c = min(r.tool_calls for r in wins)
        for i, r in enumerate(group):
            if not r.success:
                continue
            x_o = min(1.0, (o[i] - m_o) / max(m_o, cfg.floor_output_tokens))
            x_r = min(1.0, (rs[i] - m_r) / max(m_r, cfg.floor_reasoning_tokens))
            x_c = 0.0 if by_turn else min(1.0, (r.tool_calls - m_c) / max(m_c, cfg.floor_tool_calls))
            pen[i] = cfg.w_output_tokens * x_o + cfg.w_reasoning_tokens * x_r + cfg.w_tool_calls * x_c
    lam = min(sched.efficiency * kappa * efficiency_scale, cfg.efficiency_cap * sched.completion)
    R = [sched.completion * s[i] + sched.progress * p[i] - lam * pen[i] for i in range(G)]
    sd = _std(R)
    floor = cfg.std_floor_min + cfg.std_floor_success * rate
    sigma = max(sd, floor)
    excess: list[list[float]] = [[0.0] * len(r.calls) for r in group]
    per_call = 0.0
    if by_turn and wins and lam > 0:
        per_call = lam * cfg.w_tool_calls / (max(m_c, cfg.floor_tool_calls) * sigma)
        for i, r in enumerate(group):
            unmatched = excess_calls(r, cheapest) if r.success else []
            if sum(unmatched):
                share = excess_share(r, cheapest, sum(unmatched))
                excess[i] = [n * share for n in unmatched]
    n_excess = sum(map(sum, excess))
    dropped = cfg.drop_no_signal and sd < 1e-9 and not n_excess
    mu = _mean(R)
    adv = [0.0] * G if sd < 1e-9 else [(x - mu) / sigma for x in R]
    if cfg.success_adv_nonneg:
        adv = [max(a, 0.0) if s[i] else a for i, a in enumerate(adv)]
    turns = [[-per_call * n for n in e] for e in excess] if by_turn else []
    moved: list[list[float]] = []
    if cfg.failure_credit != "episode" and cheapest is not None and sd >= 1e-9:
        share = cfg.failure_credit_share * (efficiency_scale if cfg.guard_failure_credit else 1.0)
        moved = [failure_turn_advantages(r, cheapest, adv[i], share,
                                         wander_only=cfg.failure_credit == "wander") if not r.success else []
                 for i, r in enumerate(group)]
    if any(moved):
        turns = turns or [[0.0] * len(r.calls) for r in group]
        turns = [m or t for m, t in zip(moved, turns, strict=True)]
    return GroupResult(R, adv, rate, kappa, sched.name, lam, pen, sigma, dropped,
                       info={"std": sd, "floor": floor, "excess_calls": round(n_excess, 6),
                             "failures_moved": sum(map(bool, moved))}, turn_advantages=turns)


def charged_tokens(group: list[Rollout], allowance: float, unit: str = "episode") -> tuple[list[float], list[float]]:
    """Each rollout's output and reasoning tokens as the efficiency penalty charges them: the first ``allowance``
    reasoning tokens of an episode (``unit="episode"``) or of each of its turns (``unit="turn"``) are free in both
    (ř = r − free, ǒ = o − free; free = min(r, a), or min(r, Σ_t min(r_t, a)) over the turns' reasoning r_t)."""
    def free_of(r: Rollout) -> float:
        if unit == "turn" and r.step_reasoning:
            return min(float(r.reasoning_tokens), sum(min(float(t), allowance) for t in r.step_reasoning))
        return min(float(r.reasoning_tokens), allowance)

    free = [free_of(r) for r in group]
    return ([r.output_tokens - f for r, f in zip(group, free, strict=True)],
            [r.reasoning_tokens - f for r, f in zip(group, free, strict=True)])


def cheapest_success(wins: list[Rollout]) -> Rollout:
    """The group's cheapest success, which turn credit measures the others against: fewest calls, then fewest
    output tokens."""
    return min(wins, key=lambda r: (r.tool_calls, r.output_tokens))


def unmatched_calls(rollout: Rollout, cheapest: Rollout) -> list[list[str]]:
    """Per step of ``rollout``, the keys of its calls the cheapest success's calls do not cover: the calls are
    matched in order against the multiset of ``cheapest``'s (``ToolCall.key``), so a repeat of a call the
    cheapest success makes once is unmatched the second time, and a call it never makes is unmatched at once."""
    left = Counter(k for step in cheapest.calls for k in step)
    out = []
    for step in rollout.calls:
        unmatched = []
        for k in step:
            if left[k] > 0:
                left[k] -= 1
            else:
                unmatched.append(k)
        out.append(unmatched)
    return out


def excess_share(rollout: Rollout, cheapest: Rollout, n_unmatched: int) -> float:
    """n_i, what each of ``rollout``'s ``n_unmatched`` unmatched calls counts as excess: (calls of rollout −
    calls of cheapest) / n_unmatched, so another path than the cheapest success's is not all excess."""
    return max(0, sum(map(len, rollout.calls)) - sum(map(len, cheapest.calls))) / n_unmatched


FAILURE_CREDIT_MAX = 4.0  # failure_credit "turn"/"wander": no unmatched step's advantage beyond this multiple of A_i


def tool_name(key: str) -> str:
    """The tool a ``ToolCall.key`` calls (the key itself where it is not one, as in hand-written tests)."""
    try:
        value = json.loads(key)
    except ValueError:
        return key
    return value[0] if isinstance(value, list) and value else key


def wander_calls(rollout: Rollout, cheapest: Rollout) -> tuple[list[int], list[int]]:
    """Per step of ``rollout``, its unmatched calls (``unmatched_calls``) split in two: near misses, each in
    place of one of ``cheapest``'s calls that ``rollout`` never made exactly (the same tool, other arguments: the
    action the success took, done wrong), and wander, the rest (a tool the cheapest success does not call, or one
    call more of it than the cheapest success makes). Returns (near misses, wander) counts per step."""
    unmatched = unmatched_calls(rollout, cheapest)
    # The cheapest success's calls the rollout never made exactly (a Counter difference keeps what stays above 0).
    left = Counter(k for step in cheapest.calls for k in step) - Counter(k for step in rollout.calls for k in step)
    names = Counter(tool_name(k) for k in left.elements())
    near, wander = [], []
    for step in unmatched:
        n_near = 0
        for k in step:
            name = tool_name(k)
            if names[name] > 0:
                names[name] -= 1
                n_near += 1
        near.append(n_near)
        wander.append(len(step) - n_near)
    return near, wander


def failure_turn_advantages(failure: Rollout, cheapest: Rollout, adv: float, share: float,
                            wander_only: bool = False) -> list[float]:
    """``care_group``'s ``failure_credit="turn"``: per step of ``failure``, what is added to its advantage ``adv``
    (< 0) so that a share of the push moves from the steps whose calls ``cheapest`` also makes (M) to the steps with
    a call it does not make (U), the token-weighted mean staying ``adv``; steps without a call (a reply, the final
    answer) keep ``adv``. [] when nothing moves (``adv`` ≥ 0, or U or M empty).

    ``wander_only`` (``failure_credit="wander"``): U holds only the steps with a wander call (``wander_calls``);
    a step whose unmatched calls are all near misses (the success's action with other arguments) keeps ``adv``,
    as an answer does: its call is mostly the right one, and pushing it down harder teaches the action away."""
    if adv >= 0 or share <= 0:
        return []
    if wander_only:
        near, unmatched = wander_calls(failure, cheapest)
    else:
        unmatched = excess_calls(failure, cheapest)
        near = [0] * len(unmatched)
    tok = list(failure.step_tokens) if len(failure.step_tokens) == len(unmatched) else [1] * len(unmatched)
    tok = [max(1, t) for t in tok]
    matched = [bool(calls) and not n and not m for calls, n, m in zip(failure.calls, unmatched, near, strict=True)]
    t_u = sum(t for t, n in zip(tok, unmatched, strict=True) if n)
    t_m = sum(t for t, m in zip(tok, matched, strict=True) if m)
    if not t_u or not t_m:
        return []
    rho = min(share, (FAILURE_CREDIT_MAX - 1) * t_u / t_m)
    return [rho * adv * t_m / t_u if n else -rho * adv if m else 0.0
            for n, m in zip(unmatched, matched, strict=True)]


def excess_calls(rollout: Rollout, cheapest: Rollout) -> list[int]:
    """Per step of ``rollout``, how many of its calls the cheapest success's calls do not cover
    (``unmatched_calls``)."""
    return [len(step) for step in unmatched_calls(rollout, cheapest)]


# ---------------------------------------------------------------------------------------------
# Competence history, schedule controllers, guard


class CompetenceTracker:
    """Per-task competence κ (the EMA ``care_group`` computes), keyed by template or instance."""

    def __init__(self, key: str = "template"):
        self.key = key
        self.values: dict[str, float] = {}

    def task_key(self, task: Any) -> str:
        """``task``: a task dict (an episode's) or a ``Task`` (the trainer's pool)."""
        field_ = "template" if self.key == "template" else "id"
        return task[field_] if isinstance(task, dict) else getattr(task, field_)

    def get(self, task: Any) -> float | None:
        return self.values.get(self.task_key(task))

    def update(self, task: Any, competence: float) -> None:
        self.values[self.task_key(task)] = competence

    def histogram(self, bins: int = 10) -> list[int]:
        """How many tracked tasks have κ in [0, 1/bins), [1/bins, 2/bins), ..., [1 - 1/bins, 1] (κ = 1 in the last)."""
        out = [0] * bins
        for v in self.values.values():
            out[max(0, min(bins - 1, int(v * bins)))] += 1
        return out

    def state(self) -> dict[str, float]:
        return dict(self.values)


def signal_weights(competences: list[float | None], group_size: int, floor: float) -> list[float]:
    """Sampling weight of each task: ``floor`` + P(a group of G attempts holds a success and a failure)
    = floor + 1 − κ^G − (1 − κ)^G; a task never tried counts as κ = ½ (the largest weight).

    Groups whose attempts all succeed or all fail carry no completion signal (plain GRPO drops them
    all, CARE keeps only those its progress or efficiency terms separate), so drawing tasks the policy
    solves sometimes spends rollouts where the gradient is. The floor keeps every task in the draw: a
    task's κ only moves when it is tried again.
    """
    kappas = [0.5 if k is None else k for k in competences]
    return [floor + 1.0 - k ** group_size - (1.0 - k) ** group_size for k in kappas]


def weighted_sample(rng: Any, items: list[Any], weights: list[float], k: int) -> list[Any]:
    """``k`` distinct items drawn without replacement, each draw in proportion to weight
    (Efraimidis–Spirakis: the k largest keys u^(1/w), u uniform in (0, 1))."""
    keys = [(1.0 - rng.random()) ** (1.0 / w) if w > 0 else -1.0 for w in weights]
    return [items[i] for i in heapq.nlargest(k, range(len(items)), key=keys.__getitem__)]


class RuleController:
    """Schedule by competence threshold (``pick_schedule``)."""

    name = "rule"

    def __init__(self, cfg: CAREConfig):
        self.cfg = cfg

    def choose(self, competence: float, stats: dict[str, Any]) -> Schedule:
        return pick_schedule(competence, self.cfg.schedules)


class LLMController:
    """An LLM behind an OpenAI-compatible endpoint picks the schedule from training statistics, as the
    report does; anything but a known schedule name falls back to the rule. One request per iteration:
    ``choose`` caches answers per competence bucket until ``refresh``."""

    name = "llm"

    def __init__(self, cfg: CAREConfig, planner: Any | None = None):
        from ml.backends import OpenAIPlanner

        self.cfg = cfg
        self.planner = planner or OpenAIPlanner(cfg.controller_url, cfg.controller_model, cfg.controller_key or None,
                                                max_tokens=64)
        self.cache: dict[int, Schedule] = {}
        self.stats: dict[str, Any] = {}

    def refresh(self, stats: dict[str, Any]) -> None:
        self.cache.clear()
        self.stats = stats

    def choose(self, competence: float, stats: dict[str, Any]) -> Schedule:
        bucket = int(competence * 10)
        if bucket not in self.cache:
            self.cache[bucket] = self._ask(competence, stats or self.stats)
        return self.cache[bucket]

    def _ask(self, competence: float, stats: dict[str, Any]) -> Schedule:
        names = {s.name: s for s in self.cfg.schedules}
        prompt = (
            "You steer RL reward schedules for a planner agent. Schedules: "
            + json.dumps([s.to_dict() for s in self.cfg.schedules])
            + f". Task competence (smoothed success rate): {competence:.2f}. Training statistics: "
            + json.dumps(stats, default=str)[:2000]
            + ". Answer with exactly one schedule name."
        )
        body = {"model": self.planner.model, "messages": [{"role": "user", "content": prompt}],
                "temperature": 0.0, "max_tokens": 16}
        try:
            reply = self.planner.post(body)
            text = ((reply.get("choices") or [{}])[0].get("message") or {}).get("content") or ""
        except Exception:  # noqa: BLE001 - the controller is advisory; the rule is always a valid answer
            text = ""
        for name, sched in names.items():
            if name in text:
                return sched
        return pick_schedule(competence, self.cfg.schedules)


class EfficiencyGuard:
    """Halves the efficiency weight each time held-out success falls more than ``drop_points`` below the
    pre-RL checkpoint's (``baseline``, in percent).

    Per category (``baseline`` a {category: percent} dict, and ``observe`` given one too): each category keeps
    its own baseline and factor, so a drop in one category relaxes the efficiency pressure on that category's
    tasks alone (``scale_for``) and leaves it where quality holds; ``scale`` is then the smallest factor."""

    def __init__(self, baseline: float | dict[str, float] | None, drop_points: float = 1.0):
        self.baseline = baseline
        self.drop_points = drop_points
        self.scale = 1.0
        self.scales: dict[str, float] = {}  # per category, when the baseline is per category
        self.trips = 0

    def observe(self, success_pct: float | dict[str, float]) -> float:
        if isinstance(self.baseline, dict) and isinstance(success_pct, dict):
            for cat, base in self.baseline.items():
                if cat in success_pct and success_pct[cat] < base - self.drop_points:
                    self.scales[cat] = self.scales.get(cat, 1.0) * 0.5
                    self.trips += 1
            self.scale = min(self.scales.values(), default=1.0)
        elif self.baseline is not None and success_pct < self.baseline - self.drop_points:
            self.scale *= 0.5
            self.trips += 1
        return self.scale

    def scale_for(self, category: str) -> float:
        """The factor g for a task of ``category``."""
        return self.scales.get(category, 1.0) if isinstance(self.baseline, dict) else self.scale


# ---------------------------------------------------------------------------------------------
# The loss


def policy_loss(
    logp: Any,
    old_logp: Any,
    advantages: Any,
    mask: Any,
    *,
    eps_low: float,
    eps_high: float,
    ref_logp: Any | None = None,
    kl_coef: float = 0.0,
) -> tuple[Any, dict[str, float]]:
    r"""Token-level clipped policy gradient with clip-higher and an optional k3 KL to the reference.

    All tensors are (B, T) over action tokens (``mask`` = 1 on the planner's own turn tokens; tool
    replies, prompts and padding are 0). With ρ_t = exp(logp_t − old_logp_t)::

        L = Σ_t mask_t · [ −min(ρ_t·A_t, clip(ρ_t, 1−ε_low, 1+ε_high)·A_t) + β·k3_t ] / Σ_t mask_t
        k3_t = min(exp(d_t) − d_t − 1, KL_TOKEN_CAP),  d_t = clip(ref_t − logp_t, ±KL_LOG_RATIO_CAP)

    Averaging over all tokens of the batch (not per sequence first) weighs every token alike, so
    long rollouts are not under-weighted (DAPO). ``mask`` may carry weights instead of ones: the
    sums above are then weighted means (the trainer's ``loss_aggregation="episode"``).
    """
    import torch

    m = mask.to(logp.dtype)
    n = m.sum().clamp(min=1e-12)  # a weighted mask (loss_aggregation="episode") may sum below 1
    ratio = torch.exp(logp - old_logp)
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1.0 - eps_low, 1.0 + eps_high) * advantages
    pg = -torch.minimum(unclipped, clipped)
    loss_t = pg
    k3 = None
    if ref_logp is not None and kl_coef > 0:
        d = torch.clamp(ref_logp - logp, -KL_LOG_RATIO_CAP, KL_LOG_RATIO_CAP)
        k3 = torch.clamp(torch.exp(d) - d - 1.0, max=KL_TOKEN_CAP)
        loss_t = loss_t + kl_coef * k3
    loss = (loss_t * m).sum() / n
    with torch.no_grad():
        clip_frac = float((((ratio < 1 - eps_low) | (ratio > 1 + eps_high)).to(m.dtype) * m).sum() / n)
        kl_val = float((k3 * m).sum() / n) if k3 is not None else 0.0
        pg_val = float((pg * m).sum() / n)
    return loss, {"pg_loss": pg_val, "kl": kl_val, "clip_frac": clip_frac}
