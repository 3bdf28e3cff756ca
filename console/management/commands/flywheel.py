"""``manage.py flywheel round --auto-gate verifier --tasks N``: one whole round, headless, in-process.

create round → generate → auto-gate tasks (approve the valid) → collect → auto-gate trajectories by
the verifier (accept successes, reject failures) → curate → feedback, through the same services the
console and the jobs use. The automatic gate is logged as such (gate ``auto:verifier``, no
reviewer), never as a person. Prints a progress bar per stage, the funnel and the wall time.
"""

from __future__ import annotations

import json
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from console.management.commands.job import progress_bar
from console.models import Round, TaskSpec, TaskStatus, Trajectory
from console.selectors.review import round_funnel
from console.services.collection import collection_run
from console.services.curation import dataset_curate
from console.services.feedback import feedback_weights
from console.services.review import review_auto_gate
from console.services.rounds import round_create, task_generate


class _Bar:
    """A progress bar for one stage: redrawn in place on a terminal, a line per quarter otherwise."""

    def __init__(self, out: Any, stage: str):
        self.out, self.stage = out, stage
        self.tty = hasattr(out, "isatty") and out.isatty()
        self.next_line = 0.0
        self.last = (0.0, "")

    def __call__(self, fraction: float, message: str = "") -> None:
        self.last = (fraction, message)
        text = f"{self.stage:<10} {progress_bar(fraction, message)}"
        if self.tty:
            self._write("\r" + text.ljust(130))
        elif fraction >= self.next_line and fraction < 1.0:
            self._write(text + "\n")
            self.next_line = fraction + 0.25

    def done(self, message: str) -> None:
        text = f"{self.stage:<10} {progress_bar(1.0, message)}"
        self._write(("\r" + text.ljust(130) if self.tty else text) + "\n")

    def _write(self, text: str) -> None:
        try:
            self.out.write(text, ending="")  # Django's OutputWrapper would add a newline
        except TypeError:
            self.out.write(text)
        self.out.flush()


class Command(BaseCommand):
    help = "Run a whole flywheel round headless (generate, gate, collect, gate, curate, feedback)."

    def add_arguments(self, parser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        rnd = sub.add_parser("round", help="run one round end to end without people")
        rnd.add_argument("--auto-gate", required=True, choices=["verifier"],
                         help="decide both review queues automatically from the verifier")
        rnd.add_argument("--tasks", type=int, default=200, help="tasks to generate (default 200)")
        rnd.add_argument("--attempts", type=int, default=1, help="episodes per approved task (default 1)")
        rnd.add_argument("--parallel", type=int, default=32, help="episodes run at once (default 32)")
        rnd.add_argument("--seed", type=int, default=None, help="generation seed (default: the round number + 1)")
        rnd.add_argument("--style", default="", help="reference style knobs, comma-separated: verbose,checks,mistake")
        rnd.add_argument("--dataset", default="flywheel", help="dataset name (default flywheel)")
        rnd.add_argument("--target-mix", default="", help="curation target mix as JSON (default: no balancing)")
        rnd.add_argument("--weights", default="", help="generation weights as JSON (default: the last suggestion)")

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        if action == "round":
            self._round(**options)

    def _round(self, *, tasks: int, attempts: int, parallel: int, seed: int | None, style: str, dataset: str,
               target_mix: str, weights: str, **_: Any) -> None:
        if tasks < 1:
            raise CommandError("--tasks must be at least 1.")
        try:
            gen_weights = json.loads(weights) if weights else None
            mix = json.loads(target_mix) if target_mix else {}
        except json.JSONDecodeError as exc:
            raise CommandError(f"--weights / --target-mix is not valid JSON: {exc.msg}.") from None
        knobs = {k for k in style.split(",") if k}
        if knobs - {"verbose", "checks", "mistake"}:
            raise CommandError("--style knobs are verbose, checks and mistake.")
        if gen_weights is None:  # the loop: the last round's suggestion steers this one
            last = Round.objects.order_by("-number").first()
            gen_weights = dict(last.suggested_weights) if last is not None and last.suggested_weights else None
        out = self.stdout
        t0 = time.perf_counter()
        try:
            rnd = round_create(user=None, generation_weights=gen_weights,
                               config={"headless": True, "auto_gate": "verifier"})
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        seed = rnd.number + 1 if seed is None else seed
        out.write(f"round={rnd.number} id={rnd.id} tasks={tasks} attempts={attempts} seed={seed}\n")

        bar = _Bar(out, "generate")
        gen = task_generate(round=rnd, n_tasks=tasks, seed=seed, progress=bar)
        bar.done(f"{gen['valid']} valid, {gen['invalid']} rejected")
        out.write("rejections: " + (", ".join(f"{k} {n}" for k, n in gen["rejections"].items()) or "none") + "\n")

        bar = _Bar(out, "gate tasks")
        pending = list(TaskSpec.objects.filter(round=rnd, status=TaskStatus.PENDING).order_by("template", "seed"))
        approved = 0
        for i in range(0, len(pending), 50):
            approved += review_auto_gate(queue="task", objects=pending[i:i + 50])
            bar((i + 50) / max(len(pending), 1), f"{min(i + 50, len(pending))} of {len(pending)}")
        bar.done(f"{TaskSpec.objects.filter(round=rnd, status=TaskStatus.APPROVED).count()} approved")

        bar = _Bar(out, "collect")
        planner = {"kind": "reference", "style": {"reasoning": "verbose" if "verbose" in knobs else "concise",
                                                   "redundant_checks": "checks" in knobs,
                                                   "mistake": "mistake" in knobs}}
        col = collection_run(round=rnd, planner=planner, attempts=attempts, parallel=parallel, progress=bar)
        bar.done(f"{col['episodes']} episodes, {col['succeeded']} succeeded, {col['episodes_per_s']} episodes/s")

        bar = _Bar(out, "gate traj")
        trajs = list(Trajectory.objects.filter(round=rnd, status="pending_review").order_by("task__template",
                                                                                             "task__seed", "attempt"))
        for i in range(0, len(trajs), 50):
            review_auto_gate(queue="trajectory", objects=trajs[i:i + 50])
            bar((i + 50) / max(len(trajs), 1), f"{min(i + 50, len(trajs))} of {len(trajs)}")
        bar.done(f"{Trajectory.objects.filter(round=rnd, status='accepted').count()} accepted")

        bar = _Bar(out, "curate")
        bar(0.1, "dedupe, balance, split, export")
        version = None
        if Trajectory.objects.filter(round=rnd, status="accepted").exists():
            version = dataset_curate(rounds=[rnd], name=dataset, target_mix=mix, user=None)
            bar.done(f"{version} train={version.stats['train']} test={version.stats['test']} "
                     f"-> {version.export_dir}")
        else:
            bar.done("nothing accepted: no dataset")

        bar = _Bar(out, "feedback")
        fb = feedback_weights(round=rnd)
        bar.done(f"suggested weights from {fb['source']} success")
        for axis, table in fb["weights"].items():
            out.write(f"suggested_weights.{axis}=" + json.dumps(table, separators=(",", ":")) + "\n")

        wall = time.perf_counter() - t0
        funnel = round_funnel(round=rnd)
        out.write("funnel: " + " -> ".join(f"{k} {v}" for k, v in funnel.items()) + "\n")
        for key, value in funnel.items():
            out.write(f"{key}={value}\n")
        out.write(f"collect_episodes_per_s={col['episodes_per_s']}\n")
        out.write(f"wall_s={wall:.2f}\n")
