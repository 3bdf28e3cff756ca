"""A byte-level BPE tokenizer trained on Flywheel's own corpus, saved as a ``PreTrainedTokenizerFast``.

The corpus is what the planner will read and write: reference-solver episodes over every task
template (several seeds and styles, never the held-out suite's instances) rendered in the compact
chat format of ``ml.chat``, plus every tool's signature and description. Special tokens are the
ChatML and tool-call markers of ``ml.chat.SPECIAL_TOKENS``; ``<|im_end|>`` is the end-of-turn
(eos) token and ``<|endoftext|>`` pads. Digits are split one per token so numbers copy cleanly.
The saved tokenizer carries ``ml.chat.CHAT_TEMPLATE``, so ``apply_chat_template`` renders what
``ml.chat.render_text`` renders.

    python -m ml.tokenizer --out var/ml/tokenizer --vocab-size 2048
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ml.chat import (
    CHAT_TEMPLATE,
    ENDOFTEXT,
    IM_END,
    SPECIAL_TOKENS,
    ChatFormat,
    compact_messages,
    raise_field_errors,
    render_text,
    tool_signature,
)


@dataclass
class TokenizerConfig:
    """vocab_size: BPE vocabulary including special tokens. seeds: instances per template in the corpus.
    min_frequency: merges need at least this many occurrences. split_spaces: a space is always its
    own token, so a word is the same token sequence in prose (``call Elif``) and inside JSON
    (``"Elif"``), and copying a value from the request into a call is identity copying (an
    induction head) instead of a learned per-value mapping (``ĠDiscord`` -> ``Discord``). Measured:
    without it a 30-minute SFT model calls the right tool on 92% of held-out turns but copies the
    wrong value (``install_app(app="Duolingo")`` for "Install Discord") on a third of them. The
    price: ~15% more tokens, and slower memorisation in very small models (the 20-episode overfit
    check of a 2-layer model reaches loss 0.37 in 100 steps with it, 0.006 without)."""

    vocab_size: int = 2048
    seeds: int = 6
    min_frequency: int = 2
    split_spaces: bool = True

    def __post_init__(self) -> None:
        errors = {}
        if not isinstance(self.vocab_size, int) or self.vocab_size < 300:
            errors["vocab_size"] = "must be an integer >= 300 (256 bytes + special tokens + merges)"
        if not isinstance(self.seeds, int) or self.seeds < 1:
            errors["seeds"] = "must be a positive integer"
        if not isinstance(self.min_frequency, int) or self.min_frequency < 1:
            errors["min_frequency"] = "must be a positive integer"
        raise_field_errors("TokenizerConfig", errors)


def corpus(seeds: int = 6, fmt: ChatFormat | None = None) -> Iterator[str]:
    """Rendered reference episodes (instance seeds 0..seeds-1 of every template, four styles) and tool text."""
    from devices.virtual.registry import catalog
    from harness.episode import run_episodes
    from harness.reference import ReferenceSolver, ReferenceStyle
    from harness.version import DEFAULT_POLICY

    fmt = fmt or ChatFormat()
    cat = catalog()
    tasks = [tpl.instantiate(seed) for _, tpl in sorted(cat.templates.items()) for seed in range(seeds)]
    styles = [ReferenceStyle(), ReferenceStyle("verbose"), ReferenceStyle(redundant_checks=True),
              ReferenceStyle(mistake=True)]
    for style in styles:
        for ep in run_episodes(tasks, ReferenceSolver(style)):
            yield render_text(compact_messages(ep.messages, fmt), ep.tools)
    yield DEFAULT_POLICY
    for tool in cat.tools.values():
        yield tool_signature(tool.spec) + "\n" + tool.spec.description


def train_tokenizer(texts: Iterator[str] | list[str], config: TokenizerConfig | None = None) -> Any:
    """Train byte-level BPE on ``texts`` and wrap it as a ``PreTrainedTokenizerFast`` with the chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    config = config or TokenizerConfig()
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        *([pre_tokenizers.Split(" ", behavior="isolated")] if config.split_spaces else []),
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=config.vocab_size,
        min_frequency=config.min_frequency,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=IM_END,
        pad_token=ENDOFTEXT,
        additional_special_tokens=[t for t in SPECIAL_TOKENS if t not in (ENDOFTEXT, IM_END)],
        chat_template=CHAT_TEMPLATE,
        clean_up_tokenization_spaces=False,
        model_max_length=4096,
    )


def build_tokenizer(config: TokenizerConfig | None = None, fmt: ChatFormat | None = None) -> Any:
    """Render the corpus and train on it (a few seconds on one core)."""
    config = config or TokenizerConfig()
    return train_tokenizer(list(corpus(config.seeds, fmt)), config)


def load_tokenizer(path: str | Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(path))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ml.tokenizer", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--vocab-size", type=int, default=TokenizerConfig.vocab_size)
    ap.add_argument("--seeds", type=int, default=TokenizerConfig.seeds)
    args = ap.parse_args(argv)
    tok = build_tokenizer(TokenizerConfig(vocab_size=args.vocab_size, seeds=args.seeds))
    tok.save_pretrained(args.out)
    print(f"vocab_size={len(tok)} saved={args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
