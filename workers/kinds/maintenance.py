"""``maintenance.prune``: delete expired files under FLYWHEEL_DATA_DIR and old job log tails, by policy.

Only the folders named in ``expire_dirs`` are pruned (by default the scratch ones: ``tmp`` and
``exports``); checkpoints, datasets and screens are records' blobs and are never touched here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import timedelta

from django.utils import timezone

from console.models import TERMINAL_STATUSES, Job
from workers.kinds import job_kind
from workers.runner import JobContext

PRUNABLE_DIRS = ("tmp", "exports", "demo", "logs")


@dataclass(frozen=True)
class PruneConfig:
    file_max_age_days: float = field(
        default=7.0, metadata={"min": 0, "max": 3650, "help": "delete files older than this (by mtime)"}
    )
    expire_dirs: list[str] = field(
        default_factory=lambda: ["tmp", "exports"],
        metadata={"choices": PRUNABLE_DIRS, "help": "folders of the data dir whose old files expire"},
    )
    log_tail_max_age_days: float = field(
        default=30.0, metadata={"min": 0, "max": 3650, "help": "clear log tails of jobs finished before this"}
    )
    dry_run: bool = field(default=False, metadata={"help": "count what would be deleted, delete nothing"})


@job_kind("maintenance.prune", config=PruneConfig, title="Maintenance: prune old files and logs",
          time_limit_s=3600)
def prune(ctx: JobContext, config: PruneConfig) -> dict:
    """Delete expired files in the data dir's scratch folders and clear old log tails."""
    cutoff = time.time() - config.file_max_age_days * 86400
    root = ctx.data_dir.resolve()
    candidates = []
    for name in config.expire_dirs:
        folder = (root / name).resolve()
        if not folder.is_dir() or root not in folder.parents:
            continue
        for path in folder.rglob("*"):
            # Never follow links out of the data dir; only regular files expire.
            if path.is_file() and not path.is_symlink() and path.stat().st_mtime < cutoff:
                candidates.append(path)
    ctx.progress(0.1, f"{len(candidates)} expired file(s) found")
    deleted_files = 0
    freed = 0
    for i, path in enumerate(candidates, 1):
        size = path.stat().st_size
        if not config.dry_run:
            path.unlink(missing_ok=True)
        deleted_files += 1
        freed += size
        if i % 100 == 0:
            ctx.progress(0.1 + 0.7 * i / len(candidates), f"{i} of {len(candidates)} files")
    if not config.dry_run:
        for name in config.expire_dirs:
            folder = root / name
            if folder.is_dir():
                for sub in sorted(folder.rglob("*"), reverse=True):
                    if sub.is_dir() and not sub.is_symlink() and not any(sub.iterdir()):
                        sub.rmdir()
    ctx.progress(0.8, "clearing old log tails")
    before = timezone.now() - timedelta(days=config.log_tail_max_age_days)
    old_logs = Job.objects.filter(status__in=TERMINAL_STATUSES, finished_at__lt=before).exclude(log_tail="")
    cleared = old_logs.count() if config.dry_run else old_logs.update(log_tail="")
    ctx.log(f"files: {deleted_files} ({freed} bytes); log tails: {cleared}; dry run: {config.dry_run}")
    ctx.progress(1.0, "done")
    return {"deleted_files": deleted_files, "freed_bytes": freed, "cleared_log_tails": cleared,
            "dry_run": config.dry_run}
