"""Which calls CARE's efficiency credit charges, by tool kind and category, on one checkpoint's sampled groups.

    .venv/bin/python bench/credit_audit.py CHECKPOINT [CHECKPOINT ...] [--care-overrides JSON]
        [--train-seeds 100:101] [--categories memory,sub_agent,tool_use,skills] [--group 8] [--temperature 0.8]
        [--heldout 25] [--split test] [--by-template] [--threads 2]

Stop 40's CARE arm cut the most tokens yet but lost its Overall in Memory and Sub-agent, the categories whose
solutions take a recall (``search_user_memory``) or a delegation (the GUI agent) on top of the action. Turn credit
(``efficiency_credit="turn"``) charges a success's calls that the group's cheapest success does not make, and the
token terms charge its tokens beyond the cheapest's: where a lucky success skips the recall (a guessed wake-up
time, an alarm found by listing), every success that recalled is charged for it. This script rolls G sampled
attempts of training tasks from CHECKPOINT, scores each group with ``ml.care.care_group`` under the given CARE
overrides (the stop-35..40 ``T`` by default is ``bench/checkpoints/push2.json`` plus turn credit; pass it), and
prints per category:

- ``groups=`` with a success, ``mixed=`` of them with a failure too;
- ``skip_<kind>=``: the share of success groups whose cheapest success makes no call of that kind while another
  success does (the groups in which the credit teaches to drop it);
- ``charged_<kind>=``: of the successes' calls of that kind, the share the turn credit counts as excess
  (weighted by the spread ``n_i``), and ``charged_all=`` over every kind;
- ``pen_with_<kind>=`` / ``pen_without_<kind>=``: the mean token penalty e_i of successes that make / make no
  call of that kind.

A second line per category (``failures``) asks the same of the failures: whether the group's scoring gives its
longer failures a higher advantage than its shorter ones (``failure_audit``; the progress term can, GRPO cannot).

With ``--heldout N`` (N > 0) it first runs each checkpoint greedily on the held-out split's first N tasks per
category and prints per category ``success=``, ``calls=``, ``tokens=`` and, among its successes and its failures,
the share of episodes that make a memory call (``recall_win=``, ``recall_fail=``) and a GUI-agent call
(``delegate_win=``, ``delegate_fail=``): whether a trained planner's failures in a category are the ones that left
out the recall or the delegation; and what its failures' verdicts name (``fail_goal=`` a goal value wrong,
``fail_answer=`` a fact missing from the final answer, ``fail_collateral=`` a change nobody asked for).
Several checkpoints are measured one after another on the same tasks. ``--split val`` takes them from the
validation split CARE's guard reads instead (does the guard's slice see what the test split sees?). With
``--by-template`` the same figures (and ``reasoning=``, reasoning tokens per episode) follow per task template:
stop 45's CARE arm lost Memory on three templates of fourteen, which a category's rate averages away. Every row
also gives ``thought_turns=``, the share of turns that reason at all: stop 46 found the SFT start thinking briefly
before most calls and a CARE arm that stopped thinking in nearly every turn.

A diagnostic, beside ``bench/rl_headroom.py``; it trains nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter, defaultdict

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from harness.bench import SPLIT_SEEDS, suite_tasks  # noqa: E402
from harness.contract import Episode  # noqa: E402
from harness.episode import run_episodes, tool_kind  # noqa: E402
from ml.backends import TransformersPlanner  # noqa: E402
from ml.care import Rollout, care_group, cheapest_success, excess_share, tool_name, unmatched_calls, wander_calls  # noqa: E402
from ml.care_config import CAREConfig  # noqa: E402
from ml.model import chat_format_of, load_checkpoint  # noqa: E402
from ml.sft import training_tasks  # noqa: E402

KINDS = ("memory", "subagent", "skill", "business")
# What a failed verdict's reason says (``devices.virtual.tasks.verify_task``); one failure may name several.
FAILURE_CLASSES = {"goal": ", expected ", "answer": "final answer does not mention",
                   "collateral": "changed what the user did not ask for"}


def kind_of(key: str) -> str:
    return tool_kind(tool_name(key))


def charged_by_kind(r: Rollout, cheapest: Rollout) -> Counter:
    """Per tool kind, the calls of ``r`` that ``ml.care.unmatched_calls`` leaves unmatched against ``cheapest``,
    each weighted by ``ml.care.excess_share``, as ``care_group`` charges."""
    unmatched = [k for step in unmatched_calls(r, cheapest) for k in step]
    if not unmatched:
        return Counter()
    share = excess_share(r, cheapest, len(unmatched))
    out: Counter = Counter()
    for k in unmatched:
        out[kind_of(k)] += share
    return out


def kinds_made(r: Rollout) -> set[str]:
    return {kind_of(k) for step in r.calls for k in step}


def audit(groups: list[tuple[str, list[Rollout]]], cfg: CAREConfig) -> dict[str, dict[str, float]]:
    """The module docstring's figures per category (and ``all``)."""
    acc: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for category, group in groups:
        wins = [r for r in group if r.success]
        if not wins:
            continue
        res = care_group(group, cfg)
        cheapest = cheapest_success(wins)
        made_cheapest = kinds_made(cheapest)
        # Per success, once: its call kinds, what the credit charges, its token penalty.
        rows = [(kinds_made(r), charged_by_kind(r, cheapest), [kind_of(k) for step in r.calls for k in step],
                 res.penalties[i]) for i, r in enumerate(group) if r.success]
        for cat in (category, "all"):
            a = acc[cat]
            a["groups"] += 1
            a["mixed"] += len(wins) < len(group)
            for kind in KINDS:
                if kind not in made_cheapest and any(kind in has for has, *_ in rows):
                    a[f"skip_{kind}"] += 1
            for has, charged, call_kinds, penalty in rows:
                for kind in call_kinds:
                    a[f"calls_{kind}"] += 1
                    a["calls_all"] += 1
                for kind, n in charged.items():
                    a[f"charged_{kind}"] += n
                    a["charged_all"] += n
                for kind in KINDS:
                    side = "with" if kind in has else "without"
                    a[f"pen_{side}_{kind}"] += penalty
                    a[f"n_{side}_{kind}"] += 1
    out: dict[str, dict[str, float]] = {}
    for cat, a in acc.items():
        g = a["groups"]
        row = {"groups": g, "mixed": a["mixed"] / g}
        for kind in KINDS:
            row[f"skip_{kind}"] = a[f"skip_{kind}"] / g
        for kind in (*KINDS, "all"):
            if a[f"calls_{kind}"]:
                row[f"charged_{kind}"] = a[f"charged_{kind}"] / a[f"calls_{kind}"]
        for kind in ("memory", "subagent"):
            for side in ("with", "without"):
                if a[f"n_{side}_{kind}"]:
                    row[f"pen_{side}_{kind}"] = a[f"pen_{side}_{kind}"] / a[f"n_{side}_{kind}"]
        out[cat] = row
    return out


def failure_audit(groups: list[tuple[str, list[Rollout]]], cfg: CAREConfig) -> dict[str, dict[str, float]]:
    """Per category (and ``all``): does the group's scoring favour its longer failures?

    Over the groups ``care_group`` keeps, each group's failures are centred on their own group means (calls x,
    progress p, advantage A), pooled, and correlated: ``corr_calls_progress=`` and ``corr_calls_adv=``, with
    ``adv_per_call=`` = Σ x·A / Σ x² (the advantage one more call earns a failure beside its group's others).
    Plain GRPO scores every failure of a group alike, so both are 0 there by construction; under CARE the progress
    term ranks failures, and where more calls reach more of the goal it teaches longer failures.
    ``kept_all_fail=`` is the share of kept groups with no success (groups only the progress term keeps).
    ``moved=``: the share of those failures whose push ``failure_credit="turn"`` (or "wander") moves (under the
    overrides given). ``near_miss=`` and ``wander=``: per failure of a group with a success, its calls that stand
    in for one of the cheapest success's with other arguments, and its calls that stand in for none
    (``ml.care.wander_calls``): what ``failure_credit="turn"`` pushes on, split in the two kinds ``"wander"`` tells
    apart."""
    acc: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for category, group in groups:
        res = care_group(group, cfg)
        if res.dropped:
            continue
        fails = [(float(r.tool_calls), r.progress, res.advantages[i]) for i, r in enumerate(group) if not r.success]
        mc, mp, ma = (sum(f[k] for f in fails) / len(fails) if fails else 0.0 for k in range(3))
        wins = [r for r in group if r.success]
        k_star = cheapest_success(wins) if wins else None
        split = [wander_calls(r, k_star) for r in group if not r.success] if k_star else []
        for cat in (category, "all"):
            a = acc[cat]
            a["kept"] += 1
            a["kept_all_fail"] += len(fails) == len(group)
            a["failures"] += len(fails)
            a["moved"] += res.info.get("failures_moved", 0)
            a["with_win"] += len(fails) if wins else 0
            for near, wander in split:
                a["near_miss"] += sum(near)
                a["wander"] += sum(wander)
            for c, p, adv in fails:
                x = c - mc
                a["xx"] += x * x
                a["pp"] += (p - mp) ** 2
                a["aa"] += (adv - ma) ** 2
                a["xp"] += x * (p - mp)
                a["xa"] += x * (adv - ma)
    out: dict[str, dict[str, float]] = {}
    for cat, a in acc.items():
        row = {"kept": a["kept"], "kept_all_fail": a["kept_all_fail"] / a["kept"], "failures": a["failures"]}
        row["moved"] = a["moved"] / a["failures"] if a["failures"] else 0.0
        for name in ("near_miss", "wander"):
            row[name] = a[name] / a["with_win"] if a["with_win"] else 0.0
        for name, yy, xy in (("progress", a["pp"], a["xp"]), ("adv", a["aa"], a["xa"])):
            row[f"corr_calls_{name}"] = xy / (a["xx"] * yy) ** 0.5 if a["xx"] and yy else 0.0
        row["adv_per_call"] = a["xa"] / a["xx"] if a["xx"] else 0.0
        out[cat] = row
    return out


def heldout_kinds(eps: list[Episode], key: str = "category") -> dict[str, dict[str, float]]:
    """Greedy held-out episodes by category (or by ``key="template"``): success, cost, and which kinds of call its
    successes and failures make."""
    by_key: dict[str, list[Episode]] = defaultdict(list)
    for ep in eps:
        by_key[ep.task[key]].append(ep)
    out: dict[str, dict[str, float]] = {}
    for name, mine in sorted(by_key.items()):
        rolls = [Rollout.from_episode(e) for e in mine]
        row = {"tasks": len(rolls), "success": sum(r.success for r in rolls) / len(rolls),
               "calls": sum(r.tool_calls for r in rolls) / len(rolls),
               "tokens": sum(r.output_tokens for r in rolls) / len(rolls),
               "reasoning": sum(r.reasoning_tokens for r in rolls) / len(rolls),
               "thought_turns": sum(t > 0 for r in rolls for t in r.step_reasoning)
               / max(1, sum(len(r.step_reasoning) for r in rolls))}
        for call, kind in (("recall", "memory"), ("delegate", "subagent")):
            for side, won in (("win", True), ("fail", False)):
                part = [r for r in rolls if r.success == won]
                if part:
                    row[f"{call}_{side}"] = sum(kind in kinds_made(r) for r in part) / len(part)
        reasons = [ep.verdict.reason if ep.verdict else "" for ep in mine if not (ep.verdict and ep.verdict.success)]
        for cls, needle in FAILURE_CLASSES.items():
            if reasons:
                row[f"fail_{cls}"] = sum(needle in why for why in reasons) / len(reasons)
        out[name] = row
    return out


def show(prefix: str, rows: dict[str, dict[str, float]], key: str = "category") -> None:
    for name, row in sorted(rows.items()):
        print(f"{prefix}{key}={name} " + " ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
                                                    for k, v in row.items()), flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkpoints", nargs="+", metavar="CHECKPOINT")
    ap.add_argument("--care-overrides", default="{}", help="CAREConfig fields as JSON (e.g. the T of the notes)")
    ap.add_argument("--train-seeds", default="100:101",
                    help="FIRST:END instance seeds of the training tasks ('' = held-out figures only)")
    ap.add_argument("--categories", default="memory,sub_agent,tool_use,skills",
                    help="categories of the sampled training tasks (--heldout runs every category)")
    ap.add_argument("--group", type=int, default=8, help="attempts per task (the RL group size G)")
    ap.add_argument("--temperature", type=float, default=0.8)
    ap.add_argument("--heldout", type=int, default=0, help="held-out tasks per category to run greedily (0 = none)")
    ap.add_argument("--split", default="test", choices=sorted(SPLIT_SEEDS), help="the split --heldout draws from")
    ap.add_argument("--by-template", action="store_true",
                    help="with --heldout, a line per task template too (a fall confined to a few templates)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    try:
        cfg = CAREConfig.from_dict(json.loads(args.care_overrides))
    except (ValueError, TypeError) as exc:
        ap.error(f"--care-overrides: {exc}")
    if args.group < 2:
        ap.error("--group must be >= 2")
    if args.by_template and args.heldout <= 0:
        ap.error("--by-template reads the held-out episodes: give --heldout N")
    import torch

    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    tasks = []
    if args.train_seeds:
        first, _, end = args.train_seeds.partition(":")
        wanted = set(args.categories.split(","))
        tasks = [t for t in training_tasks(range(int(first), int(end))) if t.category in wanted]
    heldout = suite_tasks("pa-sim", args.split, args.heldout) if args.heldout > 0 else []
    for path in args.checkpoints:
        model, tok = load_checkpoint(path)
        fmt = chat_format_of(path)
        if heldout:
            greedy = run_episodes(heldout, TransformersPlanner(model, tok, fmt=fmt, temperature=0.0), batch_size=64)
            show(f"checkpoint={path} {args.split} ", heldout_kinds(greedy))
            if args.by_template:
                show(f"checkpoint={path} {args.split} ", heldout_kinds(greedy, "template"), "template")
        if not tasks:
            continue
        planner = TransformersPlanner(model, tok, fmt=fmt, temperature=args.temperature, seed=args.seed)
        eps = run_episodes([t for t in tasks for _ in range(args.group)], planner, batch_size=64)
        rolls = [Rollout.from_episode(e) for e in eps]
        groups = [(t.category, rolls[i * args.group:(i + 1) * args.group]) for i, t in enumerate(tasks)]
        show(f"checkpoint={path} groups ", audit(groups, cfg))
        show(f"checkpoint={path} failures ", failure_audit(groups, cfg))
    print(f"tasks={len(tasks)} heldout={len(heldout)} wall_s={time.perf_counter() - t0:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
