"""Reading a model's raw text as a PlannerTurn (Qwen/Hermes tool-call style) and writing a turn back as text.

Format: ``<think>\\nREASONING\\n</think>\\n\\nCONTENT`` followed by one or more
``<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>`` blocks, newline-separated, as
Qwen's chat template renders an assistant turn. Malformed blocks never raise: they become
``parse_errors`` (400 results the planner sees next turn) and stay in ``content`` verbatim, so
``render_turn(parse_turn(raw))`` reproduces what the model said.
"""

from __future__ import annotations

import json
import re

from harness.contract import PlannerTurn, ToolCall

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
CALL_OPEN, CALL_CLOSE = "<tool_call>", "</tool_call>"
CALL_FORMAT_HINT = 'write each call as <tool_call>{"name": "TOOL", "arguments": {...}}</tool_call>'

_TOKEN = re.compile(r"\w+|[^\w\s]")


def estimate_tokens(text: str) -> int:
    """Tokens as words plus punctuation marks: a tokenizer-free estimate every planner shares, so
    bench figures compare planners on one scale (roughly 1.3x fewer than a BPE count on prose)."""
    return len(_TOKEN.findall(text)) if text else 0


def parse_turn(raw: str) -> PlannerTurn:
    """Split raw model output into reasoning, content and tool calls; never raises.

    Call ids are left empty (the episode loop assigns them); token counts are estimated.
    """
    text = raw if isinstance(raw, str) else str(raw)
    reasoning = ""
    close = text.find(THINK_CLOSE)
    if close >= 0:
        head = text[:close]
        opened = head.find(THINK_OPEN)
        # Some chat templates put the opening tag in the prompt: accept a bare closing tag.
        reasoning = (head[opened + len(THINK_OPEN):] if opened >= 0 else head).strip()
        text = text[close + len(THINK_CLOSE):]
    elif text.lstrip().startswith(THINK_OPEN):
        reasoning = text.lstrip()[len(THINK_OPEN):].strip()
        text = ""
    calls: list[ToolCall] = []
    errors: list[str] = []
    if close < 0 and reasoning:
        # Usually a generation cut off mid-thought: not a final answer, so tell the planner.
        errors.append(f"unterminated {THINK_OPEN} block: close it with {THINK_CLOSE}, then answer or call tools")
    kept: list[str] = []
    pos = 0
    n = 0
    while True:
        a = text.find(CALL_OPEN, pos)
        if a < 0:
            kept.append(text[pos:])
            break
        kept.append(text[pos:a])
        n += 1
        b = text.find(CALL_CLOSE, a)
        if b < 0:
            errors.append(f"tool call {n}: unterminated {CALL_OPEN} block; {CALL_FORMAT_HINT}")
            kept.append(text[a:])
            break
        body = text[a + len(CALL_OPEN):b].strip()
        end = b + len(CALL_CLOSE)
        call, problem = _read_call(body)
        if call is None:
            errors.append(f"tool call {n}: {problem}; {CALL_FORMAT_HINT}")
            kept.append(text[a:end])
        else:
            calls.append(call)
        pos = end
    content = "".join(kept).strip()
    turn = PlannerTurn(reasoning=reasoning, content=content, tool_calls=calls, raw=raw, parse_errors=errors)
    turn.output_tokens = estimate_tokens(raw)
    turn.reasoning_tokens = estimate_tokens(reasoning)
    return turn


def _read_call(body: str) -> tuple[ToolCall | None, str]:
    try:
        obj = json.loads(body)
    except json.JSONDecodeError as exc:
        return None, f"malformed JSON ({exc.msg} at char {exc.pos})"
    if not isinstance(obj, dict):
        return None, "the call must be a JSON object"
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        return None, "the call has no \"name\""
    args = obj.get("arguments", {})
    if isinstance(args, str):
        # Some models double-encode the arguments object; accept it when it decodes to an object.
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError as exc:
            return None, f"malformed JSON in the arguments of {name} ({exc.msg})"
    if not isinstance(args, dict):
        return None, f"the arguments of {name} must be a JSON object"
    return ToolCall(id="", name=name.strip(), arguments=args), ""


def render_call(call: ToolCall) -> str:
    body = json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False)
    return f"{CALL_OPEN}\n{body}\n{CALL_CLOSE}"


def render_turn(turn: PlannerTurn) -> str:
    """The raw text of a turn, inverse of ``parse_turn`` for stripped reasoning and content."""
    out = f"{THINK_OPEN}\n{turn.reasoning}\n{THINK_CLOSE}\n\n" if turn.reasoning else ""
    out += turn.content
    for i, call in enumerate(turn.tool_calls):
        if i or turn.content:
            out += "\n"
        out += render_call(call)
    return out
