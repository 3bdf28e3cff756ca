"""Writes of the console, by sub-domain: ``jobs`` (users, jobs), and the data flywheel's modules."""

from console.services.jobs import (
    JOBS_GROUP,
    DemoAccount,
    JobStateError,
    PermissionDenied,
    demo_accounts_ensure,
    job_broadcast,
    job_cancel,
    job_enqueue,
    job_group,
    job_log_broadcast,
    job_requeue,
    user_group,
    user_sockets_close,
)

__all__ = [
    "JOBS_GROUP",
    "DemoAccount",
    "JobStateError",
    "PermissionDenied",
    "demo_accounts_ensure",
    "job_broadcast",
    "job_cancel",
    "job_enqueue",
    "job_group",
    "job_log_broadcast",
    "job_requeue",
    "user_group",
    "user_sockets_close",
]
