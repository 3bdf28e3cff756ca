"""CARE online RL configuration: reward schedules, advantage calibration, the policy-gradient loss, rollouts.

One documented, validated dataclass (``CAREConfig``) beside ``care_trainer.py``; the formulas
these fields parameterise are in ``ml.care.care_group`` and ``docs/care.md``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ml.chat import ChatFormat, raise_field_errors

GUIDE_MODES = ("off", "group", "demo")  # CAREConfig.guide
LOSS_AGGREGATIONS = ("token", "episode")  # CAREConfig.loss_aggregation


@dataclass(frozen=True)
class Schedule:
    """A reward schedule: R = completion·success + progress·p − λ·efficiency_penalty (λ from ``efficiency``).

    min_competence: the schedule applies from this competence up (the rule-based controller picks
    the applicable schedule with the highest threshold).
    """

    name: str
    min_competence: float
    completion: float
    progress: float
    efficiency: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


DEFAULT_SCHEDULES: tuple[Schedule, ...] = (
    Schedule("progress", 0.0, completion=1.0, progress=0.5, efficiency=0.0),
    Schedule("balanced", 0.3, completion=1.0, progress=0.2, efficiency=0.2),
    Schedule("efficient", 0.7, completion=1.0, progress=0.0, efficiency=0.4),
)


@dataclass
class CAREConfig:
    """Competence-Aware Reward-and-Advantage Engineering (and, with ``care=False``, plain GRPO).

    Rewards and advantages (``ml.care.care_group``):
        care: False = plain GRPO baseline (binary success reward, advantage (R − mean)/(std + eps)).
        schedules: the predefined reward schedules, ordered by min_competence (first must be 0).
        competence_ema: β in κ_t = β·κ_{t−1} + (1−β)·(group success rate); the task's history.
        competence_key: "template" (instances of one template share a history) or "instance".
        w_output_tokens, w_reasoning_tokens, w_tool_calls: weights α of the three cost terms in the
            efficiency penalty (each term in [0, 1]; the weights must sum to at most 1).
        floor_output_tokens, floor_reasoning_tokens, floor_tool_calls: cost floors: excess is measured
            relative to max(cheapest successful cost, floor), so a near-zero cheapest cost cannot
            blow up the relative excess.
        reasoning_allowance: reasoning tokens per episode the efficiency penalty never charges (in neither the
            output- nor the reasoning-token term): a short plan is free, only reasoning beyond it is priced.
        reasoning_allowance_unit: "episode" (the allowance covers an episode's reasoning in all) or "turn" (it
            covers each turn's reasoning: a short thought before every call is free).
        efficiency_cap: λ never exceeds efficiency_cap·completion (< 1), which is what guarantees that
            no failure outscores any success.
        std_floor_min, std_floor_success: the advantage normaliser is max(std(R), std_floor_min +
            std_floor_success·success_rate): with every rollout successful the floor is large, so
            tiny efficiency differences move the policy gently; with none, progress keeps its scale.
        success_adv_nonneg: clip every success's advantage at 0 from below, so the efficiency penalty
            only rewards the cheaper successes and never pushes a success's tokens (its correct actions)
            down; failures keep theirs.
        efficiency_credit: "episode" (the tool-call excess lowers the whole success's reward) or "turn"
            (it lowers only the tokens of the steps whose calls the group's cheapest success does not
            make; ``ml.care.care_group``).
        failure_credit: "episode" (a failure's advantage on all its tokens alike) or "turn": where the group
            has a success, a failure's negative advantage is moved, a share ``failure_credit_share`` of it off
            the steps whose calls the cheapest success also makes, onto the steps with a call it does not make
            (steps without a call, such as the answer, keep theirs), so the episode's token-weighted advantage
            (and its reward) stays what it was: a failure is never scored on its cost, only its push lands on
            what it did that a success did without. "wander": the same, but only onto the steps with a call
            that stands in for none of the cheapest success's (a tool it does not call, or a repeat); a step
            whose unmatched calls are the success's actions with other arguments keeps its advantage
            (``ml.care.wander_calls``). failure_credit_share: that share ρ, in [0, 1].
            guard_failure_credit: the guard's factor for the task's category (1, or halved after a fall)
            scales ρ as it scales the efficiency weight, so a category the guard relaxes loses its failure
            credit too (off: ρ stays whole, as at stops 43–44).
        eps: added to the GRPO baseline's std. drop_no_signal: drop groups whose rewards are all
            equal (dynamic sampling). guard_drop_points: the guard halves the efficiency weight when
            held-out success falls more than this many points below the pre-RL checkpoint.
            guard_split: the benchmark split the guard measures ("val" by default: never "test", the split
            results are reported on, unless asked). guard_per_category: the guard keeps a baseline and a
            factor per category and halves the efficiency weight only on the tasks of a category that fell.
        controller: "rule" (by competence thresholds) or "llm" (an OpenAI-compatible endpoint picks
            the schedule; the rule decides whenever the answer is not a schedule name).
        controller_url, controller_model, controller_key: the LLM controller's endpoint.
    Loss (token-level clipped policy gradient, tool replies masked):
        eps_low, eps_high: ratio clip range [1 − eps_low, 1 + eps_high] (clip-higher: eps_high > eps_low).
        kl_coef: weight of the k3 KL estimate to the SFT reference policy (0 = no reference model).
        score_temperature: True (default) scores the policy's, the old policy's and the reference's
            log-probs as softmax(logits / temperature), the distribution the rollouts sampled from, so the
            gradient is the sampled policy's; False scores softmax(logits), as the trainer did up to stop 38
            (its policy gradient then belongs to a flatter policy than the one that acted).
        loss_aggregation: "token" (default) averages the loss over every action token of a minibatch alike
            (DAPO), so a group whose failures ran longer than its successes pushes down more tokens than it
            pushes up: the advantage per token leans negative though a group's advantages sum to zero;
            "episode" weighs each episode's tokens by 1 / its action tokens, every episode alike (GRPO's
            sequence mean), so a group's advantages cancel in the loss as they do per episode.
        lr, weight_decay, grad_clip: AdamW and clipping. ppo_epochs: passes over each rollout batch.
        minibatch_episodes: episodes per optimiser step (the rollout batch is split into minibatches,
            so from the second minibatch on the policy has moved and the clip is active).
        microbatch_tokens: padded tokens per forward pass of the update: a minibatch's sequences are sorted
            by length and cut into micro-batches of at most this many (rows × longest row), whose gradients
            add up to the minibatch's token-mean loss (0 = the whole minibatch in one padded forward). It
            bounds padding and memory; the optimiser step and its loss are the same.
    Rollouts:
        tasks_per_iter: tasks per iteration; group_size: G attempts per task. task_sampling: "uniform"
            (default) draws every task alike; "signal" draws tasks in proportion to sampling_floor +
            P(a group mixes successes and failures) at the task's competence κ
            (``ml.care.signal_weights``; an untried task counts as κ = ½). Measured
            (``bench/rl_sampling.py``, 60 GRPO iterations per arm, interleaved, one checkpoint): 1.47
            vs 1.37 groups with signal per iteration of 4, within noise, so not the default yet: with
            κ kept per template (~93) a short run visits each too rarely for the draw to steer.
            temperature, top_p:
        sampling. greedy_anchor: the first of each group's G attempts decodes greedily (the others
        sample), so the policy's mode, which the held-out score measures, is always in the group: a
        greedy failure beside a sampled success is pushed down directly, a greedy success beside sampled
        failures is reinforced. screen_tasks: 0 = off; else each iteration draws this many tasks, runs one
        greedy attempt of each, and rolls groups only for those the greedy attempt fails (at most
        tasks_per_iter): that greedy failure and G − 1 samples, so rollouts go where greedy decoding can
        still be fixed (``bench/rl_headroom.py``); a greedy success counts as a group rate of 1 in the
        task's competence. guide: "off" (default); else a group whose G attempts all fail gets the reference
        solver's episode of the same task instance as one more member (off-policy guidance, as LUFFY mixes
        expert traces into GRPO groups), verified like any attempt and kept only if it succeeds, so the task
        has a success to learn from instead of an all-failure group that binary success cannot use
        (``bench/rl_headroom.py``: most greedy failures have no sampled success). "group" scores the
        guided group as it stands (the failures are pushed down beside the demonstration); "demo" keeps
        only the demonstration's advantage (the failures get none). Rollout metrics count the policy's own
        attempts only. iterations: optimiser iterations (the budget); max_minutes: stop earlier on wall
        time (0 = none), the whole run's: a run resumed after a crash counts the time before its checkpoint;
        the guard's held-out checks are measurement and not counted (``CARETrainer.guard_check``).
        train_seeds: instance seeds of the training tasks (never the held-out suite).
        env_mix: {environment kind: weight} the pool draws from ("virtual" now; real devices later).
        eval_every: iterations between held-out checks for the guard (0 = never);
        eval_per_category: tasks per category of ``guard_split`` in those checks. seed: sampling and order.
        out_dir: checkpoints (``out_dir/last``); save_every: iterations between checkpoints.
        threads: torch CPU threads (0 = leave). chat: context compaction.
    """

    care: bool = True
    schedules: tuple[Schedule, ...] = DEFAULT_SCHEDULES
    competence_ema: float = 0.5
    competence_key: str = "template"
    w_output_tokens: float = 0.3
    w_reasoning_tokens: float = 0.2
    w_tool_calls: float = 0.5
    floor_output_tokens: float = 32.0
    floor_reasoning_tokens: float = 16.0
    floor_tool_calls: float = 1.0
    reasoning_allowance: float = 0.0
    reasoning_allowance_unit: str = "episode"
    efficiency_cap: float = 0.5
    std_floor_min: float = 0.05
    std_floor_success: float = 0.5
    success_adv_nonneg: bool = False
    efficiency_credit: str = "episode"
    failure_credit: str = "episode"
    failure_credit_share: float = 0.5
    guard_failure_credit: bool = False
    eps: float = 1e-6
    drop_no_signal: bool = True
    guard_drop_points: float = 1.0
    guard_split: str = "val"
    guard_per_category: bool = False
    controller: str = "rule"
    controller_url: str = ""
    controller_model: str = ""
    controller_key: str = ""
    eps_low: float = 0.2
    eps_high: float = 0.28
    kl_coef: float = 0.02
    score_temperature: bool = True
    loss_aggregation: str = "token"
    lr: float = 1e-4
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    ppo_epochs: int = 1
    minibatch_episodes: int = 16
    microbatch_tokens: int = 16384
    tasks_per_iter: int = 8
    group_size: int = 4
    task_sampling: str = "uniform"
    sampling_floor: float = 0.1
    temperature: float = 0.8
    top_p: float = 1.0
    greedy_anchor: bool = False
    screen_tasks: int = 0
    guide: str = "off"
    iterations: int = 20
    max_minutes: float = 0.0
    train_seeds: tuple[int, ...] = tuple(range(1000, 1008))
    env_mix: dict[str, float] = field(default_factory=lambda: {"virtual": 1.0})
    eval_every: int = 0
    eval_per_category: int = 5
    seed: int = 0
    out_dir: str = ""
    save_every: int = 5
    threads: int = 0
    chat: ChatFormat = field(default_factory=ChatFormat)

    def __post_init__(self) -> None:
        self.schedules = tuple(Schedule(**s) if isinstance(s, dict) else s for s in self.schedules)
        self.train_seeds = tuple(self.train_seeds)
        if isinstance(self.chat, dict):
            self.chat = ChatFormat(**self.chat)
        self.validate()

    def validate(self) -> None:
        e: dict[str, str] = {}
        if not self.schedules:
            e["schedules"] = "must hold at least one schedule"
        else:
            th = [s.min_competence for s in self.schedules]
            if th[0] != 0 or th != sorted(th) or len(set(th)) != len(th):
                e["schedules"] = "thresholds (min_competence) must start at 0 and strictly increase"
            elif any(s.completion <= 0 or s.progress < 0 or s.efficiency < 0 for s in self.schedules):
                e["schedules"] = "completion must be > 0, progress and efficiency >= 0"
            elif len({s.name for s in self.schedules}) != len(self.schedules):
                e["schedules"] = "names must be unique"
        if not 0 <= self.competence_ema < 1:
            e["competence_ema"] = "must be in [0, 1)"
        if self.competence_key not in ("template", "instance"):
            e["competence_key"] = "must be 'template' or 'instance'"
        ws = (self.w_output_tokens, self.w_reasoning_tokens, self.w_tool_calls)
        if any(w < 0 for w in ws) or sum(ws) > 1 + 1e-9:
            e["w_output_tokens"] = "the three efficiency weights must be >= 0 and sum to at most 1"
        for name in ("floor_output_tokens", "floor_reasoning_tokens", "floor_tool_calls"):
            if not getattr(self, name) > 0:
                e[name] = "must be > 0"
        a = self.reasoning_allowance
        if isinstance(a, bool) or not isinstance(a, int | float) or not a >= 0:
            e["reasoning_allowance"] = "must be a number of tokens >= 0"
        if self.reasoning_allowance_unit not in ("episode", "turn"):
            e["reasoning_allowance_unit"] = "must be 'episode' or 'turn'"
        if not 0 <= self.efficiency_cap < 1:
            e["efficiency_cap"] = "must be in [0, 1): a larger λ could let a failure outscore a success"
        if not self.std_floor_min > 0:
            e["std_floor_min"] = "must be > 0"
        if not self.std_floor_success >= 0:
            e["std_floor_success"] = "must be >= 0"
        from harness.bench import SPLIT_SEEDS

        if self.guard_split not in SPLIT_SEEDS:
            e["guard_split"] = f"must be one of {', '.join(SPLIT_SEEDS)}, got {self.guard_split!r}"
        for name in ("success_adv_nonneg", "greedy_anchor", "score_temperature", "guard_per_category",
                     "guard_failure_credit"):
            if not isinstance(getattr(self, name), bool):
                e[name] = "must be true or false"
        if self.loss_aggregation not in LOSS_AGGREGATIONS:
            e["loss_aggregation"] = f"must be one of {', '.join(LOSS_AGGREGATIONS)}, got {self.loss_aggregation!r}"
        if self.efficiency_credit not in ("episode", "turn"):
            e["efficiency_credit"] = f"must be 'episode' or 'turn', got {self.efficiency_credit!r}"
        if self.failure_credit not in ("episode", "turn", "wander"):
            e["failure_credit"] = f"must be 'episode', 'turn' or 'wander', got {self.failure_credit!r}"
        if not 0 <= self.failure_credit_share <= 1:
            e["failure_credit_share"] = "must be in [0, 1]"
        if not self.eps > 0:
            e["eps"] = "must be > 0"
        if not self.guard_drop_points >= 0:
            e["guard_drop_points"] = "must be >= 0"
        if self.controller not in ("rule", "llm"):
            e["controller"] = "must be 'rule' or 'llm'"
        elif self.controller == "llm" and not (self.controller_url and self.controller_model):
            e["controller_url"] = "the llm controller needs controller_url and controller_model"
        if not 0 < self.eps_low < 1:
            e["eps_low"] = "must be in (0, 1)"
        if not self.eps_high > 0:
            e["eps_high"] = "must be > 0"
        if not self.kl_coef >= 0:
            e["kl_coef"] = "must be >= 0"
        if not 0 < self.lr < 1:
            e["lr"] = "must be in (0, 1)"
        if not self.weight_decay >= 0:
            e["weight_decay"] = "must be >= 0"
        if not self.grad_clip > 0:
            e["grad_clip"] = "must be > 0"
        for name in ("ppo_epochs", "minibatch_episodes", "tasks_per_iter", "iterations"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                e[name] = f"must be a positive integer, got {v!r}"
        if not isinstance(self.microbatch_tokens, int) or self.microbatch_tokens < 0:
            e["microbatch_tokens"] = f"must be an integer >= 0 (0: no split), got {self.microbatch_tokens!r}"
        if self.guide not in GUIDE_MODES:
            e["guide"] = f"must be one of {', '.join(GUIDE_MODES)}"
        if self.task_sampling not in ("signal", "uniform"):
            e["task_sampling"] = f"must be 'signal' or 'uniform', got {self.task_sampling!r}"
        if not (isinstance(self.sampling_floor, int | float) and 0 < self.sampling_floor <= 10):
            e["sampling_floor"] = f"must be in (0, 10], got {self.sampling_floor!r}"
        if not isinstance(self.group_size, int) or self.group_size < 2:
            e["group_size"] = "must be an integer >= 2 (advantages compare rollouts within a group)"
        if not self.temperature > 0:
            e["temperature"] = "must be > 0 (rollouts sample)"
        if not 0 < self.top_p <= 1:
            e["top_p"] = "must be in (0, 1]"
        if not self.max_minutes >= 0:
            e["max_minutes"] = "must be >= 0"
        if not self.train_seeds:
            e["train_seeds"] = "must hold at least one seed"
        if not self.env_mix or any(w < 0 for w in self.env_mix.values()) or sum(self.env_mix.values()) <= 0:
            e["env_mix"] = "must map environment kinds to non-negative weights with a positive sum"
        if isinstance(self.screen_tasks, int) and isinstance(self.tasks_per_iter, int) \
                and 0 < self.screen_tasks < self.tasks_per_iter:
            e["screen_tasks"] = "must be 0 (off) or at least tasks_per_iter"
        for name in ("eval_every", "eval_per_category", "seed", "save_every", "threads", "screen_tasks"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 0:
                e[name] = f"must be a non-negative integer, got {v!r}"
        raise_field_errors("CAREConfig", e)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CAREConfig:
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise_field_errors("CAREConfig", {k: "unknown field" for k in unknown})
        return cls(**d)

    @classmethod
    def grpo(cls, **kw: Any) -> CAREConfig:
        """The plain-GRPO baseline: same trainer and budget, CARE off."""
        return cls(care=False, **kw)
