"""Review-queue figures: claim latency under 50 concurrent claimers over 100,000 pending items, server time
of the trajectory review page for a 50-step trajectory, and collection throughput of the reference solver.

    FLYWHEEL_VAR_DIR=var/bench .venv/bin/python bench/review_queue.py [--items 100000] [--claimers 50]
        [--claims-per-claimer 20] [--think-ms 1000] [--page-runs 30] [--collect-tasks 200]

Runs against the embedded PostgreSQL and Redis of ``FLYWHEEL_VAR_DIR`` (default ``var/bench``; started if
needed and stopped again if this script started them) or ``DATABASE_URL``/``REDIS_URL``, in a throwaway
database ``bench_review_<pid>`` created with the migrations and dropped at the end; screens go to a
temporary data directory that is removed too. Prints ``claim_p50_ms=``, ``claim_p95_ms=`` (each claimer
claims, reads the item for ``--think-ms`` on average, approves, claims again; the claim call alone is
timed; target p95 < 30) and the same with no reading time (``claim_saturated_*``: every thread hammers,
so the figure measures the CPUs' queue more than the claim),
``trajectory_page_ms=`` (median server time of GET /review/trajectories/ rendering a claimed 50-step
trajectory through Django's test Client, in process, no network; target < 200) with its p95 and the API
detail's time, and ``collect_episodes_per_s=`` (``console.services.collection.collection_run`` with the
reference solver on virtual phones, screens rendered and stored per step).
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
os.environ.setdefault("FLYWHEEL_VAR_DIR", str(ROOT / "var" / "bench"))
DATA_DIR = tempfile.mkdtemp(prefix="flywheel-bench-")
os.environ["FLYWHEEL_DATA_DIR"] = DATA_DIR


def pct(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by the nearest-rank method."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q * len(ordered) + 0.5)) - 1))]


def bench_claims(*, n_items: int, n_claimers: int, claims_each: int, think_ms: float) -> None:
    from django.db import connection, connections

    from console.models import TaskSpec
    from console.services.review import review_claim_next, review_decide, review_items_create
    from tests import factories

    rnd = factories.round_create(name="bench", generation_weights={"category": {"memory": 2.0}})
    # Real template instances (one per template), their specs shared by the 100,000 rows.
    specs = [factories.task_spec_build(round=rnd).spec for _ in range(93)]
    t0 = time.perf_counter()
    tasks = TaskSpec.objects.bulk_create(
        [
            TaskSpec(
                round=rnd, template=spec["template"], category=spec["category"], domains=spec["domains"],
                tags=spec["tags"], difficulty=spec["difficulty"], seed=10_000_000 + i, instruction=spec["instruction"],
                spec=spec, param_hash=f"{i:064x}", state_hash=f"{i:064x}",
            )
            for i, spec in zip(range(n_items), itertools.cycle(specs), strict=False)
        ],
        batch_size=5000,
    )
    created = review_items_create(queue="task", round=rnd, objects=tasks)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE console_queueitem; ANALYZE console_taskspec; ANALYZE console_review")
    print(f"# seeded {created} pending task-queue items in {time.perf_counter() - t0:.1f}s", flush=True)

    def run(think: float) -> tuple[list[float], float]:
        users = [factories.user_create() for _ in range(n_claimers)]
        timings: list[list[float]] = [[] for _ in users]
        errors: list[BaseException] = []
        start = threading.Barrier(n_claimers)

        def claimer(slot: int) -> None:
            jitter = random.Random(slot)
            try:
                start.wait()
                if think:  # people do not all arrive in the same millisecond
                    time.sleep(think / 1000 * jitter.uniform(0, 1))
                for _ in range(claims_each):
                    t = time.perf_counter()
                    item = review_claim_next(queue="task", user=users[slot])
                    timings[slot].append((time.perf_counter() - t) * 1000)
                    if item is None:
                        return
                    if think:  # the reviewer reads the item (0.5-1.5 x think), then decides
                        time.sleep(think / 1000 * jitter.uniform(0.5, 1.5))
                    review_decide(item=item, user=users[slot], decision="approve")
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
            finally:
                connections.close_all()

        threads = [threading.Thread(target=claimer, args=(i,)) for i in range(n_claimers)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        return [ms for per in timings for ms in per], time.perf_counter() - t0

    flat, wall = run(think_ms)
    print(f"# {len(flat)} claims by {n_claimers} concurrent claimers, each reading an item "
          f"{think_ms:.0f} ms on average before approving it, in {wall:.1f}s ({len(flat) / wall:.0f} claims/s)")
    print(f"claim_p50_ms={statistics.median(flat):.1f}")
    print(f"claim_p95_ms={pct(flat, 0.95):.1f}")
    flat, wall = run(0.0)
    print(f"# saturated: {len(flat)} claims by {n_claimers} claimers approving at once (no reading time), "
          f"{len(flat) / wall:.0f} claims+decisions/s: the CPUs are the queue (Little's law), not the claim")
    print(f"claim_saturated_p50_ms={statistics.median(flat):.1f}")
    print(f"claim_saturated_p95_ms={pct(flat, 0.95):.1f}")

    with connection.cursor() as cursor:
        from django.test.utils import CaptureQueriesContext

        with CaptureQueriesContext(connection) as ctx:
            review_claim_next(queue="task", user=factories.user_create())
        sql = next(q["sql"] for q in ctx.captured_queries if "SKIP LOCKED" in q["sql"] and "NOT" in q["sql"])
        cursor.execute("EXPLAIN ANALYZE " + sql)
        plan = [row[0] for row in cursor.fetchall()]
    index = "queue_claim_order" if any("queue_claim_order" in line for line in plan) else "NOT the claim index"
    print(f"# claim query plan uses {index}; {plan[-1].strip()}")


def _fifty_step_trajectory():
    from console.models import TaskStatus, TrajectoryStep
    from tests import factories

    task = factories.task_spec_create(status=TaskStatus.APPROVED)
    episode = factories.episode_run(spec=task.spec, mistake=True)
    trajectory = factories.trajectory_create(task=task, episode=episode)
    # A real episode of the reference solver is a few steps long: repeat its steps to 50 (re-indexed).
    steps = [s.data for s in trajectory.steps.order_by("index")]
    TrajectoryStep.objects.filter(trajectory=trajectory).delete()
    TrajectoryStep.objects.bulk_create(
        [TrajectoryStep(trajectory=trajectory, index=i, data={**data, "index": i})
         for i, data in zip(range(50), itertools.cycle(steps), strict=False)]
    )
    trajectory.n_steps = 50
    trajectory.save(update_fields=["n_steps"])
    return trajectory


def bench_trajectory_page(*, runs: int) -> None:
    from django.test import Client

    from console.models import Role
    from console.services.review import review_items_create
    from tests import factories

    trajectory = _fifty_step_trajectory()
    review_items_create(queue="trajectory", round=trajectory.round, objects=[trajectory])
    client = Client(HTTP_HOST="localhost")
    client.force_login(factories.user_create(role=Role.ANNOTATOR))

    def timed(path: str) -> list[float]:
        out = []
        for _ in range(runs + 2):
            t = time.perf_counter()
            response = client.get(path)
            out.append((time.perf_counter() - t) * 1000)
            if response.status_code != 200:
                raise RuntimeError(f"GET {path} answered {response.status_code}")
        return out[2:]  # the first two warm caches (templates, catalogue)

    page = timed("/review/trajectories/")  # claims the item, then (a reload keeps it) renders it again
    body = client.get("/review/trajectories/").content.decode()
    if str(trajectory.pk) not in body:
        raise RuntimeError("the review page did not show the 50-step trajectory")
    viewer = timed(f"/trajectories/{trajectory.pk}/")
    api = timed(f"/api/trajectories/{trajectory.pk}/")
    print(f"trajectory_page_ms={statistics.median(page):.1f}")
    print(f"# trajectory review page (GET /review/trajectories/, 50 steps): p95 {pct(page, 0.95):.1f} ms; "
          f"viewer GET /trajectories/<id>/ median {statistics.median(viewer):.1f} ms; "
          f"API GET /api/trajectories/<id>/ median {statistics.median(api):.1f} ms ({runs} runs each)")


def bench_collect(*, n_tasks: int) -> None:
    try:
        from console.services.collection import collection_run
    except ImportError:
        print("# collect_episodes_per_s: console.services.collection.collection_run is not available yet")
        return
    from console.models import TaskStatus
    from tests import factories

    rnd = factories.round_create(name="bench-collect")
    factories.task_specs_create(round=rnd, n=n_tasks, status=TaskStatus.APPROVED)
    t0 = time.perf_counter()
    result = collection_run(round=rnd, planner={"kind": "reference", "style": {}}, attempts=1, parallel=8)
    wall = time.perf_counter() - t0
    print(f"collect_episodes_per_s={result['episodes'] / wall:.1f}")
    print(f"# collected {result['episodes']} episodes ({result['succeeded']} succeeded) in {wall:.1f}s "
          f"incl. storing trajectories, steps and screens; collection_run's own figure "
          f"{result.get('episodes_per_s')}/s (episode loop only)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--claimers", type=int, default=50)
    parser.add_argument("--claims-per-claimer", type=int, default=20)
    parser.add_argument("--think-ms", type=float, default=1000.0,
                        help="mean time a claimer spends on an item before deciding (0: hammer)")
    parser.add_argument("--page-runs", type=int, default=30)
    parser.add_argument("--collect-tasks", type=int, default=200)
    args = parser.parse_args()

    from webapp.embedded import EmbeddedServices, ensure_for_environment

    started = ensure_for_environment()
    import django
    from django.conf import settings

    settings.DATABASES["default"].setdefault("TEST", {})["NAME"] = f"bench_review_{os.getpid()}"
    django.setup()
    from django.db import connection

    original = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    try:
        print(f"# database {connection.settings_dict['NAME']} on {settings.VAR_DIR}", flush=True)
        bench_claims(n_items=args.items, n_claimers=args.claimers, claims_each=args.claims_per_claimer,
                     think_ms=args.think_ms)
        bench_trajectory_page(runs=args.page_runs)
        bench_collect(n_tasks=args.collect_tasks)
    finally:
        connection.creation.destroy_test_db(original, verbosity=0)
        shutil.rmtree(DATA_DIR, ignore_errors=True)
        services = EmbeddedServices.default()
        if "redis" in started:
            services.redis.stop()
        if "postgres" in started:
            services.postgres.stop()


if __name__ == "__main__":
    main()
