"""Job kinds. To add one: write ``workers/kinds/<area>.py`` with a config dataclass and a function
decorated with ``@job_kind(...)``, and list the module in KIND_MODULES below. That is all: the
decorator registers the kind with the console (validation at enqueue, the start form, the API) and
creates its Celery task ``jobs.<name>``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from celery import shared_task

from console import job_kinds

KIND_MODULES = (
    "workers.kinds.demo",
    "workers.kinds.flywheel",
    "workers.kinds.maintenance",
    "workers.kinds.training",
)

RunFunction = Callable[[Any, Any], dict]
_RUNNERS: dict[str, RunFunction] = {}


def job_kind(
    name: str,
    *,
    config: type,
    title: str,
    description: str = "",
    queue: str = "default",
    time_limit_s: int = 3600,
) -> Callable[[RunFunction], RunFunction]:
    """Register ``fn(ctx: JobContext, config) -> result dict`` as the job kind ``name``."""

    def decorate(fn: RunFunction) -> RunFunction:
        spec = job_kinds.register(
            job_kinds.JobKindSpec(
                name=name, config_type=config, title=title, description=description or (fn.__doc__ or "").strip(),
                queue=queue, time_limit_s=time_limit_s,
            )
        )
        _RUNNERS[name] = fn

        @shared_task(
            name=spec.task_name,
            bind=True,
            acks_late=True,
            reject_on_worker_lost=True,
            time_limit=time_limit_s + 60,
            soft_time_limit=time_limit_s,
            max_retries=5,
        )
        def task(self, job_id: str) -> None:
            from workers.runner import run_job

            run_job(job_id, task=self)

        task.__doc__ = f"Run a {name} job (the job id is the only argument)."
        return fn

    return decorate


def runner_for(name: str) -> RunFunction:
    return _RUNNERS[name]


def load() -> None:
    for module in KIND_MODULES:
        importlib.import_module(module)
