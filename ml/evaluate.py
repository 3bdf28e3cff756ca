"""Evaluation of any planner on the held-out benchmark split, over several seeds, with costs.

Seed k evaluates a disjoint slice of the held-out split (every S-th task of each category, S the
number of seeds; ``harness.bench.suite_tasks(split="test")``) and seeds the planner's sampling
when it samples, so mean ± std reflects both task and sampling variation. Scores follow
``harness.bench.score`` (Overall = 0.5·Tool Use + 0.2·Memory + 0.2·Skills + 0.1·Sub-agent).
``mean_output_tokens`` is on the harness's shared scale (``harness.parse.estimate_tokens`` of the
turn text, so a scripted planner and a model compare fairly); ``mean_model_tokens`` is the
model's own token count; cost per 1,000 tasks = mean_model_tokens × 1,000 × price per token.
Episodes run under a ``harness.version.HarnessVersion`` (the default one unless given); the report
records its id, so evaluations of one planner under different harnesses stay apart.

The seeds' ± is the spread between task slices, not the uncertainty of a comparison: every planner runs
the same tasks, so ``paired_comparison`` matches two reports task by task (``EvalReport.tasks``) and gives
the Overall difference and the cost cuts with a bootstrap interval over the held-out tasks.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from devices.virtual.tasks import CATEGORIES
from harness.contract import Episode, PlannerTurn, ToolCall
from harness.parse import estimate_tokens, render_turn
from harness.version import HarnessVersion
from ml.chat import raise_field_errors

METRICS = ("overall", *CATEGORIES)


@dataclass
class EvalConfig:
    """seeds: evaluation seeds (>= 3 for a reported figure); per_category: held-out tasks per category
    per seed; price_per_million_output_tokens: USD per 1M output tokens for the cost estimate;
    batch_size: episodes in lock-step; suite: the benchmark suite."""

    seeds: tuple[int, ...] = (0, 1, 2)
    per_category: int = 25
    price_per_million_output_tokens: float = 0.60
    batch_size: int = 64
    suite: str = "pa-sim"

    def __post_init__(self) -> None:
        self.seeds = tuple(self.seeds)
        e = {}
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            e["seeds"] = "must hold distinct seeds (3 or more for a reported figure)"
        if not isinstance(self.per_category, int) or self.per_category < 1:
            e["per_category"] = "must be a positive integer"
        if not self.price_per_million_output_tokens >= 0:
            e["price_per_million_output_tokens"] = "must be >= 0"
        if not isinstance(self.batch_size, int) or self.batch_size < 1:
            e["batch_size"] = "must be a positive integer"
        raise_field_errors("EvalConfig", e)


@dataclass
class EvalReport:
    planner: str
    per_seed: list[dict[str, float]]
    mean: dict[str, float]
    std: dict[str, float]
    wall_s: float
    config: dict[str, Any] = field(default_factory=dict)
    harness: str = ""  # the HarnessVersion id the episodes ran under
    # per held-out task, over all seeds: id, category, solved, output_tokens (shared scale), tool_calls
    tasks: list[dict[str, Any]] = field(default_factory=list)

    def line(self) -> str:
        parts = [f"planner={self.planner}", f"harness={self.harness}"]
        parts += [f"{k}={self.mean[k]:.2f}±{self.std[k]:.2f}" for k in METRICS]
        parts += [f"mean_output_tokens={self.mean['mean_output_tokens']:.1f}",
                  f"mean_tool_calls={self.mean['mean_tool_calls']:.2f}",
                  f"cost_per_1k_tasks=${self.mean['cost_per_1k_tasks']:.4f}", f"wall_s={self.wall_s:.1f}"]
        return " ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def seed_tasks(cfg: EvalConfig, seed_index: int) -> list[Any]:
    from harness.bench import suite_tasks

    S = len(cfg.seeds)
    tasks = suite_tasks(cfg.suite, "test", cfg.per_category * S)
    out = []
    for c in CATEGORIES:
        mine = [t for t in tasks if t.category == c]
        out += mine[seed_index::S]
    return out


def episode_costs(ep: Episode) -> tuple[int, int]:
    """(shared-scale output tokens, model tokens) of an episode."""
    shared = sum(estimate_tokens(s.turn.raw if s.turn.raw is not None else render_turn(s.turn)) for s in ep.steps)
    return shared, ep.costs.output_tokens


def task_outcomes(episodes: list[Episode]) -> list[dict[str, Any]]:
    """What ``paired_comparison`` matches: one row per episode's task."""
    return [{"id": ep.task["id"], "category": ep.task["category"], "solved": bool(ep.verdict and ep.verdict.success),
             "output_tokens": episode_costs(ep)[0], "tool_calls": ep.costs.total_tool_calls} for ep in episodes]


def score_seed(episodes: list[Episode], cfg: EvalConfig) -> dict[str, float]:
    from harness.bench import score

    s = score(episodes)
    n = max(1, len(episodes))
    shared = [episode_costs(e) for e in episodes]
    s["mean_output_tokens"] = sum(a for a, _ in shared) / n
    s["mean_model_tokens"] = sum(b for _, b in shared) / n
    s["cost_per_1k_tasks"] = s["mean_model_tokens"] * 1000 * cfg.price_per_million_output_tokens / 1e6
    return s


def evaluate(make_planner: Callable[[int], Any], cfg: EvalConfig | None = None, *,
             harness: HarnessVersion | None = None) -> EvalReport:
    """Run ``make_planner(seed)`` on each seed's held-out slice under ``harness`` (default: the default
    HarnessVersion); mean and (population) std over seeds."""
    from harness.episode import run_episodes

    cfg = cfg or EvalConfig()
    harness = harness or HarnessVersion.default()
    t0 = time.perf_counter()
    per_seed = []
    outcomes: list[dict[str, Any]] = []
    name = ""
    for k, seed in enumerate(cfg.seeds):
        planner = make_planner(seed)
        name = planner.name
        eps = run_episodes(seed_tasks(cfg, k), planner, harness=harness, batch_size=cfg.batch_size)
        per_seed.append(score_seed(eps, cfg))
        outcomes += task_outcomes(eps)
    keys = [k for k in per_seed[0] if isinstance(per_seed[0][k], int | float)]
    mean = {k: sum(s[k] for s in per_seed) / len(per_seed) for k in keys}
    std = {k: math.sqrt(sum((s[k] - mean[k]) ** 2 for s in per_seed) / len(per_seed)) for k in keys}
    return EvalReport(name, per_seed, mean, std, time.perf_counter() - t0, asdict(cfg), harness.id, outcomes)


def evaluate_checkpoint(path: str, cfg: EvalConfig | None = None, temperature: float = 0.0, *,
                        harness: HarnessVersion | None = None, **kw: Any) -> EvalReport:
    """A saved checkpoint through ``TransformersPlanner`` (greedy unless a temperature is given)."""
    from ml.backends import TransformersPlanner
    from ml.model import chat_format_of, load_checkpoint

    model, tok = load_checkpoint(path)
    kw.setdefault("fmt", chat_format_of(path))
    return evaluate(lambda seed: TransformersPlanner(model, tok, temperature=temperature, seed=seed, **kw), cfg,
                    harness=harness)


def evaluate_reference(cfg: EvalConfig | None = None, *, harness: HarnessVersion | None = None) -> EvalReport:
    from harness.reference import ReferenceSolver

    return evaluate(lambda seed: ReferenceSolver(), cfg, harness=harness)


Interval = tuple[float, float, float]  # (estimate, low, high)


Pair = tuple[int, float, float, float, float]  # solved a − solved b, output tokens a, b, tool calls a, b


def _paired_figures(pairs: dict[str, list[Pair]], weights: dict[str, float]) -> tuple[float, float, float]:
    """(Overall a − b in points, output-token cut and tool-call cut of a against b in percent) over ``pairs``,
    matched tasks by category; Overall weighs the categories' success rates by ``weights``."""
    diff, totals = 0.0, [0.0, 0.0, 0.0, 0.0]
    for c, rows in pairs.items():
        cols = list(zip(*rows, strict=True))
        diff += weights[c] * 100 * sum(cols[0]) / len(rows)
        for k in range(4):
            totals[k] += sum(cols[k + 1])

    def cut(new: float, base: float) -> float:
        return 100 * (1 - new / base) if base else 0.0

    return diff, cut(totals[0], totals[1]), cut(totals[2], totals[3])


def paired_comparison(a: EvalReport, b: EvalReport, *, resamples: int = 2000, level: float = 0.95,
                      seed: int = 0) -> dict[str, Interval]:
    """``a`` against ``b`` on the same held-out tasks, matched by task id: ``overall_diff`` (a − b, points),
    ``output_tokens_cut`` and ``tool_calls_cut`` (1 − a/b of the task totals, percent, as the training bench
    prints them), each as (estimate, low, high). The interval is a percentile bootstrap at ``level`` that
    resamples tasks with replacement within each category (the category sizes stay fixed, as in the suite),
    both planners' rows of a task together, so it measures how far the comparison rests on which tasks were
    drawn; a rerun of a training run varies on top of that. Raises ValueError when the reports do not hold
    the same tasks."""
    if not a.tasks or not b.tasks:
        raise ValueError("both reports need their per-task outcomes (EvalReport.tasks; reports from before "
                         "they were kept have none): evaluate again")
    mine, theirs = {t["id"]: t for t in a.tasks}, {t["id"]: t for t in b.tasks}
    if mine.keys() != theirs.keys():
        raise ValueError(f"the reports ran different tasks ({len(mine.keys() - theirs.keys())} only in "
                         f"{a.planner!r}, {len(theirs.keys() - mine.keys())} only in {b.planner!r}): evaluate both "
                         "with the same EvalConfig")
    if not 0 < level < 1 or resamples < 1:
        raise ValueError("level must lie in (0, 1) and resamples be >= 1")
    pairs: dict[str, list[Pair]] = {}
    for tid in sorted(mine):
        x, y = mine[tid], theirs[tid]
        pairs.setdefault(x["category"], []).append((int(x["solved"]) - int(y["solved"]), x["output_tokens"],
                                                    y["output_tokens"], x["tool_calls"], y["tool_calls"]))
    from harness.bench import WEIGHTS  # as harness.bench.score weighs the categories

    rng = random.Random(seed)
    draws = [_paired_figures({c: rng.choices(rows, k=len(rows)) for c, rows in pairs.items()}, WEIGHTS)
             for _ in range(resamples)]
    lo_q, hi_q = (1 - level) / 2, 1 - (1 - level) / 2
    out: dict[str, Interval] = {}
    for k, (name, est) in enumerate(zip(("overall_diff", "output_tokens_cut", "tool_calls_cut"),
                                        _paired_figures(pairs, WEIGHTS), strict=True)):
        ranked = sorted(d[k] for d in draws)
        out[name] = (est, ranked[int(lo_q * (resamples - 1))], ranked[math.ceil(hi_q * (resamples - 1))])
    return out


def markdown_table(reports: list[EvalReport]) -> str:
    """The comparison table (report style): one row per planner, mean ± std."""
    head = "| planner | Overall | Tool Use | Memory | Skills | Sub-agent | out tokens | tool calls | $/1k tasks |"
    rows = [head, "|" + "---|" * 9]
    for r in reports:
        cells = [f"{r.mean[k]:.2f} ± {r.std[k]:.2f}" for k in METRICS]
        rows.append(f"| {r.planner} | " + " | ".join(cells) + f" | {r.mean['mean_output_tokens']:.1f} | "
                    f"{r.mean['mean_tool_calls']:.2f} | {r.mean['cost_per_1k_tasks']:.4f} |")
    return "\n".join(rows)


# ---------------------------------------------------------------------------------------------
# Where a failed episode left the reference


def _calls(calls: list[ToolCall | dict[str, Any]]) -> list[ToolCall]:
    return [c if isinstance(c, ToolCall) else ToolCall.from_dict(c) for c in calls]


def call_keys(calls: list[ToolCall | dict[str, Any]]) -> list[str]:
    """A turn's calls (ToolCalls or their dicts) as ``ToolCall.key``s, order-free: same list = same calls."""
    return sorted(c.key() for c in _calls(calls))


def call_names(calls: list[ToolCall | dict[str, Any]]) -> list[str]:
    return sorted(c.name for c in _calls(calls))


DIVERGENCES = ("parse_error", "stopped_early", "extra_call", "wrong_tool", "wrong_value", "after_reference")


def turn_divergence(turn: PlannerTurn, ref: PlannerTurn | None) -> str:
    """How ``turn`` differs from the reference's turn at the same point ("" when it issues the same calls).

    parse_error: the output did not parse; stopped_early: answered where the reference called a tool;
    extra_call: called a tool where the reference answered (or ran past the reference's last turn);
    wrong_tool: a different set of tool names; wrong_value: the same tools with different arguments.
    """
    if turn.parse_errors:
        return "parse_error"
    mine, theirs = turn.tool_calls, ref.tool_calls if ref is not None else []
    if call_keys(mine) == call_keys(theirs):
        return "" if ref is not None else "extra_call"
    if not mine:
        return "stopped_early"
    if not theirs:
        return "extra_call"
    return "wrong_tool" if call_names(mine) != call_names(theirs) else "wrong_value"


def first_divergence(episode: Episode, reference: Episode) -> tuple[int, str]:
    """(step index, kind) of the first turn where ``episode`` leaves ``reference`` (same task, same harness).

    Tool results are deterministic for a given task instance, so while the calls agree both episodes see
    the same context. ``after_reference`` means every turn matched the reference's calls (the difference is
    in the final answer's text or in later user turns); its index is the last compared step.
    """
    for i, step in enumerate(episode.steps):
        ref = reference.steps[i].turn if i < len(reference.steps) else None
        kind = turn_divergence(step.turn, ref)
        if kind:
            return i, kind
    return max(0, len(episode.steps) - 1), "after_reference"
