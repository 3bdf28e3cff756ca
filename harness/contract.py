"""The action–feedback–verification contract: typed records every room of Flywheel shares.

Plain dataclasses with ``to_dict``/``from_dict`` (JSON-safe) and a JSON Schema per record, so an
episode can be stored in Postgres, exported as OpenAI chat messages, and read back unchanged.
Nothing here imports Django or torch.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import IntEnum
from typing import Any, Literal

ToolKind = Literal["business", "memory", "skill", "subagent"]
TOOL_KINDS: tuple[str, ...] = ("business", "memory", "skill", "subagent")


class Code(IntEnum):
    """Stable error codes of a failed ToolResult (HTTP-like, so models and people read them alike)."""

    BAD_ARGUMENT = 400  # malformed output, missing/invalid argument
    NOT_FOUND = 404  # unknown tool, unknown id
    CONFLICT = 409  # the state does not allow it now (e.g. a cast is already active)
    PREREQUISITE = 412  # a prerequisite is unmet (developer options off, skill not loaded)
    SERVICE = 503  # the service failed (outage)


# ---------------------------------------------------------------------------------------------
# Tools


@dataclass
class ToolSpec:
    """One callable tool, in OpenAI function format plus Flywheel metadata."""

    name: str
    description: str
    parameters: dict[str, Any]  # JSON Schema: {"type": "object", "properties": ..., "required": [...]}
    domain: str
    kind: ToolKind = "business"
    prerequisites: list[str] = field(default_factory=list)  # human-readable, e.g. "developer options on"
    read_only: bool = False  # True when the tool never changes state (queries)

    def to_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ToolSpec:
        return cls(**d)


@dataclass
class ToolCall:
    """One function call a planner issued. ``arguments`` is the parsed object."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def key(self) -> str:
        """What the call does, without its id: equal keys = the same tool with the same arguments."""
        return json.dumps([self.name, self.arguments], sort_keys=True, ensure_ascii=False, default=str)

    def to_openai(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": json.dumps(self.arguments, ensure_ascii=False)},
        }

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ToolCall:
        args = d.get("arguments", {})
        if isinstance(args, str):
            args = json.loads(args) if args.strip() else {}
        return cls(id=d["id"], name=d["name"], arguments=args)


@dataclass
class PlannerTurn:
    """What the planner produced in one turn: thinking, visible text, and zero or more (parallel) calls.

    ``raw`` keeps the model's literal output when it had to be parsed; ``parse_errors`` lists what
    could not be parsed (each becomes a 400 result the planner sees on its next turn).
    """

    reasoning: str = ""
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    output_tokens: int = 0
    reasoning_tokens: int = 0
    raw: str | None = None
    parse_errors: list[str] = field(default_factory=list)

    @property
    def is_final(self) -> bool:
        """A turn with no calls (and nothing unparsable) ends the episode's current user turn."""
        return not self.tool_calls and not self.parse_errors

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PlannerTurn:
        d = dict(d)
        d["tool_calls"] = [ToolCall.from_dict(c) for c in d.get("tool_calls", [])]
        return cls(**d)


@dataclass
class ToolResult:
    """Structured action feedback: ``{success, message, data}`` or ``{success: false, error, code}``."""

    success: bool
    message: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    code: int = 0

    @classmethod
    def ok(cls, message: str, data: dict[str, Any] | None = None) -> ToolResult:
        return cls(success=True, message=message, data=data or {})

    @classmethod
    def fail(cls, code: int | Code, error: str) -> ToolResult:
        return cls(success=False, error=error, code=int(code))

    def to_dict(self) -> dict[str, Any]:
        if self.success:
            return {"success": True, "message": self.message, "data": self.data}
        return {"success": False, "error": self.error, "code": self.code}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ToolResult:
        if d.get("success"):
            return cls(success=True, message=d.get("message", ""), data=d.get("data") or {})
        return cls(success=False, error=d.get("error", ""), code=int(d.get("code", 0)))

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))


# ---------------------------------------------------------------------------------------------
# Verification


@dataclass
class CallVerification:
    """Whether a call's claimed effect is visible in device state (None: nothing to verify, e.g. a query)."""

    call_id: str
    tool: str
    verified: bool | None
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CallVerification:
        return cls(**d)


@dataclass
class Verdict:
    """The episode verifier's judgement, computed from state only."""

    success: bool
    progress: float  # in [0, 1]; 1.0 iff success
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Verdict:
        return cls(**d)


# ---------------------------------------------------------------------------------------------
# Steps and episodes


@dataclass
class Costs:
    output_tokens: int = 0
    reasoning_tokens: int = 0
    tool_calls: dict[str, int] = field(default_factory=lambda: {k: 0 for k in TOOL_KINDS})
    wall_time_s: float = 0.0

    @property
    def total_tool_calls(self) -> int:
        return sum(self.tool_calls.values())

    def add_turn(self, turn: PlannerTurn) -> None:
        self.output_tokens += turn.output_tokens
        self.reasoning_tokens += turn.reasoning_tokens

    def add_call(self, kind: str) -> None:
        self.tool_calls[kind] = self.tool_calls.get(kind, 0) + 1

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Costs:
        return cls(**d)


@dataclass
class CallRecord:
    """One executed call: what was asked, what came back, and whether state confirms it."""

    call: ToolCall
    result: ToolResult
    kind: str = "business"
    verification: CallVerification | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "call": self.call.to_dict(),
            "result": self.result.to_dict(),
            "kind": self.kind,
            "verification": self.verification.to_dict() if self.verification else None,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CallRecord:
        v = d.get("verification")
        return cls(
            call=ToolCall.from_dict(d["call"]),
            result=ToolResult.from_dict(d["result"]),
            kind=d.get("kind", "business"),
            verification=CallVerification.from_dict(v) if v else None,
        )


@dataclass
class Step:
    """One planner turn and everything it caused. ``user`` holds a user message that preceded it."""

    index: int
    turn: PlannerTurn
    calls: list[CallRecord] = field(default_factory=list)
    parse_errors: list[ToolResult] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    user: str | None = None
    state_diff: list[dict[str, Any]] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)  # names of the tools offered at this turn ([] = not recorded)

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "turn": self.turn.to_dict(),
            "calls": [c.to_dict() for c in self.calls],
            "parse_errors": [r.to_dict() for r in self.parse_errors],
            "notices": list(self.notices),
            "user": self.user,
            "state_diff": self.state_diff,
            "tools": list(self.tools),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Step:
        return cls(
            index=d["index"],
            turn=PlannerTurn.from_dict(d["turn"]),
            calls=[CallRecord.from_dict(c) for c in d.get("calls", [])],
            parse_errors=[ToolResult.from_dict(r) for r in d.get("parse_errors", [])],
            notices=list(d.get("notices", [])),
            user=d.get("user"),
            state_diff=list(d.get("state_diff", [])),
            tools=list(d.get("tools", [])),
        )


@dataclass
class Episode:
    """A whole attempt at one task: the messages the planner saw, every step, the verdict, the costs."""

    task: dict[str, Any]  # the task instance (see devices.virtual.tasks.Task.to_dict)
    planner: str
    environment: str = "virtual"
    harness_version: str = "default"
    messages: list[dict[str, Any]] = field(default_factory=list)  # OpenAI chat messages, complete
    tools: list[dict[str, Any]] = field(default_factory=list)  # OpenAI tool specs offered at the end
    steps: list[Step] = field(default_factory=list)
    verdict: Verdict | None = None
    costs: Costs = field(default_factory=Costs)
    final_answer: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "planner": self.planner,
            "environment": self.environment,
            "harness_version": self.harness_version,
            "messages": self.messages,
            "tools": self.tools,
            "steps": [s.to_dict() for s in self.steps],
            "verdict": self.verdict.to_dict() if self.verdict else None,
            "costs": self.costs.to_dict(),
            "final_answer": self.final_answer,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Episode:
        return cls(
            task=d["task"],
            planner=d["planner"],
            environment=d.get("environment", "virtual"),
            harness_version=d.get("harness_version", "default"),
            messages=d.get("messages", []),
            tools=d.get("tools", []),
            steps=[Step.from_dict(s) for s in d.get("steps", [])],
            verdict=Verdict.from_dict(d["verdict"]) if d.get("verdict") else None,
            costs=Costs.from_dict(d["costs"]) if d.get("costs") else Costs(),
            final_answer=d.get("final_answer", ""),
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, sort_keys=True)

    def to_chat(self) -> dict[str, Any]:
        """The OpenAI chat fine-tuning record: ``{"messages": [...], "tools": [...]}``."""
        return {"messages": self.messages, "tools": self.tools}


# ---------------------------------------------------------------------------------------------
# Chat messages (OpenAI format)


def assistant_message(turn: PlannerTurn) -> dict[str, Any]:
    """The assistant message for a turn; reasoning rides in ``reasoning_content`` (vLLM/Qwen style)."""
    msg: dict[str, Any] = {"role": "assistant", "content": turn.content or ""}
    if turn.reasoning:
        msg["reasoning_content"] = turn.reasoning
    if turn.tool_calls:
        msg["tool_calls"] = [c.to_openai() for c in turn.tool_calls]
    return msg


def tool_message(call_id: str, result: ToolResult) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": result.to_json()}


# ---------------------------------------------------------------------------------------------
# JSON Schemas (draft 2020-12), checked in tests against real records


_TOOL_CALL_SCHEMA = {
    "type": "object",
    "required": ["id", "name", "arguments"],
    "properties": {"id": {"type": "string"}, "name": {"type": "string"}, "arguments": {"type": "object"}},
}
_RESULT_SCHEMA = {
    "oneOf": [
        {
            "type": "object",
            "required": ["success", "message", "data"],
            "properties": {"success": {"const": True}, "message": {"type": "string"}, "data": {"type": "object"}},
            "additionalProperties": False,
        },
        {
            "type": "object",
            "required": ["success", "error", "code"],
            "properties": {
                "success": {"const": False},
                "error": {"type": "string"},
                "code": {"enum": [int(c) for c in Code]},
            },
            "additionalProperties": False,
        },
    ]
}
_TURN_SCHEMA = {
    "type": "object",
    "required": ["reasoning", "content", "tool_calls", "output_tokens", "reasoning_tokens"],
    "properties": {
        "reasoning": {"type": "string"},
        "content": {"type": "string"},
        "tool_calls": {"type": "array", "items": _TOOL_CALL_SCHEMA},
        "output_tokens": {"type": "integer", "minimum": 0},
        "reasoning_tokens": {"type": "integer", "minimum": 0},
        "raw": {"type": ["string", "null"]},
        "parse_errors": {"type": "array", "items": {"type": "string"}},
    },
}
_VERDICT_SCHEMA = {
    "type": "object",
    "required": ["success", "progress", "reason"],
    "properties": {
        "success": {"type": "boolean"},
        "progress": {"type": "number", "minimum": 0, "maximum": 1},
        "reason": {"type": "string"},
    },
}
_COSTS_SCHEMA = {
    "type": "object",
    "required": ["output_tokens", "reasoning_tokens", "tool_calls", "wall_time_s"],
    "properties": {
        "output_tokens": {"type": "integer", "minimum": 0},
        "reasoning_tokens": {"type": "integer", "minimum": 0},
        "tool_calls": {
            "type": "object",
            "properties": {k: {"type": "integer", "minimum": 0} for k in TOOL_KINDS},
            "required": list(TOOL_KINDS),
        },
        "wall_time_s": {"type": "number", "minimum": 0},
    },
}
_STEP_SCHEMA = {
    "type": "object",
    "required": ["index", "turn", "calls", "notices"],
    "properties": {
        "index": {"type": "integer", "minimum": 0},
        "turn": _TURN_SCHEMA,
        "calls": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["call", "result", "kind"],
                "properties": {
                    "call": _TOOL_CALL_SCHEMA,
                    "result": _RESULT_SCHEMA,
                    "kind": {"enum": list(TOOL_KINDS)},
                    "verification": {
                        "type": ["object", "null"],
                        "required": ["call_id", "tool", "verified"],
                        "properties": {"verified": {"type": ["boolean", "null"]}},
                    },
                },
            },
        },
        "parse_errors": {"type": "array", "items": _RESULT_SCHEMA},
        "notices": {"type": "array", "items": {"type": "string"}},
        "user": {"type": ["string", "null"]},
        "state_diff": {"type": "array"},
        "tools": {"type": "array", "items": {"type": "string"}},
    },
}

SCHEMAS: dict[str, dict[str, Any]] = {
    "ToolSpec": {
        "type": "object",
        "required": ["name", "description", "parameters", "domain", "kind"],
        "properties": {
            "name": {"type": "string", "pattern": "^[a-zA-Z0-9_]{1,64}$"},
            "description": {"type": "string", "minLength": 1},
            "parameters": {
                "type": "object",
                "required": ["type", "properties"],
                "properties": {"type": {"const": "object"}, "properties": {"type": "object"}},
            },
            "domain": {"type": "string"},
            "kind": {"enum": list(TOOL_KINDS)},
            "prerequisites": {"type": "array", "items": {"type": "string"}},
            "read_only": {"type": "boolean"},
        },
    },
    "ToolCall": _TOOL_CALL_SCHEMA,
    "PlannerTurn": _TURN_SCHEMA,
    "ToolResult": _RESULT_SCHEMA,
    "Verdict": _VERDICT_SCHEMA,
    "Costs": _COSTS_SCHEMA,
    "Step": _STEP_SCHEMA,
    "Episode": {
        "type": "object",
        "required": ["task", "planner", "messages", "steps", "verdict", "costs"],
        "properties": {
            "task": {"type": "object"},
            "planner": {"type": "string"},
            "environment": {"type": "string"},
            "messages": {"type": "array", "items": {"type": "object", "required": ["role"]}},
            "tools": {"type": "array"},
            "steps": {"type": "array", "items": _STEP_SCHEMA},
            "verdict": {"oneOf": [{"type": "null"}, _VERDICT_SCHEMA]},
            "costs": _COSTS_SCHEMA,
        },
    },
}
