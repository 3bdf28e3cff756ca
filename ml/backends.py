"""Planner backends behind one interface (``generate(contexts) -> list[PlannerTurn]``) with real token counts.

- ``TransformersPlanner``: a Hugging Face causal LM on CPU or GPU. One call generates for every
  context of the batch at once: prompts prefilled (unpadded, one pass per prompt length) into one
  left-padded KV cache that appends in place (``ml.kvcache``), then one decode step per new token for
  the whole batch, each row leaving the batch at its ``<|im_end|>``. Greedy (temperature 0) or
  sampled. The decode loop is hand-written instead of ``model.generate`` for two reasons: explicit
  ``position_ids`` under left padding, and per-step overhead small enough for a 1M-parameter model
  on a CPU.
- ``VllmPlanner``: vLLM in-process (GPU hosts; imported lazily, only when used).
- ``OpenAIPlanner``: any OpenAI-compatible ``/chat/completions`` endpoint (``vllm serve``, hosted APIs),
  standard-library HTTP only; reads structured ``tool_calls`` or raw ``<tool_call>`` text.
- ``ServedCheckpointPlanner``: a Flywheel checkpoint behind ``vllm serve``: the compact prompt built here,
  sent as token ids to ``/v1/completions``, so the served model sees what the in-process backends give it.

All return ``PlannerTurn`` parsed by ``harness.parse`` (model backends set ``raw``), with
``output_tokens`` and ``reasoning_tokens`` counted in the model's own tokens.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from harness.context import Context
from harness.contract import PlannerTurn, ToolCall
from harness.parse import THINK_CLOSE, THINK_OPEN, parse_turn
from ml.chat import IM_END, ChatFormat, encode_prompt


def count_reasoning_tokens(ids: list[int], open_id: int, close_id: int) -> int:
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
    greedy_rows: optional ``contexts -> [bool]``: the contexts marked True decode greedily while the
        rest sample (one lock-step batch; RL's greedy anchor, ``ml.care_trainer.GreedyAnchor``).
    """

    def __init__(self, model: Any, tokenizer: Any, *, fmt: ChatFormat | None = None, temperature: float = 0.0,
                 top_p: float = 1.0, seed: int | None = 0, max_batch: int = 64, name: str = "transformers",
                 greedy_rows: Callable[[list[Context]], list[bool]] | None = None):
        import torch

        self.model = model
        self.tokenizer = tokenizer
        self.fmt = fmt or ChatFormat()
        self.temperature = temperature
        self.top_p = top_p
        self.max_batch = max_batch
        self.name = name
        self.greedy_rows = greedy_rows
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
        greedy = self.greedy_rows(contexts) if self.greedy_rows is not None else None
        outs: list[list[int]] = []
        for i in range(0, len(prompts), self.max_batch):
            rows = greedy[i:i + self.max_batch] if greedy is not None else None
            outs.extend(self.generate_ids(prompts[i:i + self.max_batch], greedy=rows))
        return [self.turn(ids) for ids in outs]

    def turn(self, ids: list[int]) -> PlannerTurn:
        """The PlannerTurn of generated ids (the closing ``<|im_end|>`` counts as output, not as text)."""
        body = ids[:-1] if ids and ids[-1] == self.eos_id else ids
        text = self.tokenizer.decode(body, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        turn = parse_turn(text)
        turn.output_tokens = len(ids)
        turn.reasoning_tokens = count_reasoning_tokens(body, *self.think_ids)
        return turn

    def generate_ids(self, prompts: list[list[int]], max_new_tokens: int | None = None,
                     greedy: list[bool] | None = None) -> list[list[int]]:
        """Generate for a batch of prompt ids at once (left padding, KV cache); returns new ids per prompt.
        ``greedy``: rows that take the argmax even when the planner samples."""
        import torch

        t0 = time.perf_counter()
        max_new = max_new_tokens or self.fmt.max_new_tokens
        B, T = len(prompts), max(len(p) for p in prompts)
        pad = [T - len(p) for p in prompts]  # left padding of each live row
        attn = torch.zeros((B, T), dtype=torch.long)
        for i, n in enumerate(pad):
            attn[i, n:] = 1
        attn = attn.to(self.device)
        gen: list[list[int]] = [[] for _ in range(B)]
        live = list(range(B))  # the prompt index of each row still decoding
        argmax_rows = torch.tensor(greedy, dtype=torch.bool, device=self.device) if greedy else None
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.inference_mode():
                cache, logits = self._prefill(prompts, T, max_new - 1)  # the last token needs no forward pass
                nxt_pos = torch.tensor([[len(p)] for p in prompts], dtype=torch.long, device=self.device)  # (b, 1)
                # The longest prompt has no padding, so nothing leads yet; the mask is needed while a live row pads.
                dropped, masked = 0, max(pad) > 0  # dropped: leading cache positions (padding of every live row)
                for step in range(max_new):
                    tok = self._pick(logits, argmax_rows)  # (b,)
                    for j, t in enumerate(tok.tolist()):
                        gen[live[j]].append(t)
                    finished = tok == self.eos_id
                    if bool(finished.all()) or step == max_new - 1:
                        break
                    if bool(finished.any()):
                        # Rows that are done leave the batch (and the KV cache): turns end at very different
                        # lengths, and decoding the finished ones until the longest ends wastes most steps.
                        keep = torch.nonzero(~finished).flatten()
                        cache.batch_select_indices(keep)
                        tok, attn, nxt_pos = tok[keep], attn[keep], nxt_pos[keep]
                        argmax_rows = argmax_rows[keep] if argmax_rows is not None else None
                        live, pad = [live[k] for k in keep.tolist()], [pad[k] for k in keep.tolist()]
                        # Padding that no live row needs leaves the cache; with none left, no mask is needed.
                        lead = min(pad) - dropped
                        if lead > 0:
                            cache.drop_front(lead)
                            attn, dropped = attn[:, lead:], dropped + lead
                        masked = max(pad) > dropped
                    if masked:
                        attn = torch.cat([attn, torch.ones((len(live), 1), dtype=attn.dtype, device=self.device)], 1)
                    logits = self.model(input_ids=tok[:, None], attention_mask=attn if masked else None,
                                        position_ids=nxt_pos, past_key_values=cache, use_cache=True).logits[:, -1, :]
                    nxt_pos = nxt_pos + 1
        finally:
            self.model.train(was_training)
        self.stats["calls"] += 1
        self.stats["sequences"] += B
        self.stats["new_tokens"] += sum(len(g) for g in gen)
        self.stats["seconds"] += time.perf_counter() - t0
        return gen

    def _prefill(self, prompts: list[list[int]], T: int, room: int) -> tuple[Any, Any]:
        """The KV cache of every prompt, left-padded to ``T`` positions with ``room`` more to decode into
        (``ml.kvcache``), and each prompt's last logits (B, V).

        Prompts of one length run as one unpadded forward pass (RoPE positions 0..len-1, plain causal attention,
        the last position's logits only); their keys and values are then placed right-aligned in zero-filled
        (B, ...) buffers whose padding the attention mask hides. A single padded pass over every prompt computes
        the same values but attends through a (B, heads, T, T) mask: on this 2-core CPU, 32 prompts of up to
        525 and 768 tokens took 1.7x and 2.4-2.7x the time of these unpadded passes (the fused causal kernel)."""
        import torch
        from transformers import DynamicCache

        from ml.kvcache import BufferCache

        B = len(prompts)
        groups: dict[int, list[int]] = {}
        for i, p in enumerate(prompts):
            groups.setdefault(len(p), []).append(i)
        buffers: list[tuple[Any, Any]] = []
        logits = None
        for n, rows in groups.items():
            ids = torch.tensor([prompts[i] for i in rows], dtype=torch.long, device=self.device)
            part = DynamicCache()
            last = self.model(input_ids=ids, past_key_values=part, use_cache=True, logits_to_keep=1).logits[:, -1, :]
            if logits is None:
                logits = last.new_empty((B, last.shape[-1]))
                buffers = [tuple(x.new_zeros((B, x.shape[1], T + room, x.shape[3])) for x in (layer.keys, layer.values))
                           for layer in part.layers]
            at = torch.tensor(rows, device=self.device)
            logits[at] = last
            for (k, v), layer in zip(buffers, part.layers, strict=True):
                k[at, :, T - n:T] = layer.keys
                v[at, :, T - n:T] = layer.values
        return BufferCache(buffers, T), logits

    def _pick(self, logits: Any, argmax_rows: Any | None = None) -> Any:
        """Next tokens (b,): argmax when greedy, else a draw; rows marked in ``argmax_rows`` (b,) take the
        argmax either way. Every live row draws, so a mark changes no other row's draw while the same rows are
        live; once a row finishes and leaves the batch, the later draws of the rows left follow the new batch."""
        import torch

        if self.temperature <= 0:
            return logits.argmax(-1)
        drawn = self._draw(logits)
        return drawn if argmax_rows is None else torch.where(argmax_rows, logits.argmax(-1), drawn)

    def _draw(self, logits: Any) -> Any:
        import torch

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
            turn.reasoning_tokens = count_reasoning_tokens(body, *self.think_ids)
            turns.append(turn)
        return turns


class EndpointError(RuntimeError):
    """An endpoint answered with an error status; the message carries the server's own explanation."""


def post_json(url: str, body: dict[str, Any], api_key: str | None, timeout_s: float) -> dict[str, Any]:
    """POST ``body`` as JSON and return the JSON reply; an error status raises EndpointError with its message."""
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:  # noqa: S310 - the URL is configured
            return json.loads(resp.read().decode())
    except urllib.error.HTTPError as exc:
        # Servers say why in the body ({"error": {"message": ...}}, vLLM's older {"message": ...}, FastAPI's
        # {"detail": ...}): keep it, it is the fix.
        text = exc.read().decode(errors="replace")
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = None
        message = None
        if isinstance(data, dict):
            err = data.get("error")
            err = err.get("message") if isinstance(err, dict) else err
            message = err or data.get("message") or data.get("detail")
        if message is not None and not isinstance(message, str):
            message = json.dumps(message)
        raise EndpointError(f"HTTP {exc.code}: {(message or text or exc.reason)[:500]}") from exc


class _EndpointPlanner:
    """Shared by the HTTP backends: one request per context, ``concurrency`` at a time; failures are failed turns."""

    def __init__(self, url: str, model: str, api_key: str | None, temperature: float, timeout_s: float,
                 concurrency: int):
        self.url = url
        self.model = model
        self.api_key = api_key
        self.temperature = temperature
        self.timeout_s = timeout_s
        self.concurrency = concurrency

    def complete(self, ctx: Context) -> PlannerTurn:
        try:
            return self.request_turn(ctx)
        except (urllib.error.URLError, TimeoutError, json.JSONDecodeError, OSError, EndpointError) as exc:
            # An endpoint failure is the planner's failed turn, not a crashed run.
            return PlannerTurn(raw="", parse_errors=[f"endpoint error: {type(exc).__name__}: {exc}"])

    def request_turn(self, ctx: Context) -> PlannerTurn:
        raise NotImplementedError

    def generate(self, contexts: list[Context]) -> list[PlannerTurn]:
        if len(contexts) <= 1 or self.concurrency <= 1:
            return [self.complete(c) for c in contexts]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(contexts))) as pool:
            return list(pool.map(self.complete, contexts))


class OpenAIPlanner(_EndpointPlanner):
    """Any OpenAI-compatible chat-completions endpoint as a planner (contexts sent concurrently).

    base_url: e.g. ``http://localhost:8000/v1``. model: the served model name. api_key: sent as a
    bearer token when set. send_reasoning: keep ``reasoning_content`` in assistant messages (some
    servers reject unknown fields). extra: merged into every request body (e.g. top_p).
    """

    def __init__(self, base_url: str, model: str, api_key: str | None = None, *, temperature: float = 0.0,
                 max_tokens: int = 1024, timeout_s: float = 120.0, concurrency: int = 8, send_reasoning: bool = True,
                 extra: dict[str, Any] | None = None, name: str | None = None):
        super().__init__(base_url.rstrip("/") + "/chat/completions", model, api_key, temperature, timeout_s,
                         concurrency)
        self.max_tokens = max_tokens
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
        return post_json(self.url, body, self.api_key, self.timeout_s)

    def request_turn(self, ctx: Context) -> PlannerTurn:
        return turn_from_completion(self.post(self.request_body(ctx)))


class ServedCheckpointPlanner(_EndpointPlanner):
    """A Flywheel checkpoint served by ``vllm serve <checkpoint>`` (or any OpenAI-compatible completions server).

    The chat endpoint would render the full messages and every offered tool's full schema with the
    checkpoint's template: 450-1,200 tokens per held-out turn where the compact prompt is 90-590, most of
    them too long for the small planner's 1,024 positions with a 256-token reply, and not the prompts it
    was trained on. Measured on an H200 with vLLM 0.24.0: without ``--enable-auto-tool-choice
    --tool-call-parser hermes`` every chat request is refused (400: tool choice "auto" needs them); with
    them 58 of 64 held-out turns are refused for length and the 6 that fit come back malformed (broken
    call JSON, an unclosed ``<think>``). So the prompt is built here exactly as the
    in-process backends build it (``encode_prompt`` with the checkpoint's tokenizer and ChatFormat), sent
    as token ids to ``/v1/completions`` with special tokens kept in the reply, and the reply parsed as
    ``TransformersPlanner.turn`` parses generated text. ``bench/vllm_check.py`` compares the served text
    with transformers' greedy decode of the same ids.

    checkpoint: the checkpoint folder (its tokenizer and ``flywheel_model.json``; the weights are not read).
    model: the served model name (``--served-model-name``; vLLM's default is the path it was given).
    """

    def __init__(self, base_url: str, model: str, checkpoint: str | Path, api_key: str | None = None, *,
                 temperature: float = 0.0, timeout_s: float = 120.0, concurrency: int = 8, name: str | None = None):
        from transformers import AutoTokenizer

        from ml.model import chat_format_of

        super().__init__(base_url.rstrip("/") + "/completions", model, api_key, temperature, timeout_s, concurrency)
        self.fmt = chat_format_of(checkpoint)
        self.tokenizer = AutoTokenizer.from_pretrained(str(checkpoint))
        self.eos_id = self.tokenizer.convert_tokens_to_ids(IM_END)
        self.think_ids = (self.tokenizer.convert_tokens_to_ids(THINK_OPEN),
                          self.tokenizer.convert_tokens_to_ids(THINK_CLOSE))
        self.name = name or f"served[{model}]"

    def request_body(self, ctx: Context) -> dict[str, Any]:
        return {"model": self.model, "prompt": encode_prompt(ctx.messages, ctx.tools, self.tokenizer, self.fmt),
                "max_tokens": self.fmt.max_new_tokens, "temperature": self.temperature,
                "stop_token_ids": [self.eos_id], "skip_special_tokens": False}

    def request_turn(self, ctx: Context) -> PlannerTurn:
        reply = post_json(self.url, self.request_body(ctx), self.api_key, self.timeout_s)
        choice = (reply.get("choices") or [{}])[0]
        text = choice.get("text")
        if not isinstance(text, str):
            raise EndpointError(f"a completions reply without text: {json.dumps(reply)[:300]}")
        text = text.removesuffix(IM_END)  # a stop token may come back as text when special tokens are kept
        turn = parse_turn(text)
        body = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        # The closing <|im_end|> is generated but not returned as text; it counts, as in TransformersPlanner.
        stopped = choice.get("finish_reason") == "stop"
        turn.output_tokens = int((reply.get("usage") or {}).get("completion_tokens") or len(body) + stopped)
        turn.reasoning_tokens = count_reasoning_tokens(body, *self.think_ids)
        return turn


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
