"""The episode loop: context → planner → parse → execute calls → feedback → verification → notices → next turn.

``run_episode`` drives one task; ``run_episodes`` drives many in lock-step with one batched
``planner.generate`` per step for all active episodes (continuous batching: a finished episode's
slot takes the next task). The hot path avoids deep copies and state diffs: the world is
snapshotted once at the start and once at the end; per-step diffs are computed only on request.
"""

from __future__ import annotations

import itertools
import pickle
import time
from collections.abc import Callable, Iterable
from typing import Any

from devices.virtual.phone import VirtualPhone
from devices.virtual.registry import catalog
from devices.virtual.state import diff
from devices.virtual.tasks import Task
from harness.context import Context, initial_messages, offered_tools
from harness.contract import (
    CallRecord,
    CallVerification,
    Code,
    Costs,
    Episode,
    PlannerTurn,
    Step,
    ToolCall,
    ToolResult,
    Verdict,
    assistant_message,
    tool_message,
)
from harness.memory import MEMORY_TOOLS, MemoryStore
from harness.notices import NoticeTracker
from harness.parse import CALL_FORMAT_HINT, estimate_tokens, parse_turn, render_turn
from harness.planner import Planner
from harness.skills import PREFIX as SKILL_PREFIX
from harness.skills import SkillLibrary
from harness.subagents import TOOL_NAME as GUI_TOOL
from harness.subagents import GuiExecutor, SubAgents
from harness.version import HarnessVersion

_episode_ids = itertools.count(1)
_libraries: dict[str, SkillLibrary] = {}


def skill_library(version: HarnessVersion) -> SkillLibrary:
    """The skill library of a harness version (built once per version id)."""
    lib = _libraries.get(version.id)
    if lib is None:
        lib = _libraries[version.id] = SkillLibrary(version.skill_overrides)
    return lib


def tool_kind(name: str) -> str:
    if name in MEMORY_TOOLS:
        return "memory"
    if name.startswith(SKILL_PREFIX):
        return "skill"
    if name == GUI_TOOL:
        return "subagent"
    return "business"


def is_query(name: str) -> bool:
    """Tools whose repetition is not a loop: read-only business tools, memory search, skills, GUI sessions."""
    tool = catalog().tools.get(name)
    if tool is not None:
        return tool.spec.read_only
    return name == "search_user_memory" or name.startswith(SKILL_PREFIX) or name == GUI_TOOL


def world(env: Any, store: MemoryStore) -> dict[str, Any]:
    """What verifiers read: the device snapshot plus the user's memory."""
    w = env.snapshot()
    w["memory"] = store.snapshot()
    return w


class EpisodeRunner:
    """One episode's state between planner turns. ``start()`` then ``context()``/``apply(turn)`` until ``done``."""

    def __init__(
        self,
        task: Task,
        *,
        env: Any | None = None,
        harness: HarnessVersion | None = None,
        executor: GuiExecutor | None = None,
        record_diffs: bool = False,
        episode_id: str | None = None,
    ):
        self.task = task
        self.env = env if env is not None else VirtualPhone()
        self.version = harness or HarnessVersion.default()
        self.skills = skill_library(self.version)
        self.store = MemoryStore()
        self.agents = SubAgents(executor, self.version.gui_step_budget)
        self.record_diffs = record_diffs
        self.episode_id = episode_id or f"ep{next(_episode_ids)}"
        self.done = False
        self.wall = 0.0

    # -- lifecycle ----------------------------------------------------------------------------------

    def start(self) -> EpisodeRunner:
        t0 = time.perf_counter()
        task = self.task
        self.env.reset(task)
        self.store.reset(task.memory)
        self.agents.reset()
        self.notices = NoticeTracker(self.version.notice_rules, is_query)
        self.initial = world(self.env, self.store)
        self.template = catalog().templates.get(task.template)
        self.messages: list[dict[str, Any]] = initial_messages(task, self.version)
        self.offered_skills = [s for s in task.skills if s in self.skills]
        self.loaded: list[str] = []
        self._refresh_tools()
        self.steps: list[Step] = []
        self.costs = Costs()
        self.finals: list[str] = []
        self.followups = list(task.followups)
        self.pending_user: str | None = task.instruction
        self.results: dict[str, dict[str, Any]] = {}
        self.used_ids: set[str] = {
            c.get("id", "") for m in task.history for c in m.get("tool_calls", []) or [] if isinstance(c, dict)
        }
        self.done = False
        self.wall = time.perf_counter() - t0
        return self

    def _refresh_tools(self) -> None:
        self.tools = offered_tools(self.task, self.version, self.skills, self.loaded)
        self.offered = {t.name for t in self.tools}

    def context(self) -> Context:
        return Context(
            episode_id=self.episode_id,
            messages=self.messages,
            tools=self.tools,
            step=len(self.steps),
            budget=self.task.budget,
            task=self.task,
            results=self.results,
        )

    # -- one step -----------------------------------------------------------------------------------

    def apply(self, turn: PlannerTurn | str) -> Step:
        """Execute one planner turn and append its feedback; returns the recorded Step."""
        t0 = time.perf_counter()
        turn = _normalise(turn)
        index = len(self.steps)
        offered = [t.name for t in self.tools]
        self.store.clock = index
        for i, call in enumerate(turn.tool_calls):
            if not call.id or call.id in self.used_ids:
                call.id = f"call_{index}_{i}"
            self.used_ids.add(call.id)
        before = world(self.env, self.store) if self.record_diffs else None
        self.messages.append(assistant_message(turn))
        records = [self._execute(call) for call in turn.tool_calls]
        results: dict[str, dict[str, Any]] = {}
        for rec in records:
            self.messages.append(tool_message(rec.call.id, rec.result))
            self.costs.add_call(rec.kind)
            results[rec.call.id] = rec.result.to_dict()
        self.results = results
        self.costs.add_turn(turn)
        parse_errors = [ToolResult.fail(Code.BAD_ARGUMENT, e) for e in turn.parse_errors]
        if parse_errors:
            self.messages.append({
                "role": "system",
                "content": "Your last output could not be fully parsed: "
                + " | ".join(r.error for r in parse_errors)
                + f". The unparsable part was not executed; {CALL_FORMAT_HINT}.",
            })
        self.env.advance(1)
        notices = self.notices.after_step(records, index + 1, self.task.budget)
        for text in notices:
            self.messages.append({"role": "system", "content": text})
        step = Step(index=index, turn=turn, calls=records, parse_errors=parse_errors, notices=notices,
                    user=self.pending_user, tools=offered)
        if before is not None:
            step.state_diff = diff(before, world(self.env, self.store))
        self.pending_user = None
        self.steps.append(step)
        if turn.is_final:
            self.finals.append(turn.content)
            if self.followups:
                self.pending_user = self.followups.pop(0)
                self.messages.append({"role": "user", "content": self.pending_user})
            else:
                self.done = True
        if len(self.steps) >= self.task.budget:
            self.done = True
        self.wall += time.perf_counter() - t0
        return step

    def _execute(self, call: ToolCall) -> CallRecord:
        name, args = call.name, call.arguments
        kind = tool_kind(name)
        if name not in self.offered:
            provider = self.skills.provider(name, [s for s in self.offered_skills if s not in self.loaded])
            if provider is not None:
                result = ToolResult.fail(
                    Code.PREREQUISITE, f"tool {name} is not available; load {SKILL_PREFIX}{provider} first"
                )
            else:
                result = ToolResult.fail(
                    Code.NOT_FOUND, f"tool {name} is not available; use one of the offered tools"
                )
            return CallRecord(call, result, kind, CallVerification(call.id, name, None, "not offered"))
        verified: bool | None = None
        if kind == "memory":
            result = self.store.call(name, args)
            verified = self.store.verify(name, args, result)
        elif kind == "skill":
            skill = name[len(SKILL_PREFIX):]
            loaded = set(self.loaded)
            result = self.skills.load(skill, args, loaded)
            if skill in loaded and skill not in self.loaded:
                self.loaded.append(skill)
                self._refresh_tools()
        elif kind == "subagent":
            result = self.agents.call(self.env, args)
            if result.success and args.get("action") == "execute":
                verified = result.data.get("execution_status") == "completed"
        else:
            seq = getattr(self.env, "seq", 0)
            result = self.env.call(call)
            verify = getattr(self.env, "verify_call", None)
            verified = verify(name, args, result, seq) if verify is not None else None
        detail = "" if verified is None else ("effect visible in state" if verified else "effect NOT visible in state")
        return CallRecord(call, result, kind, CallVerification(call.id, name, verified, detail))

    # -- the end ------------------------------------------------------------------------------------

    def finish(self, planner_name: str = "") -> Episode:
        t0 = time.perf_counter()
        final = world(self.env, self.store)
        answer = "\n".join(a for a in self.finals if a)
        if self.template is None:
            verdict = Verdict(False, 0.0, f"unknown template {self.task.template}")
        else:
            try:
                verdict = self.template.verify(self.task, self.initial, final, answer)
            except Exception as exc:  # noqa: BLE001 - a verifier bug is the template's failure, not the run's crash
                verdict = Verdict(False, 0.0, f"verifier error: {type(exc).__name__}: {exc}")
        self.wall += time.perf_counter() - t0
        self.costs.wall_time_s = round(self.wall, 6)
        self.done = True
        return Episode(
            # The task is plain JSON-safe data: a pickle round trip copies it ~5x faster than asdict.
            task=pickle.loads(pickle.dumps(vars(self.task), protocol=pickle.HIGHEST_PROTOCOL)),
            planner=planner_name,
            environment=getattr(self.env, "name", "virtual"),
            harness_version=self.version.id,
            messages=self.messages,
            tools=[t.to_openai() for t in self.tools],
            steps=self.steps,
            verdict=verdict,
            costs=self.costs,
            final_answer=self.finals[-1] if self.finals else "",
        )


def _normalise(turn: PlannerTurn | str) -> PlannerTurn:
    """Raw text (or a turn holding only ``raw``) is parsed; token counts are estimated when missing."""
    if isinstance(turn, str):
        turn = PlannerTurn(raw=turn)
    if turn.raw is not None and not (turn.tool_calls or turn.reasoning or turn.content or turn.parse_errors):
        parsed = parse_turn(turn.raw)
        parsed.output_tokens = turn.output_tokens or parsed.output_tokens
        parsed.reasoning_tokens = turn.reasoning_tokens or parsed.reasoning_tokens
        turn = parsed
    if not turn.output_tokens:
        turn.output_tokens = estimate_tokens(turn.raw if turn.raw is not None else render_turn(turn))
    if not turn.reasoning_tokens and turn.reasoning:
        turn.reasoning_tokens = estimate_tokens(turn.reasoning)
    return turn


def _end(planner: Planner, episode_id: str) -> None:
    end = getattr(planner, "end_episode", None)
    if end is not None:
        end(episode_id)


def run_episode(
    task: Task,
    planner: Planner,
    *,
    env: Any | None = None,
    harness: HarnessVersion | None = None,
    executor: GuiExecutor | None = None,
    record_diffs: bool = False,
) -> Episode:
    """Run one task to its end (final answer with no follow-ups left, or the step budget)."""
    runner = EpisodeRunner(task, env=env, harness=harness, executor=executor, record_diffs=record_diffs).start()
    try:
        while not runner.done:
            t0 = time.perf_counter()
            turn = planner.generate([runner.context()])[0]
            runner.wall += time.perf_counter() - t0
            runner.apply(turn)
        return runner.finish(planner.name)
    finally:
        _end(planner, runner.episode_id)


def run_episodes(
    tasks: Iterable[Task],
    planner: Planner,
    *,
    harness: HarnessVersion | None = None,
    batch_size: int = 64,
    env_factory: Callable[[], Any] = VirtualPhone,
    executor: GuiExecutor | None = None,
    record_diffs: bool = False,
    on_episode: Callable[[int, Episode], None] | None = None,
    on_step: Callable[[int, Any, Step], None] | None = None,
) -> list[Episode]:
    """Run many tasks in lock-step: each step, ONE ``planner.generate`` for every active episode.

    At most ``batch_size`` episodes run at once, each on its own env (reused for the slot's next
    task). Returns episodes in task order; ``on_episode(index, episode)`` sees each as it finishes;
    ``on_step(index, env, step)`` sees each step right after it ran (e.g. to save the env's screen).
    """
    todo = list(enumerate(tasks))
    out: list[Episode | None] = [None] * len(todo)
    envs = [env_factory() for _ in range(min(batch_size, len(todo)))]
    active: list[tuple[int, EpisodeRunner, int]] = []  # (task index, runner, env slot)
    queue = iter(todo)

    def launch(slot: int) -> bool:
        nxt = next(queue, None)
        if nxt is None:
            return False
        idx, task = nxt
        runner = EpisodeRunner(task, env=envs[slot], harness=harness, executor=executor, record_diffs=record_diffs)
        active.append((idx, runner.start(), slot))
        return True

    for slot in range(len(envs)):
        launch(slot)
    while active:
        t0 = time.perf_counter()
        turns = planner.generate([r.context() for _, r, _ in active])
        share = (time.perf_counter() - t0) / len(active)
        if len(turns) != len(active):
            raise ValueError(f"planner {planner.name} returned {len(turns)} turns for {len(active)} contexts")
        still: list[tuple[int, EpisodeRunner, int]] = []
        freed: list[int] = []
        for (idx, runner, slot), turn in zip(active, turns, strict=True):
            runner.wall += share
            step = runner.apply(turn)
            if on_step is not None:
                on_step(idx, runner.env, step)
            if runner.done:
                ep = runner.finish(planner.name)
                _end(planner, runner.episode_id)
                out[idx] = ep
                if on_episode is not None:
                    on_episode(idx, ep)
                freed.append(slot)
            else:
                still.append((idx, runner, slot))
        active = still
        for slot in freed:
            launch(slot)
    return [ep for ep in out if ep is not None]
