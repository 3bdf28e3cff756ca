"""SFT cold start: erroneous turns get no loss (gradient check), resume is exact, it overfits and then solves."""

from __future__ import annotations

import re

import pytest
import torch

from devices.virtual.registry import catalog
from harness.episode import run_episode, run_episodes
from harness.reference import ReferenceStyle
from ml.backends import TransformersPlanner
from ml.chat import ChatFormat, encode_prompt, tool_dict
from ml.model import build_model, read_card
from ml.sft import (
    Batch,
    buckets,
    call_values,
    collate,
    encode_episode,
    encode_views,
    erroneous_steps,
    reference_episodes,
    step_messages,
    step_tools,
    token_loss,
    train_sft,
)
from ml.sft_config import SFTConfig


@pytest.fixture(scope="module")
def mistake_episode():
    task = catalog().templates["connectivity.start_cast"].instantiate(2)
    return reference_episodes([task], [ReferenceStyle(mistake=True)])[0]


def test_the_corrected_mistake_is_erroneous_and_the_recovery_is_kept(mistake_episode):
    ep = mistake_episode
    bad = erroneous_steps(ep)
    failed = [i for i, s in enumerate(ep.steps) if any(not c.result.success for c in s.calls)]
    assert bad == set(failed) and len(bad) == 1
    i = next(iter(bad))
    assert all(c.result.success for c in ep.steps[i + 1].calls)  # the recovery follows, unmasked
    d = ep.to_dict()
    d["steps"][0]["metadata"] = {"erroneous": True}
    assert erroneous_steps(d) == bad | {0}
    assert erroneous_steps(ep, SFTConfig(mask_codes=(503,), mask_uncorrected=False)) == set()


def test_packed_rows_and_length_buckets_give_the_same_loss(tokenizer, tiny_model_config):
    """Two episodes packed in one row (attention block-diagonal by restarting position ids) and the same
    two in separate right-padded rows (plain causal attention) see the same contexts: equal loss."""
    cat = catalog()
    tasks = [cat.templates["connectivity.start_cast"].instantiate(1),
             cat.templates["power.battery_saver_mode_conflict"].instantiate(2)]
    cfg = SFTConfig(model=tiny_model_config)
    examples = [encode_episode(e, tokenizer, cfg) for e in reference_episodes(tasks, [ReferenceStyle()])]
    model = build_model(tiny_model_config, tokenizer).eval()
    pad = tokenizer.pad_token_id
    packed = collate(examples, [[0, 1]], 1024, pad)
    bucketed = collate(examples, [[0], [1]], 1024, pad)
    assert packed.packed and not bucketed.packed
    assert bucketed.input_ids.shape[1] == max(len(e.ids) for e in examples)  # only as long as the longest
    with torch.no_grad():
        a, b = token_loss(model, packed), token_loss(model, bucketed)
        # Without the block-diagonal mask the second episode would attend to the first: a different loss.
        leaky = token_loss(model, Batch(packed.input_ids, packed.labels, torch.arange(1024)[None], packed.tokens))
    assert torch.allclose(a, b, atol=1e-5)
    assert not torch.allclose(a, leaky, atol=1e-4)


def test_buckets_hold_every_episode_once_within_the_token_budget():
    from ml.chat import Encoded

    lengths = [5, 300, 40, 41, 900, 120, 118, 7, 600, 33]
    examples = [Encoded([1] * n, [1] * n) for n in lengths]
    batches = buckets(examples, seq_len=1024, budget=1200)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for b in batches:
        assert max(lengths[i] for i in b) * len(b) <= 1200


def test_weighted_styles_split_instances_by_share():
    tasks = [catalog().templates["connectivity.start_cast"].instantiate(s) for s in range(20)]
    styles = [ReferenceStyle(), ReferenceStyle("verbose")]
    eps = reference_episodes(tasks, styles, rotate=True, weights=[3, 1])
    assert len(eps) == 20
    assert sum(e.planner == "reference" for e in eps) == 15
    with pytest.raises(ValueError):
        reference_episodes(tasks, styles, rotate=True, weights=[1])


def test_masked_turns_receive_no_gradient(tokenizer, tiny_model_config, mistake_episode):
    cfg = SFTConfig(model=tiny_model_config, seq_len=1024)
    enc = encode_episode(mistake_episode, tokenizer, cfg)
    bad_msg = step_messages(mistake_episode)[next(iter(erroneous_steps(mistake_episode)))]
    span = next(s for s in enc.turns if s.message == bad_msg)
    kept = [s for s in enc.turns if s.message != bad_msg]
    assert sum(enc.mask[span.start:span.end]) == 0 and all(sum(enc.mask[s.start:s.end]) for s in kept)
    model = build_model(tiny_model_config, tokenizer)
    batch = collate([enc], [[0]], cfg.seq_len, tokenizer.pad_token_id)

    def grads(labels):
        model.zero_grad()
        logits = model(input_ids=batch.input_ids, position_ids=batch.position_ids, use_cache=False).logits
        logits.retain_grad()
        torch.nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100).backward()
        return logits.grad[0], [p.grad.clone() for p in model.parameters()]

    g_logits, g_params = grads(batch.labels)
    # labels[t] predicts token t+1: the erroneous turn's tokens are predicted at positions start-1 .. end-2.
    assert g_logits[span.start - 1:span.end - 1].abs().sum() == 0
    assert all(g_logits[s.start - 1:s.end - 1].abs().sum() > 0 for s in kept)
    # Perturbing the erroneous turn's target tokens changes no gradient.
    ids = batch.input_ids.clone()
    ids[0, span.start:span.end] = (ids[0, span.start:span.end] + 7) % len(tokenizer)
    labels = batch.labels.clone()
    labels[0, span.start - 1:span.end - 1] = torch.where(labels[0, span.start - 1:span.end - 1] == -100, -100,
                                                        ids[0, span.start:span.end])
    _, g2 = grads(labels)
    assert all(torch.equal(a, b) for a, b in zip(g_params, g2, strict=True))

    # The same through the trainer's own loss (which projects only labelled positions).
    def loss_grads(labels):
        model.zero_grad()
        token_loss(model, Batch(batch.input_ids, labels, batch.position_ids, batch.tokens)).backward()
        return [p.grad.clone() for p in model.parameters()]

    assert all(torch.equal(a, b) for a, b in zip(loss_grads(batch.labels), loss_grads(labels), strict=True))


def test_each_turn_is_trained_under_the_tools_it_was_offered(tokenizer, tiny_model_config):
    """Loading a skill adds its tools: the turn before sees the short list, as generation shows it."""
    cfg = SFTConfig(model=tiny_model_config)
    task = catalog().templates["apps.skill_revoke_permissions"].instantiate(3)
    ep = reference_episodes([task], [ReferenceStyle()])[0]
    first, later = set(ep.steps[0].tools), set(ep.steps[1].tools)
    assert first < later and "set_app_permission" in later - first
    views = encode_views(ep, tokenizer, cfg)
    assert len(views) == 2
    texts = [tokenizer.decode(v.ids, skip_special_tokens=False) for v in views]
    assert "set_app_permission(" not in texts[0] and "set_app_permission(" in texts[1]
    # Every turn is trained exactly once, under its own tool list.
    trained = [{t.message for t in v.turns if sum(v.mask[t.start:t.end])} for v in views]
    assert trained[0] == {step_messages(ep)[0]} and trained[0].isdisjoint(trained[1])
    assert trained[0] | trained[1] == {t.message for t in encode_episode(ep, tokenizer, cfg).turns}
    # Episodes recorded before per-turn tool lists (or with one list throughout) stay one sequence.
    d = ep.to_dict()
    for step in d["steps"]:
        step.pop("tools")
    (whole,) = encode_views(d, tokenizer, cfg)
    episode = encode_episode(ep, tokenizer, cfg)  # the same conversation, plus the closing newline
    assert episode.ids[:len(whole.ids)] == whole.ids and len(episode.ids) == len(whole.ids) + 1


def test_every_trained_turn_sees_exactly_the_prompt_generation_builds(tokenizer, tiny_model_config):
    """A context budget so small that prompts are squeezed and cut: sequences break where a turn's prompt
    stops extending the previous one, each turn follows its own ``encode_prompt`` token for token, and a
    turn longer than ``max_new_tokens`` (which generation could never finish) gets no loss."""
    fmt = ChatFormat(max_context_tokens=160, max_new_tokens=48)
    cfg = SFTConfig(model=tiny_model_config, chat=fmt)
    task = catalog().templates["media.skill_build_playlist"].instantiate(3)
    ep = reference_episodes([task], [ReferenceStyle()])[0]
    views = encode_views(ep, tokenizer, cfg)
    tools_at = dict(zip(step_messages(ep), step_tools(ep), strict=True))
    spans = [(v, t) for v in views for t in v.turns]
    assert [t.message for _, t in spans] == step_messages(ep)  # every step once, in order
    assert len(views) > len({tuple(tool_dict(x)["name"] for x in ts) for ts in tools_at.values()})
    long = 0
    for v, t in spans:
        prompt = encode_prompt(ep.messages[:t.message], tools_at[t.message], tokenizer, fmt)
        assert v.ids[:t.start] == prompt and len(prompt) <= fmt.max_context_tokens
        trained = t.end - t.start <= fmt.max_new_tokens
        long += not trained
        assert v.mask[t.start:t.end] == [int(trained)] * (t.end - t.start)
    assert 0 < long < len(spans)
    # Nothing outside the turns carries loss.
    assert sum(sum(v.mask) for v in views) == sum(sum(v.mask[t.start:t.end]) for v, t in spans)


def test_argument_value_tokens_carry_the_value_weight(tokenizer, tiny_model_config, mistake_episode):
    """Every token of a value a trained turn passes to a tool weighs ``value_weight``, wherever a turn
    writes it (reasoning, content or call); other trained tokens weigh 1; without weighting there are no
    weights at all."""
    ep = mistake_episode
    views = encode_views(ep, tokenizer, SFTConfig(model=tiny_model_config, value_weight=2.5))
    plain = encode_views(ep, tokenizer, SFTConfig(model=tiny_model_config, value_weight=1))
    assert all(v.weights is None for v in plain)
    assert [v.ids for v in views] == [v.ids for v in plain] and [v.mask for v in views] == [v.mask for v in plain]
    bad = {step_messages(ep)[i] for i in erroneous_steps(ep)}
    good = [m for i, m in enumerate(ep.messages) if m["role"] == "assistant" and i not in bad]
    values = call_values(good)
    assert values == {"Living Room TV"}
    quoted = reasoned = 0
    for v in views:
        assert len(v.weights) == len(v.ids) and set(v.weights) <= {1.0, 2.5}
        for t in v.turns:
            pieces = [tokenizer.decode([i]) for i in v.ids[t.start:t.end]]
            ends = [sum(len(p) for p in pieces[:k + 1]) for k in range(len(pieces))]
            spans = list(zip([0, *ends[:-1]], ends, strict=True))
            text, ws = "".join(pieces), v.weights[t.start:t.end]
            hits = [(m.start(), m.end()) for value in values for m in re.finditer(re.escape(value), text)]
            for k, ((a, b), w) in enumerate(zip(spans, ws, strict=True)):
                covered = any(a < e and s < b for s, e in hits)
                if w > 1:  # a weighted token lies on a value ...
                    assert covered, (pieces[k], text)
            for value in values:  # ... and every token of a value written in a call is weighted
                for m in re.finditer(re.escape(f'"{value}"'), text):
                    quoted += 1
                    inner = [w for (a, b), w in zip(spans, ws, strict=True) if a < m.end() - 1 and m.start() + 1 < b]
                    assert inner and all(w == 2.5 for w in inner), value
            if "to Living Room TV." in text:  # the reasoning names the value before the call copies it
                at = text.index("to Living Room TV.") + 3
                reasoned += all(w == 2.5 for (a, b), w in zip(spans, ws, strict=True) if a < at + 14 and at < b)
    assert quoted and reasoned
    # Weighted tokens lie inside trained turns only (the prompt's copies of a value weigh 1).
    for v in views:
        inside = {k for t in v.turns for k in range(t.start, t.end)}
        assert all(k in inside for k, w in enumerate(v.weights) if w > 1)


def test_call_values_are_the_argument_leaves_as_text():
    msgs = [{"role": "user", "content": "Call Elif"},
            {"role": "assistant", "tool_calls": [
                {"function": {"name": "a", "arguments": '{"to": "Elif", "n": 18, "on": true, "x": "y"}'}},
                {"function": {"name": "b", "arguments": {"items": ["milk", {"q": 2.5}], "note": 'say "hi"'}}},
                {"function": {"name": "c", "arguments": "{not json"}}]}]
    assert call_values(msgs) == {"Elif", "18", "milk", "2.5", 'say "hi"', 'say \\"hi\\"'}


def test_the_weighted_loss_is_the_weighted_mean_of_token_losses(tokenizer, tiny_model_config, mistake_episode):
    cfg = SFTConfig(model=tiny_model_config, value_weight=4.0)
    views = encode_views(mistake_episode, tokenizer, cfg)
    model = build_model(tiny_model_config, tokenizer).eval()
    batch = collate(views, [[i] for i in range(len(views))], cfg.seq_len, tokenizer.pad_token_id)
    assert batch.weights is not None and batch.weights.shape == batch.labels.shape
    assert torch.equal(batch.weights > 0, batch.labels != -100)  # no weight where there is no label
    with torch.no_grad():
        logits = model(input_ids=batch.input_ids, use_cache=False).logits
        ce = torch.nn.functional.cross_entropy(logits.flatten(0, 1), batch.labels.flatten(), ignore_index=-100,
                                               reduction="none").view_as(batch.weights)
        by_hand = (ce * batch.weights).sum() / batch.weights.sum()
        assert torch.allclose(token_loss(model, batch), by_hand, atol=1e-5)
        # The value tokens' share of the loss grows from their share of tokens to 4x that weight.
        heavy = batch.weights == 4.0
        assert 0 < heavy.sum() < (batch.labels != -100).sum() / 2
        plain = Batch(batch.input_ids, batch.labels, batch.position_ids, batch.tokens, batch.packed)
        assert torch.allclose(token_loss(model, plain), ce[batch.labels != -100].mean(), atol=1e-5)
        assert not torch.allclose(token_loss(model, plain), by_hand, atol=1e-4)


def test_resume_continues_exactly(tokenizer, tiny_model_config, tmp_path, mistake_episode):
    eps = [mistake_episode] * 3
    base = dict(model=tiny_model_config, seq_len=1024, batch_rows=1, max_steps=6, warmup_steps=2, save_every=3)
    straight = train_sft(eps, SFTConfig(**base), tokenizer=tokenizer)
    cfg = SFTConfig(**base, out_dir=str(tmp_path / "run"))
    calls = {"n": 0}

    def stop_after_three():
        calls["n"] += 1
        return calls["n"] == 3  # a "crash" right after the step-3 checkpoint

    first = train_sft(eps, cfg, tokenizer=tokenizer, should_stop=stop_after_three)
    assert first.step == 3
    resumed = train_sft(eps, cfg, tokenizer=tokenizer)
    assert resumed.step == 6
    for a, b in zip(straight.model.parameters(), resumed.model.parameters(), strict=True):
        assert torch.allclose(a, b, atol=1e-6)


def test_resume_counts_the_time_already_spent(tokenizer, tiny_model_config, tmp_path, mistake_episode):
    """A crashed run's budget and cosine go on from the checkpoint's elapsed time, not from zero."""
    eps = [mistake_episode] * 3
    cfg = SFTConfig(model=tiny_model_config, seq_len=1024, batch_rows=1, max_steps=50, warmup_steps=1, save_every=2,
                    log_every=1, max_minutes=60.0, out_dir=str(tmp_path / "run"))
    calls = {"n": 0}

    def crash_at_two():
        calls["n"] += 1
        return calls["n"] == 2

    first = train_sft(eps, cfg, tokenizer=tokenizer, should_stop=crash_at_two)
    assert first.step == 2 and read_card(first.checkpoint)["tokens"] == first.tokens > 0
    state_file = first.checkpoint / "trainer_state.pt"
    state = torch.load(state_file, weights_only=True)
    assert 0 < state["extra"]["elapsed_s"] < 60
    state["extra"]["elapsed_s"] = 60 * 60.0 - 1e-3  # as if the crash came at the end of the hour
    torch.save(state, state_file)
    lrs = []
    resumed = train_sft(eps, cfg, tokenizer=tokenizer, on_metrics=lambda m: lrs.append(m["lr"]))
    # One more step, at the end of the cosine, and the budget is spent (it would be 48 more steps from zero).
    assert resumed.step == 3 and lrs == [pytest.approx(cfg.min_lr, rel=1e-3)]
    card = read_card(resumed.checkpoint)
    assert card["seconds"] >= 3600 and card["tokens"] > first.tokens


def test_continuation_adds_the_parent_run_to_the_totals(tokenizer, tiny_model_config, tmp_path, mistake_episode):
    eps = [mistake_episode] * 3
    base = dict(model=tiny_model_config, seq_len=1024, batch_rows=1, warmup_steps=1)
    parent = train_sft(eps, SFTConfig(**base, max_steps=3, out_dir=str(tmp_path / "a")), tokenizer=tokenizer)
    child = train_sft(eps, SFTConfig(**base, max_steps=2, out_dir=str(tmp_path / "b")), init_from=parent.checkpoint)
    pc, cc = read_card(parent.checkpoint), read_card(child.checkpoint)
    assert (pc["total_steps"], cc["step"], cc["total_steps"]) == (3, 2, 5)
    assert cc["total_seconds"] == pytest.approx(pc["total_seconds"] + cc["seconds"], abs=0.11)
    assert cc["init_from"] == str(parent.checkpoint)


@pytest.fixture(scope="module")
def word_tokenizer():
    """Spaces kept on words: a 2-layer model memorises 20 episodes in 100 steps (the default tokenizer,
    spaces split off, needs a few times more; see ml.tokenizer.TokenizerConfig)."""
    from ml.tokenizer import TokenizerConfig, build_tokenizer

    return build_tokenizer(TokenizerConfig(vocab_size=1024, seeds=1, split_spaces=False))


def test_sft_overfits_twenty_episodes_then_solves_them(word_tokenizer, tiny_model_config):
    tokenizer = word_tokenizer
    cat = catalog()
    # Two of the shortest templates (~210 tokens an episode) keep this at ~45 CPU-seconds.
    tasks = [cat.templates[t].instantiate(s) for t in ("connectivity.start_cast", "power.battery_saver_mode_conflict")
             for s in range(10)]
    eps = reference_episodes(tasks, [ReferenceStyle()])
    assert len(eps) == 20 and all(e.verdict.success for e in eps)
    cfg = SFTConfig(model=tiny_model_config, seq_len=1024, batch_rows=16, max_steps=100, lr=1e-2, min_lr=1e-3,
                    warmup_steps=5, swap_share=0.0)  # memorise these very episodes: no invented values
    losses = []
    res = train_sft(eps, cfg, tokenizer=tokenizer, on_metrics=lambda m: losses.append(m["loss"]))
    assert res.loss < 0.05, losses
    planner = TransformersPlanner(res.model, tokenizer)
    solved = run_episodes(tasks, planner)
    assert sum(e.verdict.success for e in solved) >= 17
    assert run_episode(tasks[0], planner).verdict.success == solved[0].verdict.success


def test_invalid_sft_config_names_every_bad_field():
    with pytest.raises(ValueError) as err:
        SFTConfig(lr=0, batch_rows=0, grad_clip=-1, mask_codes=(7,), value_weight=0)
    assert set(err.value.field_errors) >= {"lr", "batch_rows", "grad_clip", "mask_codes", "value_weight"}
    with pytest.raises(ValueError) as err:
        SFTConfig(seq_len=100)
    assert "seq_len" in err.value.field_errors
    with pytest.raises(ValueError) as err:
        SFTConfig.from_dict({"learning_rate": 1e-3})
    assert "learning_rate" in err.value.field_errors
