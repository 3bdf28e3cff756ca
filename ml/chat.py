"""Compact chat rendering for a small planner model: contexts in, text and token ids (with a loss mask) out.

The format is Qwen/Hermes ChatML (``<|im_start|>role\\n…<|im_end|>\\n``; assistant turns as
``harness.parse.render_turn`` writes them; tool results grouped in one user turn as
``<tool_response>\\n…\\n</tool_response>`` blocks), so ``harness.parse.parse_turn`` reads a
generation back exactly. ``CHAT_TEMPLATE`` is the same format in Jinja: the tokenizer's
``apply_chat_template(messages, tools=...)`` renders what ``render_text`` renders.

Compaction (``compact_messages``), because context length is a tiny CPU model's budget:

1. The harness policy (the first system message) is dropped unless ``keep_policy``: it is
   constant text the model learns from the data itself. Later system messages (runtime notices,
   parse-error feedback) are kept: they carry evidence.
2. Only the tools the Harness offers now are rendered, one line each, as a compact signature
   ``name(arg: type, opt?: a|b)`` (``?`` = optional; enums spelled out; descriptions dropped).
3. Every tool result is cut to ``max_result_chars`` (an ellipsis marks the cut). This rule depends
   only on the result itself, so while rule 4 stays out of it a context renders as a prefix of the
   whole episode.
4. Only when a prompt still exceeds ``max_context_tokens``: tool results older than the last
   ``keep_tool_results`` are cut to ``old_result_chars``, then (``encode_prompt``) the oldest
   tokens after the system block are dropped. Rule 4 depends on where the prompt ends, so training
   (``ml.sft.encode_views``) starts a new sequence at each turn whose prompt it changes: every
   trained turn sees exactly what generation shows it.

A generated turn has at most ``max_new_tokens``. The default, 256, holds every turn of the reference
solver's concise, checks and mistake styles (parallel calls included; at most 206 tokens on four
instance seeds of every template); its verbose style goes up to ~390, and such turns are not trained.

Written by hand (not a library) because the rendering has to match ``render_turn`` byte for byte.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any

from harness.contract import PlannerTurn, ToolCall, ToolSpec
from harness.parse import render_turn

IM_START, IM_END = "<|im_start|>", "<|im_end|>"
RESPONSE_OPEN, RESPONSE_CLOSE = "<tool_response>", "</tool_response>"
ENDOFTEXT = "<|endoftext|>"
SPECIAL_TOKENS = (
    ENDOFTEXT, IM_START, IM_END, "<think>", "</think>", "<tool_call>", "</tool_call>", RESPONSE_OPEN, RESPONSE_CLOSE,
)
ELLIPSIS = "…"
TYPE_NAMES = {"string": "str", "integer": "int", "number": "num", "boolean": "bool", "array": "list", "object": "obj"}

# The Jinja twin of ``render_text`` (tested to agree). Tools may be OpenAI tool dicts or bare functions.
CHAT_TEMPLATE = (
    "{%- set short = {'string': 'str', 'integer': 'int', 'number': 'num', 'boolean': 'bool', 'array': 'list',"
    " 'object': 'obj'} -%}"
    "{%- set msgs = messages -%}{%- set head = '' -%}"
    "{%- if messages and messages[0].role == 'system' -%}{%- set head = messages[0].content -%}"
    "{%- set msgs = messages[1:] -%}{%- endif -%}"
    "{%- if head or tools -%}{{- '<|im_start|>system\\n' + head -}}"
    "{%- if tools -%}{%- if head -%}{{- '\\n' -}}{%- endif -%}{{- '# Tools' -}}"
    "{%- for tool in tools -%}{%- set f = tool.function if tool.function is defined else tool -%}"
    "{%- set p = f.parameters if f.parameters is defined and f.parameters else {} -%}"
    "{%- set req = p.required if p.required is defined and p.required else [] -%}"
    "{{- '\\n' + f.name + '(' -}}"
    "{%- for name, spec in (p.properties.items() if p.properties is defined and p.properties else []) -%}"
    "{%- if not loop.first -%}{{- ', ' -}}{%- endif -%}"
    "{{- name + ('' if name in req else '?') + ': ' -}}"
    "{%- if spec.enum is defined and spec.enum -%}{{- spec.enum | join('|') -}}"
    "{%- else -%}{{- short.get(spec.type, spec.type if spec.type is string else 'any') -}}{%- endif -%}"
    "{%- endfor -%}{{- ')' -}}{%- endfor -%}{%- endif -%}{{- '<|im_end|>\\n' -}}{%- endif -%}"
    "{%- for m in msgs -%}"
    "{%- if m.role == 'assistant' -%}{{- '<|im_start|>assistant\\n' -}}"
    "{%- set r = m.reasoning_content if m.reasoning_content is defined and m.reasoning_content else '' -%}"
    "{%- set c = m.content if m.content else '' -%}"
    "{%- if r -%}{{- '<think>\\n' + r + '\\n</think>\\n\\n' -}}{%- endif -%}{{- c -}}"
    "{%- for tc in (m.tool_calls if m.tool_calls is defined and m.tool_calls else []) -%}"
    "{%- set fn = tc.function if tc.function is defined else tc -%}"
    "{%- if not loop.first or c -%}{{- '\\n' -}}{%- endif -%}"
    "{{- '<tool_call>\\n{\"name\": ' + (fn.name | tojson) + ', \"arguments\": ' -}}"
    "{%- if fn.arguments is string -%}{{- fn.arguments -}}{%- else -%}{{- fn.arguments | tojson -}}{%- endif -%}"
    "{{- '}\\n</tool_call>' -}}{%- endfor -%}{{- '<|im_end|>\\n' -}}"
    "{%- elif m.role == 'tool' -%}"
    "{%- if loop.first or loop.previtem.role != 'tool' -%}{{- '<|im_start|>user\\n' -}}"
    "{%- else -%}{{- '\\n' -}}{%- endif -%}"
    "{{- '<tool_response>\\n' + m.content + '\\n</tool_response>' -}}"
    "{%- if loop.last or loop.nextitem.role != 'tool' -%}{{- '<|im_end|>\\n' -}}{%- endif -%}"
    "{%- else -%}{{- '<|im_start|>' + m.role + '\\n' + (m.content if m.content else '') + '<|im_end|>\\n' -}}"
    "{%- endif -%}{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)


@dataclass
class ChatFormat:
    """How contexts are compacted and tokenised for a small model (see the module docstring's rules).

    keep_policy: keep the harness policy (first system message) instead of dropping it.
    max_result_chars: every tool result (and notice) is cut to this many characters. 400 keeps the
        memory facts the reference solver acts on in view: over two instances of each of the 93 templates,
        a value some tool result states and the reference then passes to a tool was cut out of the
        model's prompt in 14 of 186 episodes at 240 (a memory search's tip, medication, playlist,
        checklist; a forecast's day, a calendar's free slot; file listings), in 4 at 400 (ten-file
        listings), so the model was trained to guess them (``ml.sft.hidden_values``; ``tests/ml/test_chat.py``).
        Same-machine A/B, ``bench/sft_ab.py --flag max-result-chars --values 240,400 --sft-minutes 58``
        (5,249 / 5,234 steps on a slow day), on 48 held-out tasks, 240 vs 400: hidden values 10 vs 3,
        closed-loop success 4 vs 5 of 48, turn_exact 0.471 vs 0.457, held-out loss 0.217 vs 0.219; at
        that length of training the checkpoints fail on other values first, so the cut's effect on the
        score is within noise: the change removes a measured ceiling, not a measured gain yet.
    keep_tool_results: when over budget, this many most recent tool results stay at full length.
    old_result_chars: when over budget, older tool results are cut to this many characters.
    max_context_tokens: the prompt budget in tokens (prompt + ``max_new_tokens`` must fit the model).
    max_new_tokens: the most tokens one generated turn may have.
    """

    keep_policy: bool = False
    max_result_chars: int = 400
    keep_tool_results: int = 3
    old_result_chars: int = 40
    max_context_tokens: int = 768
    max_new_tokens: int = 256

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        errors = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.type in ("int", int) and (not isinstance(v, int) or v < 0):
                errors[f.name] = f"must be a non-negative integer, got {v!r}"
        if not errors:
            if self.max_result_chars < 8:
                errors["max_result_chars"] = "must be at least 8"
            if self.max_context_tokens < 32:
                errors["max_context_tokens"] = "must be at least 32"
            if self.max_new_tokens < 1:
                errors["max_new_tokens"] = "must be at least 1"
        raise_field_errors("ChatFormat", errors)


def raise_field_errors(what: str, errors: dict[str, str]) -> None:
    """One ValueError naming every bad field (``field: problem; ...``); ``.field_errors`` holds the dict."""
    if errors:
        exc = ValueError(f"invalid {what}: " + "; ".join(f"{k}: {v}" for k, v in errors.items()))
        exc.field_errors = errors  # type: ignore[attr-defined]
        raise exc


# ---------------------------------------------------------------------------------------------
# Tools and messages


def tool_dict(tool: ToolSpec | dict[str, Any]) -> dict[str, Any]:
    """The OpenAI function dict (``{"name", "description", "parameters"}``) of a ToolSpec or tool dict."""
    if isinstance(tool, ToolSpec):
        return {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
    return tool.get("function", tool)


def tool_signature(tool: ToolSpec | dict[str, Any]) -> str:
    """``name(arg: type, opt?: a|b)``: the compact schema line of one tool."""
    f = tool_dict(tool)
    params = f.get("parameters") or {}
    required = params.get("required") or []
    parts = []
    for name, spec in (params.get("properties") or {}).items():
        kind = "|".join(str(v) for v in spec["enum"]) if spec.get("enum") else TYPE_NAMES.get(
            spec.get("type"), spec.get("type") if isinstance(spec.get("type"), str) else "any")
        parts.append(f"{name}{'' if name in required else '?'}: {kind}")
    return f"{f['name']}({', '.join(parts)})"


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + ELLIPSIS


def compact_messages(messages: list[dict[str, Any]], fmt: ChatFormat, *, squeeze: bool = False
                     ) -> list[dict[str, Any]]:
    """Rules 1 and 3 (and rule 4's result cut when ``squeeze``); returns new message dicts."""
    out: list[dict[str, Any]] = []
    tool_idx = [i for i, m in enumerate(messages) if m.get("role") == "tool"]
    recent = set(tool_idx[-fmt.keep_tool_results:]) if fmt.keep_tool_results else set()
    for i, m in enumerate(messages):
        role = m.get("role")
        if i == 0 and role == "system" and not fmt.keep_policy:
            continue
        if role == "tool":
            limit = fmt.max_result_chars if not squeeze or i in recent else fmt.old_result_chars
            m = {**m, "content": cut(str(m.get("content", "")), limit)}
        elif role == "system" and i > 0:
            m = {**m, "content": cut(str(m.get("content", "")), fmt.max_result_chars)}
        out.append(m)
    return out


def assistant_text(msg: dict[str, Any]) -> str:
    """An assistant message as the model writes it (``render_turn``), without the ChatML wrapper."""
    calls = []
    for i, c in enumerate(msg.get("tool_calls") or []):
        fn = c.get("function", c)
        calls.append(ToolCall.from_dict({"id": c.get("id", f"c{i}"), "name": fn["name"],
                                         "arguments": fn.get("arguments", {})}))
    turn = PlannerTurn(reasoning=msg.get("reasoning_content") or "", content=msg.get("content") or "",
                       tool_calls=calls)
    return render_turn(turn)


@dataclass
class Segment:
    """A piece of rendered text; ``target`` marks assistant output (loss-bearing), ``message`` its index."""

    text: str
    target: bool = False
    message: int = -1


def render_segments(messages: list[dict[str, Any]], tools: list[Any] | None = None,
                    add_generation_prompt: bool = False) -> list[Segment]:
    """The format, as segments (no compaction). Joined, they equal ``CHAT_TEMPLATE``'s output."""
    segs: list[Segment] = []
    msgs = list(enumerate(messages))
    head = ""
    if msgs and msgs[0][1].get("role") == "system":
        head = msgs[0][1].get("content") or ""
        msgs = msgs[1:]
    if head or tools:
        text = IM_START + "system\n" + head
        if tools:
            text += ("\n" if head else "") + "# Tools" + "".join("\n" + tool_signature(t) for t in tools)
        segs.append(Segment(text + IM_END + "\n"))
    for k, (i, m) in enumerate(msgs):
        role = m.get("role")
        if role == "assistant":
            segs.append(Segment(IM_START + "assistant\n"))
            segs.append(Segment(assistant_text(m) + IM_END, target=True, message=i))
            segs.append(Segment("\n"))
        elif role == "tool":
            first = k == 0 or msgs[k - 1][1].get("role") != "tool"
            last = k == len(msgs) - 1 or msgs[k + 1][1].get("role") != "tool"
            text = (IM_START + "user\n" if first else "\n") + RESPONSE_OPEN + "\n" + str(m.get("content", ""))
            text += "\n" + RESPONSE_CLOSE + (IM_END + "\n" if last else "")
            segs.append(Segment(text, message=i))
        else:
            segs.append(Segment(IM_START + str(role) + "\n" + (m.get("content") or "") + IM_END + "\n", message=i))
    if add_generation_prompt:
        segs.append(Segment(IM_START + "assistant\n"))
    return segs


def render_text(messages: list[dict[str, Any]], tools: list[Any] | None = None,
                add_generation_prompt: bool = False) -> str:
    """The exact string ``tokenizer.apply_chat_template(messages, tools=tools, tokenize=False)`` gives."""
    return "".join(s.text for s in render_segments(messages, tools, add_generation_prompt))


def render_prompt(messages: list[dict[str, Any]], tools: list[Any], fmt: ChatFormat) -> str:
    """A context compacted (rules 1–3) and rendered with the generation prompt."""
    return render_text(compact_messages(messages, fmt), tools, add_generation_prompt=True)


# ---------------------------------------------------------------------------------------------
# Token ids


@dataclass
class TurnSpan:
    """Token positions ``[start, end)`` of one assistant turn; ``message`` is its index in the messages."""

    start: int
    end: int
    message: int


@dataclass
class Encoded:
    """Token ids of a rendered conversation, the loss mask (1 on assistant output) and each turn's span.

    ``weights``, when set, gives every token its loss weight where the mask is 1 (``ml.sft``'s value
    weighting); None means weight 1 throughout."""

    ids: list[int]
    mask: list[int]
    turns: list[TurnSpan] = field(default_factory=list)
    weights: list[float] | None = None


def encode_many(tokenizer: Any, texts: list[str]) -> list[list[int]]:
    backend = getattr(tokenizer, "backend_tokenizer", None) or getattr(tokenizer, "_tokenizer", None)
    if backend is not None:
        return [e.ids for e in backend.encode_batch(texts, add_special_tokens=False)]
    return [tokenizer.encode(t, add_special_tokens=False) for t in texts]


def encode_conversation(messages: list[dict[str, Any]], tools: list[Any], tokenizer: Any, fmt: ChatFormat,
                        *, train_messages: set[int] | None = None) -> Encoded:
    """Compact, render and tokenise a whole conversation for training.

    The loss mask is 1 on the tokens of assistant messages whose index is in ``train_messages``
    (all assistant messages when None), including their closing ``<|im_end|>``; every assistant
    message also gets a ``TurnSpan``. Segments are tokenised separately (they begin and end at
    special tokens or newlines, where the pre-tokeniser splits anyway), so ids equal those of the
    whole string.
    """
    squeeze = False
    while True:
        kept = compact_messages(messages, fmt, squeeze=squeeze)
        # compact_messages drops message 0 (policy) by default: map back to original indices.
        offset = 0 if fmt.keep_policy or not messages or messages[0].get("role") != "system" else 1
        segs = render_segments(kept, tools)
        pieces = encode_many(tokenizer, [s.text for s in segs])
        if squeeze or sum(len(p) for p in pieces) <= fmt.max_context_tokens + fmt.max_new_tokens:
            break
        squeeze = True
    ids: list[int] = []
    mask: list[int] = []
    turns: list[TurnSpan] = []
    for seg, piece in zip(segs, pieces, strict=True):
        start = len(ids)
        ids.extend(piece)
        original = seg.message + offset if seg.message >= 0 else -1
        on = seg.target and (train_messages is None or original in train_messages)
        mask.extend([1 if on else 0] * len(piece))
        if seg.target:
            turns.append(TurnSpan(start, len(ids), original))
    return Encoded(ids, mask, turns)


def encode_prompt(messages: list[dict[str, Any]], tools: list[Any], tokenizer: Any, fmt: ChatFormat) -> list[int]:
    """Prompt ids for generation: compact (rules 1–3), squeeze old results if over budget (rule 4), and if
    still over, keep the system block and the most recent tokens."""
    ids = encode_many(tokenizer, [render_prompt(messages, tools, fmt)])[0]
    if len(ids) <= fmt.max_context_tokens:
        return ids
    kept = compact_messages(messages, fmt, squeeze=True)
    segs = render_segments(kept, tools, add_generation_prompt=True)
    pieces = encode_many(tokenizer, [s.text for s in segs])
    ids = [t for p in pieces for t in p]
    if len(ids) <= fmt.max_context_tokens:
        return ids
    head = pieces[0] if tools or (kept and kept[0].get("role") == "system") else []
    head = head[: fmt.max_context_tokens // 2]
    tail = ids[len(head):][-(fmt.max_context_tokens - len(head)):]
    return head + tail


def dumps_compact(obj: Any) -> str:
    """JSON without spaces, as tool results are serialised (``ToolResult.to_json``)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
