"""How RL moved a planner's next-token distribution, on fixed contexts: entropy, likelihood, greedy agreement.

    .venv/bin/python bench/policy_entropy.py SFT_CHECKPOINT [RL_CHECKPOINT ...] [--per-category 10]

The held-out score decodes greedily, so a policy gradient that only flattens the distribution where the planner
acts (raising its entropy, lowering the likelihood of what it used to say) can cost greedy success without the KL
to the SFT policy looking large. This scores every checkpoint teacher-forced on the same action tokens, those of
two fixed sets of episodes on the held-out split's first ``--per-category`` tasks of each category:

- ``sft_greedy``: the first checkpoint's own greedy episodes (the contexts the held-out score starts from),
  also split into its successful and its failed episodes;
- ``reference``: the reference solver's episodes (concise style, all verified successes).

Per checkpoint and set it prints ``entropy=`` (mean next-token entropy in nats at temperature 1), ``nll=`` (mean
negative log-likelihood of the recorded token), ``argmax_agree=`` (the share of tokens whose argmax is the
recorded token: for ``sft_greedy`` under the SFT checkpoint this is 1 by construction) and ``tokens=``. A
diagnostic; it trains nothing.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402

from harness.bench import suite_tasks  # noqa: E402
from harness.contract import Episode  # noqa: E402
from harness.episode import run_episodes  # noqa: E402
from harness.reference import ReferenceSolver  # noqa: E402
from ml.backends import TransformersPlanner  # noqa: E402
from ml.care_config import CAREConfig  # noqa: E402
from ml.care_trainer import action_logits, encode_actions, micro_batches, solved  # noqa: E402
from ml.chat import Encoded  # noqa: E402
from ml.model import chat_format_of, load_checkpoint  # noqa: E402


def encode(episodes: list[Episode], tokenizer, fmt) -> list[Encoded]:
    """Every action turn of ``episodes`` after the prompt generation built for it (``encode_actions``, as the
    trainer scores them)."""
    cfg = CAREConfig(chat=fmt)
    return [enc for ep in episodes for enc in encode_actions(ep, tokenizer, cfg) if sum(enc.mask[1:])]


@torch.no_grad()
def score(model, tokenizer, seqs: list[Encoded]) -> dict[str, float]:
    """Token-weighted means over the action tokens of ``seqs``."""
    ent = nll = agree = n = 0.0
    for mbt in micro_batches([(e, 0.0) for e in seqs], 16384):
        logits, targets, _, _ = action_logits(model, [e for e, _ in mbt], tokenizer.pad_token_id, "cpu")
        lp = torch.log_softmax(logits.float(), dim=-1)
        ent += float(-(lp.exp() * lp).sum(-1).sum())
        nll += float(-lp.gather(-1, targets[:, None]).sum())
        agree += float((lp.argmax(-1) == targets).sum())
        n += len(targets)
    n = max(n, 1.0)
    return {"entropy": ent / n, "nll": nll / n, "argmax_agree": agree / n, "tokens": n}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkpoints", nargs="+", help="the SFT checkpoint first (its greedy episodes are the contexts)")
    ap.add_argument("--per-category", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    tasks = suite_tasks("pa-sim", "test", args.per_category)
    first, tok = load_checkpoint(args.checkpoints[0])
    fmt = chat_format_of(args.checkpoints[0])
    greedy = run_episodes(tasks, TransformersPlanner(first, tok, fmt=fmt, temperature=0.0), batch_size=64)
    sets = {
        "sft_greedy": encode(greedy, tok, fmt),
        "sft_greedy_success": encode([e for e in greedy if solved(e)], tok, fmt),
        "sft_greedy_failure": encode([e for e in greedy if not solved(e)], tok, fmt),
        "reference": encode(run_episodes(tasks, ReferenceSolver(), batch_size=64), tok, fmt),
    }
    print(f"tasks={len(tasks)} sft_greedy_success={sum(solved(e) for e in greedy) / len(greedy):.3f}", flush=True)
    for path in args.checkpoints:
        model = first if path == args.checkpoints[0] else load_checkpoint(path)[0]
        model.eval()
        for name, seqs in sets.items():
            s = score(model, tok, seqs)
            print(f"checkpoint={path} set={name} entropy={s['entropy']:.4f} nll={s['nll']:.4f} "
                  f"argmax_agree={s['argmax_agree']:.4f} tokens={int(s['tokens'])}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
