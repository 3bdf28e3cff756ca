"""GPU check: vLLM loads an exported checkpoint unchanged, matches transformers greedily, and its rollout speed.

    python bench/vllm_check.py --checkpoint var/bench/train_loop/sft/last [--contexts 20] [--episodes 256]

Needs a GPU host with ``requirements-gpu.txt`` installed (this is the figure issue 5 asks for when
a GPU machine is lent; nothing in the CPU install or the test suite needs it). Steps:

1. ``--contexts`` prompts from the held-out split (every turn of reference-solver episodes, the
   contexts a planner meets), rendered with the checkpoint's own ChatFormat.
2. Greedy continuations from transformers (float32 on cuda) and from vLLM in-process (float32),
   token ids compared: ``greedy_match=K/N``, and for each mismatch the first differing position.
3. Rollouts of ``--episodes`` held-out tasks through the Harness with each backend (greedy):
   ``vllm_rollout_tokens_per_s=`` and ``transformers_rollout_tokens_per_s=`` (generated tokens
   per wall second, same episodes).
4. ``vllm serve <checkpoint>`` as a subprocess, then the OpenAI-compatible endpoint answers one
   context through ``ml.backends.OpenAIPlanner`` (``serve_ok=``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from harness.episode import run_episodes  # noqa: E402
from ml.backends import OpenAIPlanner, TransformersPlanner, VllmPlanner  # noqa: E402
from ml.chat import encode_prompt  # noqa: E402
from ml.evaluate import EvalConfig, seed_tasks  # noqa: E402
from ml.model import chat_format_of  # noqa: E402


def held_out_prompts(n: int, tokenizer, fmt) -> list[list[int]]:
    from harness.reference import ReferenceSolver

    tasks = seed_tasks(EvalConfig(seeds=(0,), per_category=max(2, n // 4)), 0)
    prompts: list[list[int]] = []
    for ep in run_episodes(tasks, ReferenceSolver()):
        for i, m in enumerate(ep.messages):
            if m["role"] == "assistant":
                prompts.append(encode_prompt(ep.messages[:i], ep.tools, tokenizer, fmt))
    step = max(1, len(prompts) // n)
    return prompts[::step][:n]


def rollout_speed(planner, tasks) -> float:
    t = time.perf_counter()
    eps = run_episodes(tasks, planner, batch_size=len(tasks))
    return sum(e.costs.output_tokens for e in eps) / (time.perf_counter() - t)


def serve_check(path: str, port: int, fmt) -> bool:
    proc = subprocess.Popen([sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", path,
                             "--port", str(port), "--dtype", "float32", "--served-model-name", "flywheel",
                             "--gpu-memory-utilization", "0.3"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 300
        while time.time() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2)
                break
            except OSError:
                if proc.poll() is not None:
                    return False
                time.sleep(2)
        else:
            return False
        from harness.episode import run_episode

        task = seed_tasks(EvalConfig(seeds=(0,), per_category=1), 0)[0]
        ep = run_episode(task, OpenAIPlanner(f"http://127.0.0.1:{port}/v1", "flywheel", max_tokens=fmt.max_new_tokens))
        return len(ep.steps) > 0
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--contexts", type=int, default=20)
    ap.add_argument("--episodes", type=int, default=256)
    ap.add_argument("--port", type=int, default=8011)
    args = ap.parse_args()
    fmt = chat_format_of(args.checkpoint)

    hf = TransformersPlanner.from_pretrained(args.checkpoint, device="cuda", max_batch=256)
    vl = VllmPlanner(args.checkpoint, fmt=fmt, dtype="float32", gpu_memory_utilization=0.5)
    prompts = held_out_prompts(args.contexts, hf.tokenizer, fmt)
    a, b = hf.generate_ids(prompts), vl.generate_ids(prompts)
    same = 0
    for k, (x, y) in enumerate(zip(a, b, strict=True)):
        x = x[:-1] if x and x[-1] == hf.eos_id else x
        y = y[:-1] if y and y[-1] == vl.eos_id else y
        if x == y:
            same += 1
        else:
            first = next((i for i, (p, q) in enumerate(zip(x, y, strict=False)) if p != q), min(len(x), len(y)))
            print(f"mismatch context={k} first_divergence={first} hf_len={len(x)} vllm_len={len(y)}")
    print(f"greedy_match={same}/{len(prompts)}", flush=True)

    tasks = seed_tasks(EvalConfig(seeds=(0,), per_category=max(1, args.episodes // 4)), 0)[: args.episodes]
    v = rollout_speed(vl, tasks)
    t = rollout_speed(hf, tasks)
    print(f"vllm_rollout_tokens_per_s={v:.0f} transformers_rollout_tokens_per_s={t:.0f} ratio={v / max(t, 1e-9):.1f} "
          f"episodes={len(tasks)}", flush=True)
    print(f"serve_ok={serve_check(args.checkpoint, args.port, fmt)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
