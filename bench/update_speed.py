"""CARE's update (one iteration's optimiser steps) with and without micro-batches, on the same rollouts.

    .venv/bin/python bench/update_speed.py [--checkpoint bench/checkpoints/sft-costly] [--iterations 3]
        [--repeats 3] [--tokens 0,8192,16384,32768]

Rolls ``--iterations`` iterations' groups from the checkpoint once (8 tasks × 8 attempts, each group's first attempt
greedy, CARE's scoring, one minibatch of 64 episodes and the KL reference, as the stop-33 pairs ran), then times the
update on each iteration's batch under every ``--tokens`` value (``CAREConfig.microbatch_tokens``; 0 = the whole
minibatch in one padded forward, as before stop 34), interleaved, ``--repeats`` times, each from freshly loaded
weights so every timing does the same work. Prints per value: the padded tokens its forwards hold against the real
ones, the median seconds per update and its ratio to 0's, and the loss figures (which must agree across values: the
micro-batches only change how the same gradient is summed).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import replace

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ml.care_config import CAREConfig  # noqa: E402
from ml.care_trainer import CARETrainer, GreedyAnchor, micro_batches, rollout_groups  # noqa: E402


def padded(batch: list, tokens: int, minibatch: int) -> int:
    """Token slots the update's forwards hold (rows × longest row, summed over micro-batches)."""
    total = 0
    for i in range(0, len(batch), minibatch):
        for mb in micro_batches([v for ep in batch[i:i + minibatch] for v in ep], tokens):
            total += len(mb) * max(len(e.ids) for e, _ in mb)
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", default="bench/checkpoints/sft-costly")
    ap.add_argument("--iterations", type=int, default=3, help="rollout batches to time the update on")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tokens", default="0,8192,16384,32768", help="microbatch_tokens values (0 = no split)")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    values = [int(v) for v in args.tokens.split(",")]

    import torch

    torch.set_num_threads(args.threads)
    cfg = CAREConfig(tasks_per_iter=8, group_size=8, minibatch_episodes=64, kl_coef=0.05, greedy_anchor=True,
                     success_adv_nonneg=True, train_seeds=tuple(range(100, 196)), save_every=0)
    roller = CARETrainer(cfg, init_from=args.checkpoint)
    batches = []
    for it in range(args.iterations):
        t0 = time.perf_counter()
        groups = rollout_groups(roller.draw_tasks(), roller.planner(seed=it, greedy_rows=GreedyAnchor()),
                                cfg.group_size, roller.pool)
        batches.append(roller.encode_batch(groups, roller.score_groups(groups)))
        seqs = [e for ep in batches[-1] for e, _ in ep]
        print(f"batch={it} episodes={len(batches[-1])} sequences={len(seqs)} "
              f"real_tokens={sum(len(e.ids) for e in seqs)} rollout_s={time.perf_counter() - t0:.1f}", flush=True)

    seconds: dict[int, list[float]] = {v: [] for v in values}
    figures: dict[int, list[tuple[float, float]]] = {v: [] for v in values}
    for rep in range(args.repeats):
        for b, batch in enumerate(batches):
            for v in values:  # interleaved: every value sees the same machine state in turn
                trainer = CARETrainer(replace(cfg, microbatch_tokens=v), init_from=args.checkpoint, tasks=roller.tasks)
                t0 = time.perf_counter()
                stats, _ = trainer.update(batch)
                seconds[v].append(time.perf_counter() - t0)
                if rep == 0:
                    figures[v].append((stats["pg_loss"], stats["kl"]))
                print(f"repeat={rep} batch={b} microbatch_tokens={v} update_s={seconds[v][-1]:.2f}", flush=True)

    base = statistics.median(seconds[values[0]])
    real = sum(len(e.ids) for batch in batches for ep in batch for e, _ in ep)
    for v in values:
        med = statistics.median(seconds[v])
        slots = sum(padded(batch, v, cfg.minibatch_episodes) for batch in batches)
        drift = max(abs(a[0] - b[0]) for a, b in zip(figures[v], figures[values[0]], strict=True))
        print(f"microbatch_tokens={v} padded_tokens={slots} padding_share={1 - real / slots:.3f} "
              f"median_update_s={med:.2f} ratio_to_{values[0]}={base / med:.2f} "
              f"max_pg_loss_diff_to_{values[0]}={drift:.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
