"""Value-swap augmentation: task values are replaced consistently in every message, and nothing else changes."""

from __future__ import annotations

import json
import random

from devices.virtual.registry import catalog
from harness.reference import ReferenceStyle
from ml.augment import NAME, episode_plan, invented_name, invented_number, swap_plan, swap_values
from ml.sft import reference_episodes


def episode(template: str, seed: int) -> dict:
    return reference_episodes([catalog().templates[template].instantiate(seed)], [ReferenceStyle()])[0].to_dict()


def test_a_name_is_swapped_in_request_call_reply_and_answer_alike():
    d = episode("apps.gui_clear_cache_or_stop", 3)
    app = d["task"]["params"]["app"]
    before = json.dumps(d)
    out = swap_values(d, random.Random(5))
    new = episode_plan(d, random.Random(5))[app]
    assert json.dumps(d) == before  # the input episode is left as it was
    text = json.dumps(out["messages"])
    assert app not in text and new != app
    # Everywhere the old name was, the new one is: request, reasoning and arguments, tool replies, answer.
    for old_m, new_m in zip(d["messages"], out["messages"], strict=True):
        assert json.dumps(old_m).replace(app, new) == json.dumps(new_m)
    assert new in out["task"]["instruction"] and new in out["messages"][-1]["content"]
    assert out["steps"] == d["steps"] and out["verdict"] == d["verdict"]


def test_stated_numbers_get_a_different_number_of_the_same_shape():
    rng = random.Random(0)
    for value in ("25", "435.19", "0.8", "2500", "39.6"):
        for _ in range(20):
            new = invented_number(value, rng)
            whole, _, frac = value.partition(".")
            w2, _, f2 = new.partition(".")
            assert new != value and len(w2) == len(whole) and len(f2) == len(frac)
    d = episode("calculator.split_bill_from_memory", 4)
    total = str(d["task"]["params"]["total"])
    plan = swap_plan(d["task"], random.Random(1))
    assert total in plan
    out = swap_values(d, random.Random(1))
    call = next(c for m in out["messages"] for c in m.get("tool_calls") or [] if c["function"]["name"] == "split_bill")
    assert json.loads(call["function"]["arguments"])["total"] == float(plan[total])
    assert plan[total] in out["task"]["instruction"]


def test_lowercase_enum_values_and_booleans_stay_and_a_task_without_names_is_returned_as_is():
    d = episode("accessibility.captions_then_audio", 3)
    plan = episode_plan(d, random.Random(0))
    # "large" is an enum value of set_captions: part of the fixed vocabulary, a choice rather than a copy.
    assert d["task"]["params"]["lang"] in plan and d["task"]["params"]["size"] not in plan
    assert "large" in swap_plan(d["task"], random.Random(0))  # without the fixed vocabulary it would be a free word
    bare = dict(d, task=dict(d["task"], params={"on": True, "size": "large"}))
    assert swap_values(bare, random.Random(0)) is bare


def test_each_epoch_draws_new_swaps_into_the_same_slots(tokenizer):
    from ml.sft import EpochData, encode_views
    from ml.sft_config import SFTConfig

    eps = [episode("apps.gui_clear_cache_or_stop", 3), episode("apps.gui_clear_cache_or_stop", 4),
           episode("accessibility.captions_then_audio", 3)]
    plain = EpochData(eps, tokenizer, SFTConfig(swap_share=0.0))
    assert plain.examples(0) == plain.examples(5)  # no swap: every epoch the same encodings
    data = EpochData(eps, tokenizer, SFTConfig(swap_share=1.0))
    e0, e1 = [list(data.examples(k)) for k in (0, 1)]
    assert len(e0) == len(e1) == len(data.slots)
    originals = [x.ids for d in eps for x in encode_views(d, tokenizer, SFTConfig(swap_share=0.0))]
    for a, b, orig in zip(e0, e1, originals, strict=True):
        assert a.ids != orig and a.ids != b.ids  # swapped, and swapped differently in the next epoch
        assert sum(a.mask) > 0 and sum(b.mask) > 0
    assert [x.ids for x in data.examples(0)] == [x.ids for x in e0]  # an epoch's draw is reproducible


def test_a_number_read_from_memory_and_a_free_word_are_swapped_but_dates_and_times_keep_their_digits():
    d = episode("calculator.split_bill_from_memory", 4)
    tip = str(d["task"]["params"]["tip"])
    assert tip not in d["task"]["instruction"]  # the tip comes from a memory reply, not from the request
    plan = episode_plan(d, random.Random(2))
    assert tip in plan and tip not in swap_plan(d["task"], random.Random(2))
    out = swap_values(d, random.Random(2))
    call = next(c for m in out["messages"] for c in m.get("tool_calls") or [] if c["function"]["name"] == "split_bill")
    assert json.loads(call["function"]["arguments"])["tip_percent"] == int(plan[tip])
    assert any(plan[tip] in (m.get("content") or "") for m in out["messages"] if m["role"] == "tool")

    w = episode("assistant.define_and_save_word", 3)
    word = w["task"]["params"]["word"]
    new = episode_plan(w, random.Random(0))[word]
    assert new.islower() and new != word
    text = json.dumps(swap_values(w, random.Random(0))["messages"])
    assert word.lower() not in text.lower() and new in text

    stamp = {"task": {"instruction": "Move it from 2026-12-10 10:00 to 10 people", "params": {"n": 10}},
             "messages": [{"role": "user", "content": "Move it from 2026-12-10 10:00 to 10 people"}]}
    out = swap_values(stamp, random.Random(0))
    assert out["messages"][0]["content"].startswith("Move it from 2026-12-10 10:00 to ")
    assert not out["messages"][0]["content"].endswith(" 10 people")


def test_invented_names_almost_never_repeat_so_a_model_cannot_memorise_them():
    # Many epochs of swaps draw hundreds of thousands of names: a small name space lets the model learn the
    # inventions as a vocabulary (stop 18's held-out calls carried training-only names) instead of copying.
    rng = random.Random(7)
    names = [invented_name(rng) for _ in range(5000)]
    assert len(set(names)) >= 0.99 * len(names)
    assert all(NAME.match(n) for n in names)  # still swappable as names themselves
