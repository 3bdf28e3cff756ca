"""Rollout throughput: one batched generate per step for all live episodes vs plain per-episode ``generate``.

    .venv/bin/python bench/rollout.py [--batch 32] [--checkpoint PATH] [--threads 2]

Same model, same episodes (``--batch`` training tasks), one run each, greedy. Batched: the
episode loop (``harness.episode.run_episodes``) drives ``ml.backends.TransformersPlanner``, one
left-padded KV-cached decode for every active episode per step. Sequential: each episode on its
own (``run_episode``) with a planner that calls Hugging Face ``model.generate`` on one context at
a time (KV cache too). Prints ``batched_tokens_per_s=`` and ``sequential_tokens_per_s=`` (generated
tokens per wall second) and their ratio (target >= 3 at batch 32). Without ``--checkpoint`` the
model is a freshly initialised default ``ModelConfig`` (every turn then runs to the token budget).
With trained weights (``--checkpoint bench/checkpoints/sft-cpu``) turns end at different lengths; finished
rows leave the batch (stop 30: median ratio 2.84 over three runs, 2.01 before; 5.8-7.7 untrained). Stop 31:
unpadded grouped prefill and an in-place KV cache, median 3.28 against 2.36 for stop 30's code (six runs each,
interleaved; min 3.20).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from harness.episode import run_episode, run_episodes  # noqa: E402
from ml.backends import TransformersPlanner  # noqa: E402
from ml.chat import ChatFormat, encode_prompt  # noqa: E402


class SequentialGenerate(TransformersPlanner):
    """Plain per-context ``model.generate`` (greedy, KV cache), the baseline batching is measured against."""

    def generate(self, contexts):
        import torch

        turns = []
        for ctx in contexts:
            ids = encode_prompt(ctx.messages, ctx.tools, self.tokenizer, self.fmt)
            with torch.inference_mode():
                out = self.model.generate(torch.tensor([ids]),
                                          attention_mask=torch.ones((1, len(ids)), dtype=torch.long),
                                          max_new_tokens=self.fmt.max_new_tokens, do_sample=False,
                                          eos_token_id=self.eos_id, pad_token_id=self.pad_id)
            new = out[0, len(ids):].tolist()
            self.stats["new_tokens"] += len(new)
            turns.append(self.turn(new))
        return turns


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--checkpoint", default="")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-new-tokens", type=int, default=ChatFormat.max_new_tokens)
    args = ap.parse_args()

    import torch

    from ml.model import ModelConfig, build_model, load_checkpoint, n_params
    from ml.sft import training_tasks
    from ml.tokenizer import TokenizerConfig, build_tokenizer

    torch.set_num_threads(args.threads)
    if args.checkpoint:
        model, tok = load_checkpoint(args.checkpoint)
    else:
        tok = build_tokenizer(TokenizerConfig(seeds=2))
        model = build_model(ModelConfig(), tok)
    model.eval()
    tasks = training_tasks([7])[: args.batch]
    fmt = ChatFormat(max_new_tokens=args.max_new_tokens)

    batched = TransformersPlanner(model, tok, fmt=fmt, max_batch=args.batch)
    t0 = time.perf_counter()
    eps_b = run_episodes(tasks, batched, batch_size=args.batch)
    tb = time.perf_counter() - t0

    seq = SequentialGenerate(model, tok, fmt=fmt)
    t0 = time.perf_counter()
    eps_s = [run_episode(t, seq) for t in tasks]
    ts = time.perf_counter() - t0

    nb, ns = batched.stats["new_tokens"], seq.stats["new_tokens"]
    same = sum(a.messages == b.messages for a, b in zip(eps_b, eps_s, strict=True))
    print(f"model_params={n_params(model)} episodes={len(tasks)} batch={args.batch} threads={args.threads}")
    print(f"batched_tokens={nb} batched_s={tb:.2f} batched_tokens_per_s={nb / tb:.1f}")
    print(f"sequential_tokens={ns} sequential_s={ts:.2f} sequential_tokens_per_s={ns / ts:.1f}")
    print(f"ratio={(nb / tb) / (ns / ts):.2f} (target >= 3) identical_episodes={same}/{len(tasks)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
