"""``demo.sleep``: a job that only waits and reports progress, used by tests and demonstrations."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from workers.kinds import job_kind
from workers.runner import JobContext


@dataclass(frozen=True)
class DemoSleepConfig:
    seconds: float = field(default=5.0, metadata={"min": 0, "max": 3600, "help": "total time to sleep"})
    steps: int = field(default=10, metadata={"min": 1, "max": 1000, "help": "progress updates"})
    marker: str | None = field(
        default=None,
        metadata={
            "max_length": 64,
            "pattern": r"[A-Za-z0-9_-]+",
            "pattern_help": "must be letters, digits, '-' or '_'.",
            "help": "name of a file under the data dir's demo/ folder that records each step once",
        },
    )
    fail_at_step: int | None = field(default=None, metadata={"min": 1, "max": 1000, "help": "raise at this step"})


@job_kind("demo.sleep", config=DemoSleepConfig, title="Demo: sleep", time_limit_s=3700)
def demo_sleep(ctx: JobContext, config: DemoSleepConfig) -> dict:
    """Sleep in steps, reporting progress; with a marker, append one line per step to a file."""
    marker_file = None
    if config.marker:
        marker_file = ctx.data_dir / "demo" / f"{config.marker}.log"
        marker_file.parent.mkdir(parents=True, exist_ok=True)
    pause = config.seconds / config.steps
    for step in range(1, config.steps + 1):
        key = f"step-{step}"
        if ctx.effect_done(key):  # done by an earlier attempt of this job
            continue
        time.sleep(pause)
        if config.fail_at_step == step:
            raise RuntimeError(f"demo failure at step {step}")
        if marker_file is not None:
            with ctx.effect_once(key) as first:
                if first:
                    with marker_file.open("a") as out:
                        out.write(f"{ctx.job_id} {key}\n")
        else:
            with ctx.effect_once(key):
                pass
        ctx.log(f"step {step}/{config.steps}")
        ctx.progress(step / config.steps, f"step {step} of {config.steps}")
    if marker_file is not None:
        with ctx.effect_once("done") as first:
            if first:
                with marker_file.open("a") as out:
                    out.write(f"{ctx.job_id} done\n")
    return {"steps": config.steps, "seconds": config.seconds, "attempt": ctx.attempt}


