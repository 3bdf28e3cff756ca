"""CARE online RL trainer (and the plain-GRPO baseline with ``CAREConfig(care=False)``).

Each iteration: draw ``tasks_per_iter`` training tasks, run ``group_size`` attempts of each in the
hybrid environment pool (``harness.episode.run_episodes`` with a sampling ``TransformersPlanner``,
one batched generate per step for all live episodes), score each group with ``ml.care.care_group``
(reward only from the verifier and the cost meter), drop groups without signal, and take
``ppo_epochs`` passes of the token-level clipped policy-gradient loss over the planner's own turn
tokens (tool replies and prompts masked), with a KL anchor to the frozen SFT policy.

The action tokens are the canonical tokenisation of each parsed turn as the episode records it
(the same sequence SFT trains on), scored at the rollout temperature (the distribution they were sampled
from); old log-probs are the policy's before the iteration's first optimiser step (the first minibatch's come
from its own gradient pass, the others from a forward right before).

CPU, from an SFT checkpoint::

    python -m ml.care_trainer --init var/ml/sft/last --out var/ml/care --minutes 8 [--grpo]
"""

from __future__ import annotations

import argparse
import copy
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from harness.contract import Episode
from ml.care import (
    CompetenceTracker,
    EfficiencyGuard,
    GroupResult,
    LLMController,
    Rollout,
    RuleController,
    care_group,
    competence,
    policy_loss,
    signal_weights,
    weighted_sample,
)
from ml.care_config import CAREConfig
from ml.chat import Encoded
from ml.sft import step_messages, turn_views

Metrics = Callable[[dict[str, Any]], None]


class EnvPool:
    """Environments drawn by a configured mix, e.g. ``{"virtual": 0.8, "android": 0.2}``.

    ``factories`` maps a kind to a zero-argument constructor (the virtual phone is built in; real
    devices come from the device pool's lease). Every environment carries ``name``, which the
    episode records as where the trajectory ran.
    """

    def __init__(self, mix: dict[str, float], factories: dict[str, Callable[[], Any]] | None = None, seed: int = 0):
        from devices.virtual.phone import VirtualPhone

        self.factories: dict[str, Callable[[], Any]] = {"virtual": VirtualPhone, **(factories or {})}
        missing = [k for k, w in mix.items() if w > 0 and k not in self.factories]
        if missing:
            raise ValueError(f"no environment factory for {missing}; pass factories={{kind: constructor}}")
        self.kinds = [k for k, w in mix.items() if w > 0]
        self.weights = [mix[k] for k in self.kinds]
        self.rng = random.Random(seed)
        self.drawn: Counter[str] = Counter()

    def draw(self) -> Any:
        kind = self.rng.choices(self.kinds, self.weights)[0]
        self.drawn[kind] += 1
        env = self.factories[kind]()
        if not getattr(env, "name", None):
            env.name = kind
        return env


class GreedyAnchor:
    """``TransformersPlanner.greedy_rows`` for group rollouts: the first episode the planner sees of each
    task decodes greedily, the task's other attempts sample. ``rollout_groups`` launches every attempt
    at once in task order, so the greedy one is each group's first episode (``groups[i][0]``)."""

    def __init__(self) -> None:
        self.anchors: dict[str, str] = {}  # task id -> the episode id that decodes greedily

    def __call__(self, contexts: list[Any]) -> list[bool]:
        return [self.anchors.setdefault(c.task.id, c.episode_id) == c.episode_id for c in contexts]


def rollout_groups(tasks: list[Any], planner: Any, group_size: int, pool: EnvPool) -> list[list[Episode]]:
    """``group_size`` attempts per task, all in one lock-step run; returns episodes grouped per task."""
    from harness.episode import run_episodes

    expanded = [t for t in tasks for _ in range(group_size)]
    eps = run_episodes(expanded, planner, batch_size=len(expanded), env_factory=pool.draw)
    return [eps[i * group_size:(i + 1) * group_size] for i in range(len(tasks))]


def encode_actions(ep: Episode, tokenizer: Any, cfg: CAREConfig) -> list[Encoded]:
    """The episode's action tokens in the contexts they were sampled in (``ml.sft.turn_views``): every turn of
    the planner after exactly the prompt generation built for it (the tools offered at that turn, the
    compaction of that moment), mask = the planner's own turns (not history, not tool replies). One
    whole-episode rendering put turns behind contexts the sampler never saw (other tools, other
    compaction) and trained, ratioed and KL-anchored them there: a third of reference-solver turns, and
    64% of the turns of 48 rollouts of a 22-minute SFT checkpoint, whose long turns fill the budget."""
    return turn_views(ep, tokenizer, cfg.chat, cfg.chat.max_context_tokens + cfg.chat.max_new_tokens)


def action_tokens(e: Encoded) -> int:
    """The tokens ``token_logprobs`` scores in ``e``: its mask after position 0 (which has no prefix)."""
    return sum(e.mask[1:])


# A sequence's advantage: the episode's one number, or one per token (``efficiency_credit="turn"``).
Advantage = float | list[float]


def token_advantages(enc: Encoded, a: float, charged: dict[int, float]) -> Advantage:
    """``a`` on every token of ``enc``, plus ``charged[m]`` on the tokens of the turn at message m (``enc.turns``
    name each turn's message); just ``a`` when no turn of ``enc`` is charged."""
    spans = [(span, charged[span.message]) for span in enc.turns if span.message in charged]
    if not spans:
        return a
    out = [a] * len(enc.ids)
    for span, x in spans:
        out[span.start:span.end] = [a + x] * (span.end - span.start)
    return out


def advantage_tensor(advs: list[Advantage], like: Any) -> Any:
    """(B, T) advantages for sequences scored into ``like`` (B, T): a number fills its row, a list its prefix."""
    import torch

    out = torch.zeros_like(like)
    for i, a in enumerate(advs):
        if isinstance(a, list):
            out[i, :len(a)] = torch.tensor(a[:like.shape[1]], dtype=like.dtype)
        else:
            out[i] = a
    return out


# A sequence in an optimiser step: (its encoding, its advantage, the weight of each of its action tokens).
Row = tuple[Encoded, Advantage, float]
V = TypeVar("V", bound=tuple[Any, ...])


def micro_batches(views: list[V], max_tokens: int) -> list[list[V]]:
    """``views`` (tuples led by an ``Encoded``) sorted by length and cut where a micro-batch's padded size
    (rows × longest) would pass ``max_tokens`` (a longer single sequence gets one of its own); ``max_tokens``
    0 keeps them as one."""
    if max_tokens <= 0:
        return [views]
    out: list[list[V]] = []
    cur: list[V] = []
    for v in sorted(views, key=lambda v: len(v[0].ids)):
        if cur and (len(cur) + 1) * len(v[0].ids) > max_tokens:
            out.append(cur)
            cur = []
        cur.append(v)
    return [*out, cur] if cur else out


def action_logits(model: Any, examples: list[Encoded], pad_id: int, device: Any) -> tuple[Any, Any, Any, Any]:
    """The model's next-token logits at every action token of ``examples`` (right-padded into (B, T)):
    (logits (N, V), the N tokens they predict, sel (B, T-1): where they sit, mask (B, T)).

    Position t of ``sel`` predicts token t+1; ``mask`` is the examples' mask with position 0 (no prefix)
    and padding at 0.
    """
    import torch

    B, T = len(examples), max(len(e.ids) for e in examples)
    ids = torch.full((B, T), pad_id, dtype=torch.long)
    attn = torch.zeros((B, T), dtype=torch.long)
    mask = torch.zeros((B, T))
    for i, e in enumerate(examples):
        ids[i, :len(e.ids)] = torch.tensor(e.ids)
        attn[i, :len(e.ids)] = 1
        mask[i, :len(e.mask)] = torch.tensor(e.mask, dtype=torch.float)
    ids, attn, mask = ids.to(device), attn.to(device), mask.to(device)
    mask[:, 0] = 0
    # The output projection and softmax run only where a log-prob is needed (the action tokens):
    # on CPU the vocabulary projection of every prompt and tool-reply token would dominate.
    hidden = model.get_decoder()(input_ids=ids, attention_mask=attn, use_cache=False).last_hidden_state  # (B, T, C)
    sel = mask[:, 1:].bool()  # (B, T-1): position t predicts token t+1
    return model.get_output_embeddings()(hidden[:, :-1][sel]), ids[:, 1:][sel], sel, mask


def token_logprobs(model: Any, examples: list[Encoded], pad_id: int, device: Any,
                   temperature: float = 1.0) -> tuple[Any, Any]:
    """Log-probabilities of each token given its prefix, right-padded: (logp (B, T), mask (B, T)).

    Position t holds log p(ids[t] | ids[:t]) under softmax(logits / temperature); position 0 and padding
    are 0 with mask 0.
    """
    import torch

    logits, targets, sel, mask = action_logits(model, examples, pad_id, device)
    lp = torch.log_softmax(logits.float() / temperature, dim=-1).gather(-1, targets[:, None]).squeeze(-1)  # (N,)
    logp = torch.zeros(mask.shape, device=device, dtype=lp.dtype)
    logp[:, 1:][sel] = lp
    return logp, mask


@dataclass
class CAREResult:
    model: Any
    tokenizer: Any
    iterations: int
    seconds: float
    history: list[dict[str, Any]]
    checkpoint: Path | None


class CARETrainer:
    """Online RL from a checkpoint. ``train()`` runs until ``cfg.iterations`` or ``cfg.max_minutes``."""

    def __init__(self, cfg: CAREConfig, *, init_from: str | Path | None = None, model: Any | None = None,
                 tokenizer: Any | None = None, tasks: list[Any] | None = None,
                 env_factories: dict[str, Callable[[], Any]] | None = None, eval_tasks: list[Any] | None = None,
                 on_metrics: Metrics | None = None, should_stop: Callable[[], bool] | None = None,
                 device: str = "cpu"):
        import torch

        from ml.model import load_checkpoint

        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        self.cfg = cfg
        self.device = device
        self.out = Path(cfg.out_dir) if cfg.out_dir else None
        self.init_from = init_from
        if self.out is not None:
            from ml.sft import recover_checkpoint

            recover_checkpoint(self.out / "last")
        resume = self.out is not None and _is_care_checkpoint(self.out / "last")
        if resume:
            model, tokenizer = load_checkpoint(self.out / "last", device)  # type: ignore[operator]
        elif model is None:
            if init_from is None:
                raise ValueError("CARE starts from a checkpoint: pass init_from (an SFT checkpoint) or model")
            model, tokenizer = load_checkpoint(init_from, device)
        if tokenizer is None:
            raise ValueError("pass the tokenizer with the model")
        self.model, self.tokenizer = model, tokenizer
        self.ref = None
        if cfg.kl_coef > 0:
            src = load_checkpoint(init_from, device)[0] if (resume and init_from) else self.model
            self.ref = copy.deepcopy(src).eval()
            for p in self.ref.parameters():
                p.requires_grad_(False)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay,
                                     betas=(0.9, 0.99))
        self.tasks = tasks if tasks is not None else self.default_tasks()
        self._tasks_by_id: dict[str, Any] | None = None  # for guide, built on first use
        self.eval_tasks = eval_tasks
        self.pool = EnvPool(cfg.env_mix, env_factories, seed=cfg.seed)
        self.tracker = CompetenceTracker(cfg.competence_key)
        self.controller = LLMController(cfg) if cfg.controller == "llm" else RuleController(cfg)
        self.guard = EfficiencyGuard(None, cfg.guard_drop_points)
        self.rng = random.Random(cfg.seed)
        self.iteration = 0
        self.elapsed_before = 0.0  # seconds the run had trained before this attempt (a resume goes on from them)
        self._t0: float | None = None
        self.guard_seconds = 0.0  # this attempt's seconds in the guard's held-out checks (not training time)
        self.history: list[dict[str, Any]] = []
        self.on_metrics = on_metrics
        self.should_stop = should_stop
        if resume:
            self._load_state(self.out / "last")  # type: ignore[operator]

    def default_tasks(self) -> list[Any]:
        from ml.sft import training_tasks

        return training_tasks(self.cfg.train_seeds)

    def planner(self, temperature: float | None = None, seed: int | None = None,
                greedy_rows: Callable[[list[Any]], list[bool]] | None = None) -> Any:
        from ml.backends import TransformersPlanner

        t = self.cfg.temperature if temperature is None else temperature
        return TransformersPlanner(self.model, self.tokenizer, fmt=self.cfg.chat, temperature=t, top_p=self.cfg.top_p,
                                   seed=seed, name="care" if self.cfg.care else "grpo", greedy_rows=greedy_rows)

    # -- one iteration ------------------------------------------------------------------------------

    def score_groups(self, groups: list[list[Episode]], own: list[int] | None = None) -> list[GroupResult]:
        """``care_group`` per group, with the task's competence history and the controller's schedule.
        ``own[i]``: how many of group i's first episodes are the policy's attempts (the rest are reference
        demonstrations, ``guide``); competence, and so the schedule, comes from those alone."""
        results = []
        for i, eps in enumerate(groups):
            task = eps[0].task
            rolls = [Rollout.from_episode(e) for e in eps]
            mine = rolls[:own[i]] if own is not None else rolls
            hist = self.tracker.get(task)
            kappa = competence(hist, sum(r.success for r in mine) / len(mine), self.cfg.competence_ema)
            sched = self.controller.choose(kappa, {"iteration": self.iteration}) if self.cfg.care else None
            res = care_group(rolls, self.cfg, history=hist, schedule=sched,
                             efficiency_scale=self.guard.scale_for(task["category"]))
            self.tracker.update(task, kappa)
            results.append(res)
        return results

    def guided(self, groups: list[list[Episode]]) -> tuple[list[list[Episode]], list[int]]:
        """``guide``: every group whose attempts all fail, with the reference solver's episode of the same
        task instance appended when the verifier passes it. Returns the groups and, per group, how many
        of its episodes are the policy's own."""
        from harness.episode import run_episodes
        from harness.reference import ReferenceSolver

        own = [len(g) for g in groups]
        failed = [i for i, g in enumerate(groups) if not any(solved(e) for e in g)]
        if not failed:
            return groups, own
        if self._tasks_by_id is None:
            self._tasks_by_id = {t.id: t for t in self.tasks}
        demos = run_episodes([self._tasks_by_id[groups[i][0].task["id"]] for i in failed], ReferenceSolver(),
                             batch_size=len(failed), env_factory=self.pool.draw)
        out = list(groups)
        for i, demo in zip(failed, demos, strict=True):
            if solved(demo):
                out[i] = [*groups[i], demo]
        return out, own

    def draw_tasks(self, k: int | None = None) -> list[Any]:
        """This iteration's tasks (``k``, default ``tasks_per_iter``): uniform, or (``task_sampling="signal"``)
        weighted towards tasks whose groups are likely to mix successes and failures (``ml.care.signal_weights``)."""
        k = min(k or self.cfg.tasks_per_iter, len(self.tasks))
        if self.cfg.task_sampling == "uniform":
            return self.rng.sample(self.tasks, k)
        w = signal_weights([self.tracker.get(t) for t in self.tasks], self.cfg.group_size, self.cfg.sampling_floor)
        return weighted_sample(self.rng, self.tasks, w, k)

    def step(self) -> dict[str, Any]:
        cfg = self.cfg
        t0 = time.perf_counter()
        if isinstance(self.controller, LLMController) and self.history:
            self.controller.refresh({k: v for k, v in self.history[-1].items() if not isinstance(v, list)})
        seed = cfg.seed * 1_000_003 + self.iteration
        screen: dict[str, float] = {}
        anchored = cfg.greedy_anchor or cfg.screen_tasks > 0  # each group's first attempt is greedy
        if cfg.screen_tasks:
            groups, screen = self.screened_groups(seed)
        else:
            anchor = GreedyAnchor() if cfg.greedy_anchor else None
            groups = rollout_groups(self.draw_tasks(), self.planner(seed=seed, greedy_rows=anchor), cfg.group_size,
                                    self.pool)
        rolled = groups  # the policy's own attempts, which the rollout metrics describe
        own = None
        if cfg.guide != "off":
            groups, own = self.guided(rolled)
        t_roll = time.perf_counter() - t0
        scored = self.score_groups(groups, own)
        stats, n_updates = self.update(self.encode_batch(groups, scored, own))
        self.iteration += 1
        eps_all = [e for g in rolled for e in g]
        n_eps = max(1, len(eps_all))  # a screened iteration whose greedy attempts all succeed rolls no group
        kept = [r for r in scored if not r.dropped]
        m: dict[str, Any] = {
            "iteration": self.iteration,
            "mode": "care" if cfg.care else "grpo",
            "success": sum(solved(e) for e in eps_all) / n_eps,
            **(_anchor_success(rolled) if anchored and rolled else {}),
            **screen,
            **({"guided": sum(len(g) > n for g, n in zip(groups, own, strict=True))} if own is not None else {}),
            "reward": sum(sum(r.rewards[:len(g)]) for g, r in zip(rolled, scored, strict=True)) / n_eps,
            "output_tokens": sum(e.costs.output_tokens for e in eps_all) / n_eps,
            "reasoning_tokens": sum(e.costs.reasoning_tokens for e in eps_all) / n_eps,
            "tool_calls": sum(e.costs.total_tool_calls for e in eps_all) / n_eps,
            "groups_kept": len(kept),
            **({"excess_calls": sum(r.info.get("excess_calls", 0) for r in kept)}
               if cfg.care and cfg.efficiency_credit == "turn" else {}),
            **({"failures_moved": sum(r.info.get("failures_moved", 0) for r in kept)}
               if cfg.care and cfg.failure_credit != "episode" else {}),
            "groups_dropped": len(scored) - len(kept),
            "schedules": dict(Counter(r.schedule for r in scored)),
            "competence_hist": self.tracker.histogram(),  # tracked tasks per tenth of κ: [0, .1), ..., [.9, 1]
            "efficiency_scale": self.guard.scale,
            "environments": dict(Counter(e.environment for e in eps_all)),
            "updates": n_updates,
            "rollout_s": t_roll,
            "iteration_s": time.perf_counter() - t0,
            **stats,
        }
        if cfg.eval_every and self.iteration % cfg.eval_every == 0:
            success = self.guard_check()
            m["guard_check_s"] = self.guard_seconds
            m["heldout_success"] = success["all"]
            m["heldout_by_category"] = {k: v for k, v in success.items() if k != "all"}
            self.guard.observe(self.guard_reading(success))
            m["efficiency_scale"] = self.guard.scale
            if cfg.guard_per_category:
                m["efficiency_scales"] = {c: self.guard.scale_for(c) for c in m["heldout_by_category"]}
        self.history.append(m)
        if self.on_metrics is not None:
            self.on_metrics(m)
        return m

    def encode_batch(self, groups: list[list[Episode]], scored: list[GroupResult],
                     own: list[int] | None = None) -> list[list[tuple[Encoded, Advantage]]]:
        """Per episode that carries a gradient (kept group, non-zero advantage): its sequences, each with the
        episode's advantage (per token where ``efficiency_credit="turn"`` charged some of its steps)."""
        batch: list[list[tuple[Encoded, Advantage]]] = []
        for i, (eps, res) in enumerate(zip(groups, scored, strict=True)):
            if res.dropped:
                continue
            # guide="demo": in a guided group only the demonstration (after the policy's own attempts) moves the policy
            skip = own[i] if own is not None and self.cfg.guide == "demo" and len(eps) > own[i] else 0
            turns = res.turn_advantages[skip:] or [[] for _ in eps[skip:]]
            for ep, a, extra in zip(eps[skip:], res.advantages[skip:], turns, strict=True):
                if a == 0.0 and not any(extra):  # no gradient: not worth encoding
                    continue
                # the steps turn credit charged, by the message index their turns carry (``TurnSpan.message``)
                charged = {m: x for m, x in zip(step_messages(ep), extra, strict=False) if x}
                views = [(enc, token_advantages(enc, a, charged)) for enc in
                         encode_actions(ep, self.tokenizer, self.cfg) if sum(enc.mask)]
                if views:
                    batch.append(views)
        return batch

    def update(self, batch: list[list[tuple[Encoded, Advantage]]]) -> tuple[dict[str, float], int]:
        """The iteration's optimiser steps on its encoded episodes (each a list of (sequence, advantage)):
        minibatches of ``minibatch_episodes``, ``ppo_epochs`` passes; (mean loss figures, steps taken)."""
        import torch

        cfg = self.cfg
        # adv_token_mean: the advantage's mean over the action tokens, weighted as the loss weighs them; a group's
        # advantages sum to zero per episode, so under the token mean a negative figure is longer failures
        # outweighing successes (under loss_aggregation="episode" it sits near zero).
        stats: dict[str, float] = {"pg_loss": 0.0, "kl": 0.0, "clip_frac": 0.0, "adv_token_mean": 0.0}
        n_updates = 0
        if batch:
            self.model.train()
            mb, pad = cfg.minibatch_episodes, self.tokenizer.pad_token_id
            temp = cfg.temperature if cfg.score_temperature else 1.0  # the sampled distribution's log-probs

            def scored(model: Any, mbt: list[Row]) -> tuple[Any, Any]:
                return token_logprobs(model, [e for e, _, _ in mbt], pad, self.device, temp)

            def rows(ep: list[tuple[Encoded, Advantage]]) -> list[Row]:
                # loss_aggregation="episode": every episode's action tokens weigh 1 in all
                w = 1.0 / max(1, sum(action_tokens(e) for e, _ in ep)) if cfg.loss_aggregation == "episode" else 1.0
                return [(e, a, w) for e, a in ep]

            # Each optimiser step's sequences, in micro-batches of similar length (one padded forward each).
            chunks = [micro_batches([v for ep in batch[i:i + mb] for v in rows(ep)], cfg.microbatch_tokens)
                      for i in range(0, len(batch), mb)]
            # The step's loss is the weighted token mean over the whole minibatch (policy_loss), so each
            # micro-batch's mean is weighted by its share of the minibatch's token weight (counted once, for
            # every epoch): with weight 1 per token, its share of the action tokens.
            n_alls = [sum(action_tokens(e) * w for mbt in ch for e, _, w in mbt) or 1.0 for ch in chunks]
            # The first chunk's old log-probs are the ones its first gradient pass computes (no update has
            # happened yet), so they are taken from that pass instead of a separate forward.
            olds: list[list[Any]] = [[None] * len(chunks[0])]
            refs: list[list[Any]] = []
            with torch.no_grad():
                for i, ch in enumerate(chunks):
                    if i:
                        olds.append([scored(self.model, mbt)[0] for mbt in ch])
                    refs.append([scored(self.ref, mbt)[0] if self.ref is not None else None for mbt in ch])
            for _ in range(cfg.ppo_epochs):
                for i, (ch, ref, n_all) in enumerate(zip(chunks, refs, n_alls, strict=True)):
                    for j, mbt in enumerate(ch):
                        logp, mask = scored(self.model, mbt)
                        weights = torch.tensor([w for _, _, w in mbt], dtype=mask.dtype, device=mask.device)
                        mask = mask * weights[:, None]  # each action token's weight in the loss
                        if olds[i][j] is None:
                            olds[i][j] = logp.detach()
                        adv = advantage_tensor([a for _, a, _ in mbt], logp)  # (B, T)
                        loss, info = policy_loss(logp, olds[i][j], adv, mask, eps_low=cfg.eps_low,
                                                 eps_high=cfg.eps_high, ref_logp=ref[j], kl_coef=cfg.kl_coef)
                        share = float(mask.sum()) / n_all
                        (loss * share).backward()
                        for k, v in info.items():
                            stats[k] += v * share
                        stats["adv_token_mean"] += float((adv * mask).sum()) / n_all
                    torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.grad_clip)
                    self.opt.step()
                    self.opt.zero_grad(set_to_none=True)
                    n_updates += 1
            for k in stats:
                stats[k] /= max(1, len(chunks) * cfg.ppo_epochs)
        return stats, n_updates

    def screened_groups(self, seed: int) -> tuple[list[list[Episode]], dict[str, float]]:
        """``screen_tasks`` drawn tasks, one greedy attempt each; for (at most ``tasks_per_iter``) tasks it fails,
        a group of that greedy failure and G − 1 samples. A task solved greedily updates its competence as a
        group success rate of 1 (so the signal-weighted draw turns away from it)."""
        from harness.episode import run_episodes

        cands = self.draw_tasks(self.cfg.screen_tasks)
        greedy = run_episodes(cands, self.planner(temperature=0.0), batch_size=len(cands), env_factory=self.pool.draw)
        failed = []
        for task, ep in zip(cands, greedy, strict=True):
            if solved(ep):
                self.tracker.update(task, competence(self.tracker.get(task), 1.0, self.cfg.competence_ema))
            else:
                failed.append((task, ep))
        failed = failed[:self.cfg.tasks_per_iter]
        samples = rollout_groups([t for t, _ in failed], self.planner(seed=seed), self.cfg.group_size - 1, self.pool) \
            if failed else []
        groups = [[ep, *rest] for (_, ep), rest in zip(failed, samples, strict=True)]
        n_solved = sum(solved(e) for e in greedy)
        return groups, {"screened": len(cands), "screen_success": n_solved / len(cands)}

    def heldout_success(self) -> dict[str, float]:
        """Greedy success (percent) on a small held-out slice of ``guard_split`` (the guard's measurement):
        ``{"all": overall, category: ...}``."""
        from harness.bench import suite_tasks
        from harness.episode import run_episodes

        tasks = self.eval_tasks or suite_tasks("pa-sim", self.cfg.guard_split, self.cfg.eval_per_category)
        eps = run_episodes(tasks, self.planner(temperature=0.0), batch_size=64)
        by_cat: dict[str, list[bool]] = {}
        for e in eps:
            by_cat.setdefault(e.task["category"], []).append(solved(e))
        out = {"all": 100.0 * sum(map(sum, by_cat.values())) / max(1, len(eps))}
        out.update({cat: 100.0 * sum(ok) / len(ok) for cat, ok in sorted(by_cat.items())})
        return out

    def guard_check(self) -> dict[str, float]:
        """``heldout_success`` with its seconds kept off the training clock: the check is measurement, as the final
        evaluation is, so a guarded run trains as long as an unguarded one under the same ``max_minutes``."""
        t = time.perf_counter()
        success = self.heldout_success()
        dt = time.perf_counter() - t
        if self._t0 is not None:
            self._t0 += dt
        self.guard_seconds += dt
        return success

    def guard_reading(self, success: dict[str, float]) -> float | dict[str, float]:
        """What the guard compares: the overall percent, or per category with ``guard_per_category``."""
        return {k: v for k, v in success.items() if k != "all"} if self.cfg.guard_per_category else success["all"]

    # -- the loop -----------------------------------------------------------------------------------

    def elapsed(self) -> float:
        """The run's training seconds so far, over every attempt (``max_minutes`` budgets the whole run), the
        guard's checks left out."""
        return self.elapsed_before if self._t0 is None else time.perf_counter() - self._t0

    def train(self) -> CAREResult:
        self._t0 = time.perf_counter() - self.elapsed_before
        if self.cfg.eval_every and self.guard.baseline is None:
            self.guard.baseline = self.guard_reading(self.guard_check())
        while self.iteration < self.cfg.iterations:
            self.step()
            if self.out is not None and self.cfg.save_every and self.iteration % self.cfg.save_every == 0:
                self.save()
            if self.cfg.max_minutes and self.elapsed() > self.cfg.max_minutes * 60:
                break
            if self.should_stop is not None and self.should_stop():
                break
        path = self.save() if self.out is not None else None
        self.model.eval()
        return CAREResult(self.model, self.tokenizer, self.iteration, self.elapsed(), self.history, path)

    def save(self) -> Path:
        from ml.sft import save_state

        assert self.out is not None
        last = self.out / "last"
        elapsed = self.elapsed()  # one reading, so the card and the resumable state agree
        card = {"kind": "care" if self.cfg.care else "grpo", "config": self.cfg.to_dict(),
                "iteration": self.iteration, "init_from": str(self.init_from) if self.init_from else None,
                "seconds": round(elapsed, 1)}
        care = {"iteration": self.iteration, "competence": self.tracker.state(), "guard_scale": self.guard.scale,
                "elapsed_s": elapsed, "guard_scales": dict(self.guard.scales),
                "guard_baseline": self.guard.baseline if self.guard.baseline is not None else -1.0,
                "rng": list(self.rng.getstate()[1])}
        # One atomic swap holds weights, optimizer and CARE state together (a crash leaves the previous set).
        save_state(last, self.model, self.tokenizer, self.opt, self.iteration, {"card": card, "care": care})
        return last

    def _load_state(self, path: Path) -> None:
        from ml.sft import load_state

        state = load_state(path)
        self.opt.load_state_dict(state["optimizer"])
        st = state["extra"]["care"]
        self.iteration = int(st["iteration"])
        self.elapsed_before = float(st.get("elapsed_s", 0.0))
        self.tracker.values = {k: float(v) for k, v in st["competence"].items()}
        self.guard.scale = float(st["guard_scale"])
        self.guard.scales = {k: float(v) for k, v in st.get("guard_scales", {}).items()}
        base = st["guard_baseline"]
        per_category = isinstance(base, dict)
        if per_category != self.cfg.guard_per_category and (per_category or base >= 0):
            kept = "per category" if per_category else "overall"
            raise ValueError(f"{path}: the run's guard kept its baseline {kept}; "
                             f"resume it with guard_per_category={per_category}")
        if per_category:
            self.guard.baseline = {k: float(v) for k, v in base.items()}
        else:
            self.guard.baseline = None if base < 0 else float(base)
        self.rng.setstate((3, tuple(int(x) for x in st["rng"]), None))


def solved(ep: Episode) -> bool:
    """Whether the verifier passed the episode."""
    return bool(ep.verdict and ep.verdict.success)


def _anchor_success(groups: list[list[Episode]]) -> dict[str, float]:
    """Success of the iteration's greedy attempts (each group's first, ``GreedyAnchor``) and of the sampled ones."""
    def rate(eps: list[Episode]) -> float:
        return sum(solved(e) for e in eps) / max(1, len(eps))

    return {"greedy_success": rate([g[0] for g in groups]), "sampled_success": rate([e for g in groups for e in g[1:]])}


def _is_care_checkpoint(path: Path) -> bool:
    from ml.sft import TRAINER_STATE, load_state

    return (path / TRAINER_STATE).exists() and "care" in load_state(path).get("extra", {})


def train_care(cfg: CAREConfig, **kw: Any) -> CAREResult:
    return CARETrainer(cfg, **kw).train()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ml.care_trainer", description=__doc__.splitlines()[0])
    ap.add_argument("--init", required=True, help="the SFT checkpoint to start from")
    ap.add_argument("--out", required=True)
    ap.add_argument("--minutes", type=float, default=8.0)
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--grpo", action="store_true", help="plain GRPO baseline (CARE off)")
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args(argv)
    cfg = CAREConfig(care=not args.grpo, out_dir=args.out, max_minutes=args.minutes, iterations=args.iterations)
    res = train_care(cfg, init_from=args.init, device=args.device, on_metrics=lambda m: print(m, flush=True))
    print(f"iterations={res.iterations} seconds={res.seconds:.1f} checkpoint={res.checkpoint}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
