"""Reads of training: the checkpoint registry, a run's metrics curve, and the comparison table."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.models import QuerySet

from console.models import Checkpoint, Job, JobStatus

__all__ = ["COMPARE_COLUMNS", "CURVE_FIELDS", "PAIRED_COLUMNS", "TRAIN_KINDS", "checkpoint_list", "compare_csv",
           "compare_markdown", "compare_rows", "paired_rows", "paired_text", "run_curve", "run_jobs", "run_metrics"]

TRAIN_KINDS = ("train.sft", "train.care", "train.evaluate")
CATEGORY_COLUMNS = (("overall", "Overall"), ("tool_use", "Tool Use"), ("memory", "Memory"), ("skills", "Skills"),
                    ("sub_agent", "Sub-agent"))
COST_COLUMNS = (("mean_output_tokens", "Output tokens"), ("mean_tool_calls", "Tool calls"),
                ("cost_per_1k_tasks", "Cost per 1k tasks ($)"))
COMPARE_COLUMNS = CATEGORY_COLUMNS + COST_COLUMNS
# What the training page plots: SFT's loss; CARE / GRPO's reward, success, output tokens, tool calls (and kl).
CURVE_FIELDS = ("loss", "reward", "success", "output_tokens", "tool_calls", "kl")


def checkpoint_list() -> QuerySet[Checkpoint]:
    """Every checkpoint, newest first, with its lineage (parent, dataset) and run job."""
    return Checkpoint.objects.select_related("parent", "dataset", "job").order_by("-created_at")


def run_jobs(limit: int = 30) -> QuerySet[Job]:
    return Job.objects.filter(kind__in=TRAIN_KINDS).select_related("created_by").order_by("-created_at")[:limit]


def run_metrics(*, job: Job) -> list[dict[str, Any]]:
    """The run's metrics points (``checkpoints/<job>/metrics.jsonl``), in order; [] before the first."""
    path = Path(settings.FLYWHEEL_DATA_DIR) / "checkpoints" / str(job.id) / "metrics.jsonl"
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:  # a line being written
            continue
    return out


def _number(v: Any) -> float | int | None:
    # JSON has no NaN or Infinity (a diverged loss writes NaN): the page gets null, a gap in the curve.
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        return None
    return v


def run_curve(*, job: Job) -> list[dict[str, Any]]:
    """The run's metrics points as the page plots them: ``step`` (SFT's step, CARE's iteration), each of
    ``CURVE_FIELDS`` (None where the run has no such number), ``competence_hist`` (CARE: tracked tasks
    per tenth of competence; None elsewhere) and ``attempt``."""
    out = []
    for p in run_metrics(job=job):
        point: dict[str, Any] = {"step": _number(p.get("step", p.get("iteration")))}
        point.update({key: _number(p.get(key)) for key in CURVE_FIELDS})
        hist = p.get("competence_hist")
        point["competence_hist"] = [_number(c) or 0 for c in hist] if isinstance(hist, list) else None
        point["attempt"] = _number(p.get("attempt"))
        out.append(point)
    return out


def _row(name: str, kind: str, mean: dict[str, Any], std: dict[str, Any], checkpoint: Checkpoint | None, *,
         key: str, job: Any = None, harness: str = "", url: str = "") -> dict:
    # key: what ``?baseline=`` names the row by; job: the evaluation job whose per-task outcomes pair it
    row: dict[str, Any] = {"name": name, "kind": kind, "checkpoint": checkpoint, "harness": harness or "",
                           "url": url, "key": key, "job": str(job) if job else "", "cells": [], "paired": None,
                           "paired_note": ""}
    for col, _label in CATEGORY_COLUMNS:
        m, s = mean.get(col), std.get(col)
        row["cells"].append({"key": col, "mean": m, "std": s,
                             "text": f"{m:.2f} ± {s:.2f}" if isinstance(m, int | float) and isinstance(s, int | float)
                             else "—"})
    for col, _label in COST_COLUMNS:
        m = mean.get(col)
        row["cells"].append({"key": col, "mean": m, "std": None,
                             "text": (f"{m:.4f}" if col == "cost_per_1k_tasks" else f"{m:.2f}")
                             if isinstance(m, int | float) else "—"})
    return row


def _evaluations(target: str) -> QuerySet[Job]:
    return (Job.objects.filter(kind="train.evaluate", status=JobStatus.SUCCEEDED, config__checkpoint=target)
            .order_by("-finished_at"))


def _scored(result: Any) -> bool:
    return isinstance(result, dict) and isinstance(result.get("mean"), dict)


def compare_rows() -> list[dict[str, Any]]:
    """The reference solver (its latest evaluation), each evaluated checkpoint (newest first), then each
    endpoint model (its latest evaluation per URL and model). Every row names the harness version it
    was evaluated under ("" for evaluations older than that record) and its ``key``, by which
    ``paired_rows`` takes it as the baseline."""
    rows = []
    ref = next((job for job in _evaluations("reference") if _scored(job.result)), None)
    if ref is not None:
        rows.append(_row("reference solver", "reference", ref.result["mean"], ref.result.get("std", {}), None,
                         key="reference", job=ref.id, harness=ref.result.get("harness", "")))
    for ckpt in checkpoint_list():
        if ckpt.scores and "mean" in ckpt.scores:
            rows.append(_row(ckpt.name, ckpt.kind, ckpt.scores["mean"], ckpt.scores.get("std", {}), ckpt,
                             key=str(ckpt.id), job=ckpt.scores.get("job"), harness=ckpt.scores.get("harness", "")))
    seen = set()
    for job in _evaluations("endpoint"):
        target = (job.config.get("endpoint_url", ""), job.config.get("endpoint_model", ""))
        if target in seen or not _scored(job.result):
            continue
        seen.add(target)
        rows.append(_row(target[1], "endpoint", job.result["mean"], job.result.get("std", {}), None,
                         key=f"endpoint:{job.id}", job=job.id, harness=job.result.get("harness", ""), url=target[0]))
    return rows


PAIRED_COLUMNS = (("overall_diff", "Δ Overall"), ("output_tokens_cut", "Output tokens cut %"),
                  ("tool_calls_cut", "Tool calls cut %"))


def _report(job_id: str, result: Any) -> Any:
    from ml.evaluate import EvalReport

    tasks = result.get("tasks") if isinstance(result, dict) else None
    return EvalReport(job_id, [], {}, {}, 0.0, tasks=tasks if isinstance(tasks, list) else [])


def _paired(job: str, base: str, results: dict[str, Any]) -> dict[str, tuple[float, float, float]]:
    """``ml.evaluate.paired_comparison`` of two evaluation jobs' per-task outcomes; cached, since a finished
    evaluation's result does not change (a ValueError, e.g. different tasks, propagates uncached)."""
    from django.core.cache import cache

    from ml.evaluate import paired_comparison

    cache_key = f"paired:v1:{job}:{base}"
    hit = cache.get(cache_key)
    if hit is None:
        hit = paired_comparison(_report(job, results.get(job)), _report(base, results.get(base)))
        cache.set(cache_key, hit, timeout=None)
    return hit


def paired_rows(rows: list[dict[str, Any]], baseline: str) -> None:
    """Set each row's ``paired`` (figure → (estimate, low, high), 95% bootstrap over the held-out tasks, against
    the row whose ``key`` is ``baseline``) or its ``paired_note`` (why it cannot be paired). Unknown ``baseline``:
    ValueError."""
    base = next((r for r in rows if r["key"] == baseline), None)
    if base is None:
        raise ValueError(f"no evaluated row {baseline!r} to pair against")
    ids = [r["job"] for r in rows if r["job"]]
    results = {str(i): res for i, res in Job.objects.filter(id__in=ids).values_list("id", "result")}
    for r in rows:
        if r is base:
            r["paired_note"] = "baseline"
        elif not r["job"] or not base["job"]:
            r["paired_note"] = "no evaluation job on record"
        else:
            try:
                r["paired"] = _paired(r["job"], base["job"], results)
            except ValueError as exc:
                r["paired_note"] = str(exc)
        # what the page shows: the estimate sorts, the interval reads; "clear" where it excludes zero
        r["paired_cells"] = [{"value": r["paired"][k][0], "text": paired_text(r["paired"][k]),
                              "clear": r["paired"][k][1] > 0 or r["paired"][k][2] < 0}
                             for k, _ in PAIRED_COLUMNS] if r["paired"] else []
        r["baseline"] = base["name"]


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def paired_text(fig: tuple[float, float, float]) -> str:
    est, lo, hi = fig
    return f"{est:+.2f} [{lo:+.2f}, {hi:+.2f}]"


def compare_markdown(rows: list[dict[str, Any]]) -> str:
    paired = any(r["paired"] or r["paired_note"] for r in rows)
    head = ["Planner", "Kind", *[label for _, label in COMPARE_COLUMNS], "Harness"]
    if paired:
        head += [f"{label} vs {_md(rows[0]['baseline'])} (95% CI)" for _, label in PAIRED_COLUMNS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [_md(r["name"]), r["kind"], *[c["text"] for c in r["cells"]], r["harness"] or "—"]
        if paired:
            cells += ([paired_text(r["paired"][k]) for k, _ in PAIRED_COLUMNS] if r["paired"]
                      else [_md(r["paired_note"])] * len(PAIRED_COLUMNS))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def compare_csv(rows: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    head = ["planner", "kind"]
    for key, _ in CATEGORY_COLUMNS:
        head += [f"{key}_mean", f"{key}_std"]
    head += [key for key, _ in COST_COLUMNS]
    head += ["harness", "endpoint_url"]
    paired = any(r["paired"] or r["paired_note"] for r in rows)
    if paired:
        head += ["paired_baseline", *[f"{key}{part}" for key, _ in PAIRED_COLUMNS for part in ("", "_lo", "_hi")],
                 "paired_note"]
    w.writerow(head)
    for r in rows:
        line = [r["name"], r["kind"]]
        for c in r["cells"][:len(CATEGORY_COLUMNS)]:
            line += [c["mean"], c["std"]]
        line += [c["mean"] for c in r["cells"][len(CATEGORY_COLUMNS):]]
        line += [r["harness"], r["url"]]
        if paired:
            figs = [x for key, _ in PAIRED_COLUMNS for x in (r["paired"][key] if r["paired"] else (None,) * 3)]
            line += [r["baseline"], *figs, r["paired_note"]]
        w.writerow(["" if v is None else v for v in line])
    return buf.getvalue()
