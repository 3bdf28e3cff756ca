"""Training pages: the checkpoint registry with lineage, run forms (managers), live curves, comparison."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from console import job_kinds
from console.job_config import ConfigError
from console.models import Job
from console.sealing import secrets_scrub
from console.selectors.lookup import get_or_404
from console.selectors.training import (
    COMPARE_COLUMNS,
    PAIRED_COLUMNS,
    TRAIN_KINDS,
    checkpoint_list,
    compare_csv,
    compare_markdown,
    compare_rows,
    paired_rows,
    run_curve,
    run_jobs,
)
from console.services.training import TRAINING_KINDS, training_start


def _forms(values: dict[str, str] | None = None) -> list[dict[str, Any]]:
    forms = []
    for run, kind in TRAINING_KINDS.items():
        spec = job_kinds.get(kind)
        config = (values or {}).get(run) or json.dumps(spec.defaults(), indent=2)
        forms.append({"run": run, "kind": kind, "title": spec.title, "config": config, "help": spec.field_help()})
    return forms


def _compared(request: HttpRequest) -> tuple[list[dict[str, Any]], str, str]:
    """The comparison rows, paired with ``?baseline=`` (a row's key) where given: (rows, baseline, error)."""
    baseline = request.GET.get("baseline", "").strip()[:80]
    rows = compare_rows()
    if baseline:
        try:
            paired_rows(rows, baseline)
        except ValueError as exc:  # an unknown baseline: the rows stay unpaired
            return rows, baseline, str(exc)
    return rows, baseline, ""


def _page(request: HttpRequest, *, errors: dict[str, list[str]] | None = None, run: str = "",
          values: dict[str, str] | None = None, status: int = 200) -> HttpResponse:
    rows, baseline, baseline_error = _compared(request)
    if baseline_error and status == 200:
        status = 400
    context = {
        "checkpoints": checkpoint_list(),
        "runs": run_jobs(),
        "columns": COMPARE_COLUMNS,
        "paired_columns": PAIRED_COLUMNS,
        "rows": rows,
        "baseline": baseline,
        "baseline_name": next((r["name"] for r in rows if r["key"] == baseline), ""),
        "baseline_error": baseline_error,
        "forms": _forms(values) if request.user.can_run_jobs else [],
        "errors": errors or {},
        "error_run": run,
        "error_known": run in TRAINING_KINDS,
    }
    return render(request, "console/training/index.html", context, status=status)


@require_GET
@login_required
def training_index(request: HttpRequest) -> HttpResponse:
    return _page(request)


@require_POST
@login_required
def training_start_view(request: HttpRequest) -> HttpResponse:
    """Start a run: ``run`` (sft | care | evaluate) and ``config`` (JSON). 400 with field errors."""
    if not request.user.can_run_jobs:
        raise PermissionDenied("Only managers can start training and evaluation runs.")
    run = request.POST.get("run", "")
    raw = request.POST.get("config", "").strip() or "{}"
    values = {run: secrets_scrub(raw)}  # a refused form comes back without its API key, like a password
    try:
        config = json.loads(raw)
    except json.JSONDecodeError as exc:
        return _page(request, errors={"config": [f"is not valid JSON: {exc.msg}."]}, run=run, values=values,
                     status=400)
    try:
        job = training_start(run=run, config=config, user=request.user)
    except ConfigError as exc:
        return _page(request, errors=exc.errors, run=run, values=values, status=400)
    except ValueError as exc:
        return _page(request, errors={"run": [str(exc)]}, run=run, values=values, status=400)
    messages.success(request, f"Started {job.kind}.")
    return redirect("console:training")


def _download(body: str, content_type: str, filename: str) -> HttpResponse:
    response = HttpResponse(body, content_type=f"{content_type}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@require_GET
@login_required
def training_compare_markdown(request: HttpRequest) -> HttpResponse:
    rows, _, error = _compared(request)
    if error:
        return HttpResponse(error, status=400, content_type="text/plain; charset=utf-8")
    return _download(compare_markdown(rows), "text/markdown", "comparison.md")


@require_GET
@login_required
def training_compare_csv(request: HttpRequest) -> HttpResponse:
    rows, _, error = _compared(request)
    if error:
        return HttpResponse(error, status=400, content_type="text/plain; charset=utf-8")
    return _download(compare_csv(rows), "text/csv", "comparison.csv")


@require_GET
@login_required
def training_run_metrics(request: HttpRequest, job_id: str) -> JsonResponse:
    """A training run's status and metrics points (the live curves poll this until the run is terminal)."""
    job = get_or_404(Job.objects.filter(kind__in=TRAIN_KINDS), job_id, "training run")
    return JsonResponse({"job": str(job.id), "kind": job.kind, "status": job.status, "progress": job.progress,
                         "message": job.message, "terminal": job.is_terminal, "points": run_curve(job=job)})
