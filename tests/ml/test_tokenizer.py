"""The BPE tokenizer: exact round trips (special tokens included) and a chat template that matches ml.chat."""

from __future__ import annotations

import pytest

from devices.virtual.registry import catalog
from harness.episode import run_episode
from harness.reference import ReferenceSolver, ReferenceStyle
from ml.chat import SPECIAL_TOKENS, ChatFormat, compact_messages, render_text

TEXTS = [
    "Mirror my phone on the Living Room TV.",
    '<think>\nCasting needs Wi-Fi.\n</think>\n\n<tool_call>\n{"name": "set_wifi", "arguments": {"enabled": true}}\n'
    "</tool_call>",
    "<|im_start|>user\n<tool_response>\n{\"success\":false,\"error\":\"x\",\"code\":409}\n</tool_response><|im_end|>\n",
    "Zürich 12°C — naïve café ☕ 3.14159 x=-42  two  spaces\ttab\n\n\n",
    "",
]


@pytest.mark.parametrize("text", TEXTS)
def test_round_trip_is_exact(tokenizer, text):
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False) == text


def test_special_tokens_are_single_ids(tokenizer):
    for tok in SPECIAL_TOKENS:
        ids = tokenizer.encode(tok, add_special_tokens=False)
        assert len(ids) == 1 and tokenizer.convert_ids_to_tokens(ids) == [tok]
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.pad_token == "<|endoftext|>"


def _episodes():
    cat = catalog()
    tids = ["connectivity.start_cast", "notes.multi_turn_append_pin", "power.skills_note_then_power_off",
            "files.gui_download_then_file", "connectivity.cast_switch_after_false_claim"]
    for tid in tids:
        if tid in cat.templates:
            task = cat.templates[tid].instantiate(3)
            yield run_episode(task, ReferenceSolver(ReferenceStyle("verbose", redundant_checks=True, mistake=True)))


def test_chat_template_renders_what_ml_chat_renders(tokenizer, tmp_path):
    tokenizer.save_pretrained(tmp_path)
    from transformers import AutoTokenizer

    loaded = AutoTokenizer.from_pretrained(tmp_path)
    fmt = ChatFormat()
    n = 0
    for ep in _episodes():
        for msgs in (ep.messages, compact_messages(ep.messages, fmt)):
            for gen in (False, True):
                want = render_text(msgs, ep.tools, add_generation_prompt=gen)
                got = loaded.apply_chat_template(msgs, tools=ep.tools, tokenize=False, add_generation_prompt=gen)
                assert got == want
                n += 1
    assert n >= 12


def test_a_value_is_the_same_tokens_in_the_request_and_in_the_call(tokenizer):
    """Spaces are their own tokens, so copying "Discord" from prose into JSON is identity copying."""
    prose = tokenizer.encode("Install Discord and open it.", add_special_tokens=False)
    call = tokenizer.encode('{"name": "install_app", "arguments": {"app": "Discord"}}', add_special_tokens=False)
    value = tokenizer.encode("Discord", add_special_tokens=False)

    def contains(seq, sub):
        return any(seq[i:i + len(sub)] == sub for i in range(len(seq) - len(sub) + 1))

    assert contains(prose, value) and contains(call, value)
