"""Rounds and task construction: create a round, generate executable TaskSpecs, validate and edit them.

Generation samples templates of the virtual phone's catalogue by the round's generation weights,
instantiates each with ``instance_seed(seed, template, index)``, drops instances of the held-out
benchmark and near-duplicates, and runs **executable validation** (the reference solver must
succeed, a do-nothing planner must fail). Every rejection is stored as a TaskSpec with status
``invalid`` and ``validation.reason``, so nothing generated is lost without a trace. The optional
instruction rewrite talks to an OpenAI-compatible ``/v1/chat/completions`` endpoint with urllib
(one small POST per task; a client library would add a dependency for nothing).

``devices`` and ``harness`` are imported where they are used: importing them loads the phone's whole
catalogue (about 0.3 s), which every process that imports the console's pages would pay otherwise.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
import re
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from django.db import transaction
from django.db.models import Max

from console.models import Round, TaskSpec, TaskStatus, User
from console.selectors.rounds import generation_weight, weight_names
from console.services.jobs import PermissionDenied
from console.services.review import review_items_create

Progress = Callable[[float, str], None]
Once = Callable[[str], AbstractContextManager[bool]]

WEIGHT_AXES = ("category", "domain", "difficulty")
REWRITE_TIMEOUT_S = 30.0


# ---------------------------------------------------------------------------------------------
# Rounds


def round_create(
    *, user: User | None, name: str = "", generation_weights: dict | None = None, config: dict | None = None
) -> Round:
    """A new open round numbered one past the highest so far (weights validated like the editor's).

    ``user`` None is the headless command; a person must be a manager (PermissionDenied otherwise)."""
    if user is not None and not getattr(user, "can_run_jobs", False):
        raise PermissionDenied("Only managers can start rounds.")
    weights = weights_validate(weights=generation_weights or {})
    with transaction.atomic():
        # One writer at a time picks the next number (the unique constraint would refuse a race anyway).
        Round.objects.select_for_update().order_by("-number").first()
        number = (Round.objects.aggregate(n=Max("number"))["n"] or 0) + 1
        return Round.objects.create(
            number=number, name=name or f"Round {number}", generation_weights=weights,
            config=dict(config or {}), created_by=user,
        )


def weights_validate(*, weights: Any) -> dict[str, dict[str, float]]:
    """Check generation weights ``{"category"|"domain"|"difficulty": {name: w >= 0}}``; ValueError if not."""
    if not isinstance(weights, dict):
        raise ValueError("Weights must be an object like {\"category\": {\"memory\": 2}}.")
    known = {axis: set(names) for axis, names in weight_names().items()}
    out: dict[str, dict[str, float]] = {}
    for axis, table in weights.items():
        if axis not in known:
            raise ValueError(f"Unknown weight axis {axis!r}; use one of: {', '.join(WEIGHT_AXES)}.")
        if not isinstance(table, dict):
            raise ValueError(f"Weights for {axis} must be an object of name -> number.")
        clean: dict[str, float] = {}
        for key, value in table.items():
            key = str(key)
            if key not in known[axis]:
                raise ValueError(f"Unknown {axis} {key!r}; known: {', '.join(sorted(known[axis]))}.")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
                raise ValueError(f"Weight of {axis} {key!r} must be a number, not {value!r}.")
            if value < 0 or value == float("inf"):
                raise ValueError(f"Weight of {axis} {key!r} must be a finite number of at least 0.")
            clean[key] = float(value)
        out[axis] = dict(sorted(clean.items()))
    return out


def round_weights_set(*, round: Round, weights: Any, user: User | None) -> Round:  # noqa: A002
    """A manager sets the round's generation weights (validated; ValueError says what was wrong)."""
    if user is not None and not getattr(user, "can_run_jobs", False):
        raise PermissionDenied("Only managers can change generation weights.")
    round.generation_weights = weights_validate(weights=weights)
    round.save(update_fields=["generation_weights"])
    return round


def template_weight(template: Any, weights: dict[str, dict[str, float]]) -> float:
    """A template's sampling weight: its ``generation_weight`` under the round's weights."""
    return generation_weight(weights=weights, category=template.category,
                             domains=template.domains or (template.domain,), difficulty=template.difficulty)


# ---------------------------------------------------------------------------------------------
# Hashes: what makes two tasks near-duplicates


def _normalise(value: Any) -> Any:
    if isinstance(value, str):
        return value.strip().lower()
    if isinstance(value, dict):
        return {str(k): _normalise(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_normalise(v) for v in value]
    return value


def _digest(obj: Any) -> str:
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def param_hash(spec: dict[str, Any]) -> str:
    """Template + normalised parameters (JSON with sorted keys, strings lower-cased and trimmed)."""
    return _digest({"template": spec["template"], "params": _normalise(spec.get("params", {}))})


def state_hash(spec: dict[str, Any]) -> str:
    """The initial world a planner meets and what it must reach: the virtual phone's state after
    ``reset(task)`` (``state_hash()``), the planted memory and the goal.

    The bare device state alone would make "set brightness to 40" and "... to 60" duplicates (same
    starting phone); with the goal in, two templates that pose the same exercise collide, as they should.
    """
    from devices.virtual.tasks import Task

    phone = _phone()
    try:
        phone.reset(Task.from_dict(spec))
        device = phone.state_hash()
    except Exception:  # noqa: BLE001 - a setup that cannot be applied; validation rejects the task
        device = _digest({"unappliable_setup": spec.get("setup")})
    return _digest({"device": device, "memory": _normalise(spec.get("memory", [])),
                    "goal": _normalise(spec.get("goal", {}))})


@functools.cache
def _phone() -> Any:
    from devices.virtual.phone import VirtualPhone

    return VirtualPhone()


@functools.cache
def held_out_hashes() -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """Ids, parameter hashes and state hashes of the held-out benchmark split (computed once)."""
    from harness.bench import suite_tasks

    tasks = suite_tasks("pa-sim", "test")
    specs = [t.to_dict() for t in tasks]
    return (frozenset(t.id for t in tasks), frozenset(param_hash(s) for s in specs),
            frozenset(state_hash(s) for s in specs))


# ---------------------------------------------------------------------------------------------
# Executable validation


def _outcome(ep: Any) -> dict[str, Any]:
    v = ep.verdict
    return {"success": bool(v and v.success), "progress": float(v.progress) if v else 0.0,
            "reason": v.reason if v else "no verdict", "steps": len(ep.steps)}


def validate_many(specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Executable validation of many specs at once (batched episodes): see ``task_validate``."""
    from devices.virtual.tasks import Task
    from harness.episode import run_episodes
    from harness.planner import DoNothingPlanner
    from harness.reference import ReferenceSolver

    out: list[dict[str, Any]] = [{} for _ in specs]
    runnable: list[int] = []
    tasks: list[Any] = []
    for i, spec in enumerate(specs):
        try:
            task = Task.from_dict(spec)
            task.template_obj  # noqa: B018 - raises KeyError for an unknown template
        except (TypeError, KeyError) as exc:
            out[i] = {"ok": False, "reason": f"malformed task: {exc}", "reference": {}, "do_nothing": {}}
            continue
        runnable.append(i)
        tasks.append(task)
    if tasks:
        refs = _safe_run(run_episodes, tasks, ReferenceSolver())
        nops = _safe_run(run_episodes, tasks, DoNothingPlanner())
        for i, ref, nop in zip(runnable, refs, nops, strict=True):
            if ref["success"] and not nop["success"]:
                reason = "ok"
            elif not ref["success"]:
                reason = f"infeasible: reference failed: {ref['reason']}"
            else:
                reason = "trivially true: do-nothing passes"
            out[i] = {"ok": reason == "ok", "reason": reason, "reference": ref, "do_nothing": nop}
    return out


def _safe_run(run: Callable[..., list[Any]], tasks: list[Any], planner: Any) -> list[dict[str, Any]]:
    """Outcomes in task order; a task whose episode raises (a broken spec) fails alone, not the batch."""
    try:
        return [_outcome(ep) for ep in run(tasks, planner, batch_size=64)]
    except Exception:  # noqa: BLE001 - fall back to one by one to find the culprit
        results = []
        for task in tasks:
            try:
                results.append(_outcome(run([task], planner, batch_size=1)[0]))
            except Exception as exc:  # noqa: BLE001 - a crashing task is an infeasible task
                results.append({"success": False, "progress": 0.0, "steps": 0,
                                "reason": f"episode error: {type(exc).__name__}: {exc}"})
        return results


def task_validate(*, spec: dict[str, Any]) -> dict[str, Any]:
    """``{"ok", "reason", "reference", "do_nothing"}``: the reference solver must succeed and doing
    nothing must fail, else the task is infeasible or trivially true."""
    return validate_many([spec])[0]


# ---------------------------------------------------------------------------------------------
# LLM rewrite of instructions (optional)


_VALUE = re.compile(r"\d+(?:[.:]\d+)?|'[^']+'|\"[^\"]+\"")


def instruction_rewrite(*, instruction: str, rewrite: dict[str, Any]) -> str:
    """Reword ``instruction`` through an OpenAI-compatible chat endpoint; raises RuntimeError on any
    failure (the caller keeps the template wording). Numbers and quoted values must survive."""
    url = str(rewrite.get("url") or "").rstrip("/")
    if not url:
        raise RuntimeError("rewrite needs a url")
    if not url.endswith("/chat/completions"):
        url = url + ("/chat/completions" if url.endswith("/v1") else "/v1/chat/completions")
    body = {
        "model": rewrite.get("model", ""),
        "temperature": float(rewrite.get("temperature", 0.7)),
        "max_tokens": 200,
        "messages": [
            {"role": "system", "content": "You rewrite requests a phone user gives their assistant. Keep every "
             "name, number, quoted value and the meaning exactly; change only the wording. Reply with the "
             "rewritten request alone."},
            {"role": "user", "content": instruction},
        ],
    }
    headers = {"Content-Type": "application/json"}
    if rewrite.get("api_key"):
        headers["Authorization"] = f"Bearer {rewrite['api_key']}"
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=float(rewrite.get("timeout_s", REWRITE_TIMEOUT_S))) as resp:  # noqa: S310
            reply = json.loads(resp.read().decode())
        text = reply["choices"][0]["message"]["content"]
    except (urllib.error.URLError, TimeoutError, OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise RuntimeError(f"rewrite endpoint error: {type(exc).__name__}: {exc}") from exc
    text = (text or "").strip()
    if len(text) > 1 and text[0] == text[-1] == '"' and text.count('"') == 2:
        text = text[1:-1].strip()
    if not text or len(text) > 4 * len(instruction) + 200:
        raise RuntimeError("rewrite endpoint returned an empty or runaway instruction")
    lost = [v for v in _VALUE.findall(instruction) if v.strip("'\"").lower() not in text.lower()]
    if lost:
        raise RuntimeError(f"rewrite dropped values {lost[:3]}")
    return text


# ---------------------------------------------------------------------------------------------
# Generation


def _instantiate(template: Any, seed: int) -> Any:
    """One task instance (a seam tests use to tamper with generated specs)."""
    return template.instantiate(seed)


def _report(progress: Progress | None, fraction: float, message: str) -> None:
    if progress is not None:
        progress(fraction, message)


def task_generate(
    *,
    round: Round,  # noqa: A002
    n_tasks: int,
    seed: int,
    rewrite: dict[str, Any] | None = None,
    progress: Progress | None = None,
    once: Once | None = None,
) -> dict[str, Any]:
    """Generate ``n_tasks`` TaskSpecs for ``round``; see the module docstring for the pipeline.

    ``once(key)`` (a job's ``effect_once``) guards the final write so a redelivered job writes once.
    Returns ``{"generated", "valid", "invalid", "duplicates", "rejections": {reason: n}}``.
    """
    from devices.virtual.registry import catalog
    from devices.virtual.tasks import instance_seed

    if n_tasks < 1:
        raise ValueError("n_tasks must be at least 1.")
    cat = catalog()
    weights = round.generation_weights or {}
    ids = sorted(cat.templates)
    tw = [template_weight(cat.templates[t], weights) for t in ids]
    if not any(w > 0 for w in tw):
        raise ValueError("Every template has weight 0 under this round's generation weights.")
    rng = random.Random(f"generate:{seed}")
    chosen = rng.choices(ids, weights=tw, k=n_tasks)
    # Continue a template's index after what this round already holds, so a second call draws new instances.
    index = Counter(TaskSpec.objects.filter(round=round).values_list("template", flat=True))
    held_ids, held_params, held_states = held_out_hashes()
    seen_params = set(TaskSpec.objects.values_list("param_hash", flat=True))
    seen_states = set(TaskSpec.objects.values_list("state_hash", flat=True))
    taken = set(TaskSpec.objects.filter(round=round).values_list("template", "seed"))

    rows: list[dict[str, Any]] = []
    for n, tid in enumerate(chosen):
        tpl = cat.templates[tid]
        while True:
            i = index[tid]
            index[tid] += 1
            inst = instance_seed(seed, tid, i)
            if (tid, inst) not in taken:
                break
        taken.add((tid, inst))
        task = _instantiate(tpl, inst)
        spec = task.to_dict()
        ph, sh = param_hash(spec), state_hash(spec)
        reason = ""
        if task.id in held_ids:
            reason = f"held-out: {task.id} is an instance of the held-out benchmark"
        elif ph in held_params:
            reason = "held-out: same parameters as a held-out benchmark instance"
        elif sh in held_states:
            reason = "held-out: same initial state and goal as a held-out benchmark instance"
        elif ph in seen_params:
            reason = "duplicate: same template and normalised parameters as an earlier task"
        elif sh in seen_states:
            reason = "duplicate: same initial state and goal as an earlier task"
        seen_params.add(ph)
        seen_states.add(sh)
        rows.append({"task": task, "spec": spec, "param_hash": ph, "state_hash": sh, "reason": reason,
                     "weight": template_weight(tpl, weights)})
        if n % 20 == 0:
            _report(progress, 0.3 * (n + 1) / n_tasks, f"sampled {n + 1} of {n_tasks}")

    fresh = [r for r in rows if not r["reason"]]
    for start in range(0, len(fresh), 50):
        chunk = fresh[start:start + 50]
        for r, v in zip(chunk, validate_many([r["spec"] for r in chunk]), strict=True):
            r["validation"] = v
            if not v["ok"]:
                r["reason"] = v["reason"]
        done = min(start + 50, len(fresh))
        _report(progress, 0.3 + 0.6 * done / max(len(fresh), 1), f"validated {done} of {len(fresh)}")

    rewritten = 0
    for r in rows:
        r["source"] = "template"
        r.setdefault("validation", {})
        if r["reason"] or not rewrite:
            continue
        try:
            text = instruction_rewrite(instruction=r["spec"]["instruction"], rewrite=rewrite)
        except RuntimeError as exc:
            r["validation"]["rewrite_error"] = str(exc)[:500]
            continue
        r["validation"]["template_instruction"] = r["spec"]["instruction"]
        r["spec"]["instruction"] = text
        r["source"] = f"llm:{str(rewrite.get('model', ''))[:27]}"
        rewritten += 1
    if rewrite:
        _report(progress, 0.95, f"rewrote {rewritten} instructions")

    result = _summary(rows, rewritten)
    guard = once("generate:write") if once is not None else nullcontext(True)
    with guard as first, transaction.atomic():
        if not first:
            return {**result, "already_written": True}
        specs = TaskSpec.objects.bulk_create([_taskspec(round, r) for r in rows])
        valid = [s for s in specs if s.status == TaskStatus.PENDING]
        if valid:
            review_items_create(queue="task", round=round, objects=valid)
    _report(progress, 1.0, f"{result['valid']} valid of {result['generated']}")
    return result


def _taskspec(round: Round, r: dict[str, Any]) -> TaskSpec:  # noqa: A002
    task, spec, reason = r["task"], r["spec"], r["reason"]
    validation = dict(r["validation"])
    validation["reason"] = reason or "ok"
    validation.setdefault("ok", not reason)
    return TaskSpec(
        round=round, template=task.template, category=task.category, domains=list(task.domains),
        tags=list(task.tags), difficulty=task.difficulty, seed=task.seed, instruction=spec["instruction"],
        spec=spec, param_hash=r["param_hash"], state_hash=r["state_hash"], source=r["source"],
        status=TaskStatus.INVALID if reason else TaskStatus.PENDING, validation=validation,
        priority=r["weight"],
    )


def _summary(rows: Iterable[dict[str, Any]], rewritten: int) -> dict[str, Any]:
    rows = list(rows)
    reasons = Counter(_reason_kind(r["reason"]) for r in rows if r["reason"])
    return {
        "generated": len(rows),
        "valid": sum(1 for r in rows if not r["reason"]),
        "invalid": sum(1 for r in rows if r["reason"]),
        "duplicates": sum(1 for r in rows if r["reason"].startswith("duplicate")),
        "held_out": sum(1 for r in rows if r["reason"].startswith("held-out")),
        "rewritten": rewritten,
        "rejections": dict(sorted(reasons.items())),
    }


def _reason_kind(reason: str) -> str:
    """The family of a rejection reason, for counting: "infeasible", "trivially true",
    "duplicate (parameters)", "duplicate (initial state)", "held-out (instance)", ..."""
    head, _, rest = reason.partition(":")
    if head in ("duplicate", "held-out"):
        what = "parameters" if "parameters" in rest else "initial state" if "initial state" in rest else "instance"
        return f"{head} ({what})"
    return head


# ---------------------------------------------------------------------------------------------
# Edits made in review


def task_edit_apply(*, task: TaskSpec, changes: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Apply a reviewer's edit (``instruction`` and/or ``goal``/``setup`` values) to a copy of the
    spec and re-validate it. Returns ``(new_spec, validation)``; ValueError for a malformed edit."""
    if not isinstance(changes, dict) or not changes:
        raise ValueError("An edit must be a non-empty object with 'instruction', 'goal' and/or 'setup'.")
    unknown = sorted(set(changes) - {"instruction", "goal", "setup"})
    if unknown:
        raise ValueError(f"Cannot edit {', '.join(unknown)}; editable: instruction, goal, setup.")
    spec = json.loads(json.dumps(task.spec))
    if "instruction" in changes:
        text = changes["instruction"]
        if not isinstance(text, str) or not text.strip():
            raise ValueError("The instruction must be a non-empty string.")
        if len(text) > 4000:
            raise ValueError("The instruction must be at most 4000 characters.")
        spec["instruction"] = text.strip()
    for key in ("goal", "setup"):
        if key not in changes:
            continue
        values = changes[key]
        if not isinstance(values, dict):
            raise ValueError(f"'{key}' must be an object of dotted state path -> value.")
        for path, value in values.items():
            if not isinstance(path, str) or not re.fullmatch(r"[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-]+)*", path):
                raise ValueError(f"'{key}' path {path!r} is not a dotted state path like 'connectivity.wifi.enabled'.")
            if key == "goal" and path not in spec.get("goal", {}):
                raise ValueError(f"'{path}' is not a goal of this task; goals: {', '.join(spec.get('goal', {}))}.")
            try:
                json.dumps(value)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"'{key}.{path}' must be a JSON value.") from exc
            spec.setdefault(key, {})[path] = value
    validation = task_validate(spec=spec)
    return spec, validation
