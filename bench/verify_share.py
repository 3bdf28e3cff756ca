"""How often a planner spends a step confirming a change it just made, greedily and sampled.

    .venv/bin/python bench/verify_share.py CHECKPOINT [CHECKPOINT ...] [--per-category 25] [--samples 4]
        [--styles concise checks+verify]

The costly cold start (``bench/checkpoints/README.md``, stop 30) learned from a teacher that, after a
successful change, spends a step on a read-only status query ("Confirm that the change took effect"). CARE's
efficiency term rewards the cheaper successes of a group, but the held-out score decodes greedily: greedy
decoding drops the check only once its probability at that point falls under the alternative's. This measures
how far that is. A *change* is a step whose business calls all succeeded and at least one of which writes
(a tool whose spec is not read-only); it is *checked* when the next step's calls are all read-only business
queries. On the held-out split's first ``--per-category`` tasks of each category it prints, per planner and
decoding:

- ``checked_share=``: checked changes over changes followed by another step;
- ``episodes_unchecked=``: the share of episodes with at least one such change and no check at all;
- ``success=``, ``calls=``, ``out_tokens=``: per episode (``out_tokens`` in the model's own tokens, the episode's
  ``costs.output_tokens``), and ``calls_success=``, ``calls_failure=``, ``out_tokens_success=``,
  ``out_tokens_failure=`` over the successful and the failed episodes apart (CARE's efficiency term prices only
  successes), and ``failures_at_budget=``: the share of failures that ran to the task's step budget rather than
  ending on a wrong answer;
- sampled only, ``groups_split=``: the share of tasks whose ``--samples`` attempts (among those with a change)
  include one that checks and one that never does, the within-group contrast CARE's efficiency term can reward,
  and ``split_cheaper_success=``: of those, the share where an unchecked attempt succeeds with fewer calls than
  every successful checked one.

Reference styles (``--styles``) calibrate it: the concise reference never checks on purpose, so its share is
the rate at which the plans themselves read right after a write. A diagnostic; it trains nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
from itertools import pairwise

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from harness.bench import suite_tasks  # noqa: E402
from harness.contract import Episode, Step  # noqa: E402
from harness.episode import is_query, run_episodes  # noqa: E402
from harness.reference import ReferenceSolver, ReferenceStyle  # noqa: E402
from ml.backends import TransformersPlanner  # noqa: E402
from ml.care_trainer import solved  # noqa: E402
from ml.model import chat_format_of, load_checkpoint  # noqa: E402


def _is_change(step: Step) -> bool:
    records = [r for r in step.calls if r.kind == "business"]
    return bool(records) and all(r.result.success for r in records) and not all(is_query(r.call.name)
                                                                                for r in records)


def _is_check(step: Step) -> bool:
    return bool(step.calls) and all(r.kind == "business" and is_query(r.call.name) for r in step.calls)


def _checks(e: Episode) -> list[bool]:
    """For each change followed by another step, whether that step checks."""
    return [_is_check(b) for a, b in pairwise(e.steps) if _is_change(a)]


def shares(episodes: list[Episode]) -> dict[str, float]:
    """The figures the module docstring lists, over ``episodes``."""
    changes = checked = with_change = unchecked = 0
    for e in episodes:
        marks = _checks(e)
        changes += len(marks)
        checked += sum(marks)
        if marks:
            with_change += 1
            unchecked += not any(marks)
    n = max(1, len(episodes))
    won: list[Episode] = []
    failed: list[Episode] = []
    for e in episodes:  # solved() reads the verdict once per episode
        (won if solved(e) else failed).append(e)
    out = {"checked_share": checked / max(1, changes), "episodes_unchecked": unchecked / max(1, with_change),
           "success": len(won) / n, "calls": sum(e.costs.total_tool_calls for e in episodes) / n,
           "out_tokens": sum(e.costs.output_tokens for e in episodes) / n}
    for outcome, eps in (("success", won), ("failure", failed)):
        out[f"calls_{outcome}"] = sum(e.costs.total_tool_calls for e in eps) / max(1, len(eps))
        out[f"out_tokens_{outcome}"] = sum(e.costs.output_tokens for e in eps) / max(1, len(eps))
    out["failures_at_budget"] = sum(len(e.steps) >= e.task["budget"] for e in failed) / max(1, len(failed))
    return out


def splits(groups: list[list[Episode]]) -> dict[str, float]:
    """``groups_split`` and ``split_cheaper_success`` (module docstring) over the sampled groups."""
    split = cheaper = 0
    for g in groups:
        marks = [(e, _checks(e)) for e in g]
        checked = [e for e, m in marks if any(m)]
        unchecked = [e for e, m in marks if m and not any(m)]
        if checked and unchecked:
            split += 1
            best = min((e.costs.total_tool_calls for e in checked if solved(e)), default=float("inf"))
            cheaper += any(solved(e) and e.costs.total_tool_calls < best for e in unchecked)
    return {"groups_split": split / max(1, len(groups)), "split_cheaper_success": cheaper / max(1, split)}


def report(name: str, mode: str, episodes: list[Episode], extra: dict[str, float] | None = None) -> None:
    figures = " ".join(f"{k}={v:.3f}" if not k.startswith("out_tokens") else f"{k}={v:.1f}"
                       for k, v in {**shares(episodes), **(extra or {})}.items())
    print(f"planner={name} decode={mode} episodes={len(episodes)} {figures}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkpoints", nargs="*")
    ap.add_argument("--per-category", type=int, default=25)
    ap.add_argument("--samples", type=int, default=4)
    ap.add_argument("--temperature", type=float, default=0.8)
    ap.add_argument("--styles", nargs="*", default=["concise", "checks+verify"],
                    help="reference styles to calibrate against (ReferenceStyle.from_label)")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    try:
        styles = [ReferenceStyle.from_label(label) for label in args.styles]
    except ValueError as e:
        ap.error(str(e))

    import torch

    torch.set_num_threads(args.threads)
    tasks = suite_tasks("pa-sim", "test", args.per_category)
    for label, style in zip(args.styles, styles, strict=True):
        report(f"reference:{label}", "scripted", run_episodes(tasks, ReferenceSolver(style), batch_size=64))
    for path in args.checkpoints:
        model, tok = load_checkpoint(path)
        fmt = chat_format_of(path)
        report(path, "greedy", run_episodes(tasks, TransformersPlanner(model, tok, fmt=fmt, temperature=0.0),
                                            batch_size=64))
        sampler = TransformersPlanner(model, tok, fmt=fmt, temperature=args.temperature, seed=0)
        drawn = run_episodes([t for t in tasks for _ in range(args.samples)], sampler, batch_size=64)
        groups = [drawn[i:i + args.samples] for i in range(0, len(drawn), args.samples)]
        report(path, f"sampled@{args.temperature}", drawn, splits(groups))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
