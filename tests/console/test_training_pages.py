"""The training page: run forms (managers only), field errors, comparison table and its exports, metrics."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from django.conf import settings

from console import services
from console.job_config import ConfigError
from console.models import Checkpoint, Job, JobStatus, Role
from tests import factories

MEAN = {"overall": 61.5, "tool_use": 70.0, "memory": 50.0, "skills": 55.0, "sub_agent": 40.0,
        "mean_output_tokens": 120.5, "mean_tool_calls": 3.25, "cost_per_1k_tasks": 0.0123}
STD = {k: 1.5 for k in MEAN}


def _login(client, role: Role):
    user = factories.user_create(role=role)
    client.force_login(user)
    return user


@pytest.mark.django_db
@pytest.mark.parametrize("role", [Role.ANNOTATOR, Role.ANALYST])
def test_annotators_and_analysts_read_but_cannot_start(client, role):
    _login(client, role)
    page = client.get("/training/")
    assert page.status_code == 200
    assert b'data-testid="training-forms"' not in page.content
    response = client.post("/training/start/", {"run": "sft", "config": "{}"})
    assert response.status_code == 403
    assert not Job.objects.filter(kind__startswith="train.").exists()


@pytest.mark.django_db
def test_manager_sees_forms_and_starts_a_run(client):
    _login(client, Role.MANAGER)
    page = client.get("/training/")
    assert b'data-testid="training-forms"' in page.content
    for run in ("sft", "care", "evaluate"):
        assert f'data-testid="start-{run}"'.encode() in page.content
    response = client.post("/training/start/", {"run": "sft", "config": json.dumps({"max_steps": 5})})
    assert response.status_code == 302
    job = Job.objects.get(kind="train.sft")
    assert job.queue == "train" and job.config["max_steps"] == 5


@pytest.mark.django_db
@pytest.mark.parametrize(("run", "config", "fields"), [
    ("sft", {"max_steps": 0, "lr": 2.0}, {"max_steps", "lr"}),
    ("sft", {"seq_len": 64}, {"seq_len"}),
    ("sft", {"dataset_id": "00000000-0000-0000-0000-000000000000"}, {"dataset_id"}),
    ("sft", {"bogus": 1}, {"bogus"}),
    ("care", {}, {"init_checkpoint_id"}),
    ("care", {"init_checkpoint_id": "00000000-0000-0000-0000-000000000000", "group_size": 1},
     {"init_checkpoint_id", "group_size"}),
    ("evaluate", {"checkpoint": "nope", "seeds": 0}, {"checkpoint", "seeds"}),
])
def test_invalid_run_configs_are_refused_with_field_errors(client, run, config, fields):
    user = _login(client, Role.MANAGER)
    response = client.post("/training/start/", {"run": run, "config": json.dumps(config)})
    assert response.status_code == 400
    shown = response.content.decode().split('data-testid="start-errors"', 1)[1].split("</ul>", 1)[0]
    for name in fields:
        assert f"<code>{name}</code>" in shown, (name, shown)
    assert not Job.objects.filter(kind__startswith="train.").exists()
    kind = {"sft": "train.sft", "care": "train.care", "evaluate": "train.evaluate"}[run]
    with pytest.raises(ConfigError) as exc:
        services.job_enqueue(kind=kind, config=config, created_by=user)
    assert fields <= set(exc.value.errors)


@pytest.mark.django_db
def test_bad_json_and_unknown_run_type_are_400(client):
    _login(client, Role.MANAGER)
    assert client.post("/training/start/", {"run": "sft", "config": "{"}).status_code == 400
    assert client.post("/training/start/", {"run": "pretrain", "config": "{}"}).status_code == 400


@pytest.mark.django_db
def test_comparison_table_and_exports(client):
    _login(client, Role.ANALYST)
    train = factories.job_create(kind="train.sft", status=JobStatus.SUCCEEDED, config={})
    parent = Checkpoint.objects.create(name="sft-base", path="checkpoints/x/last", kind="sft", job=train)
    Checkpoint.objects.create(name="care-child", path="checkpoints/y/last", kind="care", parent=parent,
                              scores={"mean": MEAN, "std": STD})
    factories.job_create(kind="train.evaluate", status=JobStatus.SUCCEEDED, config={"checkpoint": "reference"},
                         result={"mean": {**MEAN, "overall": 80.0}, "std": STD})
    page = client.get("/training/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "care-child" in text and "sft-base" in text and "reference solver" in text
    assert 'id="compare-table"' in text and "61.50 ± 1.50" in text

    md = client.get("/training/compare.md")
    assert md.status_code == 200 and md["Content-Type"].startswith("text/markdown")
    assert "attachment" in md["Content-Disposition"]
    lines = md.content.decode().splitlines()
    assert lines[0].startswith("| Planner | Kind | Overall | Tool Use | Memory | Skills | Sub-agent |")
    row = next(line for line in lines if line.startswith("| care-child "))
    assert "| 61.50 ± 1.50 | 70.00 ± 1.50 |" in row and "| 120.50 | 3.25 | 0.0123 |" in row
    assert any(line.startswith("| reference solver | reference | 80.00 ± 1.50") for line in lines)

    response = client.get("/training/compare.csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    mine = next(r for r in rows if r["planner"] == "care-child")
    assert mine["kind"] == "care" and float(mine["overall_mean"]) == 61.5 and float(mine["sub_agent_std"]) == 1.5
    assert float(mine["mean_tool_calls"]) == 3.25
    assert [r["planner"] for r in rows] == ["reference solver", "care-child"]  # unscored sft-base is left out


@pytest.mark.django_db
def test_run_metrics_feed_the_live_curve(client):
    _login(client, Role.ANNOTATOR)
    job = factories.job_create(kind="train.sft", status=JobStatus.RUNNING, config={})
    folder = Path(settings.FLYWHEEL_DATA_DIR) / "checkpoints" / str(job.id)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "metrics.jsonl").write_text("".join(
        json.dumps({"step": s, "loss": 5.0 / s, "attempt": 1}) + "\n" for s in (1, 2, 3)))
    page = client.get("/training/")
    assert f'data-metrics-url="/training/runs/{job.id}/metrics/"'.encode() in page.content
    data = client.get(f"/training/runs/{job.id}/metrics/").json()
    assert data["status"] == "running" and data["terminal"] is False
    assert [p["step"] for p in data["points"]] == [1, 2, 3] and data["points"][0]["loss"] == 5.0
    other = factories.job_create(kind="demo.sleep")
    assert client.get(f"/training/runs/{other.id}/metrics/").status_code == 404
