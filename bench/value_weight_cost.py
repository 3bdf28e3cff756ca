"""What the SFT value weighting costs: optimiser-step time and data encoding, weighted vs plain, side by side.

    .venv/bin/python bench/value_weight_cost.py [--seeds 4] [--steps 40] [--threads 2]

Encodes the same reference episodes (training seeds, the bench's style mix) with ``value_weight`` 3 and
1, then runs the same batches (length buckets of 3 rows, the bench's setting) through one fresh default
model, alternating a weighted and a plain step, and prints ``median_step_s_weighted=``,
``median_step_s_plain=`` and their ratio, the encoding seconds of each, and the share of trained tokens
that carry the weight. Timings only; the weighting's effect on quality is ``bench/train_loop.py``'s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ml.model import ModelConfig, build_model  # noqa: E402
from ml.sft import buckets, collate, encode_views, reference_episodes, token_loss, training_tasks  # noqa: E402
from ml.sft_config import SFTConfig  # noqa: E402
from ml.tokenizer import TokenizerConfig, build_tokenizer  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=4, help="instances per template")
    ap.add_argument("--steps", type=int, default=40, help="timed steps per arm")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    tok = build_tokenizer(TokenizerConfig())
    eps = [e.to_dict() for e in reference_episodes(training_tasks(range(100, 100 + args.seeds)), rotate=True,
                                                   weights=[0.55, 0.1, 0.2, 0.15])]
    arms = {}
    for name, weight in (("weighted", 3.0), ("plain", 1.0)):
        cfg = SFTConfig(value_weight=weight, batch_rows=3)
        t = time.perf_counter()
        examples = [v for d in eps for v in encode_views(d, tok, cfg) if sum(v.mask)]
        arms[name] = (cfg, examples, time.perf_counter() - t)
    cfg, weighted, _ = arms["weighted"]
    trained = sum(sum(v.mask) for v in weighted)
    heavy = sum(sum(1 for m, w in zip(v.mask, v.weights, strict=True) if m and w > 1) for v in weighted)
    groups = buckets(weighted, cfg.seq_len, cfg.batch_rows * cfg.seq_len)
    order = torch.randperm(len(groups), generator=torch.Generator().manual_seed(0)).tolist()
    model = build_model(ModelConfig(), tok)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    times: dict[str, list[float]] = {"weighted": [], "plain": []}
    for k in range(2 * args.steps + 4):
        name = ("weighted", "plain")[k % 2]
        cfg, examples, _ = arms[name]
        t = time.perf_counter()
        batch = collate(examples, [[i] for i in groups[order[(k // 2) % len(order)]]], cfg.seq_len, tok.pad_token_id)
        loss = token_loss(model, batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if k >= 4:  # the first two pairs warm up
            times[name].append(time.perf_counter() - t)
    mw, mp = statistics.median(times["weighted"]), statistics.median(times["plain"])
    print(f"episodes={len(eps)} trained_tokens={trained} value_tokens={heavy} value_share={heavy / trained:.3f}")
    print(f"encode_s_weighted={arms['weighted'][2]:.1f} encode_s_plain={arms['plain'][2]:.1f} "
          f"ratio={arms['weighted'][2] / arms['plain'][2]:.2f}")
    print(f"median_step_s_weighted={mw:.4f} median_step_s_plain={mp:.4f} ratio={mw / mp:.3f} steps={args.steps}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
