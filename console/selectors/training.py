"""Reads of training: the checkpoint registry, a run's metrics curve, and the comparison table."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.models import QuerySet

from console.models import Checkpoint, Job, JobStatus

__all__ = ["COMPARE_COLUMNS", "TRAIN_KINDS", "checkpoint_list", "compare_csv", "compare_markdown", "compare_rows",
           "run_jobs", "run_metrics"]

TRAIN_KINDS = ("train.sft", "train.care", "train.evaluate")
CATEGORY_COLUMNS = (("overall", "Overall"), ("tool_use", "Tool Use"), ("memory", "Memory"), ("skills", "Skills"),
                    ("sub_agent", "Sub-agent"))
COST_COLUMNS = (("mean_output_tokens", "Output tokens"), ("mean_tool_calls", "Tool calls"),
                ("cost_per_1k_tasks", "Cost per 1k tasks ($)"))
COMPARE_COLUMNS = CATEGORY_COLUMNS + COST_COLUMNS


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


def _row(name: str, kind: str, mean: dict[str, Any], std: dict[str, Any], checkpoint: Checkpoint | None) -> dict:
    row: dict[str, Any] = {"name": name, "kind": kind, "checkpoint": checkpoint, "cells": []}
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


def compare_rows() -> list[dict[str, Any]]:
    """The reference solver (its latest evaluation), then each evaluated checkpoint, newest first."""
    rows = []
    ref = (Job.objects.filter(kind="train.evaluate", status=JobStatus.SUCCEEDED, config__checkpoint="reference")
           .order_by("-finished_at").first())
    if ref is not None and isinstance(ref.result, dict) and "mean" in ref.result:
        rows.append(_row("reference solver", "reference", ref.result["mean"], ref.result.get("std", {}), None))
    for ckpt in checkpoint_list():
        if ckpt.scores and "mean" in ckpt.scores:
            rows.append(_row(ckpt.name, ckpt.kind, ckpt.scores["mean"], ckpt.scores.get("std", {}), ckpt))
    return rows


def compare_markdown(rows: list[dict[str, Any]]) -> str:
    head = ["Planner", "Kind", *[label for _, label in COMPARE_COLUMNS]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        lines.append("| " + " | ".join([r["name"], r["kind"], *[c["text"] for c in r["cells"]]]) + " |")
    return "\n".join(lines) + "\n"


def compare_csv(rows: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    head = ["planner", "kind"]
    for key, _ in CATEGORY_COLUMNS:
        head += [f"{key}_mean", f"{key}_std"]
    head += [key for key, _ in COST_COLUMNS]
    w.writerow(head)
    for r in rows:
        line = [r["name"], r["kind"]]
        for c in r["cells"][:len(CATEGORY_COLUMNS)]:
            line += [c["mean"], c["std"]]
        line += [c["mean"] for c in r["cells"][len(CATEGORY_COLUMNS):]]
        w.writerow(["" if v is None else v for v in line])
    return buf.getvalue()
