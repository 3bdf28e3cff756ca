"""Planner backends: batched KV-cache generation equals per-episode generation; OpenAI endpoints parse alike."""

from __future__ import annotations

import json

import pytest

from devices.virtual.registry import catalog
from harness.context import Context
from harness.contract import ToolCall
from harness.episode import EpisodeRunner
from harness.planner import Planner
from ml.backends import OpenAIPlanner, ServedCheckpointPlanner, TransformersPlanner, turn_from_completion
from ml.chat import encode_prompt
from ml.model import build_model, save_checkpoint
from tests.openai_standin import OpenAIStandIn, served_checkpoint


def _contexts(n: int) -> list[Context]:
    cat = catalog()
    tids = sorted(cat.templates)[:n]
    return [EpisodeRunner(cat.templates[t].instantiate(1)).start().context() for t in tids]


def test_batched_greedy_equals_sequential(tokenizer, tiny_model_config):
    model = build_model(tiny_model_config, tokenizer)
    planner = TransformersPlanner(model, tokenizer, max_batch=8)
    planner.fmt.max_new_tokens = 12
    assert isinstance(planner, Planner)
    ctxs = _contexts(5)
    batched = planner.generate(ctxs)
    single = [planner.generate([c])[0] for c in ctxs]
    assert [t.raw for t in batched] == [t.raw for t in single]
    assert all(0 < t.output_tokens <= 12 for t in batched)


def test_rows_that_finish_early_leave_the_batch_without_changing_the_others():
    """The shipped (trained) weights end their turns at different lengths, so rows leave the batch and its
    KV cache mid-decode; each row's turn is still what it decodes alone."""
    from pathlib import Path

    planner = TransformersPlanner.from_pretrained(Path(__file__).resolve().parents[2] / "bench/checkpoints/sft-cpu")
    ctxs = _contexts(6)
    batched = planner.generate(ctxs)
    assert len({t.output_tokens for t in batched}) > 1  # the rows did finish at different steps
    assert all(t.raw and t.output_tokens < planner.fmt.max_new_tokens for t in batched)  # each ended on its own
    assert [t.raw for t in batched] == [planner.generate([c])[0].raw for c in ctxs]
    sampler = TransformersPlanner(planner.model, planner.tokenizer, fmt=planner.fmt, temperature=1.0, seed=5)
    twice = TransformersPlanner(planner.model, planner.tokenizer, fmt=planner.fmt, temperature=1.0, seed=5)
    assert [t.raw for t in sampler.generate(ctxs)] == [t.raw for t in twice.generate(ctxs)]  # seeded: reproducible


def test_prefill_and_buffered_cache_give_the_logits_of_each_row_alone(tokenizer, tiny_model_config):
    """Prompts of different lengths prefill in unpadded groups into one buffered cache; after rows leave and the
    padding no live row needs is dropped (then no mask at all), every row's next-token logits are still those of
    that row decoded alone with transformers' own cache."""
    import torch
    from transformers import DynamicCache

    model = build_model(tiny_model_config, tokenizer).eval()
    planner = TransformersPlanner(model, tokenizer)
    prompts = [list(range(5, 25)), list(range(30, 44)), list(range(50, 61)), list(range(70, 84))]  # 20, 14, 11, 14
    steps = [[7, 8, 9, 10], [11, 12, 13, 14], [15, 16, 17, 18], [19, 20, 21, 22]]  # tokens fed after the prompt

    def alone(i: int) -> list[torch.Tensor]:
        cache, ids, out = DynamicCache(), torch.tensor([prompts[i]]), []
        for t in [None, *steps[i]]:
            x = ids if t is None else torch.tensor([[t]])
            out.append(model(input_ids=x, past_key_values=cache, use_cache=True).logits[0, -1])
        return out

    expected = [alone(i) for i in range(4)]
    T = 20
    with torch.inference_mode():
        cache, logits = planner._prefill(prompts, T, room=len(steps[0]))
        attn = torch.tensor([[0] * (T - len(p)) + [1] * len(p) for p in prompts])
        pos = torch.tensor([[len(p)] for p in prompts])
        live = [0, 1, 2, 3]
        for k in range(len(steps[0])):
            for j, i in enumerate(live):
                torch.testing.assert_close(logits[j], expected[i][k], atol=1e-5, rtol=1e-5)
            if k == 1:  # the unpadded and the longest-padded rows leave; 6 leading positions are padding for both left
                keep = torch.tensor([1, 3])
                cache.batch_select_indices(keep)
                attn, pos, live = attn[keep][:, 6:], pos[keep], [1, 3]
                cache.drop_front(6)
                assert bool(attn.all())
            tok = torch.tensor([[steps[i][k]] for i in live])
            mask = None if live == [1, 3] else torch.cat([attn, torch.ones((len(live), 1), dtype=attn.dtype)], 1)
            attn = mask if mask is not None else attn
            logits = model(input_ids=tok, attention_mask=mask, position_ids=pos, past_key_values=cache,
                           use_cache=True).logits[:, -1]
            pos = pos + 1
        with pytest.raises(RuntimeError, match="KV buffer full"):
            cache.layers[0].update(*(torch.zeros((2, 2, 1, 1)),) * 2)


def test_rows_stop_at_the_token_budget_the_cache_is_sized_for(tokenizer, tiny_model_config):
    """The cache holds the prompt plus budget − 1 positions (the last token needs no forward pass): an untrained
    model runs every row to the budget, one token included, without overflowing it."""
    planner = TransformersPlanner(build_model(tiny_model_config, tokenizer), tokenizer)
    prompts = [list(range(5, 25)), list(range(30, 41))]
    for budget in (1, 2, 7):
        assert [len(g) for g in planner.generate_ids(prompts, max_new_tokens=budget)] == [budget, budget]


def test_greedy_rows_take_the_argmax_inside_a_sampling_batch(tokenizer, tiny_model_config):
    model = build_model(tiny_model_config, tokenizer)
    ctxs = _contexts(3) * 2  # each context twice: once greedy, once sampled
    greedy = TransformersPlanner(model, tokenizer)
    greedy.fmt.max_new_tokens = 12
    expected = [t.raw for t in greedy.generate(ctxs[:3])]
    marks = [True, True, True, False, False, False]
    mixed = TransformersPlanner(model, tokenizer, fmt=greedy.fmt, temperature=1.5, seed=3,
                                greedy_rows=lambda cs: marks[:len(cs)])
    raws = [t.raw for t in mixed.generate(ctxs)]
    assert raws[:3] == expected
    # The unmarked rows really sample (an untrained model at temperature 1.5 does not repeat its argmax),
    # and their draws are the ones an unmarked batch with the same seed makes.
    assert raws[3:] != expected
    plain = TransformersPlanner(model, tokenizer, fmt=greedy.fmt, temperature=1.5, seed=3)
    assert [t.raw for t in plain.generate(ctxs)][3:] == raws[3:]


def test_turn_counts_model_tokens(tokenizer, tiny_model_config):
    planner = TransformersPlanner(build_model(tiny_model_config, tokenizer), tokenizer)
    text = ('<think>\nTurn it on.\n</think>\n\n<tool_call>\n{"name": "set_wifi", "arguments": {"enabled": true}}\n'
            "</tool_call>")
    ids = tokenizer.encode(text, add_special_tokens=False) + [planner.eos_id]
    turn = planner.turn(ids)
    assert turn.tool_calls[0].name == "set_wifi" and turn.tool_calls[0].arguments == {"enabled": True}
    assert turn.output_tokens == len(ids)
    assert turn.reasoning_tokens == len(tokenizer.encode("\nTurn it on.\n", add_special_tokens=False))


@pytest.fixture
def endpoint():
    with OpenAIStandIn() as standin:
        yield standin


def test_openai_planner_reads_structured_and_raw_tool_calls(endpoint):
    call = ToolCall("x1", "set_wifi", {"enabled": True}).to_openai()
    endpoint.replies = [
        {"choices": [{"message": {"content": "", "reasoning_content": "Wi-Fi first.", "tool_calls": [call]}}],
         "usage": {"completion_tokens": 17, "completion_tokens_details": {"reasoning_tokens": 4}}},
        {"choices": [{"message": {
            "content": '<tool_call>\n{"name": "get_wifi_status", "arguments": {}}\n</tool_call>'}}],
         "usage": {"completion_tokens": 9}},
    ]
    planner = OpenAIPlanner(endpoint.url, "tiny", api_key="k", concurrency=1)
    turns = planner.generate(_contexts(2))
    assert turns[0].tool_calls[0].name == "set_wifi" and turns[0].reasoning == "Wi-Fi first."
    assert (turns[0].output_tokens, turns[0].reasoning_tokens) == (17, 4)
    assert turns[1].tool_calls[0].name == "get_wifi_status" and turns[1].output_tokens == 9
    first = endpoint.requests[0]
    assert first["auth"] == "Bearer k" and first["model"] == "tiny" and first["path"] == "/v1/chat/completions"
    assert first["messages"][0]["role"] == "system" and first["tools"]


def test_endpoint_failure_is_a_failed_turn_not_a_crash():
    planner = OpenAIPlanner("http://127.0.0.1:9/v1", "m", timeout_s=2)
    turn = planner.generate(_contexts(1))[0]
    assert turn.parse_errors and "endpoint error" in turn.parse_errors[0]
    assert turn_from_completion({"choices": []}).tool_calls == []


@pytest.mark.parametrize("body", [
    {"error": {"message": "MSG", "code": 400}},  # OpenAI and current vLLM
    {"object": "error", "message": "MSG", "type": "BadRequestError", "code": 400},  # older vLLM
    {"detail": "MSG"},  # FastAPI
])
def test_endpoint_error_status_keeps_the_servers_reason(body):
    msg = "This model's maximum context length is 1024 tokens. However, you requested 1444 tokens."
    body = json.loads(json.dumps(body).replace("MSG", msg))
    with OpenAIStandIn(respond=lambda req: (400, body)) as standin:
        turn = OpenAIPlanner(standin.url, "m").generate(_contexts(1))[0]
    assert turn.parse_errors == [f"endpoint error: EndpointError: HTTP 400: {msg}"]


def test_served_checkpoint_planner_equals_in_process(tokenizer, tiny_model_config, tmp_path):
    model = build_model(tiny_model_config, tokenizer)
    path = save_checkpoint(model, tokenizer, tmp_path / "ckpt")
    local = TransformersPlanner.from_pretrained(path)
    local.fmt.max_new_tokens = 16
    ctxs = _contexts(3)
    with OpenAIStandIn(respond=served_checkpoint(local)) as standin:
        served = ServedCheckpointPlanner(standin.url, "flywheel", path, concurrency=2)
        served.fmt.max_new_tokens = 16
        got = served.generate(ctxs)
    want = local.generate(ctxs)
    assert [t.raw for t in got] == [t.raw for t in want]
    assert [(t.output_tokens, t.reasoning_tokens) for t in got] == [(t.output_tokens, t.reasoning_tokens) for t in want]
    prompts = sorted(r["prompt"] for r in standin.requests)
    assert prompts == sorted(encode_prompt(c.messages, c.tools, local.tokenizer, local.fmt) for c in ctxs)


def test_served_checkpoint_planner_parses_a_tool_call(tokenizer, tiny_model_config, tmp_path):
    path = save_checkpoint(build_model(tiny_model_config, tokenizer), tokenizer, tmp_path / "ckpt")
    text = ('<think>\nTurn it on.\n</think>\n\n<tool_call>\n{"name": "set_wifi", "arguments": {"enabled": true}}\n'
            "</tool_call><|im_end|>")
    reply = {"choices": [{"index": 0, "text": text, "finish_reason": "stop"}], "usage": {"completion_tokens": 31}}
    with OpenAIStandIn(default=reply) as standin:
        turn = ServedCheckpointPlanner(standin.url, "flywheel", path).generate(_contexts(1))[0]
        bad = ServedCheckpointPlanner(standin.url, "flywheel", path)
        standin.default = {"choices": [{"index": 0}]}
        broken = bad.generate(_contexts(1))[0]
    assert turn.tool_calls[0].name == "set_wifi" and turn.tool_calls[0].arguments == {"enabled": True}
    assert not turn.parse_errors and turn.content == "" and turn.output_tokens == 31
    assert turn.reasoning_tokens == len(tokenizer.encode("\nTurn it on.\n", add_special_tokens=False))
    assert broken.parse_errors and "without text" in broken.parse_errors[0]
