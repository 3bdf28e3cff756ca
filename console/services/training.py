"""Writes of training: start SFT, CARE / GRPO and evaluation runs (jobs on the ``train`` queue)."""

from __future__ import annotations

from typing import Any

from console.models import Job, User
from console.services.jobs import PermissionDenied, job_enqueue

__all__ = ["TRAINING_KINDS", "training_start"]

TRAINING_KINDS = {"sft": "train.sft", "care": "train.care", "evaluate": "train.evaluate"}


def training_start(*, run: str, config: Any, user: User) -> Job:
    """Enqueue a training run. Raises PermissionDenied (not a manager), ValueError (unknown run type)
    or ConfigError (field errors)."""
    if not user.can_run_jobs:
        raise PermissionDenied("Only managers can start training and evaluation runs.")
    if run not in TRAINING_KINDS:
        raise ValueError(f"unknown run type {run!r}; choose one of {', '.join(TRAINING_KINDS)}.")
    return job_enqueue(kind=TRAINING_KINDS[run], config=config, created_by=user)
