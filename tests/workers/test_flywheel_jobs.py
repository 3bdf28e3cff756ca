"""The data-flywheel job kinds' endpoint keys (``flywheel.generate``'s ``rewrite_api_key``, ``flywheel.collect``'s
``api_key``): stored only sealed, shown nowhere, checked at enqueue, and still sent as a bearer token.

The jobs run through the worker's entry point (``runner.run_job``: claim, config validated again from the
stored row, run, result) in the test process, against a local OpenAI-compatible stand-in.
"""

from __future__ import annotations

import json
import uuid

import pytest

from console import job_kinds, services
from console.job_config import ConfigError
from console.models import Job, JobStatus, Role, TaskSpec, TaskStatus, Trajectory
from console.services.rounds import round_create
from tests import factories
from tests.openai_standin import OpenAIStandIn
from workers.kinds import flywheel

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def manager(client):
    user = factories.user_create(role=Role.MANAGER)
    client.force_login(user)
    return user


def _run_here(job: Job) -> Job:
    from workers import runner

    runner.run_job(job.id)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, (job.error, job.log_tail[-2000:])
    return job


def _shown(client, job: Job) -> list[str]:
    """Everything a person sees of the job: its stored row, its page, the API and its round's page."""
    texts = [json.dumps(job.config), json.dumps(job.result), job.log_tail, job.message, job.error]
    for url in (job.get_absolute_url(), f"/api/jobs/{job.id}/", "/api/jobs/", f"/rounds/{job.config['round_id']}/"):
        response = client.get(url)
        assert response.status_code == 200, url
        texts.append(response.content.decode())
    return texts


def test_a_generate_jobs_rewrite_key_is_stored_sealed_and_sent_as_a_bearer_token(client, manager, data_dir):
    rnd = round_create(user=manager)
    secret = f"sk-rewrite-{uuid.uuid4().hex}"
    with OpenAIStandIn() as endpoint:
        job = _run_here(services.job_enqueue(kind="flywheel.generate", config={
            "round_id": str(rnd.id), "n_tasks": 3, "seed": 5, "rewrite_url": endpoint.url,
            "rewrite_model": "rewriter-7b", "rewrite_api_key": secret}, created_by=manager))

    # One rewrite request per valid task, each with the key as a bearer token.
    assert job.result["valid"] > 0 and len(endpoint.requests) == job.result["valid"]
    assert all(r["auth"] == f"Bearer {secret}" and r["model"] == "rewriter-7b" and r["path"] == "/v1/chat/completions"
               for r in endpoint.requests)
    assert job.config["rewrite_api_key"].startswith("sealed:") and job.config["rewrite_url"] == endpoint.url
    tasks = TaskSpec.objects.filter(round=rnd)
    shown = _shown(client, job) + [json.dumps(t.validation) + t.source + json.dumps(t.spec) for t in tasks]
    assert not [text for text in shown if secret in text]


def test_a_collect_jobs_endpoint_key_is_stored_sealed_and_sent_as_a_bearer_token(client, manager, data_dir):
    rnd = round_create(user=manager)
    factories.task_specs_create(round=rnd, n=2, status=TaskStatus.APPROVED)
    secret = f"sk-planner-{uuid.uuid4().hex}"
    with OpenAIStandIn() as endpoint:
        job = _run_here(services.job_enqueue(kind="flywheel.collect", config={
            "round_id": str(rnd.id), "planner": "endpoint", "url": endpoint.url, "model": "planner-7b",
            "api_key": secret, "parallel": 2}, created_by=manager))

    # Every planner turn of both episodes reached the stand-in with the key as a bearer token.
    assert job.result["episodes"] == 2 and job.result["planner"] == "openai[planner-7b]"
    assert len(endpoint.requests) >= 2
    assert all(r["auth"] == f"Bearer {secret}" and r["model"] == "planner-7b" for r in endpoint.requests)
    assert job.config["api_key"].startswith("sealed:") and job.config["url"] == endpoint.url
    trajectories = Trajectory.objects.filter(job=job)
    shown = _shown(client, job) + [t.planner + json.dumps(t.episode) for t in trajectories]
    assert len(shown) > 9 and not [text for text in shown if secret in text]


@pytest.mark.parametrize(("kind", "name", "url_field", "extra"), [
    ("flywheel.generate", "rewrite_api_key", "rewrite_url", {"rewrite_model": "m"}),
    ("flywheel.collect", "api_key", "url", {"planner": "endpoint", "model": "m"}),
])
def test_endpoint_keys_are_checked_at_enqueue_and_refused_forms_drop_them(client, manager, kind, name, url_field,
                                                                          extra):
    rnd = round_create(user=manager)
    config = {"round_id": str(rnd.id), url_field: "http://models.example/v1", **extra}

    # The longest key a field takes is stored sealed and opens again when the worker re-reads the row.
    longest = "k" * 500
    job = services.job_enqueue(kind=kind, config={**config, name: longest}, created_by=manager)
    sealed = job.config[name]
    assert sealed.startswith("sealed:") and longest not in json.dumps(job.config)
    reread = job_kinds.get(kind).validate(job.config)
    key = {"rewrite_api_key": flywheel.REWRITE_KEY, "api_key": flywheel.ENDPOINT_KEY}[name]
    assert getattr(reread, name) == sealed and key.open(reread) == longest
    with pytest.raises(ConfigError) as too_long:
        services.job_enqueue(kind=kind, config={**config, name: longest + "k"}, created_by=manager)
    assert set(too_long.value.errors) == {name}
    with pytest.raises(ConfigError) as elsewhere:  # copied into a config for another host, it does not open
        services.job_enqueue(kind=kind, config={**config, url_field: "http://elsewhere.example/v1", name: sealed},
                             created_by=manager)
    assert set(elsewhere.value.errors) == {name}

    # A refused form (a required field missing) comes back without the key, on the round page and the jobs page.
    refused = {**config, name: "sk-do-not-echo", "round_id": "not-a-uuid"}
    for url, form in ((f"/rounds/{rnd.id}/jobs/", {"kind": kind, "config": json.dumps(refused)}),
                      ("/jobs/start/", {"kind": kind, "config": json.dumps(refused)})):
        response = client.post(url, form)
        text = response.content.decode()
        assert response.status_code == 400 and "round_id" in text and "models.example" in text, url
        assert "sk-do-not-echo" not in text, url
    assert Job.objects.count() == 1
