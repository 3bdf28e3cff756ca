"""Shared ml fixtures: one small tokenizer per session, one thread for torch (the CPUs are shared)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")


@pytest.fixture(scope="session", autouse=True)
def one_thread():
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def tokenizer():
    from ml.tokenizer import TokenizerConfig, build_tokenizer

    return build_tokenizer(TokenizerConfig(vocab_size=1024, seeds=1))


@pytest.fixture(scope="session")
def tiny_model_config():
    from ml.model import ModelConfig

    return ModelConfig(hidden_size=64, intermediate_size=128, num_layers=2, num_heads=4, num_kv_heads=2,
                       max_positions=1024)
