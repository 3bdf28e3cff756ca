"""RL task draw A/B: how many groups carry signal per iteration with the uniform and the signal-seeking draw.

    .venv/bin/python bench/rl_sampling.py CHECKPOINT [--iterations 60] [--tasks 4] [--sft-seeds 96] [--care]

From one checkpoint, runs the RL trainer (plain GRPO by default, ``--care`` for CARE) for the same number
of iterations with ``task_sampling="uniform"`` and with ``"signal"``, alternating the two arms in blocks of
ten iterations so both see the same machine load, and prints per arm: ``groups_kept_per_iter=`` (groups with
a gradient, of ``--tasks``), ``rollouts_with_signal=`` (share of rollouts in kept groups), training
``success=`` and the median iteration time. The draw changes only which tasks are tried; it trains nothing
else differently.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ml.care_config import CAREConfig  # noqa: E402
from ml.care_trainer import CARETrainer  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkpoint")
    ap.add_argument("--iterations", type=int, default=60)
    ap.add_argument("--tasks", type=int, default=4, help="tasks per iteration (x group size 4)")
    ap.add_argument("--sft-seeds", type=int, default=96, help="RL tasks: the SFT data's instances 100..100+N")
    ap.add_argument("--care", action="store_true")
    ap.add_argument("--kl", type=float, default=0.05)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    seeds = tuple(range(100, 100 + args.sft_seeds))
    arms = {mode: CARETrainer(CAREConfig(care=args.care, task_sampling=mode, train_seeds=seeds,
                                         tasks_per_iter=args.tasks, kl_coef=args.kl, iterations=args.iterations,
                                         save_every=0), init_from=args.checkpoint)
            for mode in ("uniform", "signal")}
    rows: dict[str, list[dict]] = {m: [] for m in arms}
    for block in range(0, args.iterations, 10):
        for mode, trainer in arms.items():
            for _ in range(min(10, args.iterations - block)):
                rows[mode].append(trainer.step())
        print(f"iterations={len(rows['signal'])} " + " ".join(
            f"{m}_kept={sum(r['groups_kept'] for r in rs) / len(rs):.2f}" for m, rs in rows.items()), flush=True)
    for mode, rs in rows.items():
        kept = [r["groups_kept"] for r in rs]
        print(f"arm={mode} iterations={len(rs)} groups_kept_per_iter={statistics.mean(kept):.2f} "
              f"rollouts_with_signal={sum(kept) / (len(rs) * args.tasks):.3f} "
              f"success={statistics.mean(r['success'] for r in rs):.3f} "
              f"median_iteration_s={statistics.median(r['iteration_s'] for r in rs):.1f}")
    u, s = (statistics.mean(r["groups_kept"] for r in rows[m]) for m in ("uniform", "signal"))
    print(f"signal_vs_uniform_kept_ratio={s / max(u, 1e-9):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
