"""The headless round (`manage.py flywheel round --auto-gate verifier`) and the flywheel job kinds."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from console import job_kinds, services
from console.job_config import ConfigError
from console.models import (
    DatasetVersion,
    Gate,
    Job,
    JobStatus,
    Review,
    Role,
    Round,
    TaskSpec,
    TaskStatus,
    Trajectory,
    TrajectoryStatus,
)
from console.services.rounds import round_create
from tests import factories
from tests.processes import wait_for


@pytest.mark.django_db
def test_headless_round_runs_every_stage_and_logs_the_automatic_gate(data_dir):
    out = StringIO()
    call_command("flywheel", "round", "--auto-gate", "verifier", "--tasks", "24", "--seed", "71",
                 "--style", "mistake", stdout=out)
    text = out.getvalue()
    rnd = Round.objects.get()
    for stage in ("generate", "gate tasks", "collect", "gate traj", "curate", "feedback"):
        assert f"{stage:<10} [{'#' * 30}] 100.0%" in text, stage
    tasks = TaskSpec.objects.filter(round=rnd)
    approved = tasks.filter(status=TaskStatus.APPROVED).count()
    accepted = Trajectory.objects.filter(round=rnd, status=TrajectoryStatus.ACCEPTED).count()
    assert tasks.count() == 24 and approved == tasks.exclude(status=TaskStatus.INVALID).count() > 0
    assert "generated=24\n" in text and f"approved={approved}\n" in text and f"accepted={accepted}\n" in text
    assert "funnel: generated 24 -> validated" in text and "wall_s=" in text
    reviews = Review.objects.all()
    assert reviews.count() == approved + Trajectory.objects.filter(round=rnd).count()
    assert set(reviews.values_list("gate", flat=True)) == {Gate.AUTO_VERIFIER}
    assert not reviews.filter(reviewer__isnull=False).exists()
    version = DatasetVersion.objects.get()
    assert version.stats["kept"] > 0 and f"in_dataset={version.stats['kept']}\n" in text
    rnd.refresh_from_db()
    assert set(rnd.suggested_weights) == {"category", "domain"}
    # the next round starts from the suggestion
    call_command("flywheel", "round", "--auto-gate", "verifier", "--tasks", "4", stdout=StringIO())
    nxt = Round.objects.get(number=2)
    assert nxt.generation_weights == rnd.suggested_weights


@pytest.mark.django_db
def test_flywheel_job_configs_are_validated_at_enqueue():
    manager = factories.user_create(role=Role.MANAGER)
    rnd = round_create(user=manager)
    cases = [
        ("flywheel.generate", {"round_id": "not-a-uuid"}, "round_id"),
        ("flywheel.generate", {"round_id": "00000000-0000-0000-0000-000000000000"}, "round_id"),
        ("flywheel.generate", {"round_id": str(rnd.id), "n_tasks": 0}, "n_tasks"),
        ("flywheel.generate", {"round_id": str(rnd.id), "rewrite_url": "http://x/v1"}, "rewrite_model"),
        ("flywheel.collect", {"round_id": str(rnd.id), "planner": "oracle"}, "planner"),
        ("flywheel.collect", {"round_id": str(rnd.id), "planner": "endpoint"}, "url"),
        ("flywheel.collect", {"round_id": str(rnd.id), "style": ["fast"]}, "style"),
        ("flywheel.collect", {"round_id": str(rnd.id), "task_ids": ["x"]}, "task_ids"),
        ("flywheel.curate", {"rounds": [str(rnd.id)], "name": "Bad Name"}, "name"),
        ("flywheel.curate", {"rounds": [str(rnd.id)], "name": "ok", "target_mix": "{oops"}, "target_mix"),
        ("flywheel.curate", {"rounds": [str(rnd.id)], "name": "ok", "target_mix": '{"colour": {}}'}, "target_mix"),
        ("flywheel.feedback", {}, "round_id"),
    ]
    for kind, config, field in cases:
        with pytest.raises(ConfigError) as err:
            services.job_enqueue(kind=kind, config=config, created_by=manager)
        assert field in err.value.errors, (kind, config, err.value.errors)
    assert job_kinds.get("flywheel.collect").queue == "collect"
    assert not Job.objects.exists()


@pytest.mark.slow
def test_generate_job_runs_end_to_end_on_a_real_worker(worker, data_dir):
    manager = factories.user_create(role=Role.MANAGER)
    rnd = round_create(user=manager)
    job = services.job_enqueue(kind="flywheel.generate", config={"round_id": str(rnd.id), "n_tasks": 12, "seed": 3},
                               created_by=manager)

    def finished():
        j = Job.objects.get(id=job.id)
        return j if j.is_terminal else None

    done = wait_for(finished, what="the generate job to finish")
    assert done.status == JobStatus.SUCCEEDED, done.error
    assert done.result["generated"] == 12 == TaskSpec.objects.filter(round=rnd).count()
    assert TaskSpec.objects.filter(round=rnd, status=TaskStatus.PENDING).count() == done.result["valid"] > 0
    assert done.progress == 1.0 and any("validated" in h[2] for h in done.progress_history)
