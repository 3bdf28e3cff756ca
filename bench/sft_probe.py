"""Why a checkpoint fails: held-out loss, per-turn call accuracy under teacher forcing, first divergences.

    .venv/bin/python bench/sft_probe.py CHECKPOINT [--per-category 12] [--train-seeds 100:102] [--threads 2]

On the held-out split's first ``--per-category`` tasks of each category, played by the concise reference
solver, prints:

- ``hidden_values=``: argument values the reference passes that an earlier tool result states but the
  compacted prompt cut out (``ml.sft.hidden_values``): what no checkpoint can copy;
- ``heldout_loss=``: mean cross-entropy per assistant token of those reference episodes (the SFT loss,
  on data it never saw), each turn rendered under the tools it was offered, as in training;
- ``turn_exact=`` / ``turn_names=``: the share of the reference's tool-calling turns where the greedy
  turn, given the reference's own context up to that turn, issues exactly the reference's calls (same
  tools, same arguments; order-free) / the same tool names; per category too; ``answer_turns_ok=``: the
  share of the reference's answer turns where the model also answers (calls nothing);
- ``closed_loop_success=``: the checkpoint's own greedy episodes on the same tasks, and for each failed
  one the kind of its first departure from the reference (``ml.evaluate.first_divergence``: parse_error,
  stopped_early, extra_call, wrong_tool, wrong_value, after_reference), with a few wrong-value examples;
- with ``--train-seeds FIRST:END``: ``train_success=`` on those training instances (does the model
  reproduce its own training episodes in closed loop?).

A diagnostic for analysts, beside ``bench/train_loop.py``'s scores; it trains nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from harness.bench import suite_tasks  # noqa: E402
from harness.episode import run_episodes  # noqa: E402
from harness.reference import ReferenceSolver  # noqa: E402
from ml.backends import TransformersPlanner  # noqa: E402
from ml.chat import encode_prompt  # noqa: E402
from ml.evaluate import DIVERGENCES, call_keys, call_names, first_divergence  # noqa: E402
from ml.model import chat_format_of, load_checkpoint  # noqa: E402
from ml.sft import encode_views, hidden_values, step_messages, step_tools, training_tasks  # noqa: E402
from ml.sft_config import SFTConfig  # noqa: E402


def heldout_loss(model, tok, episodes, fmt) -> float:
    """Mean next-token cross-entropy over the loss-masked (assistant) tokens of ``episodes``."""
    import torch

    cfg = SFTConfig(chat=fmt, mask_uncorrected=False)
    total, count = 0.0, 0
    model.eval()
    with torch.inference_mode():
        for ep in episodes:
            for enc in encode_views(ep, tok, cfg):
                ids = torch.tensor([enc.ids])
                logits = model(input_ids=ids).logits[0, :-1].float()
                target = ids[0, 1:]
                mask = torch.tensor(enc.mask[1:], dtype=torch.bool)
                ce = torch.nn.functional.cross_entropy(logits[mask], target[mask], reduction="sum")
                total += float(ce)
                count += int(mask.sum())
    return total / max(count, 1)


def teacher_forced(planner: TransformersPlanner, episodes, fmt) -> list[tuple[str, bool, bool, bool]]:
    """(category, reference calls tools, exact calls, same tool names) for every turn of every reference
    episode (a reference answer turn is matched by an answer: no calls)."""
    prompts, truth = [], []
    for ep in episodes:
        for step, m, tools in zip(ep.steps, step_messages(ep), step_tools(ep), strict=True):
            prompts.append(encode_prompt(ep.messages[:m], tools, planner.tokenizer, fmt))
            truth.append((ep.task.get("category", ""), step.turn.tool_calls))
    out = []
    for i in range(0, len(prompts), planner.max_batch):
        for ids, (cat, ref) in zip(planner.generate_ids(prompts[i:i + planner.max_batch]),
                                   truth[i:i + planner.max_batch], strict=True):
            turn = planner.turn(ids)
            out.append((cat, bool(ref), call_keys(turn.tool_calls) == call_keys(ref),
                        call_names(turn.tool_calls) == call_names(ref)))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkpoint")
    ap.add_argument("--per-category", type=int, default=12, help="held-out tasks per category")
    ap.add_argument("--train-seeds", default="", help="FIRST:END instance seeds of training tasks to replay")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--examples", type=int, default=5, help="wrong-value examples to print")
    args = ap.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    path = Path(args.checkpoint)
    model, tok = load_checkpoint(path)
    fmt = chat_format_of(path)
    planner = TransformersPlanner(model, tok, fmt=fmt, name=f"transformers[{path.name}]")
    tasks = suite_tasks("pa-sim", "test", args.per_category)
    refs = run_episodes(tasks, ReferenceSolver())
    print(f"checkpoint={path} tasks={len(tasks)} reference_turns={sum(len(e.steps) for e in refs)}", flush=True)

    hidden = [len(hidden_values(ep, fmt)) for ep in refs]
    print(f"hidden_values={sum(hidden)} episodes_with_hidden={sum(map(bool, hidden))} "
          f"(values the reference uses that the compacted prompt cut out)")
    print(f"heldout_loss={heldout_loss(model, tok, refs, fmt):.4f}", flush=True)

    turns = teacher_forced(planner, refs, fmt)
    answers = [t for t in turns if not t[1]]
    by_cat: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    for cat, calls, exact, names in turns:
        if calls:
            by_cat[cat].append((exact, names))
    rows = [r for v in by_cat.values() for r in v]
    print(f"turn_exact={sum(r[0] for r in rows) / max(len(rows), 1):.3f} "
          f"turn_names={sum(r[1] for r in rows) / max(len(rows), 1):.3f} call_turns={len(rows)} "
          f"answer_turns_ok={sum(t[2] for t in answers) / max(len(answers), 1):.3f} answer_turns={len(answers)}")
    for cat, rows in sorted(by_cat.items()):
        print(f"  category={cat} turn_exact={sum(r[0] for r in rows) / len(rows):.3f} "
              f"turn_names={sum(r[1] for r in rows) / len(rows):.3f} call_turns={len(rows)}")

    mine = run_episodes(tasks, planner)
    ok = [bool(e.verdict and e.verdict.success) for e in mine]
    kinds: Counter[str] = Counter()
    examples = []
    for ep, ref, good in zip(mine, refs, ok, strict=True):
        if good:
            continue
        i, kind = first_divergence(ep, ref)
        kinds[kind] += 1
        if kind == "wrong_value" and len(examples) < args.examples:
            examples.append((ep.task.get("id", ""), call_keys(ref.steps[i].turn.tool_calls),
                             call_keys(ep.steps[i].turn.tool_calls)))
    print(f"closed_loop_success={sum(ok) / max(len(ok), 1):.3f} failed={len(ok) - sum(ok)} "
          f"first_divergence={ {k: kinds[k] for k in DIVERGENCES} }")
    for tid, want, got in examples:
        print(f"  wrong_value task={tid}\n    reference={want}\n    model    ={got}")

    if args.train_seeds:
        first, _, end = args.train_seeds.partition(":")
        train = run_episodes(training_tasks(range(int(first), int(end))), planner)
        won = sum(bool(e.verdict and e.verdict.success) for e in train)
        print(f"train_success={won / max(len(train), 1):.3f} train_tasks={len(train)}")
    print(f"wall_s={time.perf_counter() - t0:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
