"""The training loop's figures: reference solver, SFT, plain GRPO and CARE on the held-out split.

    .venv/bin/python bench/train_loop.py --seeds 3 [--sft-minutes 8] [--rl-minutes 5] [--per-category 25]

Trains a tokenizer and a from-scratch SFT checkpoint on reference-solver episodes (training seeds
only), then from that same checkpoint runs plain GRPO and CARE with equal budgets (the same
iteration cap and wall-clock minutes) on tasks drawn from the SFT data's own instances (where the
cold-started policy has some competence, so groups carry signal and CARE's competence-aware
schedules can engage; ``--rl-seeds FIRST:END`` draws fresh training instances instead), and
evaluates all four on the held-out split over
``--seeds`` evaluation seeds. Prints per planner: ``overall=`` and per-category scores (mean ±
std), ``mean_output_tokens=`` (shared estimate scale), ``mean_tool_calls=``, cost per 1,000 tasks
and wall time, and a second line with the tool calls of its solved and of its failed tasks (``calls_success=``,
``calls_failure=``); the reports go to ``OUT/reports.json``; then the Markdown table; then, task by task on the
same held-out tasks, each RL arm against SFT and CARE against GRPO (``paired A_vs_B overall_diff=
output_tokens_cut= tool_calls_cut=``, each with a 95% bootstrap interval over the tasks,
``ml.evaluate.paired_comparison``: the seeds' ± is the spread between task slices, which a paired difference
does not carry). Targets (issue 5): SFT >= 60% of the reference's Overall;
CARE >= SFT + 5; CARE vs GRPO: >= 25% fewer output tokens and >= 15% fewer tool calls at an
Overall at most 1 point lower.

``--arms care --reuse DIR --care-overrides JSON`` (with that run's ``--sft-checkpoint``)
trains only a CARE variant and takes GRPO's checkpoint from the earlier run; ``--arms grpo`` without ``--reuse``
trains and scores GRPO alone (so a pair too long for one session can be split: GRPO now, CARE later against it);
``--arms "" --reuse DIR`` re-evaluates an earlier run, and ``--arms ""`` alone evaluates only the reference and the
SFT checkpoint (trained, reused with ``--sft-checkpoint`` or continued with ``--sft-init``: a continuation's card
adds up the SFT budgets of its lineage).
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from harness.reference import ReferenceStyle  # noqa: E402
from ml.care_config import GUIDE_MODES, LOSS_AGGREGATIONS, CAREConfig  # noqa: E402
from ml.care_trainer import train_care  # noqa: E402
from ml.chat import ChatFormat  # noqa: E402
from ml.evaluate import (  # noqa: E402
    EvalConfig,
    EvalReport,
    evaluate_checkpoint,
    evaluate_reference,
    markdown_table,
    paired_comparison,
)
from ml.model import ModelConfig, read_card  # noqa: E402
from ml.sft import lineage_totals, reference_episodes, train_sft, training_tasks  # noqa: E402
from ml.sft_config import SFTConfig  # noqa: E402
from ml.tokenizer import TokenizerConfig, build_tokenizer  # noqa: E402

ARMS = ("grpo", "care")

# The positional --style-weights shares, in order (a fifth share is optional).
LEGACY_STYLES = (ReferenceStyle(), ReferenceStyle("verbose"), ReferenceStyle(redundant_checks=True),
                 ReferenceStyle(mistake=True), ReferenceStyle("none"))


def parse_style_weights(text: str) -> list[tuple[ReferenceStyle, float]]:
    """``--style-weights``: four or five positional shares (``LEGACY_STYLES``) or ``label:share`` pairs."""
    items = [x.strip() for x in text.split(",") if x.strip()]
    if any(":" in x for x in items):
        pairs = [x.rsplit(":", 1) for x in items]
        if any(len(p) != 2 for p in pairs):
            raise ValueError(f"give every style as label:share, got {text!r}")
        mix = [(ReferenceStyle.from_label(label), float(w)) for label, w in pairs]
        if len({s for s, _ in mix}) != len(mix):
            raise ValueError("a style is named twice")
    elif len(items) in (4, 5):
        mix = [(LEGACY_STYLES[i], float(w)) for i, w in enumerate(items)]
    else:
        raise ValueError(f"takes four or five shares or label:share pairs, got {text!r}")
    if any(w < 0 for _, w in mix) or not sum(w for _, w in mix) > 0:
        raise ValueError("shares are non-negative and not all zero")
    return mix


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3, help="evaluation seeds (disjoint held-out slices)")
    ap.add_argument("--per-category", type=int, default=25,
                    help="held-out tasks per category per seed (at 6, one checkpoint's Overall read 13.9 ± 8.0; "
                         "at 25, 18.9 ± 3.0)")
    ap.add_argument("--sft-minutes", type=float, default=8.0)
    ap.add_argument("--rl-minutes", type=float, default=5.0, help="budget of GRPO and of CARE (each)")
    ap.add_argument("--rl-iterations", type=int, default=1000, help="iteration cap of GRPO and of CARE (each)")
    ap.add_argument("--minutes", type=float, default=0.0,
                    help="total training budget; if set, split 50%% SFT / 25%% GRPO / 25%% CARE")
    ap.add_argument("--sft-seeds", type=int, default=24, help="instances per template in the SFT data")
    ap.add_argument("--all-styles", action="store_true",
                    help="play every instance in all four reference styles instead of one style per instance")
    ap.add_argument("--style-weights", default="0.55,0.1,0.2,0.15",
                    help="shares of the concise, verbose, redundant-checks and mistake styles (one per instance), "
                         "optionally a fifth: the reasoning-free style (the same actions, no reasoning); or "
                         "label:share pairs naming any styles (ReferenceStyle.from_label), e.g. "
                         "'verbose+checks+verify:0.5,concise:0.2,none:0.3'")
    ap.add_argument("--swap-share", type=float, default=SFTConfig.swap_share,
                    help="share of SFT episodes with their task values swapped for invented ones (ml.augment)")
    ap.add_argument("--value-weight", type=float, default=SFTConfig.value_weight,
                    help="SFT loss weight of call argument value tokens (1 = plain mean)")
    ap.add_argument("--rl-seeds", default="sft",
                    help="instance seeds of the RL tasks: 'sft' (the SFT data's instances) or FIRST:END")
    ap.add_argument("--max-result-chars", type=int, default=ChatFormat.max_result_chars,
                    help="the SFT checkpoint's tool-result cut (ChatFormat.max_result_chars; RL, evaluation keep it)")
    ap.add_argument("--model", default="{}", help="ModelConfig overrides as JSON (default: the CPU default)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--sft-batch-rows", type=int, default=3)
    ap.add_argument("--rl-lr", type=float, default=CAREConfig.lr,
                    help="RL learning rate (2e-4 collapsed both arms at stop 12; 1e-4 did not)")
    ap.add_argument("--rl-epochs", type=int, default=CAREConfig.ppo_epochs,
                    help="both RL arms: clipped passes over each iteration's rollouts (CAREConfig.ppo_epochs; 4 "
                         "drifted both arms 13-19 points under their SFT at stop 32, 1 did not)")
    ap.add_argument("--rl-kl", type=float, default=CAREConfig.kl_coef,
                    help="KL weight to the SFT policy in both RL arms (0.02 let both drift to KL 0.5-0.65 at stop 16)")
    ap.add_argument("--rl-temperature", type=float, default=CAREConfig.temperature, help="rollout sampling temperature")
    ap.add_argument("--rl-tasks", type=int, default=4, help="tasks per RL iteration (x --rl-group attempts)")
    ap.add_argument("--rl-group", type=int, default=CAREConfig.group_size,
                    help="both RL arms: attempts per task (CAREConfig.group_size); a larger group holds more pairs "
                         "of successes that differ in cost, the contrast CARE's efficiency term needs (8 at stop 33: "
                         "CARE 5.1%% fewer tokens, 6.4%% fewer calls than GRPO at +1.9 points)")
    ap.add_argument("--rl-greedy-anchor", action="store_true",
                    help="both RL arms: the first of each group's attempts decodes greedily (CAREConfig.greedy_anchor)")
    ap.add_argument("--rl-screen", type=int, default=0,
                    help="both RL arms: screen this many tasks greedily per iteration and roll groups only for the "
                         "greedy failures (CAREConfig.screen_tasks)")
    ap.add_argument("--rl-guide", choices=GUIDE_MODES, default="off",
                    help="both RL arms: an all-failure group gets the reference solver's episode of the task "
                         "(CAREConfig.guide)")
    ap.add_argument("--rl-loss-aggregation", choices=LOSS_AGGREGATIONS, default=CAREConfig.loss_aggregation,
                    help="both RL arms: the loss's mean over every action token alike, or over episodes alike "
                         "(CAREConfig.loss_aggregation)")
    ap.add_argument("--rl-seed", type=int, default=CAREConfig.seed,
                    help="both RL arms: the seed of task draws and sampling (CAREConfig.seed); a new one repeats a "
                         "comparison on other rollouts")
    ap.add_argument("--rl-snapshots", default="",
                    help="comma-separated iteration counts below --rl-iterations at which each trained arm's weights "
                         "are also kept and evaluated (as e.g. grpo@100), so one run reads several lengths; an arm "
                         "taken from --reuse brings its snapshots at these counts where that run kept them")
    ap.add_argument("--rl-sampling", default=CAREConfig.task_sampling, choices=("signal", "uniform"),
                    help="RL task draw in both arms: towards tasks whose groups mix outcomes, or uniform")
    ap.add_argument("--sft-checkpoint", default="", help="reuse this SFT checkpoint instead of training one")
    ap.add_argument("--sft-init", default="",
                    help="continue SFT from this checkpoint for --sft-minutes (its weights and tokenizer; a fresh "
                         "optimizer and a re-warmed cosine from --sft-lr): budgets that outlast one session add up")
    ap.add_argument("--sft-lr", type=float, default=SFTConfig.lr, help="SFT peak learning rate")
    ap.add_argument("--sft-min-lr", type=float, default=SFTConfig.min_lr, help="SFT final learning rate")
    ap.add_argument("--sft-seed", type=int, default=0,
                    help="SFT data order and value swaps (give a continuation a new one, or it replays the same draws)")
    ap.add_argument("--arms", default="grpo,care",
                    help="the RL arms to train (grpo, care, or both); one not named is scored only from --reuse")
    ap.add_argument("--reuse", default="",
                    help="an earlier --out whose checkpoints stand in for the arms not trained (same SFT checkpoint)")
    ap.add_argument("--care-overrides", default="{}",
                    help='CAREConfig fields for the CARE arm only, as JSON (e.g. {"schedules": [...]})')
    ap.add_argument("--out", default="var/bench/train_loop")
    ap.add_argument("--sft-only", action="store_true", help="stop after the SFT checkpoint (bench/sft_ab.py)")
    args = ap.parse_args()
    arms = [a for a in args.arms.split(",") if a]
    if set(arms) - set(ARMS):
        ap.error(f"--arms takes grpo and/or care, got {args.arms!r}")
    # The arms trained here and, with --reuse, the others taken from it; --arms "" alone: the reference and SFT only.
    rl_arms = tuple(a for a in ARMS if a in arms or args.reuse)
    if set(rl_arms) - set(arms) and not args.sft_checkpoint:
        ap.error("an arm taken from --reuse needs the SFT checkpoint it started from: give --sft-checkpoint")
    for mode in set(rl_arms) - set(arms):
        if not (Path(args.reuse) / mode / "last").is_dir():  # an arm not trained here comes only with --reuse
            ap.error(f"{mode} is not trained: --reuse must name an earlier --out that holds {mode}/last")
        start = read_card(Path(args.reuse) / mode / "last").get("init_from") or ""
        if not same_weights(start, args.sft_checkpoint):
            ap.error(f"the reused {mode} started from {start!r}, not from --sft-checkpoint {args.sft_checkpoint!r} "
                     "(neither the same folder nor the same weights)")
    try:
        style_mix = parse_style_weights(args.style_weights)
    except ValueError as e:
        ap.error(f"--style-weights: {e}")
    try:
        snapshots = sorted({int(n) for n in args.rl_snapshots.split(",") if n.strip()})
    except ValueError:
        ap.error(f"--rl-snapshots takes iteration counts, got {args.rl_snapshots!r}")
    if any(not 0 < n < args.rl_iterations for n in snapshots):
        ap.error(f"--rl-snapshots must lie between 0 and --rl-iterations ({args.rl_iterations}), exclusive")
    if args.sft_init and args.sft_checkpoint:
        ap.error("--sft-init trains on from a checkpoint, --sft-checkpoint reuses one as it is: give one")
    if args.sft_init and args.model != "{}":
        ap.error("--sft-init continues its checkpoint's model: --model does not apply")
    if args.sft_init and read_card(args.sft_init).get("kind") != "sft":
        ap.error(f"--sft-init: {args.sft_init!r} is not an SFT checkpoint (no card of kind sft)")
    if args.minutes:
        args.sft_minutes, args.rl_minutes = args.minutes * 0.5, args.minutes * 0.25
    sft_seeds = range(100, 100 + args.sft_seeds)  # instance seeds of the SFT data
    if args.rl_seeds == "sft":
        rl_seeds = tuple(sft_seeds)
    else:
        first, _, end = args.rl_seeds.partition(":")
        rl_seeds = tuple(range(int(first), int(end)))
    # What both RL arms take from this script's flags (so --care-overrides may not set it).
    rl_kw = dict(max_minutes=args.rl_minutes, train_seeds=rl_seeds, temperature=args.rl_temperature,
                 iterations=args.rl_iterations, save_every=0, lr=args.rl_lr, kl_coef=args.rl_kl,
                 ppo_epochs=args.rl_epochs, tasks_per_iter=args.rl_tasks, group_size=args.rl_group,
                 task_sampling=args.rl_sampling, greedy_anchor=args.rl_greedy_anchor, screen_tasks=args.rl_screen,
                 guide=args.rl_guide, loss_aggregation=args.rl_loss_aggregation, seed=args.rl_seed)
    try:
        CAREConfig.from_dict(rl_kw)
    except ValueError as exc:
        ap.error(f"the RL flags: {exc}")
    try:
        care_extra = json.loads(args.care_overrides)
        if not isinstance(care_extra, dict):
            raise ValueError("must be a JSON object of CAREConfig fields")
        if clash := sorted(set(care_extra) & {"care", "out_dir", *rl_kw}):
            raise ValueError(f"set by this script's own flags, not here: {', '.join(clash)}")
        CAREConfig.from_dict({**rl_kw, **care_extra})  # the CARE arm's config as it will be built
    except (ValueError, TypeError) as exc:
        ap.error(f"--care-overrides: {exc}")

    import torch

    torch.set_num_threads(args.threads)
    out = Path(args.out)
    t_all = time.perf_counter()
    ecfg = EvalConfig(seeds=tuple(range(args.seeds)), per_category=args.per_category)

    t0 = time.perf_counter()
    if args.sft_checkpoint:
        shutil.copytree(args.sft_checkpoint, out / "sft" / "last", dirs_exist_ok=True)
        sft_path = str(out / "sft" / "last")
        card = read_card(sft_path)
        times = {"sft": float(card.get("seconds", 0.0))}
        total_steps, total_s = lineage_totals(card)
        print(f"sft_reused checkpoint={args.sft_checkpoint} step={card.get('step')} total_steps={total_steps} "
              f"total_wall_s={total_s:.1f}", flush=True)
    else:
        # A continuation keeps its parent's tokenizer (and model size).
        tok = None if args.sft_init else build_tokenizer(TokenizerConfig())
        played = [s for s, _ in style_mix] if not args.all_styles else LEGACY_STYLES[:4]
        weights = None if args.all_styles else [w for _, w in style_mix]
        eps = reference_episodes(training_tasks(sft_seeds), played, rotate=not args.all_styles, weights=weights)
        styles = Counter(e.planner for e in eps)
        print(f"data episodes={len(eps)} styles={dict(styles)} tokenizer_vocab={len(tok) if tok else 'parent'} "
              f"prep_s={time.perf_counter() - t0:.1f}", flush=True)
        # Small batches: on two shared cores the budget buys few steps, and more, noisier steps learn faster.
        scfg = SFTConfig(out_dir=str(out / "sft"), max_minutes=args.sft_minutes, max_steps=100_000, save_every=200,
                         log_every=50, batch_rows=args.sft_batch_rows, swap_share=args.swap_share,
                         value_weight=args.value_weight, chat=ChatFormat(max_result_chars=args.max_result_chars),
                         model=ModelConfig.from_dict(json.loads(args.model)), lr=args.sft_lr, min_lr=args.sft_min_lr,
                         seed=args.sft_seed)
        # max_steps is effectively unbounded: the cosine schedule runs on the wall-clock budget.
        def log(m: dict) -> None:
            print(f"sft step={m['step']} loss={m['loss']:.4f} lr={m['lr']:.2e} tokens_per_s={m['tokens_per_s']:.0f}",
                  flush=True)

        res = train_sft(eps, scfg, tokenizer=tok, init_from=args.sft_init or None, resume=False, on_metrics=log)
        sft_path = str(res.checkpoint)
        times = {"sft": res.seconds}
        total_steps, total_s = lineage_totals(read_card(sft_path))
        print(f"sft_done steps={res.step} loss={res.loss:.4f} wall_s={res.seconds:.1f} "
              f"total_steps={total_steps} total_wall_s={total_s:.1f}", flush=True)
    if args.sft_only:
        return 0

    def log_rl(m: dict) -> None:
        print(f"{m['mode']} it={m['iteration']} success={m['success']:.2f} "
              + (f"greedy_success={m['greedy_success']:.2f} " if "greedy_success" in m else "")
              + (f"screen_success={m['screen_success']:.2f} " if "screen_success" in m else "")
              + (f"guided={m['guided']} " if "guided" in m else "")
              + (f"excess_calls={m['excess_calls']:.1f} " if "excess_calls" in m else "")
              + (f"failures_moved={m['failures_moved']} " if "failures_moved" in m else "")
              + f"reward={m['reward']:.3f} "
              f"out_tokens={m['output_tokens']:.1f} calls={m['tool_calls']:.2f} kept={m['groups_kept']} "
              f"kl={m['kl']:.4f} clip={m['clip_frac']:.3f} adv={m['adv_token_mean']:.3f} "
              f"schedules={json.dumps(m['schedules'])} "
              + (f"guard_success={m['heldout_success']:.1f} by_category={json.dumps(m['heldout_by_category'])} "
                 f"efficiency_scale={json.dumps(m.get('efficiency_scales', m['efficiency_scale']))} "
                 f"guard_check_s={m.get('guard_check_s', 0.0):.0f} "
                 if "heldout_success" in m else "")
              + f"roll_s={m['rollout_s']:.1f} s={m['iteration_s']:.1f}", flush=True)

    snapshot_arms: list[str] = []
    for mode in rl_arms:
        if mode not in arms:
            reused = take_reused(Path(args.reuse), out, mode, snapshots)
            times.update(reused)
            snapshot_arms += [name for name in reused if name != mode]
            continue
        extra = care_extra if mode == "care" else {}
        # Each stage resumes the previous one's checkpoint (CARETrainer resumes out_dir/last); the wall budget
        # counts the whole run, and a stage it cut short ends the arm.
        for stop in (*snapshots, args.rl_iterations):
            cfg = CAREConfig(care=mode == "care", out_dir=str(out / mode), **{**rl_kw, "iterations": stop}, **extra)
            # From --sft-checkpoint itself where given (the copy under --out holds the same weights), so the arm's
            # card names a folder that outlives this run and a later run can --reuse the arm against it.
            r = train_care(cfg, init_from=args.sft_checkpoint or sft_path, on_metrics=log_rl)
            if r.iterations < stop:
                break
            if stop != args.rl_iterations:
                shutil.copytree(out / mode / "last", out / f"{mode}@{stop}" / "last", dirs_exist_ok=True)
                snapshot_arms.append(f"{mode}@{stop}")
                times[f"{mode}@{stop}"] = r.seconds
        times[mode] = r.seconds
        print(f"{mode}_done iterations={r.iterations} wall_s={r.seconds:.1f}", flush=True)

    reports = [evaluate_reference(ecfg)]
    reports[0].planner = "reference"
    for name in ("sft", *snapshot_arms, *rl_arms):
        rep = evaluate_checkpoint(str(out / name / "last"), ecfg)
        rep.planner = name
        reports.append(rep)
    for rep in reports:
        m, s = rep.mean, rep.std
        cats = " ".join(f"{k}={m[k]:.2f}±{s[k]:.2f}" for k in ("tool_use", "memory", "skills", "sub_agent"))
        print(f"planner={rep.planner} overall={m['overall']:.2f}±{s['overall']:.2f} {cats} "
              f"mean_output_tokens={m['mean_output_tokens']:.1f} mean_model_tokens={m['mean_model_tokens']:.1f} "
              f"mean_tool_calls={m['mean_tool_calls']:.2f} cost_per_1k_tasks=${m['cost_per_1k_tasks']:.4f} "
              f"train_wall_s={times.get(rep.planner, 0.0):.1f} eval_wall_s={rep.wall_s:.1f}")
        print(f"planner={rep.planner} {split_calls(rep)}")
    (out / "reports.json").write_text(json.dumps([rep.to_dict() for rep in reports]))
    print(markdown_table(reports))
    ref, sft = reports[0].mean, reports[1].mean
    print(f"sft_vs_reference={100 * sft['overall'] / max(ref['overall'], 1e-9):.1f}% (target >= 60%)")
    if not rl_arms:
        print(f"total_wall_s={time.perf_counter() - t_all:.1f}")
        return 0
    by_name = {rep.planner: rep.mean for rep in reports}
    for tag in (*(f"@{n}" for n in snapshots), ""):
        grpo, care = by_name.get(f"grpo{tag}"), by_name.get(f"care{tag}")
        if grpo is None or care is None:
            continue
        print(f"care{tag}_minus_sft={care['overall'] - sft['overall']:.2f} (target >= 5)")
        tok_cut = cut(care['mean_output_tokens'], grpo['mean_output_tokens'])
        call_cut = cut(care['mean_tool_calls'], grpo['mean_tool_calls'])
        print(f"care_vs_grpo{tag} output_tokens_cut={tok_cut:+.1f}% (target >= +25%) tool_calls_cut={call_cut:+.1f}% "
              f"(target >= +15%) overall_diff={care['overall'] - grpo['overall']:+.2f} (target >= -1)")
    reps = {rep.planner: rep for rep in reports}
    for name in (*snapshot_arms, *rl_arms):
        print(paired_line(reps[name], reps["sft"]))
        if name.startswith("care") and (grpo_rep := reps.get("grpo" + name[len("care"):])) is not None:
            print(paired_line(reps[name], grpo_rep))
    print(f"total_wall_s={time.perf_counter() - t_all:.1f}")
    return 0


def take_reused(reuse: Path, out: Path, mode: str, snapshots: list[int]) -> dict[str, float]:
    """Copy an arm trained by an earlier run into ``out``, with its weights at each of ``snapshots`` where that run
    kept them (``mode@N``); {name: training seconds from its card (nan where an older card has none)}."""
    taken: dict[str, float] = {}
    for name in (mode, *(f"{mode}@{n}" for n in snapshots)):
        if not (reuse / name / "last").is_dir():
            continue
        shutil.copytree(reuse / name / "last", out / name / "last", dirs_exist_ok=True)
        taken[name] = float(read_card(out / name / "last").get("seconds", "nan"))
        print(f"{name}_reused checkpoint={reuse / name / 'last'}", flush=True)
    return taken


def same_weights(a: str | Path, b: str | Path) -> bool:
    """Whether two checkpoints are one: the same folder, or the same model.safetensors bytes (a run copies its SFT
    checkpoint into its --out and trains from the copy, so arms trained by separate runs name separate copies)."""
    a, b = Path(a), Path(b)
    if a.resolve() == b.resolve():
        return True
    wa, wb = a / "model.safetensors", b / "model.safetensors"
    return wa.is_file() and wb.is_file() and filecmp.cmp(wa, wb, shallow=False)


def split_calls(rep: EvalReport) -> str:
    """Mean tool calls of the held-out tasks ``rep`` solved and of those it failed, and how many failed: success-only
    efficiency can cut only the first, so the calls target turns on the second too."""
    parts = []
    for name, solved in (("success", True), ("failure", False)):
        rows = [t for t in rep.tasks if t["solved"] == solved]
        calls = sum(t["tool_calls"] for t in rows) / len(rows) if rows else float("nan")
        parts.append(f"calls_{name}={calls:.2f}")
    return " ".join(parts) + f" failures={sum(not t['solved'] for t in rep.tasks)}/{len(rep.tasks)}"


def paired_line(a: EvalReport, b: EvalReport) -> str:
    """``a`` against ``b`` task by task on the held-out split (``ml.evaluate.paired_comparison``): each figure
    with its 95% bootstrap interval over the tasks."""
    figs = paired_comparison(a, b)
    return f"paired {a.planner}_vs_{b.planner} " + " ".join(
        f"{k}={est:+.2f} ci95=[{lo:+.2f},{hi:+.2f}]" for k, (est, lo, hi) in figs.items())


def cut(new: float, base: float) -> float:
    """Percent by which ``new`` is below ``base``; 0 when both are 0, -inf when only base is."""
    if base <= 0:
        return 0.0 if new <= 0 else float("-inf")
    return 100 * (1 - new / base)


if __name__ == "__main__":
    raise SystemExit(main())
