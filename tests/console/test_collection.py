"""Collection: approved tasks run on virtual phones; verifier outcomes, costs, steps, screens, idempotency."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image

from console.models import QueueItem, TaskSpec, TaskStatus, Trajectory, TrajectoryStep
from console.services.collection import PlannerUnavailable, collection_run, planner_build, screen_png
from console.services.rounds import round_create, task_generate
from devices.virtual.phone import VirtualPhone
from harness.contract import Episode, Step
from tests import factories

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def approved_round():
    rnd = round_create(user=None)
    task_generate(round=rnd, n_tasks=12, seed=51)
    TaskSpec.objects.filter(round=rnd, status=TaskStatus.PENDING).update(status=TaskStatus.APPROVED)
    return rnd


def test_collection_stores_verifier_outcomes_costs_steps_and_screens(approved_round, data_dir):
    job = factories.job_create(kind="flywheel.collect", config={"round_id": str(approved_round.id)})
    seen: list[float] = []
    result = collection_run(round=approved_round, planner={"kind": "reference", "style": {"reasoning": "verbose"}},
                            attempts=2, parallel=4, job=job, progress=lambda f, m: seen.append(f))
    approved = list(TaskSpec.objects.filter(round=approved_round, status=TaskStatus.APPROVED))
    trajs = list(Trajectory.objects.filter(round=approved_round))
    assert result["episodes"] == len(trajs) == 2 * len(approved) > 0
    assert {(t.task_id, t.attempt) for t in trajs} == {(s.id, a) for s in approved for a in (0, 1)}
    assert seen[-1] == 1.0 and seen == sorted(seen)
    for t in trajs:
        assert "steps" not in t.episode
        episode = Episode.from_dict({**t.episode, "steps": []})
        assert t.success == episode.verdict.success and t.reason == episode.verdict.reason
        assert t.planner == "reference[verbose]" and t.job_id == job.id
        assert t.costs["output_tokens"] == t.output_tokens > 0
        assert t.tool_calls == sum(t.costs["tool_calls"].values())
        steps = list(t.steps.order_by("index"))
        assert len(steps) == t.n_steps > 0
        for s in steps:
            Step.from_dict(s.data)  # the contract's Step, whole
            png = Path(data_dir) / s.screen
            assert s.screen == f"screens/{t.id}/{s.index}.png" and png.exists()
            assert Image.open(png).size == (360, 720)
    assert result["succeeded"] == sum(t.success for t in trajs) > 0
    assert QueueItem.objects.filter(queue="trajectory").count() == len(trajs)


def test_a_redelivered_collect_job_creates_no_duplicates(approved_round, data_dir):
    job = factories.job_create(kind="flywheel.collect", config={"round_id": str(approved_round.id)})
    planner = {"kind": "reference"}
    first = collection_run(round=approved_round, planner=planner, attempts=1, job=job)
    # the worker died after storing some of them: forget one, as if it was never written
    victim = Trajectory.objects.filter(job=job).order_by("task__template").first()
    victim_key = (victim.task_id, victim.attempt)
    victim.delete()
    again = collection_run(round=approved_round, planner=planner, attempts=1, job=job)
    assert again["skipped"] == first["episodes"] - 1 and again["episodes"] == 1
    assert Trajectory.objects.filter(job=job).count() == first["episodes"]
    assert Trajectory.objects.filter(job=job, task_id=victim_key[0], attempt=victim_key[1]).count() == 1
    assert QueueItem.objects.filter(queue="trajectory").count() == first["episodes"]
    # the same rows, not new ones: ids are derived from (job, task, attempt)
    third = collection_run(round=approved_round, planner=planner, attempts=1, job=job)
    assert third["episodes"] == 0 and TrajectoryStep.objects.filter(trajectory__job=job).count() > 0


def test_only_approved_tasks_are_collected(data_dir):
    rnd = round_create(user=None)
    task_generate(round=rnd, n_tasks=6, seed=53)
    pending = list(TaskSpec.objects.filter(round=rnd, status=TaskStatus.PENDING))
    TaskSpec.objects.filter(id=pending[0].id).update(status=TaskStatus.APPROVED)
    result = collection_run(round=rnd, planner={"kind": "reference"}, attempts=3)
    assert result["episodes"] == 3
    assert set(Trajectory.objects.values_list("task_id", flat=True)) == {pending[0].id}
    # outside a job, another call adds further attempts
    collection_run(round=rnd, planner={"kind": "reference"}, attempts=1)
    assert sorted(Trajectory.objects.values_list("attempt", flat=True)) == [0, 1, 2, 3]


def test_home_screen_steps_show_the_touched_domains_app_without_changing_state():
    from devices.virtual.registry import catalog

    phone = VirtualPhone()
    phone.reset(None)
    before = phone.snapshot()
    tool = next(t for t in catalog().tools.values() if t.spec.domain == "notes")

    class _Call:
        class call:  # noqa: N801 - the shape of a CallRecord
            name = tool.spec.name

    class _Step:
        calls = [_Call]

    png = screen_png(env=phone, step=_Step)
    assert phone.snapshot() == before and phone.gui["app"] is None
    home = io.BytesIO()
    phone.screen().image().save(home, format="PNG", compress_level=1)
    assert png != home.getvalue()
    phone.open_app("Notes")
    notes = io.BytesIO()
    phone.screen().image().save(notes, format="PNG", compress_level=1)
    assert png == notes.getvalue()


def test_planner_descriptions_are_checked():
    assert planner_build(planner={"kind": "reference", "style": {"mistake": True}}).name == "reference[mistake]"
    verify = planner_build(planner={"kind": "reference", "style": {"reasoning": "none", "verify": True}})
    assert verify.name == "reference[none,verify]"
    assert planner_build(planner={"kind": "endpoint", "url": "http://127.0.0.1:9/v1", "model": "m"}).name == "openai[m]"
    for bad, message in [
        ({}, "kind"), ({"kind": "oracle"}, "Unknown planner kind"),
        ({"kind": "reference", "style": {"speed": 1}}, "Unknown reference style"),
        ({"kind": "reference", "style": {"reasoning": "loud"}}, "Bad reference style"),
        ({"kind": "endpoint", "url": "http://x"}, "needs 'url' and 'model'"),
    ]:
        with pytest.raises(ValueError, match=message):
            planner_build(planner=bad)
    with pytest.raises(PlannerUnavailable, match="does not exist"):
        planner_build(planner={"kind": "checkpoint", "path": "/no/such/checkpoint"})
    with pytest.raises(PlannerUnavailable, match="does not exist"):
        planner_build(planner={"kind": "endpoint", "url": "http://vllm:8000", "model": "m", "checkpoint": "/no/such"})


def test_endpoint_planner_of_a_served_checkpoint(tmp_path):
    from ml.model import ModelConfig, build_model, save_checkpoint
    from ml.tokenizer import TokenizerConfig, build_tokenizer

    tokenizer = build_tokenizer(TokenizerConfig(vocab_size=512, seeds=1))
    model = build_model(ModelConfig(hidden_size=32, intermediate_size=64, num_layers=1, num_heads=2, num_kv_heads=1,
                                    max_positions=256), tokenizer)
    path = save_checkpoint(model, tokenizer, tmp_path / "ckpt")
    planner = planner_build(planner={"kind": "endpoint", "url": "http://vllm:8000", "model": "fw", "checkpoint": path})
    assert planner.name == "served[fw]" and planner.url == "http://vllm:8000/v1/completions"


def test_collect_config_passes_a_served_checkpoint_to_the_endpoint_planner():
    from workers.kinds.flywheel import CollectConfig

    plain = CollectConfig(round_id="r", planner="endpoint", url="http://vllm:8000/v1", model="fw")
    served = CollectConfig(round_id="r", planner="endpoint", url="http://vllm:8000/v1", model="fw", path="/ck/last")
    assert "checkpoint" not in plain.planner_spec()
    assert served.planner_spec()["checkpoint"] == "/ck/last" and served.planner_spec()["kind"] == "endpoint"
