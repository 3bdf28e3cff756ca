"""Pages of the data flywheel: review queues, the trajectory viewer, rounds, review progress, datasets.

Each view parses input, calls the review / rounds services and the review / datasets selectors, and
renders. Role checks come first, so a refused visitor learns nothing about ids.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from console import job_kinds, services
from console.job_config import ConfigError
from console.models import (
    DatasetVersion,
    Decision,
    Job,
    Queue,
    QueueItem,
    Review,
    Round,
    StepLabel,
    TaskSpec,
    Trajectory,
    TrajectoryStep,
    User,
)
from console.sealing import secrets_scrub
from console.selectors.datasets import dataset_file as dataset_file_path
from console.selectors.datasets import dataset_get
from console.selectors.datasets import dataset_list as dataset_query
from console.selectors.lookup import uuid_or_404
from console.selectors.review import (
    queue_item_get,
    reason_code_list,
    review_agreement,
    review_log,
    review_queue_progress,
    round_funnel,
    round_get,
    trajectory_detail,
)
from console.selectors.review import round_list as round_query
from console.services.review import LeaseLost, ReviewError, review_claim_next, review_decide, review_lease_renew
from console.services.rounds import round_create, round_weights_set

QUEUE_URLS = {Queue.TASK: "console:review-tasks", Queue.TRAJECTORY: "console:review-trajectories"}
FLYWHEEL_KINDS = ("flywheel.generate", "flywheel.collect", "flywheel.curate", "flywheel.feedback")
FUNNEL_STAGES = (
    ("generated", "Generated"),
    ("validated", "Validated"),
    ("approved", "Approved"),
    ("collected", "Collected"),
    ("accepted", "Accepted"),
    ("in_dataset", "In dataset"),
)


# ---------------------------------------------------------------------------------------------
# Role checks and small lookups (404 for unknown ids, also for ids that are not UUIDs)


def _require_review(user: User) -> None:
    if not user.can_review:
        raise PermissionDenied("Only annotators and managers review; analysts read progress and the review log.")


def _require_manager(user: User) -> None:
    if not user.can_run_jobs:
        raise PermissionDenied("Only managers can start rounds and jobs or change generation weights.")


def _data_file(relative: str, *, under: str = "") -> Path:
    """The file at ``relative`` inside FLYWHEEL_DATA_DIR (and ``under`` it), or 404: never outside it."""
    root = Path(settings.FLYWHEEL_DATA_DIR).resolve()
    base = (root / under).resolve() if under else root
    path = (root / relative).resolve()
    if not relative or not path.is_relative_to(base) or not path.is_file():
        raise Http404("No such file.")
    return path


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _bars(rows: list[tuple[str, float]], *, width: int = 360) -> list[dict[str, Any]]:
    """Bar geometry for the inline SVG charts: each value scaled against the largest."""
    top = max((v for _, v in rows), default=0) or 1
    return [{"label": label, "value": value, "w": round(width * value / top, 1)} for label, value in rows]


# ---------------------------------------------------------------------------------------------
# Trajectory viewer


def _viewer_steps(trajectory: Trajectory) -> list[dict[str, Any]]:
    """Each step of the trajectory, shaped for the viewer template (calls, results, verification)."""
    steps = list(trajectory.steps.all())  # prefetched, in order, by trajectory_detail
    out = []
    for step in steps:
        data = step.data or {}
        turn = data.get("turn") or {}
        calls = []
        for rec in data.get("calls") or []:
            call = rec.get("call") or {}
            result = rec.get("result") or {}
            verification = rec.get("verification") or {}
            ok = bool(result.get("success"))
            calls.append({
                "id": call.get("id", ""),
                "name": call.get("name", "?"),
                "arguments": _compact(call.get("arguments", {})),
                "kind": rec.get("kind", ""),
                "ok": ok,
                "message": result.get("message", "") if ok else result.get("error", ""),
                "code": result.get("code", ""),
                "data": _pretty(result["data"]) if ok and result.get("data") not in (None, {}, []) else "",
                "verified": verification.get("verified"),
                "verify_detail": verification.get("detail", ""),
            })
        parse_errors = [
            {"message": e.get("error", ""), "code": e.get("code", "")} for e in data.get("parse_errors") or []
        ]
        out.append({
            "index": step.index,
            "user": data.get("user") or "",
            "reasoning": turn.get("reasoning") or "",
            "content": turn.get("content") or "",
            "calls": calls,
            "parse_errors": parse_errors,
            "notices": data.get("notices") or [],
            "state_diff": [
                {"path": d.get("path", ""), "before": _compact(d.get("before")), "after": _compact(d.get("after"))}
                for d in data.get("state_diff") or []
            ],
            "has_screen": bool(step.screen),
            "label": step.label,
            "comment": step.comment,
            "tokens": (turn.get("output_tokens") or 0, turn.get("reasoning_tokens") or 0),
            "erroneous": any(not c["ok"] for c in calls) or bool(parse_errors),
        })
    return out


def _viewer_context(trajectory: Trajectory) -> dict[str, Any]:
    costs = trajectory.costs or {}
    episode = trajectory.episode or {}
    verdict = episode.get("verdict") or {}
    return {
        "trajectory": trajectory,
        "steps": _viewer_steps(trajectory),
        "verdict": {
            "success": trajectory.success,
            "progress": trajectory.progress,
            "reason": trajectory.reason or verdict.get("reason", ""),
        },
        "final_answer": episode.get("final_answer", ""),
        "costs": {
            "output_tokens": costs.get("output_tokens", trajectory.output_tokens),
            "reasoning_tokens": costs.get("reasoning_tokens", trajectory.reasoning_tokens),
            "tool_calls": costs.get("tool_calls") or {},
            "total_calls": sum((costs.get("tool_calls") or {}).values()) or trajectory.tool_calls,
            "by_kind": ", ".join(f"{k} {n}" for k, n in sorted((costs.get("tool_calls") or {}).items()) if n),
            "wall_time_s": costs.get("wall_time_s", 0.0),
        },
        "labels": [(v, lbl) for v, lbl in StepLabel.choices if v],
    }


@require_GET
@login_required
def trajectory_view(request: HttpRequest, trajectory_id: str) -> HttpResponse:
    trajectory = trajectory_detail(trajectory_id=trajectory_id, user=request.user)
    context = _viewer_context(trajectory)
    context["reviews"] = trajectory.reviews.select_related("reviewer").order_by("created_at")
    return render(request, "console/review/trajectory.html", context)


@require_GET
@login_required
def trajectory_screen(request: HttpRequest, trajectory_id: str, index: int) -> FileResponse:
    step = (
        TrajectoryStep.objects.filter(trajectory_id=uuid_or_404(trajectory_id, "trajectory"), index=index)
        .only("screen")
        .first()
    )
    if step is None or not step.screen:
        raise Http404("No screen for this step.")
    path = _data_file(step.screen, under="screens")
    response = FileResponse(path.open("rb"), content_type="image/png")
    response["Cache-Control"] = "private, max-age=86400"
    return response


# ---------------------------------------------------------------------------------------------
# Review queues


def _queue_from(name: str) -> Queue:
    return Queue.TASK if name == "task" else Queue.TRAJECTORY


def _round_filter(request: HttpRequest) -> Round | None:
    key = request.GET.get("round") or request.POST.get("round") or ""
    return round_get(round_id=key) if key else None


def _task_context(task: TaskSpec, values: dict[str, str] | None = None) -> dict[str, Any]:
    spec = task.spec or {}
    validation = task.validation or {}
    values = values or {}
    return {
        "task": task,
        "params_json": _pretty(spec.get("params", {})),
        "goal_json": values.get("goal", _pretty(spec.get("goal", {}))),
        "setup_json": values.get("setup", _pretty(spec.get("setup", {}))),
        "instruction_value": values.get("instruction", task.instruction),
        "spec_tools": spec.get("tools", []),
        "spec_history": spec.get("history", []),
        "followups": spec.get("followups", []),
        "validation": validation,
        "reference_json": _pretty(validation.get("reference", {})) if validation.get("reference") else "",
        "do_nothing_json": _pretty(validation.get("do_nothing", {})) if validation.get("do_nothing") else "",
    }


def _item_page(
    request: HttpRequest,
    item: QueueItem,
    *,
    error: str = "",
    lease_lost: bool = False,
    values: dict[str, str] | None = None,
    status: int = 200,
) -> HttpResponse:
    queue = _queue_from(item.queue)
    context: dict[str, Any] = {
        "queue": queue,
        "queue_label": queue.label,
        "queue_url": reverse(QUEUE_URLS[queue]),
        "item": item,
        "reasons": list(reason_code_list(queue=queue)[:9]),
        "progress": review_queue_progress(queue=queue, round=item.round),
        "error": error,
        "lease_lost": lease_lost,
        "values": values or {},
        "round_filter": request.GET.get("round") or request.POST.get("round") or "",
    }
    if queue == Queue.TASK:
        context.update(_task_context(item.task, values))
    else:
        trajectory = trajectory_detail(trajectory_id=item.trajectory_id, user=request.user)
        context.update(_viewer_context(trajectory))
        context["task"] = trajectory.task
    return render(request, "console/review/item.html", context, status=status)


def _queue_page(request: HttpRequest, queue: Queue) -> HttpResponse:
    _require_review(request.user)
    round_ = _round_filter(request)
    item = review_claim_next(queue=queue, user=request.user, round=round_)
    if item is None:
        return render(
            request,
            "console/review/empty.html",
            {
                "queue": queue,
                "queue_label": queue.label,
                "progress": review_queue_progress(queue=queue, round=round_),
                "round": round_,
            },
        )
    return _item_page(request, queue_item_get(item_id=item.pk, user=request.user))


@require_GET
@login_required
def review_tasks(request: HttpRequest) -> HttpResponse:
    return _queue_page(request, Queue.TASK)


@require_GET
@login_required
def review_trajectories(request: HttpRequest) -> HttpResponse:
    return _queue_page(request, Queue.TRAJECTORY)


class _BadInput(ValueError):
    pass


def _parse_json_field(raw: str, name: str) -> Any:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise _BadInput(f"{name} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}.") from None
    if not isinstance(value, dict):
        raise _BadInput(f"{name} must be a JSON object, e.g. {{\"path.to.value\": 1}}.")
    return value


def _parse_edit(post: Any, task: TaskSpec) -> dict[str, Any]:
    """The changed fields of an edit: ``instruction`` and/or ``goal`` / ``setup`` objects."""
    spec = task.spec or {}
    edit: dict[str, Any] = {}
    instruction = post.get("instruction", "").strip()
    if instruction and instruction != task.instruction.strip():
        edit["instruction"] = instruction
    for name in ("goal", "setup"):
        raw = post.get(name, "").strip()
        if not raw:
            continue
        value = _parse_json_field(raw, name.capitalize())
        current = spec.get(name) or {}
        removed = sorted(set(current) - set(value))
        if removed:
            raise _BadInput(f"{name.capitalize()} edits change values; {', '.join(removed)} cannot be removed "
                            "(reject the task instead).")
        changed = {path: v for path, v in value.items() if path not in current or current[path] != v}
        if changed:
            edit[name] = changed
    if not edit:
        raise _BadInput("The edit changes nothing: change the instruction, the goal or the setup, or approve instead.")
    return edit


def _parse_step_labels(raw: str) -> list[dict[str, Any]]:
    if not raw.strip():
        return []
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        raise _BadInput("Step labels are not valid JSON.") from None
    if not isinstance(value, list):
        raise _BadInput("Step labels must be a list of {index, label, comment}.")
    labels = []
    for entry in value:
        if not isinstance(entry, dict) or not isinstance(entry.get("index"), int):
            raise _BadInput("Each step label needs an integer index.")
        label = entry.get("label", "") or ""
        if label not in StepLabel.values:
            raise _BadInput(f"Unknown step label {label!r}; use correct, erroneous or recovery.")
        comment = str(entry.get("comment", "") or "")
        if label or comment:
            labels.append({"index": entry["index"], "label": label, "comment": comment})
    return labels


@require_POST
@login_required
def review_decide_view(request: HttpRequest, item_id: str) -> HttpResponse:
    _require_review(request.user)
    item = queue_item_get(item_id=item_id, user=request.user)
    post = request.POST
    values = {k: post.get(k, "") for k in ("instruction", "goal", "setup", "comment", "reason_code", "decision")}
    decision = post.get("decision", "")
    if decision not in Decision.values:
        return _item_page(request, item, error="Choose a decision: approve, reject, edit or skip.",
                          values=values, status=400)
    try:
        editing = decision == Decision.EDIT and item.queue == Queue.TASK and item.task_id
        edit = _parse_edit(post, item.task) if editing else None
        step_labels = _parse_step_labels(post.get("step_labels", "")) if item.queue == Queue.TRAJECTORY else None
        review_decide(
            item=item,
            user=request.user,
            decision=decision,
            reason_code=post.get("reason_code", ""),
            comment=post.get("comment", ""),
            edit=edit,
            step_labels=step_labels or None,
        )
    except LeaseLost as exc:
        return _item_page(request, item, error=str(exc) or "Your claim on this item expired.", lease_lost=True,
                          values=values, status=409)
    except (ReviewError, _BadInput, ValueError) as exc:
        return _item_page(request, item, error=str(exc), values=values, status=400)
    messages.success(request, f"{Decision(decision).label} recorded.")
    url = reverse(QUEUE_URLS[_queue_from(item.queue)])
    if post.get("round"):
        url += f"?round={post['round']}"
    return redirect(url)


@require_POST
@login_required
def review_renew_view(request: HttpRequest, item_id: str) -> JsonResponse:
    _require_review(request.user)
    item = queue_item_get(item_id=item_id, user=request.user)
    try:
        item = review_lease_renew(item=item, user=request.user)
    except LeaseLost as exc:
        return JsonResponse({"ok": False, "detail": str(exc) or "Your claim on this item was lost."}, status=409)
    expires = item.lease_expires_at.isoformat() if item.lease_expires_at else None
    return JsonResponse({"ok": True, "lease_expires_at": expires})


@require_GET
@login_required
def review_progress(request: HttpRequest) -> HttpResponse:
    queues = []
    for queue in (Queue.TASK, Queue.TRAJECTORY):
        progress = review_queue_progress(queue=queue)
        agreement = review_agreement(queue=queue)
        queues.append({"queue": queue, "label": queue.label, "progress": progress, "agreement": agreement,
                       "url": reverse(QUEUE_URLS[queue])})
    return render(request, "console/review/progress.html", {"queues": queues})


@require_GET
@login_required
def review_log_page(request: HttpRequest) -> HttpResponse:
    queue = request.GET.get("queue", "")
    if queue not in Queue.values:
        queue = ""
    reviewer_name = request.GET.get("reviewer", "").strip()
    reviewer = User.objects.filter(username=reviewer_name).first() if reviewer_name else None
    if reviewer_name and reviewer is None:
        reviews = Review.objects.none()
    else:
        reviews = review_log(queue=queue or None, user=reviewer).select_related("reviewer")
    page = Paginator(reviews, 100).get_page(request.GET.get("page"))
    return render(request, "console/review/log.html", {
        "page": page, "reviews": page.object_list, "queues": Queue.choices,
        "filters": {"queue": queue, "reviewer": reviewer_name},
    })


# ---------------------------------------------------------------------------------------------
# Rounds


def _round_rows(rounds: Any) -> list[dict[str, Any]]:
    return [{"round": r, "funnel": round_funnel(round=r)} for r in rounds]


def _rounds_page(request: HttpRequest, *, error: str = "", values: dict[str, str] | None = None,
                 status: int = 200) -> HttpResponse:
    page = Paginator(round_query(), 25).get_page(request.GET.get("page"))
    latest = round_query().first()
    suggested = latest.suggested_weights if latest and latest.suggested_weights else (
        latest.generation_weights if latest else {}
    )
    values = values or {}
    return render(request, "console/rounds/list.html", {
        "page": page,
        "rows": _round_rows(page.object_list),
        "stages": FUNNEL_STAGES,
        "start_weights": values.get("weights", _pretty(suggested or {})),
        "start_name": values.get("name", ""),
        "start_error": error,
    }, status=status)


@require_GET
@login_required
def round_list(request: HttpRequest) -> HttpResponse:
    return _rounds_page(request)


@require_POST
@login_required
def round_start(request: HttpRequest) -> HttpResponse:
    _require_manager(request.user)
    name = request.POST.get("name", "").strip()[:200]
    raw = request.POST.get("weights", "").strip()
    try:
        weights = _parse_json_field(raw, "Weights") if raw else None
        round_ = round_create(user=request.user, name=name, generation_weights=weights)
    except ValueError as exc:  # _BadInput too
        return _rounds_page(request, error=str(exc), values={"name": name, "weights": raw}, status=400)
    messages.success(request, f"Started {round_}.")
    return redirect("console:round-detail", round_id=round_.id)


def _job_forms(round_: Round) -> list[dict[str, Any]]:
    forms = []
    for kind in FLYWHEEL_KINDS:
        try:
            spec = job_kinds.get(kind)
        except job_kinds.UnknownJobKind:
            continue
        config = spec.defaults()
        fields = {f for f in spec.field_help()}
        if "round_id" in fields:
            config["round_id"] = str(round_.id)
        elif "rounds" in fields:
            config["rounds"] = [str(round_.id)]
        forms.append({"kind": kind, "title": spec.title, "config": _pretty(config), "help": spec.field_help(),
                      "short": kind.split(".", 1)[1]})
    return forms


def _round_page(request: HttpRequest, round_: Round, *, weights_error: str = "", weights_value: str = "",
                job_error: tuple[str, str] = ("", ""), job_value: str = "", status: int = 200) -> HttpResponse:
    funnel = round_funnel(round=round_)
    stages = [(label, funnel.get(key, 0) or 0) for key, label in FUNNEL_STAGES]
    jobs = Job.objects.filter(kind__in=FLYWHEEL_KINDS, config__round_id=str(round_.id)).order_by("-created_at")[:20]
    datasets = DatasetVersion.objects.filter(rounds__contains=[round_.id]).order_by("-created_at")
    weights_axes = _weights_table(round_.generation_weights or {}, round_.suggested_weights or {})
    forms = _job_forms(round_)
    general_error = job_error[1]
    for form in forms:
        if job_error[1] and form["kind"] == job_error[0]:
            form["error"], general_error = job_error[1], ""
            form["config"] = secrets_scrub(job_value) or form["config"]  # a refused form loses its API keys
    return render(request, "console/rounds/detail.html", {
        "round": round_,
        "funnel": funnel,
        "bars": _bars(stages),
        "weights_axes": weights_axes,
        "weights_json": weights_value or _pretty(round_.suggested_weights or round_.generation_weights or {}),
        "weights_error": weights_error,
        "job_forms": forms,
        "job_error": general_error,
        "jobs": jobs,
        "datasets": datasets,
        "task_progress": review_queue_progress(queue=Queue.TASK, round=round_),
        "trajectory_progress": review_queue_progress(queue=Queue.TRAJECTORY, round=round_),
    }, status=status)


def _weights_table(current: dict, suggested: dict) -> list[dict[str, Any]]:
    axes = []
    for axis in sorted(set(current) | set(suggested)):
        cur = current.get(axis) or {}
        sug = suggested.get(axis) or {}
        if not isinstance(cur, dict) or not isinstance(sug, dict):
            continue
        rows = [{"name": k, "current": cur.get(k), "suggested": sug.get(k)} for k in sorted(set(cur) | set(sug))]
        axes.append({"axis": axis, "rows": rows})
    return axes


@require_GET
@login_required
def round_detail(request: HttpRequest, round_id: str) -> HttpResponse:
    return _round_page(request, round_get(round_id=round_id, user=request.user))


@require_POST
@login_required
def round_weights(request: HttpRequest, round_id: str) -> HttpResponse:
    _require_manager(request.user)
    round_ = round_get(round_id=round_id, user=request.user)
    raw = request.POST.get("weights", "")
    try:
        weights = _parse_json_field(raw, "Weights")
        round_weights_set(round=round_, weights=weights, user=request.user)
    except (_BadInput, ValueError) as exc:
        return _round_page(request, round_, weights_error=str(exc), weights_value=raw, status=400)
    messages.success(request, "Generation weights saved.")
    return redirect("console:round-detail", round_id=round_.id)


@require_POST
@login_required
def round_job_start(request: HttpRequest, round_id: str) -> HttpResponse:
    _require_manager(request.user)
    round_ = round_get(round_id=round_id, user=request.user)
    kind = request.POST.get("kind", "")
    raw = request.POST.get("config", "").strip() or "{}"
    if kind not in FLYWHEEL_KINDS:
        return _round_page(request, round_, job_error=(kind, f"Unknown round job {kind!r}."), status=400)
    try:
        config = _parse_json_field(raw, "Config")
        job = services.job_enqueue(kind=kind, config=config, created_by=request.user)
    except _BadInput as exc:
        return _round_page(request, round_, job_error=(kind, str(exc)), job_value=raw, status=400)
    except job_kinds.UnknownJobKind as exc:
        return _round_page(request, round_, job_error=(kind, str(exc)), job_value=raw, status=400)
    except ConfigError as exc:
        text = "; ".join(f"{name}: {' '.join(errs)}" for name, errs in exc.errors.items())
        return _round_page(request, round_, job_error=(kind, text), job_value=raw, status=400)
    messages.success(request, f"Started {job.kind}.")
    return redirect(job)


# ---------------------------------------------------------------------------------------------
# Datasets


@require_GET
@login_required
def dataset_list(request: HttpRequest) -> HttpResponse:
    page = Paginator(dataset_query(), 50).get_page(request.GET.get("page"))
    return render(request, "console/datasets/list.html", {"page": page, "datasets": page.object_list})


def _composition(stats: dict) -> list[dict[str, Any]]:
    """Achieved vs target share per axis, as chart rows, from the curation report
    (``achieved`` / ``effective_target`` / ``deviation`` / ``tolerance``, see services/curation.py)."""
    achieved = stats.get("achieved") or {}
    target = stats.get("effective_target") or stats.get("target") or {}
    deviation = stats.get("deviation") or {}
    tolerance = float(stats.get("tolerance") or 0.05)
    axes = []
    for axis in ("category", "domain", "difficulty"):
        got, want = achieved.get(axis) or {}, target.get(axis) or {}
        if not got and not want:
            continue
        rows = []
        for name in sorted(set(got) | set(want), key=str):
            a, t = float(got.get(name) or 0), float(want.get(name) or 0)
            dev = (deviation.get(axis) or {}).get(name)
            rows.append({"name": name, "achieved": a, "target": t if name in want else None,
                         "achieved_w": round(240 * min(a, 1), 1), "target_w": round(240 * min(t, 1), 1),
                         "off": dev is not None and abs(float(dev)) > tolerance + 1e-9})
        axes.append({"axis": axis, "rows": rows, "height": 22 * len(rows) + 8})
    return axes


STAT_FACTS = (
    ("input", "accepted trajectories in"), ("duplicates", "duplicates dropped"),
    ("dropped_for_balance", "dropped to balance"), ("kept", "kept"), ("train", "train"), ("test", "held out (test)"),
    ("masked_turns", "erroneous turns masked"), ("recovery_turns", "recovery turns kept"),
)


@require_GET
@login_required
def dataset_detail(request: HttpRequest, dataset_id: str) -> HttpResponse:
    dataset = dataset_get(dataset_id=dataset_id, user=request.user)
    files = [{"name": name, "sha256": sha} for name, sha in sorted((dataset.files or {}).items())]
    stats = dataset.stats or {}
    facts = [(label, stats[key]) for key, label in STAT_FACTS if key in stats]
    rounds = Round.objects.filter(id__in=dataset.rounds or []).order_by("number")
    return render(request, "console/datasets/detail.html", {
        "dataset": dataset,
        "files": files,
        "composition": _composition(stats),
        "facts": facts,
        "within_tolerance": stats.get("within_tolerance"),
        "tolerance": stats.get("tolerance"),
        "missing": stats.get("missing") or {},
        "config_json": _pretty(dataset.config or {}),
        "rounds": rounds,
    })


@require_GET
@login_required
def dataset_file(request: HttpRequest, dataset_id: str, name: str) -> FileResponse:
    dataset = dataset_get(dataset_id=dataset_id, user=request.user)
    path = dataset_file_path(version=dataset, path=name)
    return FileResponse(path.open("rb"), as_attachment=True, filename=Path(name).name)
