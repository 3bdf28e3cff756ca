"""``manage.py job run <kind> --config '{...}'``: enqueue a job and follow it with a progress bar.

Also ``job list`` and ``job cancel <id>``. A worker must be running (``manage.py up`` starts one).
"""

from __future__ import annotations

import json
import sys
import time

from django.core.management.base import BaseCommand, CommandError

from console import job_kinds, services
from console.job_config import ConfigError
from console.models import Job, JobStatus, User

BAR_WIDTH = 30


def progress_bar(fraction: float, message: str = "") -> str:
    filled = int(round(fraction * BAR_WIDTH))
    return f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {fraction * 100:5.1f}% {message}"[:120]


class Command(BaseCommand):
    help = "Run, list or cancel background jobs from the command line."

    def add_arguments(self, parser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        run = sub.add_parser("run", help="enqueue a job and follow its progress")
        run.add_argument("kind", help="a job kind: " + ", ".join(k.name for k in job_kinds.all_kinds()))
        run.add_argument("--config", default="{}", help="the kind's config as a JSON object")
        run.add_argument("--user", default=None, help="record this user name as the job's creator")
        run.add_argument("--no-wait", action="store_true", help="enqueue and return")
        run.add_argument("--timeout", type=float, default=0, help="stop following after this many seconds")
        sub.add_parser("list", help="the 20 newest jobs")
        cancel = sub.add_parser("cancel", help="cancel a job")
        cancel.add_argument("job_id")
        cancel.add_argument("--user", required=True, help="a manager's user name")

    def handle(self, *args, action: str, **options) -> None:
        getattr(self, f"_{action}")(**options)

    def _run(self, *, kind: str, config: str, user: str | None, no_wait: bool, timeout: float, **_) -> None:
        try:
            data = json.loads(config)
        except json.JSONDecodeError as exc:
            raise CommandError(f"--config is not valid JSON: {exc.msg} at column {exc.colno}.") from None
        creator = None
        if user:
            creator = User.objects.filter(username=user).first()
            if creator is None:
                raise CommandError(f"No user named {user!r}.")
        try:
            job = services.job_enqueue(kind=kind, config=data, created_by=creator)
        except job_kinds.UnknownJobKind as exc:
            raise CommandError(str(exc)) from None
        except ConfigError as exc:
            lines = [f"  {field}: {' '.join(errors)}" for field, errors in exc.errors.items()]
            raise CommandError("Invalid config:\n" + "\n".join(lines)) from None
        except services.PermissionDenied as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"Enqueued {job.kind} job {job.id}")
        if no_wait:
            return
        self._follow(job, timeout)

    def _follow(self, job: Job, timeout: float) -> None:
        interactive = sys.stdout.isatty()
        deadline = time.monotonic() + timeout if timeout else None
        last = None
        while True:
            job.refresh_from_db()
            line = progress_bar(job.progress, f"{job.status}: {job.message}")
            if line != last:
                if interactive:
                    self.stdout.write("\r" + line.ljust(120), ending="")
                else:
                    self.stdout.write(line)
                self.stdout.flush()
                last = line
            if job.is_terminal:
                break
            if deadline is not None and time.monotonic() > deadline:
                raise CommandError(f"\nStill {job.status} after {timeout:g}s; the job goes on (id {job.id}).")
            time.sleep(0.25)
        if interactive:
            self.stdout.write("")
        if job.status != JobStatus.SUCCEEDED:
            raise CommandError(f"Job {job.id} {job.status}: {job.error or job.message}")
        self.stdout.write(self.style.SUCCESS(f"Job {job.id} succeeded: {json.dumps(job.result)}"))

    def _list(self, **_) -> None:
        for job in Job.objects.select_related("created_by")[:20]:
            self.stdout.write(f"{job.id}  {job.kind:<20} {job.status:<10} {job.percent:3d}%  {job.message}")

    def _cancel(self, *, job_id: str, user: str, **_) -> None:
        by = User.objects.filter(username=user).first()
        job = Job.objects.filter(id=job_id).first() if is_uuid(job_id) else None
        if by is None or job is None:
            raise CommandError("Unknown user or job id.")
        try:
            job = services.job_cancel(job=job, by=by)
        except (services.JobStateError, services.PermissionDenied) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"Job {job.id}: {job.status}{' (cancel requested)' if job.cancel_requested else ''}")


def is_uuid(value: str) -> bool:
    import uuid

    try:
        uuid.UUID(value)
        return True
    except ValueError:
        return False
