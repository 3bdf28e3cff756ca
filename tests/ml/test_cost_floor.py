"""``bench/cost_floor.py``: the claim its floor rests on (the verifier passes the reference's actions with the
reasoning dropped) and that it counts a turn's tokens exactly as the model backend counts generated ones."""

from __future__ import annotations

from harness.bench import suite_tasks
from harness.episode import run_episodes
from harness.parse import render_turn
from harness.reference import ReferenceStyle
from ml.backends import TransformersPlanner
from ml.model import load_checkpoint
from tests.ml.bench_scripts import ROOT, load_bench

SHIPPED = ROOT / "bench" / "checkpoints" / "sft-cpu"


def _cost_floor():
    return load_bench("cost_floor")


def test_reasoning_free_reference_still_succeeds_and_costs_less():
    Recounted = _cost_floor().Recounted
    _, tok = load_checkpoint(SHIPPED)
    tasks = suite_tasks("pa-sim", "test", 3)
    full = run_episodes(tasks, Recounted(ReferenceStyle(), tok))
    bare = run_episodes(tasks, Recounted(ReferenceStyle(reasoning="none"), tok))
    assert all(e.verdict.success for e in full) and all(e.verdict.success for e in bare)
    for f, b in zip(full, bare, strict=True):
        assert [c.call.key() for s in f.steps for c in s.calls] == [c.call.key() for s in b.steps for c in s.calls]
        assert b.costs.reasoning_tokens == 0 and not any(s.turn.reasoning for s in b.steps)
        assert f.costs.reasoning_tokens > 0
        assert b.costs.output_tokens < f.costs.output_tokens


def test_recount_matches_the_model_backends_count_of_the_same_tokens():
    Recounted = _cost_floor().Recounted
    model, tok = load_checkpoint(SHIPPED)
    backend = TransformersPlanner(model, tok)
    tasks = suite_tasks("pa-sim", "test", 1)
    for ep in run_episodes(tasks, Recounted(ReferenceStyle(reasoning="verbose"), tok)):
        for step in ep.steps:
            ids = tok.encode(render_turn(step.turn), add_special_tokens=False) + [backend.eos_id]
            as_generated = backend.turn(ids)
            assert (step.turn.output_tokens, step.turn.reasoning_tokens) == (
                as_generated.output_tokens, as_generated.reasoning_tokens)
