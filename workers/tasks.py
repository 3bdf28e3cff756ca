"""Celery discovers tasks here: each job kind's thin task is created by ``@job_kind`` (workers/kinds)."""

from __future__ import annotations

from workers import kinds

kinds.load()
