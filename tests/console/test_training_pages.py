"""The training page: run forms (managers only), field errors, comparison table and its exports, metrics."""

from __future__ import annotations

import csv
import io
import json

import pytest

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
    ("sft", {"swap_share": 1.5}, {"swap_share"}),
    ("sft", {"value_weight": 0}, {"value_weight"}),
    ("sft", {"dataset_id": "00000000-0000-0000-0000-000000000000"}, {"dataset_id"}),
    ("sft", {"bogus": 1}, {"bogus"}),
    ("care", {}, {"init_checkpoint_id"}),
    ("care", {"init_checkpoint_id": "00000000-0000-0000-0000-000000000000", "group_size": 1},
     {"init_checkpoint_id", "group_size"}),
    ("evaluate", {"checkpoint": "nope", "seeds": 0}, {"checkpoint", "seeds"}),
    ("evaluate", {"checkpoint": "endpoint", "endpoint_url": "ftp://models.example/v1"},
     {"endpoint_url", "endpoint_model"}),
    ("evaluate", {"checkpoint": "endpoint", "endpoint_url": "localhost:8000/v1", "endpoint_model": "m"},
     {"endpoint_url"}),
    ("evaluate", {"checkpoint": "endpoint", "endpoint_url": "https://me:pw@models.example/v1", "endpoint_model": "m"},
     {"endpoint_url"}),
    ("evaluate", {"checkpoint": "endpoint", "endpoint_url": "http://vllm:8000/v1", "endpoint_model": " "},
     {"endpoint_model"}),
    ("evaluate", {"checkpoint": "reference", "endpoint_model": "m", "endpoint_key": "k"},
     {"endpoint_model", "endpoint_key"}),
    ("evaluate", {"checkpoint": "endpoint", "endpoint_url": "http://vllm:8000/v1", "endpoint_model": "m",
                  "endpoint_checkpoint": "last"}, {"endpoint_checkpoint"}),
    ("evaluate", {"checkpoint": "endpoint", "endpoint_url": "http://vllm:8000/v1", "endpoint_model": "m",
                  "endpoint_checkpoint": "00000000-0000-0000-0000-000000000000"}, {"endpoint_checkpoint"}),
    ("evaluate", {"endpoint_checkpoint": "00000000-0000-0000-0000-000000000000"}, {"endpoint_checkpoint"}),
    ("evaluate", {"harness_version": {"polcy": "typo"}, "seeds": 0}, {"harness_version", "seeds"}),
    ("evaluate", {"price_per_million_output_tokens": -1}, {"price_per_million_output_tokens"}),
    ("evaluate", {"harness_version": "default"}, {"harness_version"}),
    ("evaluate", {"harness_version": {"notice_rules": 3}}, {"harness_version"}),
    ("evaluate", {"harness_version": {"policy": "p", "id": "hv-000000000000"}}, {"harness_version"}),
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
def test_a_refused_endpoint_form_comes_back_without_its_key(client):
    _login(client, Role.MANAGER)
    config = {"checkpoint": "endpoint", "endpoint_url": "http://models.example/v1", "endpoint_key": "sk-do-not-echo"}
    response = client.post("/training/start/", {"run": "evaluate", "config": json.dumps(config)})
    assert response.status_code == 400 and "<code>endpoint_model</code>" in response.content.decode()
    assert "sk-do-not-echo" not in response.content.decode() and "models.example" in response.content.decode()
    broken = client.post("/training/start/", {"run": "evaluate", "config": '{"endpoint_key": "sk-do-not-echo",'})
    assert broken.status_code == 400 and "sk-do-not-echo" not in broken.content.decode()
    jobs_form = client.post("/jobs/start/", {"kind": "train.evaluate", "config": json.dumps(config)})
    assert jobs_form.status_code == 400 and "sk-do-not-echo" not in jobs_form.content.decode()
    assert not Job.objects.exists()


@pytest.mark.django_db
def test_a_sealed_endpoint_key_opens_only_for_its_url():
    from workers.kinds.training import EvaluateConfig

    config = {"checkpoint": "endpoint", "endpoint_url": "http://models.example/v1", "endpoint_model": "m",
              "endpoint_key": "sk-real"}
    job = services.job_enqueue(kind="train.evaluate", config=config, created_by=None)
    sealed = job.config["endpoint_key"]
    assert sealed.startswith("sealed:") and "sk-real" not in json.dumps(job.config)
    assert EvaluateConfig(**job.config).api_key() == "sk-real"  # as the worker reads the stored row
    with pytest.raises(ConfigError) as exc:  # copied into a config for another host, it does not open
        services.job_enqueue(kind="train.evaluate", config={**config, "endpoint_url": "http://elsewhere.example/v1",
                                                            "endpoint_key": sealed}, created_by=None)
    assert set(exc.value.errors) == {"endpoint_key"}


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


def _tasks(solved: list[bool], calls: int) -> list[dict]:
    cats = ("tool_use", "memory", "skills", "sub_agent")
    return [{"id": f"t{i}", "category": cats[i % 4], "solved": s, "output_tokens": 100, "tool_calls": calls}
            for i, s in enumerate(solved)]


@pytest.mark.django_db
def test_comparison_pairs_rows_task_by_task_against_a_chosen_baseline(client):
    _login(client, Role.ANNOTATOR)
    base_eval = factories.job_create(kind="train.evaluate", status=JobStatus.SUCCEEDED, config={"checkpoint": "x"},
                                     result={"mean": MEAN, "std": STD, "tasks": _tasks([True, False] * 20, 4)})
    # solves every task the base solves and 10 of the 20 it fails, with 3 calls instead of 4
    care_eval = factories.job_create(kind="train.evaluate", status=JobStatus.SUCCEEDED, config={"checkpoint": "y"},
                                     result={"mean": MEAN, "std": STD,
                                             "tasks": _tasks([True, True, True, False] * 10, 3)})
    old_eval = factories.job_create(kind="train.evaluate", status=JobStatus.SUCCEEDED, config={"checkpoint": "z"},
                                    result={"mean": MEAN, "std": STD})  # from before per-task outcomes were kept
    base = Checkpoint.objects.create(name="sft-base", path="a", kind="sft",
                                     scores={"mean": MEAN, "std": STD, "job": str(base_eval.id)})
    Checkpoint.objects.create(name="care-child", path="b", kind="care", parent=base,
                              scores={"mean": MEAN, "std": STD, "job": str(care_eval.id)})
    Checkpoint.objects.create(name="older", path="c", kind="care", scores={"mean": MEAN, "std": STD,
                                                                            "job": str(old_eval.id)})
    plain = client.get("/training/").content.decode()
    assert 'data-testid="pair-form"' in plain and 'data-testid="paired"' not in plain

    page = client.get(f"/training/?baseline={base.id}")
    assert page.status_code == 200
    text = page.content.decode()
    assert "Δ Overall vs sft-base" in text
    # by category (task i is cats[i % 4]) both solve all of tool_use and skills and none of sub_agent; care-child
    # solves all of memory, the base none: 0.2 * 100 = +20 points on every resample; calls 3 against 4: a 25% cut
    assert text.count('data-testid="paired"') == 3  # care-child's figures; older has no outcomes to pair
    assert '<td class="num clear" data-value="20.0" data-testid="paired">+20.00 [+20.00, +20.00]</td>' in text
    assert ">+0.00 [+0.00, +0.00]<" in text and ">+25.00 [+25.00, +25.00]<" in text
    assert "per-task outcomes" in text and ">baseline<" in text
    assert f'href="/training/compare.csv?baseline={base.id}"' in text

    md = client.get(f"/training/compare.md?baseline={base.id}").content.decode()
    row = next(line for line in md.splitlines() if line.startswith("| care-child "))
    assert row.endswith("| +20.00 [+20.00, +20.00] | +0.00 [+0.00, +0.00] | +25.00 [+25.00, +25.00] |")
    csv_rows = list(csv.DictReader(io.StringIO(client.get(f"/training/compare.csv?baseline={base.id}")
                                               .content.decode())))
    mine = next(r for r in csv_rows if r["planner"] == "care-child")
    assert mine["paired_baseline"] == "sft-base" and float(mine["tool_calls_cut"]) == pytest.approx(25.0)
    assert float(mine["overall_diff"]) == float(mine["overall_diff_lo"]) == pytest.approx(20.0)
    assert next(r for r in csv_rows if r["planner"] == "older")["paired_note"].startswith("both reports need")

    bad = client.get("/training/?baseline=no-such-row")
    assert bad.status_code == 400 and "no evaluated row" in bad.content.decode()
    assert client.get("/training/compare.csv?baseline=no-such-row").status_code == 400


@pytest.mark.django_db
def test_run_metrics_feed_the_live_curve(client):
    _login(client, Role.ANNOTATOR)
    job = factories.job_create(kind="train.sft", status=JobStatus.RUNNING, config={})
    factories.metrics_points_append(job=job, points=[{"step": s, "loss": 5.0 / s, "attempt": 1} for s in (1, 2, 3)])
    page = client.get("/training/")
    assert f'data-metrics-url="/training/runs/{job.id}/metrics/"'.encode() in page.content
    data = client.get(f"/training/runs/{job.id}/metrics/").json()
    assert data["status"] == "running" and data["terminal"] is False
    assert [p["step"] for p in data["points"]] == [1, 2, 3] and data["points"][0]["loss"] == 5.0
    other = factories.job_create(kind="demo.sleep")
    assert client.get(f"/training/runs/{other.id}/metrics/").status_code == 404


@pytest.mark.django_db
def test_care_run_metrics_carry_every_plotted_field(client):
    _login(client, Role.ANALYST)
    job = factories.job_create(kind="train.care", status=JobStatus.RUNNING, config={"care": True})
    path = factories.metrics_points_append(job=job, points=[factories.care_metrics_point(i) for i in (1, 2)])
    factories.metrics_points_append(job=job, points=[{**factories.care_metrics_point(3), "kl": float("nan")}])
    assert "NaN" in path.read_text()  # Python's json writes it; JSON has no NaN
    with path.open("a") as out:
        out.write('{"iteration": 4, "rew')  # a line being written
    response = client.get(f"/training/runs/{job.id}/metrics/")
    assert response.status_code == 200
    assert "NaN" not in response.content.decode()
    data = response.json()
    assert data["kind"] == "train.care" and data["terminal"] is False
    first = data["points"][0]
    assert set(first) == {"step", "loss", "reward", "success", "output_tokens", "tool_calls", "kl", "competence_hist",
                          "attempt"}
    assert first == {"step": 1, "loss": -0.05, "reward": 0.1, "success": 0.25, "output_tokens": 41.0,
                     "tool_calls": 2.5, "kl": 0.001, "competence_hist": [2, 1, 0, 0, 0, 0, 0, 1, 0, 1], "attempt": 1}
    assert [p["step"] for p in data["points"]] == [1, 2, 3]
    assert data["points"][2]["kl"] is None and data["points"][2]["reward"] == pytest.approx(0.3)

    page = client.get("/training/").content.decode()
    row = page.split(f'data-run-id="{job.id}"', 1)[1].split("</tr>", 1)[0]
    assert f'data-metrics-url="/training/runs/{job.id}/metrics/"' in row and 'data-unit="iteration"' in row
    for metric in ("reward", "success", "output_tokens", "tool_calls", "competence_hist"):
        assert f'data-metric="{metric}"' in row, metric
    assert ">CARE<" in row


@pytest.mark.django_db
def test_sft_runs_plot_loss_and_evaluations_plot_nothing(client):
    _login(client, Role.MANAGER)
    sft = factories.job_create(kind="train.sft", status=JobStatus.SUCCEEDED, config={})
    grpo = factories.job_create(kind="train.care", status=JobStatus.QUEUED, config={"care": False})
    evaluation = factories.job_create(kind="train.evaluate", status=JobStatus.SUCCEEDED, config={})
    page = client.get("/training/").content.decode()

    def row(job):
        return page.split(f'data-run-id="{job.id}"', 1)[1].split("</tr>", 1)[0]

    assert 'data-metric="loss"' in row(sft) and 'data-unit="step"' in row(sft)
    assert 'data-metric="reward"' not in row(sft)
    assert ">GRPO<" in row(grpo) and 'data-metric="competence_hist"' in row(grpo)
    assert "data-metrics-url" not in row(evaluation)
    data = client.get(f"/training/runs/{sft.id}/metrics/").json()
    assert data["terminal"] is True and data["points"] == []  # no metrics file: no points, no error


@pytest.mark.django_db
@pytest.mark.parametrize("role", [Role.ANNOTATOR, Role.MANAGER, Role.ANALYST])
def test_every_signed_in_role_reads_run_metrics_and_anonymous_visitors_are_sent_to_log_in(client, role):
    job = factories.job_create(kind="train.care", status=JobStatus.RUNNING, config={"care": True})
    factories.metrics_points_append(job=job, points=[factories.care_metrics_point(1)])
    url = f"/training/runs/{job.id}/metrics/"
    anonymous = client.get(url)
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/login/")
    _login(client, role)
    assert client.get(url).json()["points"][0]["competence_hist"] == factories.care_metrics_point(1)["competence_hist"]
