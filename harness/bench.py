"""The pa-sim benchmark: a fixed seeded suite per category, its held-out split, and the scoring command.

    python -m harness.bench --suite pa-sim --planner reference [--split test|train|val] [--limit N]

Each category holds ``per_category`` tasks (default 100), round-robin over the category's
templates, instance seeds from ``instance_seed(suite_seed, template, index)``. The held-out
``test`` split is suite seed 1; ``train`` uses suite seed 2 (and training may use any seed but 1); ``val``
(suite seed 3) is what training itself may look at, CARE's guard, so no training decision reads the test split.
Overall = 0.5·tool_use + 0.2·memory + 0.2·skills + 0.1·sub_agent, a category with no templates
counting 0.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable

from devices.virtual.registry import catalog
from devices.virtual.tasks import CATEGORIES, Task, instance_seed
from harness.contract import Episode
from harness.episode import run_episodes
from harness.planner import DoNothingPlanner, Planner
from harness.reference import ReferenceSolver, ReferenceStyle

SUITES = ("pa-sim",)
SPLIT_SEEDS = {"test": 1, "train": 2, "val": 3}
HELD_OUT_SEED = SPLIT_SEEDS["test"]
WEIGHTS = {"tool_use": 0.5, "memory": 0.2, "skills": 0.2, "sub_agent": 0.1}
PER_CATEGORY = 100


def suite_tasks(suite: str = "pa-sim", split: str = "test", per_category: int = PER_CATEGORY,
                suite_seed: int | None = None) -> list[Task]:
    """The suite's tasks in a fixed order: categories in CATEGORIES order, templates round-robin by id."""
    if suite not in SUITES:
        raise ValueError(f"unknown suite {suite!r}; known: {', '.join(SUITES)}")
    seed = SPLIT_SEEDS[split] if suite_seed is None else suite_seed
    if split != "test" and seed == HELD_OUT_SEED:
        raise ValueError(f"suite seed {HELD_OUT_SEED} is the held-out test split")
    cat = catalog()
    tasks: list[Task] = []
    for category in CATEGORIES:
        tids = sorted(t for t, tpl in cat.templates.items() if tpl.category == category)
        for i in range(per_category if tids else 0):
            tid = tids[i % len(tids)]
            tasks.append(cat.templates[tid].instantiate(instance_seed(seed, tid, i // len(tids))))
    return tasks


def held_out_ids(suite: str = "pa-sim", per_category: int = PER_CATEGORY) -> set[str]:
    """Task ids (``template#seed``) of the held-out test split."""
    return {t.id for t in suite_tasks(suite, "test", per_category)}


def assert_no_test_overlap(tasks: Iterable[Task | str], suite: str = "pa-sim") -> None:
    """Raise if any training task (or task id) is an instance of the held-out split.

    Instances are compared by (template, seed). Templates with small parameter spaces can produce
    the same *content* from different seeds; that is inherent to the template, not a leak of the
    held-out instances, and is not checked here.
    """
    test = held_out_ids(suite)
    ids = {t if isinstance(t, str) else t.id for t in tasks}
    leaked = sorted(ids & test)
    if leaked:
        raise AssertionError(f"{len(leaked)} training task(s) belong to the held-out test split, e.g. {leaked[:3]}")


def score(episodes: list[Episode]) -> dict[str, float]:
    """Percent success per category, the weighted overall, and mean costs."""
    by: dict[str, list[bool]] = {c: [] for c in CATEGORIES}
    for ep in episodes:
        by[ep.task["category"]].append(bool(ep.verdict and ep.verdict.success))
    out: dict[str, float] = {c: (100.0 * sum(v) / len(v) if v else 0.0) for c, v in by.items()}
    out["overall"] = sum(WEIGHTS[c] * out[c] for c in CATEGORIES)
    n = max(len(episodes), 1)
    out["mean_output_tokens"] = sum(ep.costs.output_tokens for ep in episodes) / n
    out["mean_tool_calls"] = sum(ep.costs.total_tool_calls for ep in episodes) / n
    out["episodes"] = len(episodes)
    return out


def make_planner(name: str, style: str = "") -> Planner:
    if name == "do-nothing":
        return DoNothingPlanner()
    if name == "reference":
        knobs = {k for k in style.split(",") if k}
        return ReferenceSolver(ReferenceStyle(
            reasoning="verbose" if "verbose" in knobs else "concise",
            redundant_checks="checks" in knobs,
            mistake="mistake" in knobs,
        ))
    raise ValueError(f"unknown planner {name!r}; known: reference, do-nothing")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness.bench", description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="pa-sim", choices=SUITES)
    ap.add_argument("--planner", default="reference", choices=["reference", "do-nothing"])
    ap.add_argument("--style", default="", help="reference style knobs, comma-separated: verbose,checks,mistake")
    ap.add_argument("--split", default="test", choices=sorted(SPLIT_SEEDS))
    ap.add_argument("--limit", type=int, default=PER_CATEGORY, help="tasks per category (default 100)")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--failures", action="store_true", help="also list failed task ids and reasons")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    tasks = suite_tasks(args.suite, args.split, args.limit)
    planner = make_planner(args.planner, args.style)
    episodes = run_episodes(tasks, planner, batch_size=args.batch_size)
    s = score(episodes)
    wall = time.perf_counter() - t0
    print(f"suite={args.suite} split={args.split} planner={planner.name}")
    for key in ("overall", *CATEGORIES):
        print(f"{key}={s[key]:.2f}")
    print(f"mean_output_tokens={s['mean_output_tokens']:.1f}")
    print(f"mean_tool_calls={s['mean_tool_calls']:.2f}")
    print(f"episodes={len(episodes)}")
    print(f"wall_s={wall:.2f}")
    if args.failures:
        for ep in episodes:
            if not (ep.verdict and ep.verdict.success):
                print(f"FAIL {ep.task['id']}: {ep.verdict.reason if ep.verdict else 'no verdict'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
