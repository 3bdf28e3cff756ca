"""Executable tasks: templates that sample a task instance from a seed, its verifier and its plan.

A ``Template`` is code; a ``Task`` is data (JSON-safe, storable as a TaskSpec): the instruction,
parameters, the initial-state patch, planted memory, offered tools and skills, faults, earlier
dialogue and follow-ups, and the goal the verifier checks. The verifier and the reference plan are
recomputed from the template and the task's parameters, so a stored task stays executable.

Most templates only write ``build(rng) -> Draft``: the generic verifier checks the goal paths,
ordering of logged events, the final answer, and that nothing outside ``allowed`` changed
(collateral damage); a template overrides ``check`` for anything else.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from devices.virtual.state import META, diff, get_path, path_allowed
from harness.contract import Verdict

CATEGORIES = ("tool_use", "memory", "skills", "sub_agent")
TAGS = ("multi_turn", "error_recovery")


# ---------------------------------------------------------------------------------------------
# The reference plan: what a competent planner does, step by step


@dataclass
class R:
    """A reference to an earlier call's result: ``R("note", "data.note_id")``."""

    name: str
    path: str


@dataclass
class Call:
    """One planned tool call. ``name`` labels its result for later ``R`` references; ``until``
    repeats the call (one per step) until the predicate on the result dict holds, for async work."""

    tool: str
    args: dict[str, Any] = field(default_factory=dict)
    name: str = ""
    until: Callable[[dict[str, Any]], bool] | None = None
    max_tries: int = 8


@dataclass
class Act:
    """One planner turn of the plan: the thought and the (parallel) calls issued together."""

    think: str
    calls: list[Call]
    # A call that is allowed to fail here (a planned probe or fault); the plan continues.
    may_fail: bool = False


@dataclass
class Say:
    """A final message ending the current user turn (a follow-up user turn may come after)."""

    text: str
    think: str = ""


PlanItem = Act | Say


def gui_agent(app: str, instruction: str, *, think: str, run: str = "Run it.", name: str = "gui") -> list[Act]:
    """The two turns that hand app work to the GUI sub-agent: start a session on ``app``, then execute it."""
    start = {"action": "start", "appName": app, "instruction": instruction}
    return [
        Act(think, [Call("control_gui_agent", start, name=name)]),
        Act(run, [Call("control_gui_agent", {"action": "execute", "sessionId": R(name, "data.sessionId")})]),
    ]


# ---------------------------------------------------------------------------------------------
# Draft (what a template builds) and Task (the stored instance)


@dataclass
class Draft:
    instruction: str
    params: dict[str, Any]
    plan: list[PlanItem]
    goal: dict[str, Any] = field(default_factory=dict)  # dotted path in the world -> required value
    allowed: list[str] = field(default_factory=list)  # further paths that may change
    setup: dict[str, Any] = field(default_factory=dict)  # dotted path -> initial value
    tools: list[str] = field(default_factory=list)  # offered from the start (besides memory/sub-agent)
    skills: list[str] = field(default_factory=list)  # offered as skill__<name>
    memory: list[dict[str, Any]] = field(default_factory=list)  # planted entries (gold + distractors)
    faults: list[dict[str, Any]] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)  # earlier chat messages
    followups: list[str] = field(default_factory=list)  # user turns after each final answer
    order: list[str] = field(default_factory=list)  # event names that must be logged in this order
    answer: list[str] = field(default_factory=list)  # strings the final answer must contain
    subagent: bool = False  # offer control_gui_agent
    budget: int = 16


@dataclass
class Task:
    id: str
    template: str
    category: str
    domains: list[str]
    tags: list[str]
    difficulty: int
    seed: int
    instruction: str
    params: dict[str, Any]
    goal: dict[str, Any]
    allowed: list[str]
    setup: dict[str, Any]
    tools: list[str]
    skills: list[str]
    memory: list[dict[str, Any]]
    faults: list[dict[str, Any]]
    history: list[dict[str, Any]]
    followups: list[str]
    order: list[str]
    answer: list[str]
    subagent: bool
    budget: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Task:
        return cls(**d)

    @property
    def template_obj(self) -> Template:
        from devices.virtual.registry import catalog

        return catalog().templates[self.template]


def instance_seed(suite_seed: int, template_id: str, index: int) -> int:
    """The AndroidWorld way: an instance is fully determined by (suite seed, template, index)."""
    h = hashlib.sha256(f"{suite_seed}:{template_id}:{index}".encode()).digest()
    return int.from_bytes(h[:8], "big") & 0x7FFFFFFFFFFFFFFF


@dataclass
class Template:
    """A parameterised task family. ``build`` samples a Draft; ``check`` (optional) adds verdict logic.

    ``check(task, initial, final, answer) -> (ok, reason) | None`` runs after the generic checks pass.
    """

    id: str
    domain: str
    category: str
    description: str
    build: Callable[[random.Random], Draft]
    tags: tuple[str, ...] = ()
    difficulty: int = 1
    domains: tuple[str, ...] = ()
    check: Callable[[Task, dict[str, Any], dict[str, Any], str], tuple[bool, str] | None] | None = None

    def __post_init__(self) -> None:
        if self.category not in CATEGORIES:
            raise ValueError(f"template {self.id}: unknown category {self.category}")
        for t in self.tags:
            if t not in TAGS:
                raise ValueError(f"template {self.id}: unknown tag {t}")

    def draft(self, seed: int) -> Draft:
        return self.build(random.Random(seed))

    def instantiate(self, seed: int) -> Task:
        d = self.draft(seed)
        return Task(
            id=f"{self.id}#{seed}",
            template=self.id,
            category=self.category,
            domains=list(self.domains or (self.domain,)),
            tags=list(self.tags),
            difficulty=self.difficulty,
            seed=seed,
            instruction=d.instruction,
            params=d.params,
            goal=d.goal,
            allowed=d.allowed,
            setup=d.setup,
            tools=d.tools,
            skills=d.skills,
            memory=d.memory,
            faults=d.faults,
            history=d.history,
            followups=d.followups,
            order=d.order,
            answer=d.answer,
            subagent=d.subagent,
            budget=d.budget,
        )

    def plan(self, task: Task) -> list[PlanItem]:
        """The reference plan for a stored task (rebuilt from its seed; plans hold code, not data)."""
        return self.draft(task.seed).plan

    def verify(self, task: Task, initial: dict[str, Any], final: dict[str, Any], answer: str = "") -> Verdict:
        return verify_task(task, initial, final, answer, self.check)


# ---------------------------------------------------------------------------------------------
# The generic verifier


def _events(state: dict[str, Any]) -> list[dict[str, Any]]:
    return state.get(META, {}).get("events", [])


def verify_task(
    task: Task,
    initial: dict[str, Any],
    final: dict[str, Any],
    answer: str = "",
    extra: Callable[[Task, dict[str, Any], dict[str, Any], str], tuple[bool, str] | None] | None = None,
) -> Verdict:
    """Goal values, event order, answer content, then collateral changes; progress is the share of
    those checks met (success needs all of them)."""
    checks: list[tuple[bool, str]] = []
    for path, want in task.goal.items():
        got = get_path(final, path)
        checks.append((got == want, f"{path} is {got!r}, expected {want!r}"))
    if task.order:
        seq = [e["event"] for e in _events(final)]
        pos, ok_order = 0, True
        for ev in task.order:
            try:
                pos = seq.index(ev, pos) + 1
            except ValueError:
                ok_order = False
                break
        checks.append((ok_order, f"events not in the required order {task.order} (log: {seq[-12:]})"))
    low = answer.lower()
    for needle in task.answer:
        checks.append((needle.lower() in low, f"final answer does not mention {needle!r}"))
    if extra is not None:
        res = extra(task, initial, final, answer)
        if res is not None:
            checks.append(res)
    met = sum(1 for good, _ in checks if good)
    failed = [why for good, why in checks if not good]
    allowed = list(task.goal) + list(task.allowed)
    collateral = [c["path"] for c in diff(initial, final) if not path_allowed(c["path"], allowed)]
    if collateral:
        failed.append(f"changed what the user did not ask for: {', '.join(collateral[:5])}")
    total = max(len(checks), 1)
    progress = met / total
    if failed:
        # Collateral damage caps progress below completion but keeps partial credit for the goal.
        return Verdict(success=False, progress=round(min(progress, 0.99), 4), reason="; ".join(failed))
    return Verdict(success=True, progress=1.0, reason="goal reached, nothing else changed")
