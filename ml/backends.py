"""Planner backends behind one interface (``generate(contexts) -> list[PlannerTurn]``) with real token counts.

- ``TransformersPlanner``: a Hugging Face causal LM on CPU or GPU. One call generates for every
  context of the batch at once: prompts left-padded into one tensor, one prefill, then one decode
  step per new token for the whole batch with a KV cache (``DynamicCache``), stopping each row at
  ``<|im_end|>``. Greedy (temperature 0) or sampled. The decode loop is hand-written instead of
  ``model.generate`` for two reasons: explicit ``position_ids`` under left padding, and per-step
  overhead small enough for a 2M-parameter model on a CPU.
- ``VllmPlanner``: vLLM in-process (GPU hosts; imported lazily, only when used).
- ``OpenAIPlanner``: any OpenAI-compatible ``/chat/completions`` endpoint (``vllm serve``, hosted APIs),
  standard-library HTTP only; reads structured ``tool_calls`` or raw ``<tool_call>`` text.

All return ``PlannerTurn`` parsed by ``harness.parse`` (model backends set ``raw``), with
``output_tokens`` and ``reasoning_tokens`` counted in the model's own tokens.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from harness.context import Context
from harness.contract import PlannerTurn, ToolCall
from harness.parse import THINK_CLOSE, THINK_OPEN, parse_turn
from ml.chat import IM_END, ChatFormat, encode_prompt


def _reasoning_tokens(ids: list[int], open_id: int, close_id: int) -> int:
    """Tokens strictly between ``<think>`` and ``</think>`` (to the end if never closed)."""
    if open_id not in ids:
        return 0
    a = ids.index(open_id) + 1
    b = ids.index(close_id, a) if close_id in ids[a:] else len(ids)
    return b - a


class TransformersPlanner:
    """A transformers causal LM as a batched planner.

    temperature: 0 is greedy; > 0 samples from softmax(logits / temperature) (top_p nucleus if < 1).
    fmt: context compaction and the per-turn token budget (``ml.chat.ChatFormat``).
    seed: seeds the sampling generator (reproducible rollouts).
    max_batch: contexts per forward pass (larger batches are split).
    """

    def __init__(self, model: Any, tokenizer: Any, *, fmt: ChatFormat | None = None, temperature: float = 0.0,
                 top_p: float = 1.0, seed: int | None = 0, max_batch: int = 64, name: str = "transformers"):
        import torch

        self.model = model
        self.tokenizer = tokenizer
        self.fmt = fmt or ChatFormat()
        self.temperature = temperature
        self.top_p = top_p
        self.max_batch = max_batch
        self.name = name
        self.device = next(model.parameters()).device
        self.eos_id = tokenizer.convert_tokens_to_ids(IM_END)
        self.pad_id = tokenizer.pad_token_id
        self.think_ids = (tokenizer.convert_tokens_to_ids(THINK_OPEN), tokenizer.convert_tokens_to_ids(THINK_CLOSE))
        self.generator = torch.Generator(device="cpu")
        if seed is not None:
            self.generator.manual_seed(seed)
        self.stats = {"calls": 0, "sequences": 0, "new_tokens": 0, "seconds": 0.0}

    @classmethod
    def from_pretrained(cls, path: str | Path, device: str = "cpu", **kw: Any) -> TransformersPlanner:
        from ml.model import chat_format_of, load_checkpoint

        model, tok = load_checkpoint(path, device)
        kw.setdefault("name", f"transformers[{Path(path).name}]")
        kw.setdefault("fmt", chat_format_of(path))
        return cls(model, tok, **kw)

    def generate(self, contexts: list[Context]) -> list[PlannerTurn]:
        prompts = [encode_prompt(c.messages, c.tools, self.tokenizer, self.fmt) for c in contexts]
        outs: list[list[int]] = []
        for i in range(0, len(prompts), self.max_batch):
            outs.extend(self.generate_ids(prompts[i:i + self.max_batch]))
        return [self.turn(ids) for ids in outs]

    def turn(self, ids: list[int]) -> PlannerTurn:
        """The PlannerTurn of generated ids (the closing ``<|im_end|>`` counts as output, not as text)."""
        body = ids[:-1] if ids and ids[-1] == self.eos_id else ids
        text = self.tokenizer.decode(body, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        turn = parse_turn(text)
        turn.output_tokens = len(ids)
        turn.reasoning_tokens = _reasoning_tokens(body, *self.think_ids)
        return turn

    def generate_ids(self, prompts: list[list[int]], max_new_tokens: int | None = None) -> list[list[int]]:
        """Generate for a batch of prompt ids at once (left padding, KV cache); returns new ids per prompt."""
        import torch
        from transformers import DynamicCache

        t0 = time.perf_counter()
        max_new = max_new_tokens or self.fmt.max_new_tokens
        B, T = len(prompts), max(len(p) for p in prompts)
        ids = torch.full((B, T), self.pad_id, dtype=torch.long)
        attn = torch.zeros((B, T), dtype=torch.long)
        for i, p in enumerate(prompts):
            ids[i, T - len(p):] = torch.tensor(p, dtype=torch.long)
            attn[i, T - len(p):] = 1
        pos = (attn.cumsum(-1) - 1).clamp(min=0)  # (B, T): RoPE positions ignore the left padding
        ids, attn, pos = ids.to(self.device), attn.to(self.device), pos.to(self.device)
        gen: list[list[int]] = [[] for _ in range(B)]
        done = torch.zeros(B, dtype=torch.bool, device=self.device)
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.inference_mode():
                out = self.model(input_ids=ids, attention_mask=attn, position_ids=pos,
                                 past_key_values=DynamicCache(), use_cache=True)
                nxt_pos = pos[:, -1:] + 1  # (B, 1)
                for _ in range(max_new):
                    tok = self._pick(out.logits[:, -1, :])  # (B,)
                    for i in torch.nonzero(~done).flatten().tolist():
                        gen[i].append(int(tok[i]))
                    done |= tok == self.eos_id
                    if bool(done.all()):
                        break
                    attn = torch.cat([attn, torch.ones((B, 1), dtype=attn.dtype, device=self.device)], dim=1)
                    out = self.model(input_ids=tok[:, None], attention_mask=attn, position_ids=nxt_pos,
                                     past_key_values=out.past_key_values, use_cache=True)
                    nxt_pos = nxt_pos + 1
        finally:
            self.model.train(was_training)
        self.stats["calls"] += 1
        self.stats["sequences"] += B
        self.stats["new_tokens"] += sum(len(g) for g in gen)
        self.stats["seconds"] += time.perf_counter() - t0
        return gen

    def _pick(self, logits: Any) -> Any:
        import torch

        if self.temperature <= 0:
            return logits.argmax(-1)
        probs = torch.softmax(logits.float() / self.temperature, dim=-1)  # (B, V)
        if self.top_p < 1.0:
            sorted_p, order = probs.sort(dim=-1, descending=True)
            keep = sorted_p.cumsum(-1) - sorted_p < self.top_p  # always keeps the top token
            sorted_p = sorted_p * keep
            probs = torch.zeros_like(probs).scatter(-1, order, sorted_p)
        return torch.multinomial(probs.cpu(), 1, generator=self.generator).flatten().to(logits.device)


class VllmPlanner:
    """vLLM in-process (GPU hosts): the same compact prompts as TransformersPlanner, token ids in and out."""

    def __init__(self, path: str | Path, *, fmt: ChatFormat | None = None, temperature: float = 0.0, seed: int = 0,
                 name: str | None = None, **llm_kw: Any):
        try:
            from vllm import LLM, SamplingParams
        except ImportError as exc:  # a CPU install has no vLLM: say how to get it
            raise RuntimeError("vLLM is not installed; on a GPU host: pip install -r requirements-gpu.txt") from exc
        from transformers import AutoTokenizer

        self.fmt = fmt or ChatFormat()
        self.tokenizer = AutoTokenizer.from_pretrained(str(path))
        self.eos_id = self.tokenizer.convert_tokens_to_ids(IM_END)
        self.think_ids = (self.tokenizer.convert_tokens_to_ids(THINK_OPEN),
                          self.tokenizer.convert_tokens_to_ids(THINK_CLOSE))
        self.llm = LLM(model=str(path), seed=seed, **llm_kw)
        self.params = SamplingParams(temperature=temperature, max_tokens=self.fmt.max_new_tokens,
                                     stop_token_ids=[self.eos_id], seed=seed, skip_special_tokens=False)
        self.name = name or f"vllm[{Path(path).name}]"

    def generate_ids(self, prompts: list[list[int]]) -> list[list[int]]:
        outs = self.llm.generate([{"prompt_token_ids": p} for p in prompts], self.params, use_tqdm=False)
        return [list(o.outputs[0].token_ids) for o in outs]

    def generate(self, contexts: list[Context]) -> list[PlannerTurn]:
        prompts = [encode_prompt(c.messages, c.tools, self.tokenizer, self.fmt) for c in contexts]
        turns = []
        for ids in self.generate_ids(prompts):
            body = ids[:-1] if ids and ids[-1] == self.eos_id else ids
            turn = parse_turn(self.tokenizer.decode(body, skip_special_tokens=False,
                                                    clean_up_tokenization_spaces=False))
            turn.output_tokens = len(ids)
            turn.reasoning_tokens = _reasoning_tokens(body, *self.think_ids)
            turns.append(turn)
        return turns


class OpenAIPlanner:
    """Any OpenAI-compatible chat-completions endpoint as a planner (contexts sent concurrently).

    base_url: e.g. ``http://localhost:8000/v1``. model: the served model name. api_key: sent as a
    bearer token when set. send_reasoning: keep ``reasoning_content`` in assistant messages (some
    servers reject unknown fields). extra: merged into every request body (e.g. top_p).
    """

    def __init__(self, base_url: str, model: str, api_key: str | None = None, *, temperature: float = 0.0,
                 max_tokens: int = 1024, timeout_s: float = 120.0, concurrency: int = 8, send_reasoning: bool = True,
                 extra: dict[str, Any] | None = None, name: str | None = None):
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key = api_key
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout_s = timeout_s
        self.concurrency = concurrency
        self.send_reasoning = send_reasoning
        self.extra = dict(extra or {})
        self.name = name or f"openai[{model}]"

    def request_body(self, ctx: Context) -> dict[str, Any]:
        body = ctx.to_openai()
        if not self.send_reasoning:
            body["messages"] = [{k: v for k, v in m.items() if k != "reasoning_content"} for m in body["messages"]]
        if not body["tools"]:
            body.pop("tools")
        body.update(model=self.model, temperature=self.temperature, max_tokens=self.max_tokens, **self.extra)
        return body

    def post(self, body: dict[str, Any]) -> dict[str, Any]:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(self.url, data=json.dumps(body).encode(), headers=headers, method="POST")
        with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:  # noqa: S310 - the URL is configured
            return json.loads(resp.read().decode())

    def complete(self, ctx: Context) -> PlannerTurn:
        try:
            reply = self.post(self.request_body(ctx))
        except (urllib.error.URLError, TimeoutError, json.JSONDecodeError, OSError) as exc:
            # An endpoint failure is the planner's failed turn, not a crashed run.
            return PlannerTurn(raw="", parse_errors=[f"endpoint error: {type(exc).__name__}: {exc}"])
        return turn_from_completion(reply)

    def generate(self, contexts: list[Context]) -> list[PlannerTurn]:
        if len(contexts) <= 1 or self.concurrency <= 1:
            return [self.complete(c) for c in contexts]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(contexts))) as pool:
            return list(pool.map(self.complete, contexts))


def turn_from_completion(reply: dict[str, Any]) -> PlannerTurn:
    """A chat-completions response as a PlannerTurn: structured tool_calls, else raw text parsed."""
    msg = (reply.get("choices") or [{}])[0].get("message") or {}
    usage = reply.get("usage") or {}
    content = msg.get("content") or ""
    reasoning = msg.get("reasoning_content") or msg.get("reasoning") or ""
    if msg.get("tool_calls"):
        calls, errors = [], []
        for i, c in enumerate(msg["tool_calls"]):
            fn = c.get("function") or {}
            try:
                calls.append(ToolCall.from_dict({"id": c.get("id") or f"call_{i}", "name": fn.get("name", ""),
                                                 "arguments": fn.get("arguments") or {}}))
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                errors.append(f"tool call {i + 1}: malformed arguments ({exc})")
        turn = PlannerTurn(reasoning=reasoning.strip(), content=content.strip(), tool_calls=calls,
                           raw=content, parse_errors=errors)
    else:
        text = f"{THINK_OPEN}\n{reasoning}\n{THINK_CLOSE}\n\n{content}" if reasoning else content
        turn = parse_turn(text)
    details = usage.get("completion_tokens_details") or {}
    turn.output_tokens = int(usage.get("completion_tokens") or turn.output_tokens)
    turn.reasoning_tokens = int(details.get("reasoning_tokens") or turn.reasoning_tokens)
    return turn
