"""How cheap can a success on the held-out suite be, counted in the planner's own tokens?

The CARE target asks for 25% fewer output tokens and 15% fewer tool calls than plain GRPO. This script
measures what the tasks themselves allow: the reference solver's episodes (every one a verified success) in
each reference style, "none" (the same actions without any reasoning) included, costed as ``ml.evaluate``
costs any planner: "out tokens" on the shared scale the targets use (``episode_costs``), "model tokens"
re-counted with a checkpoint's tokenizer exactly as ``ml.backends.TransformersPlanner`` counts a model's
turns (the rendered turn plus the closing ``<|im_end|>``). The verifier judges actions, not reasoning, so
the reasoning-free reference is still a success: its cost is the floor for a planner that takes the
reference's actions. With ``--against``, checkpoints are evaluated on the same slices and each row says how
far above that floor it sits.

    .venv/bin/python bench/cost_floor.py --seeds 3 --against var/bench/demo150/grpo/last
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.context import Context  # noqa: E402
from harness.contract import PlannerTurn  # noqa: E402
from harness.parse import THINK_CLOSE, THINK_OPEN, render_turn  # noqa: E402
from harness.reference import ReferenceSolver, ReferenceStyle  # noqa: E402
from ml.backends import count_reasoning_tokens  # noqa: E402
from ml.chat import IM_END  # noqa: E402
from ml.evaluate import EvalConfig, evaluate, evaluate_checkpoint  # noqa: E402


class Recounted:
    """The reference solver with every turn's cost counted in ``tokenizer``'s tokens."""

    def __init__(self, style: ReferenceStyle, tokenizer: Any):
        self.solver = ReferenceSolver(style)
        self.tokenizer = tokenizer
        self.think_ids = (tokenizer.convert_tokens_to_ids(THINK_OPEN), tokenizer.convert_tokens_to_ids(THINK_CLOSE))
        self.end_tokens = len(tokenizer.encode(IM_END, add_special_tokens=False))
        self.name = self.solver.name

    def generate(self, contexts: list[Context]) -> list[PlannerTurn]:
        turns = self.solver.generate(contexts)
        for turn in turns:
            body = self.tokenizer.encode(render_turn(turn), add_special_tokens=False)
            turn.output_tokens = len(body) + self.end_tokens
            turn.reasoning_tokens = count_reasoning_tokens(body, *self.think_ids)
        return turns


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3,
                    help="evaluation seeds (the held-out slices of bench/train_loop.py)")
    ap.add_argument("--per-category", type=int, default=25)
    ap.add_argument("--tokenizer", default="bench/checkpoints/sft-cpu", help="the checkpoint whose tokens count")
    ap.add_argument("--against", nargs="*", default=[], help="checkpoints to evaluate on the same slices")
    ap.add_argument("--styles", nargs="+", default=["concise", "none", "verbose", "checks"],
                    help="reference styles by label (ReferenceStyle.from_label, e.g. verbose+checks+verify); "
                         "the cheapest is the floor")
    args = ap.parse_args()
    try:
        styles = [ReferenceStyle.from_label(label) for label in args.styles]
    except ValueError as e:
        ap.error(str(e))

    from ml.model import load_checkpoint

    _, tok = load_checkpoint(args.tokenizer)
    cfg = EvalConfig(seeds=tuple(range(args.seeds)), per_category=args.per_category)
    rows = []
    for style in styles:
        rep = evaluate(lambda seed, s=style: Recounted(s, tok), cfg)
        rows.append((rep.planner, rep.mean))
    for path in args.against:
        rep = evaluate_checkpoint(path, cfg)
        rows.append((path, rep.mean))
    floor = min((m for _, m in rows[:len(styles)]), key=lambda m: m["mean_output_tokens"])
    print("| planner | Overall | out tokens | model tokens | tool calls | tokens / floor | calls / floor |")
    print("|---|---|---|---|---|---|---|")
    for name, m in rows:
        print(f"| {name} | {m['overall']:.2f} | {m['mean_output_tokens']:.1f} | {m['mean_model_tokens']:.1f} "
              f"| {m['mean_tool_calls']:.2f} | {m['mean_output_tokens'] / floor['mean_output_tokens']:.2f} "
              f"| {m['mean_tool_calls'] / floor['mean_tool_calls']:.2f} |")
    for name, m in rows[len(styles):]:
        need_tok, need_calls = 0.75 * m["mean_output_tokens"], 0.85 * m["mean_tool_calls"]
        print(f"against {name}: the CARE target asks for <= {need_tok:.1f} tokens "
              f"({need_tok / floor['mean_output_tokens']:.2f} x the floor) and <= {need_calls:.2f} calls "
              f"({need_calls / floor['mean_tool_calls']:.2f} x the floor)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
