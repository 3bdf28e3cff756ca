"""Curation: accepted trajectories → an immutable, versioned, reproducible training set.

Pipeline (each stage is a pure function of the stored rows, so the same inputs give byte-identical
files): dedupe (same task instance + same call sequence), balance to a target mix by category /
domain / difficulty (greedy removal from the most over-represented group until every share is
within tolerance; achieved vs target reported), split train / test by task instance (every attempt
of an instance on one side; instances of the held-out benchmark only ever in test), turn-level
error marks (erroneous turns masked, recoveries kept), then export under
``FLYWHEEL_DATA_DIR/datasets/<name>/v<version>/`` (format in docs/data.md). ``harness`` is imported
where it is used: importing it loads the phone's whole catalogue.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Max
from django.utils.text import slugify

from console.models import DatasetVersion, Job, Round, User
from console.selectors.rounds import accepted_trajectories, trajectory_steps

AXES = ("category", "domain", "difficulty")
FORMAT = "flywheel-chat-v1"


class CurationError(ValueError):
    """Bad curation input (unknown rounds, a malformed target mix, nothing to curate)."""


# ---------------------------------------------------------------------------------------------
# Inputs


def _round_ids(rounds: Any) -> list[str]:
    ids: list[str] = []
    for r in rounds or []:
        ids.append(str(r.id if isinstance(r, Round) else r))
    if not ids:
        raise CurationError("Choose at least one round to curate from.")
    found = {str(i) for i in Round.objects.filter(id__in=ids).values_list("id", flat=True)}
    missing = sorted(set(ids) - found)
    if missing:
        raise CurationError(f"Unknown round(s): {', '.join(missing)}.")
    return sorted(set(ids))


def mix_validate(*, target_mix: Any) -> dict[str, dict[str, float]]:
    """``{axis: {key: share >= 0}}`` normalised to sum 1 per axis; CurationError if malformed."""
    if target_mix is None:
        return {}
    if not isinstance(target_mix, dict):
        raise CurationError("target_mix must be an object like {\"category\": {\"tool_use\": 0.5, ...}}.")
    out: dict[str, dict[str, float]] = {}
    for axis, table in sorted(target_mix.items()):
        if axis not in AXES:
            raise CurationError(f"Unknown mix axis {axis!r}; use category, domain or difficulty.")
        if not isinstance(table, dict) or not table:
            raise CurationError(f"target_mix.{axis} must be a non-empty object of name -> share.")
        for key, value in table.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise CurationError(f"target_mix.{axis}.{key} must be a number of at least 0.")
        total = float(sum(table.values()))
        if total <= 0:
            raise CurationError(f"target_mix.{axis} must have a positive share somewhere.")
        out[axis] = {str(k): float(v) / total for k, v in sorted(table.items(), key=lambda kv: str(kv[0]))}
    return out


def _rank(seed: int, key: str) -> str:
    return hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()


# ---------------------------------------------------------------------------------------------
# Stages


def _items(round_ids: list[str]) -> list[dict[str, Any]]:
    trajs = list(accepted_trajectories(round_ids=round_ids))
    steps = trajectory_steps(trajectories=trajs)
    items = []
    for t in trajs:
        task = t.task
        items.append({
            "traj": t, "steps": steps.get(t.id, []), "instance": f"{task.template}#{task.seed}",
            "category": task.category, "domain": (task.domains or ["?"])[0], "difficulty": str(task.difficulty),
        })
    return items


def _dedupe(items: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    seen: set[tuple[str, tuple[str, ...]]] = set()
    out = []
    for it in items:
        calls = tuple(
            json.dumps([c["call"]["name"], c["call"].get("arguments", {})], sort_keys=True)
            for s in it["steps"] for c in s.data.get("calls", [])
        )
        key = (it["instance"], calls)
        if key in seen:
            continue
        seen.add(key)
        out.append(it)
    return out, len(items) - len(out)


def _balance(items: list[dict[str, Any]], target: dict[str, dict[str, float]], tolerance: float,
             seed: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Greedy: while some group's share exceeds its target by more than ``tolerance``, drop from that
    group the item whose groups are most over-represented overall (ties by seeded hash)."""
    missing = {axis: sorted(k for k, v in table.items() if v > 0 and not any(it[axis] == k for it in items))
               for axis, table in target.items()}
    effective: dict[str, dict[str, float]] = {}
    for axis, table in target.items():
        present = {k: v for k, v in table.items() if k not in missing[axis]}
        total = sum(present.values())
        effective[axis] = {k: (v / total if total else 0.0) for k, v in present.items()}
    # A group the mix does not ask for (share 0 or not named) is left out entirely.
    kept = [it for it in items if all(effective[axis].get(it[axis], 0.0) > 0 for axis in target)]
    kept.sort(key=lambda it: _rank(seed, str(it["traj"].id)))
    counts = {axis: Counter(it[axis] for it in kept) for axis in target}

    def excess(axis: str, key: str, n: int) -> float:
        return counts[axis][key] / n - effective[axis].get(key, 0.0)

    while kept and target:
        n = len(kept)
        off = max(abs(excess(axis, key, n)) for axis in target for key in set(counts[axis]) | set(effective[axis]))
        if off <= tolerance + 1e-12:
            break
        # Shrink the most over-represented group: that also lifts every under-represented one.
        worst_axis, worst_key, worst = "", "", -math.inf
        for axis in target:
            for key in sorted(counts[axis]):
                e = excess(axis, key, n)
                if counts[axis][key] and e > worst + 1e-12:
                    worst_axis, worst_key, worst = axis, key, e
        if not worst_axis or worst <= 0:
            break
        best_i, best_score = -1, -math.inf
        for i, it in enumerate(kept):
            if it[worst_axis] != worst_key:
                continue
            score = sum(excess(axis, it[axis], n) for axis in target)
            if score > best_score + 1e-12:
                best_i, best_score = i, score
        victim = kept.pop(best_i)
        for axis in target:
            counts[axis][victim[axis]] -= 1
    n = max(len(kept), 1)
    report: dict[str, Any] = {"target": target, "effective_target": effective, "tolerance": tolerance,
                              "missing": {a: m for a, m in missing.items() if m}, "achieved": {}, "deviation": {}}
    ok = True
    for axis in AXES:
        c = Counter(it[axis] for it in kept)
        report["achieved"][axis] = {k: round(c[k] / n, 6) for k in sorted(c)}
        if axis in target:
            keys = sorted(set(c) | set(effective[axis]))
            dev = {k: round(c[k] / n - effective[axis].get(k, 0.0), 6) for k in keys}
            report["deviation"][axis] = dev
            ok = ok and all(abs(v) <= tolerance + 1e-9 for v in dev.values())
    report["within_tolerance"] = ok and bool(kept)
    kept.sort(key=lambda it: (it["instance"], it["traj"].attempt, str(it["traj"].id)))
    return kept, report


def _split(items: list[dict[str, Any]], heldout_fraction: float, seed: int) -> dict[str, str]:
    """instance -> "train" | "test"; benchmark held-out instances are always test."""
    from harness.bench import held_out_ids

    bench = held_out_ids()
    instances = sorted({it["instance"] for it in items})
    forced = [i for i in instances if i in bench]
    free = sorted((i for i in instances if i not in bench), key=lambda i: _rank(seed, i))
    n_test = round(heldout_fraction * len(instances)) - len(forced)
    if heldout_fraction > 0 and len(free) > 1:
        n_test = max(n_test, 1)
    n_test = min(max(n_test, 0), max(len(free) - 1, 0))
    side = {i: "test" for i in forced}
    for k, inst in enumerate(free):
        side[inst] = "test" if k < n_test else "train"
    return side


def turn_marks(*, steps: list[Any], faults: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Per step ``{"step", "label", "mask", "auto"}``. Reviewer labels win; an unlabelled step whose
    call failed with a bad-argument error (not an injected fault) and whose tool later succeeds is
    marked erroneous automatically, and that later step a recovery."""
    faulty = {f.get("tool") for f in faults or []}
    labels = [(getattr(s, "label", "") or "") for s in steps]
    auto = [False] * len(steps)
    datas = [s.data if hasattr(s, "data") else s for s in steps]
    for i, d in enumerate(datas):
        if labels[i]:
            continue
        failed = [c["call"]["name"] for c in d.get("calls", []) if not c["result"].get("success")
                  and c["result"].get("code") == 400 and c["call"]["name"] not in faulty]
        for name in failed:
            for j in range(i + 1, len(datas)):
                if any(c["call"]["name"] == name and c["result"].get("success") for c in datas[j].get("calls", [])):
                    labels[i], auto[i] = "erroneous", True
                    if not labels[j]:
                        labels[j], auto[j] = "recovery", True
                    break
            if labels[i]:
                break
    return [{"step": d.get("index", i), "label": labels[i], "mask": labels[i] == "erroneous", "auto": auto[i]}
            for i, d in enumerate(datas)]


def _record(it: dict[str, Any], split: str) -> tuple[dict[str, Any], list[int]]:
    t = it["traj"]
    ep = t.episode
    marks = turn_marks(steps=it["steps"], faults=t.task.spec.get("faults"))
    messages = json.loads(json.dumps(ep.get("messages", [])))
    assistant = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    offset = len(assistant) - len(it["steps"])  # earlier dialogue (task history) comes first
    masked = []
    for k, mark in enumerate(marks):
        if mark["mask"] and 0 <= offset + k < len(assistant):
            messages[assistant[offset + k]]["weight"] = 0  # OpenAI fine-tuning's "leave out of the loss"
            masked.append(mark["step"])
    task = t.task
    metadata = {
        "attempt": t.attempt, "category": task.category, "difficulty": task.difficulty, "domains": list(task.domains),
        "instance": it["instance"], "planner": t.planner, "round": t.round.number, "split": split,
        "success": t.success, "task_id": str(task.id), "template": task.template, "trajectory_id": str(t.id),
        "turns": marks,
    }
    return {"messages": messages, "tools": ep.get("tools", []), "metadata": metadata}, masked


def _line(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n"


def _card(name: str, counts: dict[str, int], stats: dict[str, Any]) -> str:
    achieved = json.dumps(stats["achieved"], sort_keys=True)
    return (
        "---\n"
        "configs:\n"
        "- config_name: default\n"
        "  data_files:\n"
        "  - split: train\n"
        "    path: data/train.jsonl\n"
        "  - split: test\n"
        "    path: data/test.jsonl\n"
        "license: other\n"
        "task_categories:\n"
        "- text-generation\n"
        "tags:\n"
        "- tool-use\n"
        "- mobile-agents\n"
        "- flywheel\n"
        "---\n\n"
        f"# {name}\n\n"
        "Planner trajectories on the Flywheel virtual phone, reviewed and curated, in OpenAI chat format.\n"
        "Each row: `messages` (system, user, assistant with `tool_calls` and `reasoning_content`, tool), "
        "`tools` and `metadata` (both JSON-encoded strings here, because their shapes vary per row). An "
        "assistant message with `\"weight\": 0` is an erroneous turn to leave out of the loss.\n\n"
        f"- train: {counts['train']} trajectories\n- test: {counts['test']} trajectories "
        "(split by task instance; held-out benchmark instances never in train)\n\n"
        f"Composition (share of trajectories per axis): `{achieved}`\n\n"
        "```python\nfrom datasets import load_dataset\nds = load_dataset(\"path/to/this/folder\")\n```\n"
    )


def _export(directory: Path, name: str, records: dict[str, list[dict[str, Any]]], manifest: dict[str, Any],
            stats: dict[str, Any]) -> dict[str, str]:
    """Write every file (no timestamps, sorted keys, fixed order) and return relative path -> sha256."""
    files: dict[str, bytes] = {}
    for split in ("train", "test"):
        files[f"{split}.jsonl"] = "".join(_line(r) for r in records[split]).encode()
        hf_rows = [{"messages": r["messages"], "tools": json.dumps(r["tools"], sort_keys=True, ensure_ascii=False),
                    "metadata": json.dumps(r["metadata"], sort_keys=True, ensure_ascii=False)} for r in records[split]]
        files[f"hf/data/{split}.jsonl"] = "".join(_line(r) for r in hf_rows).encode()
    counts = {s: len(records[s]) for s in records}
    files["hf/README.md"] = _card(name, counts, stats).encode()
    files["manifest.json"] = (json.dumps(manifest, sort_keys=True, ensure_ascii=False, indent=1) + "\n").encode()
    sums = {path: hashlib.sha256(blob).hexdigest() for path, blob in sorted(files.items())}
    files["SHA256SUMS"] = "".join(f"{h}  {p}\n" for p, h in sorted(sums.items())).encode()
    if directory.exists():  # left by an attempt that died before its row was written
        shutil.rmtree(directory)
    for path, blob in files.items():
        target = directory / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(blob)
    return sums


def dataset_curate(
    *,
    rounds: Any,
    name: str,
    target_mix: Any,
    tolerance: float = 0.05,
    heldout_fraction: float = 0.1,
    seed: int = 0,
    user: User | None,
    job: Job | None = None,
) -> DatasetVersion:
    """Build and export the next version of dataset ``name`` from the rounds' accepted trajectories."""
    if not isinstance(name, str) or not name or slugify(name) != name or len(name) > 80:
        raise CurationError("The dataset name must be a slug: lower-case letters, digits, '-' or '_'.")
    if not (isinstance(tolerance, (int, float)) and 0 <= tolerance <= 1):
        raise CurationError("tolerance must be a number between 0 and 1.")
    if not (isinstance(heldout_fraction, (int, float)) and 0 <= heldout_fraction < 1):
        raise CurationError("heldout_fraction must be at least 0 and below 1.")
    if job is not None:
        existing = DatasetVersion.objects.filter(job=job).first()
        if existing is not None:  # a redelivered curate job: the version exists already
            return existing
    round_ids = _round_ids(rounds)
    target = mix_validate(target_mix=target_mix)
    items = _items(round_ids)
    if not items:
        raise CurationError("The chosen rounds have no accepted trajectories yet.")
    unique, duplicates = _dedupe(items)
    kept, stats = _balance(unique, target, float(tolerance), int(seed))
    side = _split(kept, float(heldout_fraction), int(seed))
    records: dict[str, list[dict[str, Any]]] = {"train": [], "test": []}
    masked: dict[str, list[int]] = {}
    for it in kept:
        split = side[it["instance"]]
        record, mask = _record(it, split)
        records[split].append(record)
        if mask:
            masked[str(it["traj"].id)] = mask
    config = {"target_mix": target, "tolerance": float(tolerance), "heldout_fraction": float(heldout_fraction),
              "seed": int(seed)}
    round_numbers = sorted(Round.objects.filter(id__in=round_ids).values_list("number", flat=True))
    stats.update({
        "input": len(items), "duplicates": duplicates, "dropped_for_balance": len(unique) - len(kept),
        "kept": len(kept), "train": len(records["train"]), "test": len(records["test"]),
        "instances": {s: len({r["metadata"]["instance"] for r in records[s]}) for s in records},
        "masked_turns": sum(len(v) for v in masked.values()),
        "recovery_turns": sum(1 for s in records.values() for r in s for m in r["metadata"]["turns"]
                              if m["label"] == "recovery"),
    })
    manifest = {
        "format": FORMAT, "name": name, "rounds": round_numbers, "round_ids": round_ids, "config": config,
        "splits": {s: [r["metadata"]["trajectory_id"] for r in records[s]] for s in records},
        "instances": {s: sorted({r["metadata"]["instance"] for r in records[s]}) for s in records},
        "masked": dict(sorted(masked.items())), "stats": stats,
        "files": {"train": "train.jsonl", "test": "test.jsonl", "hf": "hf/"},
    }
    root = Path(settings.FLYWHEEL_DATA_DIR)
    with transaction.atomic():
        # One curation per name at a time picks the version and writes its folder (no two share a folder).
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"dataset:{name}"])
        version = (DatasetVersion.objects.filter(name=name).aggregate(v=Max("version"))["v"] or 0) + 1
        rel = f"datasets/{name}/v{version}"
        files = _export(root / rel, name, records, manifest, stats)
        return DatasetVersion.objects.create(
            name=name, version=version, rounds=round_ids, job=job, config=config, manifest=manifest,
            stats=stats, files=files, export_dir=rel, created_by=user,
        )
