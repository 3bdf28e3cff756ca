"""Same-machine A/B of one SFT setting: the arms train side by side, then the probe compares them.

    .venv/bin/python bench/sft_ab.py --flag value-weight --values 1,3 --sft-minutes 70 [--per-category 12]

Each arm is ``bench/train_loop.py --sft-only`` with ``--FLAG VALUE`` (the bench's own SFT data and
config; everything else equal), run at the same time as the others on one torch thread each, so they
share the machine's speed, whatever it is today, and get the same wall-clock budget (the step counts are
printed: they should match). Then ``bench/sft_probe.py`` runs on each checkpoint, one after the other,
and the figures are printed side by side, one line per arm: ``steps=``, ``final_loss=`` (the arm's own
training loss, weighted when the arm weighs), ``heldout_loss=`` (plain cross-entropy on held-out reference
episodes: comparable across arms), ``turn_exact=`` / ``turn_names=`` (teacher-forced call accuracy),
``closed_loop_success=`` and the first divergences of the failures.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
KEYS = ("hidden_values", "heldout_loss", "turn_exact", "turn_names", "answer_turns_ok", "closed_loop_success",
        "train_success")


def probe_figures(text: str) -> dict[str, str]:
    """The probe's headline figures (``key=value`` on its top-level lines) and its divergence counts."""
    out = {}
    for line in text.splitlines():
        if line.startswith(" "):
            continue
        for key in KEYS:
            m = re.search(rf"\b{key}=([0-9.]+)", line)
            if m:
                out[key] = m.group(1)
        m = re.search(r"first_divergence=(\{.*\})", line)
        if m:
            out["first_divergence"] = m.group(1).replace(" ", "")
    return out


def sft_figures(text: str) -> dict[str, str]:
    m = re.search(r"sft_done steps=(\d+) loss=([0-9.]+) wall_s=([0-9.]+)", text)
    return {"steps": m.group(1), "final_loss": m.group(2), "sft_wall_s": m.group(3)} if m else {}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flag", default="value-weight", help="the bench/train_loop.py option the arms differ in")
    ap.add_argument("--values", default="1,3", help="comma-separated: one arm per value")
    ap.add_argument("--sft-minutes", type=float, default=60.0, help="each arm's budget (they run together)")
    ap.add_argument("--sft-seeds", type=int, default=96)
    ap.add_argument("--per-category", type=int, default=12, help="held-out tasks per category in the probe")
    ap.add_argument("--train-seeds", default="100:101", help="training instances the probe replays")
    ap.add_argument("--out", default="var/bench/sft_ab")
    args = ap.parse_args()

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    values = [v.strip() for v in args.values.split(",") if v.strip()]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    t0 = time.perf_counter()
    arms = {}
    with contextlib.ExitStack() as logs:
        for v in values:
            log = logs.enter_context(open(out / f"{args.flag}={v}.sft.log", "w"))
            cmd = [sys.executable, str(BENCH / "train_loop.py"), "--sft-only", "--threads", "1",
                   "--sft-minutes", str(args.sft_minutes), "--sft-seeds", str(args.sft_seeds),
                   f"--{args.flag}", v, "--out", str(out / f"{args.flag}={v}")]
            arms[v] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
            print(f"arm {args.flag}={v} started: {' '.join(cmd)}", flush=True)
        codes = {v: proc.wait() for v, proc in arms.items()}
    for v, rc in codes.items():
        print(f"arm {args.flag}={v} sft rc={rc}", flush=True)
    if any(codes.values()):
        print("an arm failed; see its .sft.log", file=sys.stderr)
        return 1
    print(f"sft_wall_s={time.perf_counter() - t0:.1f}", flush=True)

    rows = {}
    for v in values:
        ckpt = out / f"{args.flag}={v}" / "sft" / "last"
        probe = subprocess.run([sys.executable, str(BENCH / "sft_probe.py"), str(ckpt), "--per-category",
                                str(args.per_category), "--train-seeds", args.train_seeds],
                               capture_output=True, text=True)
        (out / f"{args.flag}={v}.probe.log").write_text(probe.stdout + probe.stderr)
        if probe.returncode:
            print(f"probe of {ckpt} failed:\n{probe.stderr[-2000:]}", file=sys.stderr)
            return 1
        rows[v] = {**sft_figures((out / f"{args.flag}={v}.sft.log").read_text()), **probe_figures(probe.stdout)}
        print(f"probed {args.flag}={v}", flush=True)
    for v, row in rows.items():
        print(f"arm {args.flag}={v} " + " ".join(f"{k}={x}" for k, x in row.items()))
    print(f"total_wall_s={time.perf_counter() - t0:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
