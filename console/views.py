"""Pages of the console. Each view parses input, calls one service or selector, and renders."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from console import job_kinds, selectors, services
from console.forms import JobStartForm
from console.job_config import ConfigError
from console.models import JobStatus


@require_GET
@login_required
def home(request: HttpRequest) -> HttpResponse:
    return redirect("console:jobs")


def _jobs_page(request: HttpRequest, form: JobStartForm | None, status: int = 200) -> HttpResponse:
    status_filter = request.GET.get("status", "")
    if status_filter not in JobStatus.values:
        status_filter = ""
    kind_filter = request.GET.get("kind", "")
    mine = request.GET.get("mine", "") == "1"
    jobs = selectors.job_list(user=request.user, status=status_filter, kind=kind_filter, mine=mine)
    page = Paginator(jobs, 50).get_page(request.GET.get("page"))
    kinds = job_kinds.all_kinds()
    if form is None and request.user.can_run_jobs:
        default_kind = job_kinds.get("demo.sleep")
        form = JobStartForm(initial={"kind": default_kind.name, "config": json.dumps(default_kind.defaults())})
    return render(
        request,
        "console/jobs.html",
        {
            "page": page,
            "jobs": page.object_list,
            "form": form,
            "statuses": JobStatus.choices,
            "kinds": kinds,
            "kind_defaults": {k.name: k.defaults() for k in kinds},
            "filters": {"status": status_filter, "kind": kind_filter, "mine": mine},
        },
        status=status,
    )


@require_GET
@login_required
def jobs(request: HttpRequest) -> HttpResponse:
    return _jobs_page(request, None)


@require_POST
@login_required
def job_start(request: HttpRequest) -> HttpResponse:
    if not request.user.can_run_jobs:
        raise PermissionDenied("Only managers can start jobs.")
    form = JobStartForm(request.POST)
    if form.is_valid():
        try:
            job = services.job_enqueue(
                kind=form.cleaned_data["kind"], config=form.cleaned_data["config"], created_by=request.user
            )
        except job_kinds.UnknownJobKind as exc:
            form.add_error("kind", str(exc))
        except ConfigError as exc:
            for name, errors in exc.errors.items():
                form.add_error("config", f"{name}: {' '.join(errors)}")
        else:
            messages.success(request, f"Started {job.kind}.")
            return redirect(job)
    return _jobs_page(request, form, status=400)


@require_GET
@login_required
def job_detail(request: HttpRequest, job_id: str) -> HttpResponse:
    job = selectors.job_get(job_id=job_id, user=request.user)
    return render(
        request,
        "console/job_detail.html",
        {
            "job": job,
            "config_json": json.dumps(job.config, indent=2),
            "result_json": json.dumps(job.result, indent=2) if job.result is not None else "",
            "history": job.progress_history[-200:],
        },
    )


@require_POST
@login_required
def job_cancel(request: HttpRequest, job_id: str) -> HttpResponse:
    if not request.user.can_run_jobs:
        raise PermissionDenied("Only managers can cancel jobs.")
    job = selectors.job_get(job_id=job_id, user=request.user)
    try:
        services.job_cancel(job=job, by=request.user)
    except services.JobStateError as exc:
        messages.error(request, str(exc))
    else:
        messages.info(request, "Cancel requested; the job stops at its next progress point.")
    return redirect(job)
