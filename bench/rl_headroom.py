"""How much success RL can find by sharpening: greedy vs sampled attempts of one checkpoint, task by task.

    .venv/bin/python bench/rl_headroom.py CHECKPOINT [--per-category 75] [--samples 4] [--temperature 0.8]
        [--train-seeds 100:102] [--threads 2]

Group RL (GRPO, CARE) only learns from groups that mix successes and failures, and the held-out score
is greedy. So what it can gain from a checkpoint is bounded by the tasks where greedy decoding fails
but some sampled attempt succeeds. On the held-out split's first ``--per-category`` tasks of each
category (75 = the 300 tasks ``bench/train_loop.py --seeds 3`` scores), and with ``--train-seeds`` on
training instances too, prints:

- ``greedy_success=``: the greedy episodes' success rate;
- ``sampled_success=``: the mean success of ``--samples`` attempts per task at ``--temperature``
  (the rollout policy's success, what RL's training curves show);
- ``pass_at_k=``: the share of tasks some sampled attempt solves;
- ``fixable=``: among tasks greedy fails, the share some sampled attempt solves (an upper bound, in
  points of success, on what sharpening towards sampled successes can add: ``fixable_points=``);
- ``fragile=``: among tasks greedy solves, the share where some sampled attempt fails;
- ``mixed_groups=``: the share of tasks whose sampled attempts mix a success and a failure (the
  groups plain GRPO keeps); per category as well.

A diagnostic, beside ``bench/sft_probe.py``; it trains nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from harness.bench import suite_tasks  # noqa: E402
from harness.episode import run_episodes  # noqa: E402
from ml.backends import TransformersPlanner  # noqa: E402
from ml.care_trainer import solved  # noqa: E402
from ml.model import chat_format_of, load_checkpoint  # noqa: E402
from ml.sft import training_tasks  # noqa: E402

Row = tuple[str, bool, int, int]  # (category, greedy solved, sampled successes, samples)


def headroom(model, tok, fmt, tasks, samples: int, temperature: float, seed: int) -> list[Row]:  # noqa: ANN001
    """Greedy and ``samples`` sampled attempts of every task, one row per task."""
    greedy = run_episodes(tasks, TransformersPlanner(model, tok, fmt=fmt, temperature=0.0), batch_size=64)
    expanded = [t for t in tasks for _ in range(samples)]
    sampler = TransformersPlanner(model, tok, fmt=fmt, temperature=temperature, seed=seed)
    drawn = run_episodes(expanded, sampler, batch_size=64)
    return [(task.category, solved(greedy[i]), sum(solved(e) for e in drawn[i * samples:(i + 1) * samples]), samples)
            for i, task in enumerate(tasks)]


def summarise(rows: list[Row]) -> dict[str, float]:
    """The figures the module docstring lists."""
    n = len(rows)
    g_fail = [r for r in rows if not r[1]]
    g_win = [r for r in rows if r[1]]
    return {
        "greedy_success": sum(r[1] for r in rows) / n,
        "sampled_success": sum(r[2] / r[3] for r in rows) / n,
        "pass_at_k": sum(r[2] > 0 for r in rows) / n,
        "fixable": sum(r[2] > 0 for r in g_fail) / max(1, len(g_fail)),
        "fixable_points": 100 * sum(r[2] > 0 for r in g_fail) / n,
        "fragile": sum(r[2] < r[3] for r in g_win) / max(1, len(g_win)),
        "mixed_groups": sum(0 < r[2] < r[3] for r in rows) / n,
    }


def show(label: str, rows: list[Row]) -> None:
    s = summarise(rows)
    print(f"{label} tasks={len(rows)} " + " ".join(f"{k}={v:.3f}" for k, v in s.items()), flush=True)
    by_cat: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_cat[row[0]].append(row)
    for cat, mine in sorted(by_cat.items()):
        c = summarise(mine)
        print(f"  {label} category={cat} tasks={len(mine)} "
              + " ".join(f"{k}={c[k]:.3f}" for k in ("greedy_success", "sampled_success", "pass_at_k", "fixable",
                                                     "fragile")), flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkpoint")
    ap.add_argument("--per-category", type=int, default=75)
    ap.add_argument("--samples", type=int, default=4, help="sampled attempts per task (the RL group size)")
    ap.add_argument("--temperature", type=float, default=0.8, help="the RL rollouts' sampling temperature")
    ap.add_argument("--train-seeds", default="", help="FIRST:END instance seeds of training tasks to measure too")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.samples < 1 or args.per_category < 1 or not args.temperature > 0:
        ap.error("--samples and --per-category must be >= 1 and --temperature > 0")
    import torch

    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    model, tok = load_checkpoint(args.checkpoint)
    fmt = chat_format_of(args.checkpoint)
    show("heldout", headroom(model, tok, fmt, suite_tasks("pa-sim", "test", args.per_category), args.samples,
                             args.temperature, args.seed))
    if args.train_seeds:
        first, _, end = args.train_seeds.partition(":")
        show("train", headroom(model, tok, fmt, training_tasks(range(int(first), int(end))), args.samples,
                               args.temperature, args.seed))
    print(f"wall_s={time.perf_counter() - t0:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
