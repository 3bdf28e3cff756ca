"""How often a checkpoint reasons before it acts, and whether reasoning buys it success.

    .venv/bin/python bench/reasoning_share.py CHECKPOINT [CHECKPOINT ...] [--per-category 25] [--samples 4]

CARE's token target asks a policy to spend far less than the concise reference (``bench/cost_floor.py``),
which it can only do by dropping reasoning. That is a choice RL can make only if the policy already takes it
sometimes: a turn opens with ``<think>`` or goes straight to its content and calls. On the held-out split's
first ``--per-category`` tasks of each category, greedily and with ``--samples`` attempts at
``--temperature``, this prints per checkpoint:

- ``reasoning_turns=``: the share of the planner's acting turns (turns with tool calls) that carry reasoning
  (a closing answer often has none even in the concise reference);
- ``episodes_all``/``episodes_none``/``episodes_mixed``: episodes whose acting turns all reason, none do, or
  some;
- ``success_all=``/``success_none=``/``success_mixed=``: each kind's success rate (``nan`` where none);
- ``out_tokens=``: mean model output tokens per episode.

A diagnostic; it trains nothing.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from harness.bench import suite_tasks  # noqa: E402
from harness.contract import Episode  # noqa: E402
from harness.episode import run_episodes  # noqa: E402
from ml.backends import TransformersPlanner  # noqa: E402
from ml.care_trainer import solved  # noqa: E402
from ml.model import chat_format_of, load_checkpoint  # noqa: E402


def shares(episodes: list[Episode]) -> dict[str, float]:
    """The figures the module docstring lists, over ``episodes``."""
    turns = [bool(s.turn.reasoning) for e in episodes for s in e.steps if s.turn.tool_calls]
    kinds: dict[str, list[Episode]] = {"all": [], "none": [], "mixed": []}
    for e in episodes:
        marks = {bool(s.turn.reasoning) for s in e.steps if s.turn.tool_calls}
        kinds["all" if marks == {True} else "none" if marks <= {False} else "mixed"].append(e)
    out = {"reasoning_turns": sum(turns) / max(1, len(turns)),
           "out_tokens": sum(e.costs.output_tokens for e in episodes) / max(1, len(episodes))}
    for kind, eps in kinds.items():
        out[f"episodes_{kind}"] = len(eps) / max(1, len(episodes))
        out[f"success_{kind}"] = sum(map(solved, eps)) / len(eps) if eps else float("nan")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkpoints", nargs="+")
    ap.add_argument("--per-category", type=int, default=25)
    ap.add_argument("--samples", type=int, default=4)
    ap.add_argument("--temperature", type=float, default=0.8)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    tasks = suite_tasks("pa-sim", "test", args.per_category)
    for path in args.checkpoints:
        model, tok = load_checkpoint(path)
        fmt = chat_format_of(path)
        greedy = run_episodes(tasks, TransformersPlanner(model, tok, fmt=fmt, temperature=0.0), batch_size=64)
        sampler = TransformersPlanner(model, tok, fmt=fmt, temperature=args.temperature, seed=0)
        drawn = run_episodes([t for t in tasks for _ in range(args.samples)], sampler, batch_size=64)
        for mode, eps in (("greedy", greedy), (f"sampled@{args.temperature}", drawn)):
            figures = " ".join(f"{k}={v:.3f}" if k != "out_tokens" else f"{k}={v:.1f}" for k, v in shares(eps).items())
            print(f"checkpoint={path} decode={mode} episodes={len(eps)} {figures}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
