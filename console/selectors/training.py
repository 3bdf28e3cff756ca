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

__all__ = ["COMPARE_COLUMNS", "CURVE_FIELDS", "TRAIN_KINDS", "checkpoint_list", "compare_csv", "compare_markdown",
           "compare_rows", "run_curve", "run_jobs", "run_metrics"]

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
         harness: str = "", url: str = "") -> dict:
    row: dict[str, Any] = {"name": name, "kind": kind, "checkpoint": checkpoint, "harness": harness or "",
                           "url": url, "cells": []}
    for key, _label in CATEGORY_COLUMNS:
        m, s = mean.get(key), std.get(key)
        row["cells"].append({"key": key, "mean": m, "std": s,
                             "text": f"{m:.2f} ± {s:.2f}" if isinstance(m, int | float) and isinstance(s, int | float)
                             else "—"})
    for key, _label in COST_COLUMNS:
        m = mean.get(key)
        row["cells"].append({"key": key, "mean": m, "std": None,
                             "text": (f"{m:.4f}" if key == "cost_per_1k_tasks" else f"{m:.2f}")
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
    was evaluated under ("" for evaluations older than that record)."""
    rows = []
    ref = next((job for job in _evaluations("reference") if _scored(job.result)), None)
    if ref is not None:
        rows.append(_row("reference solver", "reference", ref.result["mean"], ref.result.get("std", {}), None,
                         harness=ref.result.get("harness", "")))
    for ckpt in checkpoint_list():
        if ckpt.scores and "mean" in ckpt.scores:
            rows.append(_row(ckpt.name, ckpt.kind, ckpt.scores["mean"], ckpt.scores.get("std", {}), ckpt,
                             harness=ckpt.scores.get("harness", "")))
    seen = set()
    for job in _evaluations("endpoint"):
        target = (job.config.get("endpoint_url", ""), job.config.get("endpoint_model", ""))
        if target in seen or not _scored(job.result):
            continue
        seen.add(target)
        rows.append(_row(target[1], "endpoint", job.result["mean"], job.result.get("std", {}), None,
                         harness=job.result.get("harness", ""), url=target[0]))
    return rows


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def compare_markdown(rows: list[dict[str, Any]]) -> str:
    head = ["Planner", "Kind", *[label for _, label in COMPARE_COLUMNS], "Harness"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [_md(r["name"]), r["kind"], *[c["text"] for c in r["cells"]], r["harness"] or "—"]
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
    w.writerow(head)
    for r in rows:
        line = [r["name"], r["kind"]]
        for c in r["cells"][:len(CATEGORY_COLUMNS)]:
            line += [c["mean"], c["std"]]
        line += [c["mean"] for c in r["cells"][len(CATEGORY_COLUMNS):]]
        line += [r["harness"], r["url"]]
        w.writerow(["" if v is None else v for v in line])
    return buf.getvalue()
