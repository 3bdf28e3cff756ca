"""`manage.py checkpoint import/list`: a folder trained elsewhere joins the registry; bad folders are refused."""

from __future__ import annotations

import shutil
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from console.models import Checkpoint

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """A tiny SFT checkpoint as ``train_sft`` leaves it: weights, tokenizer, card and a trainer state."""
    from ml.model import ModelConfig, build_model, save_checkpoint
    from ml.tokenizer import TokenizerConfig, build_tokenizer

    tokenizer = build_tokenizer(TokenizerConfig(vocab_size=1024, seeds=1))
    model = build_model(ModelConfig(hidden_size=64, intermediate_size=128, num_layers=2, num_heads=4,
                                    num_kv_heads=2, max_positions=1024), tokenizer)
    path = save_checkpoint(model, tokenizer, tmp_path_factory.mktemp("bench") / "last",
                           card={"kind": "sft", "config": {"lr": 0.003}, "step": 12})
    torch.save({"step": 12}, path / "trainer_state.pt")
    return path


def _import(*args: str) -> str:
    out = StringIO()
    call_command("checkpoint", "import", *args, stdout=out)
    return out.getvalue()


def test_import_registers_a_loadable_copy_without_pickles(db, data_dir, trained):
    from ml.model import load_checkpoint

    text = _import(str(trained), "--name", "bench-sft")
    ckpt = Checkpoint.objects.get()
    assert (ckpt.name, ckpt.kind, ckpt.config, ckpt.parent) == ("bench-sft", "sft", {"lr": 0.003}, None)
    assert f"Registered sft checkpoint {ckpt.id}" in text and "parameters" in text
    copy = data_dir / ckpt.path
    assert (copy / "model.safetensors").is_file() and not (copy / "trainer_state.pt").exists()
    model, _ = load_checkpoint(copy)
    original, _ = load_checkpoint(trained)
    for a, b in zip(model.parameters(), original.parameters(), strict=True):
        assert torch.equal(a, b)
    # A continuation names its registered parent; the list shows both, newest first.
    _import(str(trained), "--name", "bench-sft-2", "--kind", "care", "--parent", str(ckpt.id))
    child = Checkpoint.objects.get(name="bench-sft-2")
    assert child.parent_id == ckpt.id and child.kind == "care"
    out = StringIO()
    call_command("checkpoint", "list", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith(str(child.id)) and "from bench-sft" in lines[0] and "not evaluated" in lines[1]


def test_import_refuses_what_is_not_a_safe_checkpoint(db, data_dir, trained, tmp_path):
    with pytest.raises(CommandError, match="is not a folder"):
        _import(str(tmp_path / "nowhere"))
    pickled = tmp_path / "pickled"
    pickled.mkdir()
    for f in ("config.json", "tokenizer.json"):
        shutil.copy(trained / f, pickled / f)
    torch.save({}, pickled / "pytorch_model.bin")
    with pytest.raises(CommandError, match="no model.safetensors .*never pickled"):
        _import(str(pickled))
    no_card = tmp_path / "no_card"
    shutil.copytree(trained, no_card)
    (no_card / "flywheel_model.json").unlink()
    with pytest.raises(CommandError, match="Unknown checkpoint kind '' .*give --kind"):
        _import(str(no_card))
    with pytest.raises(CommandError, match="No registered checkpoint with id 'abc'"):
        _import(str(trained), "--parent", "abc")
    broken = tmp_path / "broken"
    shutil.copytree(trained, broken)
    (broken / "model.safetensors").write_bytes(b"not weights")
    with pytest.raises(CommandError, match="does not load as a model"):
        _import(str(broken))
    assert Checkpoint.objects.count() == 0
    assert not any((data_dir / "checkpoints" / "imported").iterdir())  # the broken copy was removed
