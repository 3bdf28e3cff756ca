"""Factories for the console's records (one module instead of fixture files)."""

from __future__ import annotations

import functools
import itertools
from typing import Any

from django.contrib.auth.hashers import make_password

from console.models import Job, JobStatus, Role, User

_counter = itertools.count(1)
PASSWORD = "correct-horse-battery-staple"


@functools.cache
def _password_hash() -> str:
    # Hashing is deliberately slow (PBKDF2); hash once and share it, so a hundred users cost one hash.
    return make_password(PASSWORD)


def user_create(*, role: Role = Role.ANNOTATOR, superuser: bool = False, username: str | None = None) -> User:
    """A user who can log in with PASSWORD."""
    name = username or f"{'admin' if superuser else role.value}{next(_counter)}"
    return User.objects.create(username=name, password=_password_hash(), role=role,
                               is_superuser=superuser, is_staff=superuser)


def job_create(*, kind: str = "demo.sleep", status: JobStatus = JobStatus.QUEUED, created_by: User | None = None,
               config: dict[str, Any] | None = None, **fields: Any) -> Job:
    """A Job row written directly (not enqueued): for pages and API reads."""
    return Job.objects.create(kind=kind, status=status, created_by=created_by,
                              config=config if config is not None else {"seconds": 1.0, "steps": 2}, **fields)
