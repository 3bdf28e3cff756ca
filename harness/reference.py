"""The reference solver: a task-aware planner that executes each template's plan through the Harness.

It plays the plan's ``Act``/``Say`` items turn by turn, resolving ``R`` references from earlier
results and polling ``until`` calls one per step. A style knob varies the trajectories it produces
as cold-start data: concise or verbose reasoning, a redundant read-only status check before the
first action, a read-only check after each change that it took effect (as a cautious teacher's
traces do), and a recoverable mistake (a call missing a required argument, then the correction).
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from devices.virtual.registry import catalog
from devices.virtual.state import get_path
from devices.virtual.tasks import Act, Call, R, Say, Task
from harness.context import Context
from harness.contract import PlannerTurn, ToolCall, ToolSpec
from harness.parse import estimate_tokens, render_turn

REASONING_STYLES = ("concise", "verbose", "none")  # "none": the same actions with no reasoning at all
LABEL_KNOBS = {"checks": "redundant_checks", "verify": "verify", "mistake": "mistake"}  # label part -> field


@dataclass(frozen=True)
class ReferenceStyle:
    reasoning: str = "concise"  # concise | verbose | none
    redundant_checks: bool = False  # a read-only status query of the domain before the first action
    mistake: bool = False  # one call missing a required argument (400), then the corrected call
    verify: bool = False  # a read-only status query of the domain after each successful change

    def __post_init__(self) -> None:
        if self.reasoning not in REASONING_STYLES:
            raise ValueError(f"reasoning must be one of {REASONING_STYLES}")

    @property
    def label(self) -> str:
        parts = [self.reasoning] if self.reasoning != "concise" else []
        return ",".join(parts + [part for part, knob in LABEL_KNOBS.items() if getattr(self, knob)])

    @classmethod
    def from_label(cls, label: str) -> ReferenceStyle:
        """The inverse of ``label`` ("" or "concise" is the default style; parts in any order, joined by
        "," or "+"), e.g. ``"verbose+checks+verify"``."""
        parts = [p.strip() for p in re.split(r"[,+]", label) if p.strip() and p.strip() != "concise"]
        reasoning = [p for p in parts if p in REASONING_STYLES]
        unknown = [p for p in parts if p not in LABEL_KNOBS and p not in REASONING_STYLES]
        if unknown or len(reasoning) > 1 or len(set(parts)) != len(parts):
            raise ValueError(f"style {label!r}: parts are one of {', '.join(REASONING_STYLES)} and any of "
                             f"{', '.join(LABEL_KNOBS)}, each once")
        return cls(reasoning[0] if reasoning else "concise",
                   **{LABEL_KNOBS[p]: True for p in parts if p in LABEL_KNOBS})


class ReferenceSolver:
    """Batched ``generate``: one plan runner (a generator) per episode id, created on first sight."""

    def __init__(self, style: ReferenceStyle | None = None, **style_kw: Any):
        self.style = style or ReferenceStyle(**style_kw)
        self._runs: dict[str, Generator[PlannerTurn, Context, None]] = {}

    @property
    def name(self) -> str:
        return f"reference[{self.style.label}]" if self.style.label else "reference"

    def generate(self, contexts: list[Context]) -> list[PlannerTurn]:
        out = []
        for ctx in contexts:
            run = self._runs.get(ctx.episode_id)
            if run is None:
                if ctx.task is None:
                    raise ValueError("the reference solver needs the task in its context")
                run = _play(ctx.task, self.style)
                next(run)
                self._runs[ctx.episode_id] = run
            out.append(run.send(ctx))
        return out

    def end_episode(self, episode_id: str) -> None:
        run = self._runs.pop(episode_id, None)
        if run is not None:
            run.close()


# ---------------------------------------------------------------------------------------------


def _resolve(value: Any, labels: dict[str, dict[str, Any]]) -> Any:
    if isinstance(value, R):
        return get_path(labels.get(value.name, {}), value.path)
    if isinstance(value, dict):
        return {k: _resolve(v, labels) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, labels) for v in value]
    return value


def _holds(pred: Any, result: dict[str, Any]) -> bool:
    try:
        return bool(pred(result))
    except Exception:  # noqa: BLE001 - a predicate reading data a failed result lacks simply does not hold yet
        return False


def _turn(reasoning: str, calls: list[ToolCall] | None = None, content: str = "") -> PlannerTurn:
    t = PlannerTurn(reasoning=reasoning.strip(), content=content.strip(), tool_calls=list(calls or []))
    t.output_tokens = estimate_tokens(render_turn(t))
    t.reasoning_tokens = estimate_tokens(t.reasoning)
    return t


def _brief(result: dict[str, Any]) -> str:
    if result.get("success"):
        return result.get("message") or "ok"
    return f"error {result.get('code')}: {result.get('error', '')}"


def _call_text(call: ToolCall) -> str:
    return f"{call.name}({json.dumps(call.arguments, ensure_ascii=False)[1:-1]})"


def _verbose(ctx: Context, think: str, calls: list[ToolCall], names: dict[str, str], first: bool) -> str:
    """Longer deliberate reasoning built from the request, the evidence so far and the next calls."""
    lines = []
    if first and ctx.task is not None:
        lines.append(f"The user asks: \"{ctx.task.instruction.rstrip('.')}\".")
    elif ctx.messages and ctx.messages[-1].get("role") == "user":
        lines.append(f"The user now asks: \"{str(ctx.messages[-1].get('content', '')).rstrip('.')}\".")
    for cid, res in ctx.results.items():
        lines.append(f"{names.get(cid, 'The last call')} returned {_brief(res)}.")
    lines.append(think)
    if calls:
        lines.append("Next: " + "; ".join(_call_text(c) for c in calls) + ".")
        lines.append("I will wait for these results before any call that depends on them.")
    else:
        lines.append("Every change is confirmed by the tool results, so I can answer the user.")
    return " ".join(lines)


def _spec(ctx: Context, name: str) -> ToolSpec | None:
    for s in ctx.tools:
        if s.name == name:
            return s
    return None


def _status_tool(ctx: Context, act: Act, task: Task) -> str | None:
    """A read-only, argument-free query of the domain the act is about to change (None if none is offered)."""
    cat = catalog()
    domain = None
    for c in act.calls:
        tool = cat.tools.get(c.tool)
        if tool is not None and not tool.spec.read_only:
            domain = tool.spec.domain
            break
    if domain is None:
        return None
    faulty = {f.get("tool") for f in task.faults}
    fits = [
        s.name for s in ctx.tools
        if s.kind == "business" and s.read_only and s.domain == domain and not s.parameters.get("required")
        and s.name not in faulty
    ]
    fits.sort(key=lambda n: (not n.startswith("get_"), n))
    return fits[0] if fits else None


def _mutates(act: Act) -> bool:
    cat = catalog()
    return any(c.tool in cat.tools and not cat.tools[c.tool].spec.read_only for c in act.calls)


def _play(task: Task, style: ReferenceStyle) -> Generator[PlannerTurn, Context, None]:
    """Yield one turn per step; each ``send`` delivers the context holding the previous turn's results."""
    plan = task.template_obj.plan(task)
    steps_needed = len(plan)
    # Style extras cost steps; skip them when the budget is tight rather than fail the task.
    spare = task.budget - steps_needed
    want_check = style.redundant_checks and spare >= 2
    want_mistake = style.mistake and spare >= 3
    # Checks after changes spend what the other extras leave, keeping one spare step.
    verify_left = spare - 1 - want_check - want_mistake if style.verify else 0
    # Tools the plan expects to fail anyway (faults, probes): a slip there would stack failures of
    # one tool and turn a clean recovery into a repeated-failure trace.
    fragile = {f.get("tool") for f in task.faults}
    fragile |= {c.tool for item in plan if isinstance(item, Act) and item.may_fail for c in item.calls}
    verbose = style.reasoning == "verbose"
    silent = style.reasoning == "none"
    labels: dict[str, dict[str, Any]] = {}
    names: dict[str, str] = {}
    counter = 0
    first = True

    def ids(calls: list[tuple[str, dict[str, Any]]]) -> list[ToolCall]:
        nonlocal counter
        out = []
        for tool, args in calls:
            counter += 1
            out.append(ToolCall(id=f"call_{counter}", name=tool, arguments=args))
        return out

    def act_turn(ctx: Context, think: str, calls: list[ToolCall]) -> PlannerTurn:
        nonlocal first
        text = "" if silent else _verbose(ctx, think, calls, names, first) if verbose else think
        first = False
        for c in calls:
            names[c.id] = c.name
        return _turn(text, calls)

    ctx: Context = yield  # type: ignore[misc]
    for item in plan:
        if isinstance(item, Say):
            think = item.think or ("" if not verbose else "Report the outcome.")
            text = "" if silent else _verbose(ctx, think, [], names, first) if verbose else think
            first = False
            ctx = yield _turn(text, [], item.text)
            continue
        if want_check and _mutates(item):
            want_check = False
            probe = _status_tool(ctx, item, task)
            # Right after the same query it would add nothing, not even redundancy worth learning from.
            if probe is not None and probe not in {names.get(cid) for cid in ctx.results}:
                calls = ids([(probe, {})])
                ctx = yield act_turn(ctx, "Before changing anything, check the current state.", calls)
        if want_mistake:
            slip = None if item.may_fail else _slip(ctx, item, labels, fragile)
            if slip is not None:
                want_mistake = False
                call, dropped = slip
                bad = ids([(call.tool, call.args)])
                ctx = yield act_turn(ctx, item.think, bad)
                err = ctx.results.get(bad[0].id, {})
                why = "" if verbose else f"{bad[0].name} failed ({_brief(err)}). "
                item = Act(f"{why}The schema requires '{dropped}'; retry once with it. {item.think}",
                           item.calls, item.may_fail)
        pending: list[Call] = list(item.calls)
        tries = {id(c): 0 for c in pending}
        think = item.think
        while pending:
            calls = ids([(c.tool, _resolve(c.args, labels)) for c in pending])
            ctx = yield act_turn(ctx, think, calls)
            waiting: list[Call] = []
            for c, tc in zip(pending, calls, strict=True):
                res = ctx.results.get(tc.id, {})
                if c.name:
                    labels[c.name] = res
                tries[id(c)] += 1
                if c.until is not None and not _holds(c.until, res) and tries[id(c)] < c.max_tries:
                    waiting.append(c)
            pending = waiting
            think = (
                f"{', '.join(c.tool for c in pending)} has not finished yet; check again."
                if len(pending) == 1 else "Some operations have not finished yet; check them again."
            )
        # ``calls``: the act's last turn (its final poll, for one that waits).
        if verify_left > 0 and _mutates(item) and all(ctx.results.get(c.id, {}).get("success") for c in calls):
            probe = _status_tool(ctx, item, task)
            if probe is not None:
                verify_left -= 1
                ctx = yield act_turn(ctx, "Confirm that the change took effect.", ids([(probe, {})]))
    while True:  # the plan is over; anything further is answered politely
        ctx = yield _turn("", [], "Done.")


def _slip(
    ctx: Context, act: Act, labels: dict[str, dict[str, Any]], fragile: set[str | None]
) -> tuple[Call, str] | None:
    """The act's first offered call with a required argument, minus that argument (None if none fits)."""
    for c in act.calls:
        spec = _spec(ctx, c.tool)
        if spec is None or c.until is not None or c.tool in fragile:
            continue
        args = _resolve(c.args, labels)
        required = [r for r in spec.parameters.get("required", []) if r in args]
        if required:
            dropped = required[-1]
            return Call(c.tool, {k: v for k, v in args.items() if k != dropped}, name=""), dropped
    return None
