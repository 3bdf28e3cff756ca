"""Value-swap augmentation: task values are replaced consistently in every message, and nothing else changes."""

from __future__ import annotations

import json
import random

from devices.virtual.registry import catalog
from harness.reference import ReferenceStyle
from ml.augment import invented_number, swap_plan, swap_values
from ml.sft import reference_episodes


def episode(template: str, seed: int) -> dict:
    return reference_episodes([catalog().templates[template].instantiate(seed)], [ReferenceStyle()])[0].to_dict()


def test_a_name_is_swapped_in_request_call_reply_and_answer_alike():
    d = episode("apps.gui_clear_cache_or_stop", 3)
    app = d["task"]["params"]["app"]
    before = json.dumps(d)
    out = swap_values(d, random.Random(5))
    new = swap_plan(d["task"], random.Random(5))[app]
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
    plan = swap_plan(d["task"], random.Random(0))
    assert d["task"]["params"]["lang"] in plan and d["task"]["params"]["size"] not in plan
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
