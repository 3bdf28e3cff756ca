"""Reads of the console, by sub-domain: ``jobs`` now; the data flywheel's modules beside it."""

from console.selectors.jobs import job_get, job_kinds_in_use, job_list, job_status_choices

__all__ = ["job_get", "job_kinds_in_use", "job_list", "job_status_choices"]
