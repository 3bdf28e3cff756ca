"""The planner model: documented sizes, Hugging Face save/load with identical logits, safetensors only."""

from __future__ import annotations

import pytest
import torch

from ml.model import ModelConfig, build_model, load_checkpoint, n_params, read_card, save_checkpoint


def test_default_size_is_about_a_million_parameters(tokenizer):
    n = n_params(build_model(ModelConfig(), tokenizer))
    assert 500_000 < n < 3_500_000


def test_save_load_gives_identical_logits_through_auto_classes(tokenizer, tiny_model_config, tmp_path):
    from transformers import AutoModelForCausalLM

    model = build_model(tiny_model_config, tokenizer).eval()
    path = save_checkpoint(model, tokenizer, tmp_path / "ckpt", card={"kind": "test"})
    assert (path / "model.safetensors").exists() and not list(path.glob("*.bin"))
    assert read_card(path) == {"kind": "test"}
    ids = torch.tensor([tokenizer.encode("<|im_start|>user\nTurn Wi-Fi on.<|im_end|>\n", add_special_tokens=False)])
    plain = AutoModelForCausalLM.from_pretrained(str(path)).eval()
    loaded, tok = load_checkpoint(path)
    with torch.no_grad():
        want = model(ids).logits
        assert torch.equal(plain(ids).logits, want)
        assert torch.equal(loaded.eval()(ids).logits, want)
    assert tok.chat_template == tokenizer.chat_template
    assert type(loaded).__name__ == "Qwen2ForCausalLM"


def test_invalid_model_config_names_fields():
    with pytest.raises(ValueError) as err:
        ModelConfig(hidden_size=100, num_heads=7, num_layers=0)
    assert {"num_layers"} <= set(err.value.field_errors)
    with pytest.raises(ValueError) as err:
        ModelConfig(hidden_size=100, num_heads=7)
    assert set(err.value.field_errors) == {"num_heads"}
    with pytest.raises(ValueError) as err:
        ModelConfig.from_dict({"hidden": 3})
    assert "hidden" in err.value.field_errors


def test_loading_refuses_a_folder_without_safetensors(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_checkpoint(tmp_path)
