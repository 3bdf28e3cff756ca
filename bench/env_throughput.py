"""Virtual-phone speed figures: tool steps per second, reset time, and a full reference episode's time.

    .venv/bin/python bench/env_throughput.py [--calls 200000] [--seeds 10]

Prints ``tool_steps_per_s=`` (random valid tool calls from the tools' success cases, one core),
``reset_ms=`` (median reset over every template's tasks) and ``reference_episode_ms=`` (median full
reference-solver episode over every template). Targets: >= 20,000, <= 0.5, <= 5.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from devices.virtual.phone import VirtualPhone  # noqa: E402
from devices.virtual.registry import catalog  # noqa: E402
from harness.episode import run_episode  # noqa: E402
from harness.reference import ReferenceSolver  # noqa: E402


def tool_steps_per_s(n: int, seed: int = 0) -> float:
    """Random (tool, valid args) pairs from the tools' success cases, applied in sequence to one phone."""
    rng = random.Random(seed)
    pool = [(name, case.args) for name, tool in catalog().tools.items() for case in tool.cases if case.code is None]
    calls = [pool[rng.randrange(len(pool))] for _ in range(n)]
    phone = VirtualPhone()
    phone.reset()
    t0 = time.perf_counter()
    for i, call in enumerate(calls):
        phone.call(call)
        if i % 1000 == 999:
            phone.reset()  # keep the event log and lists at a realistic episode size
    return n / (time.perf_counter() - t0)


def reset_ms(seeds: int) -> float:
    phone = VirtualPhone()
    tasks = [tpl.instantiate(s) for tpl in catalog().templates.values() for s in range(seeds)]
    times = []
    for task in tasks:
        t0 = time.perf_counter()
        phone.reset(task)
        times.append(time.perf_counter() - t0)
    return 1000 * statistics.median(times)


def reference_episode_ms(seeds: int) -> float:
    phone = VirtualPhone()
    solver = ReferenceSolver()
    times = []
    for tpl in catalog().templates.values():
        for s in range(seeds):
            task = tpl.instantiate(s)
            t0 = time.perf_counter()
            ep = run_episode(task, solver, env=phone)
            times.append(time.perf_counter() - t0)
            if not ep.verdict.success:
                print(f"warning: reference failed {task.id}: {ep.verdict.reason}", file=sys.stderr)
    return 1000 * statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=200_000)
    ap.add_argument("--seeds", type=int, default=10, help="instances per template for the reset and episode medians")
    args = ap.parse_args()
    cat = catalog()
    print(f"domains={len(cat.domains)} tools={len(cat.tools)} templates={len(cat.templates)}")
    print(f"tool_steps_per_s={tool_steps_per_s(args.calls):.0f}")
    print(f"reset_ms={reset_ms(args.seeds):.4f}")
    print(f"reference_episode_ms={reference_episode_ms(args.seeds):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
