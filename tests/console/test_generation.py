"""Task generation: weighted sampling, executable validation, near-duplicates, held-out safety, rewrites."""

from __future__ import annotations

import json

import pytest

from console.models import QueueItem, Role, TaskSpec, TaskStatus
from console.services import rounds as rounds_service
from console.services.rounds import (
    round_create,
    round_weights_set,
    task_edit_apply,
    task_generate,
    task_validate,
)
from devices.virtual.registry import catalog
from devices.virtual.tasks import instance_seed
from harness.bench import assert_no_test_overlap, held_out_ids
from tests import factories
from tests.openai_standin import OpenAIStandIn

pytestmark = [pytest.mark.django_db]

TRIVIAL_TEMPLATE = "developer.animation_scales"  # a goal-only template: setup = goal makes it already done


def _spec(template: str = TRIVIAL_TEMPLATE, index: int = 0) -> dict:
    return catalog().templates[template].instantiate(instance_seed(9, template, index)).to_dict()


def _impossible(spec: dict) -> dict:
    path = next(iter(spec["goal"]))
    return {**spec, "goal": {**spec["goal"], path: "no such value anywhere"}}


def _already_done(spec: dict) -> dict:
    return {**spec, "setup": {**spec["setup"], **spec["goal"]}}


def test_generate_samples_by_weights_validates_and_queues_valid_tasks():
    rnd = round_create(user=None, generation_weights={"category": {"tool_use": 0, "memory": 0, "skills": 1,
                                                                   "sub_agent": 0}})
    result = task_generate(round=rnd, n_tasks=24, seed=11)
    specs = list(TaskSpec.objects.filter(round=rnd))
    assert result["generated"] == len(specs) == 24
    assert {s.category for s in specs} == {"skills"}
    valid = [s for s in specs if s.status == TaskStatus.PENDING]
    assert result["valid"] == len(valid) > 0
    assert result["valid"] + result["invalid"] == 24
    for s in valid:
        assert s.validation["ok"] is True and s.validation["reason"] == "ok"
        assert s.validation["reference"]["success"] is True and s.validation["do_nothing"]["success"] is False
        assert s.seed in {instance_seed(11, s.template, i) for i in range(24)} and s.spec["seed"] == s.seed
        assert s.spec["instruction"] == s.instruction and s.source == "template"
    for s in specs:
        if s.status == TaskStatus.INVALID:
            assert s.validation["reason"] != "ok"
    # only the valid ones reach people
    assert set(QueueItem.objects.filter(queue="task").values_list("task_id", flat=True)) == {s.id for s in valid}


def test_generated_tasks_never_coincide_with_the_held_out_benchmark():
    # Suite seed 1 IS the held-out split: index 0 of every template is a held-out instance.
    rnd = round_create(user=None)
    result = task_generate(round=rnd, n_tasks=40, seed=1)
    held = held_out_ids()
    valid = TaskSpec.objects.filter(round=rnd).exclude(status=TaskStatus.INVALID)
    assert_no_test_overlap([f"{s.template}#{s.seed}" for s in valid])
    rejected = TaskSpec.objects.filter(round=rnd, status=TaskStatus.INVALID)
    assert any(f"{s.template}#{s.seed}" in held for s in rejected)
    assert all(s.validation["reason"].startswith(("held-out", "duplicate", "infeasible", "trivially"))
               for s in rejected)
    assert result["held_out"] > 0
    held_params = rounds_service.held_out_hashes()[1]
    assert not any(s.param_hash in held_params for s in valid)


def test_near_duplicates_across_rounds_are_recorded_as_rejections():
    first = round_create(user=None)
    a = task_generate(round=first, n_tasks=15, seed=21)
    second = round_create(user=None)
    b = task_generate(round=second, n_tasks=15, seed=21)  # the same sampling: every instance seen before
    assert a["valid"] > 0
    assert b["valid"] == 0
    dups = TaskSpec.objects.filter(round=second, validation__reason__startswith="duplicate")
    assert dups.count() == b["duplicates"] >= a["valid"]
    assert all(s.status == TaskStatus.INVALID for s in dups)
    assert any(k.startswith("duplicate") for k in b["rejections"])


def test_normalised_parameters_and_initial_state_define_near_duplicates():
    spec = _spec()
    shouted = json.loads(json.dumps(spec))
    shouted["params"] = {k: v.upper() if isinstance(v, str) else v for k, v in spec["params"].items()}
    shouted["instruction"] = "Something worded differently."
    assert rounds_service.param_hash(shouted) == rounds_service.param_hash(spec)
    assert rounds_service.state_hash(shouted) == rounds_service.state_hash(spec)
    other = json.loads(json.dumps(spec))
    key = next(k for k, v in spec["params"].items() if isinstance(v, (int, float, str)))
    other["params"][key] = f"{spec['params'][key]}-changed"
    assert rounds_service.param_hash(other) != rounds_service.param_hash(spec)
    moved = json.loads(json.dumps(spec))
    moved["setup"] = {**spec["setup"], "notes.sync_pending": ["n-extra"]}
    assert rounds_service.state_hash(moved) != rounds_service.state_hash(spec)


def test_executable_validation_rejects_infeasible_and_trivially_true_tasks():
    good = task_validate(spec=_spec())
    assert good["ok"] and good["reason"] == "ok"
    infeasible = task_validate(spec=_impossible(_spec()))
    assert not infeasible["ok"]
    assert infeasible["reason"].startswith("infeasible: reference failed: ")
    trivial = task_validate(spec=_already_done(_spec()))
    assert not trivial["ok"]
    assert trivial["reason"] == "trivially true: do-nothing passes"
    assert trivial["do_nothing"]["success"] is True


def test_generation_records_infeasible_and_trivially_true_tasks(monkeypatch):
    """Generated tasks tampered on their way out of the template: one unreachable goal, one already met."""
    real = rounds_service._instantiate
    made = []

    def tampered(template, seed):
        spec = real(template, seed).to_dict()
        spec = [_impossible, _already_done, lambda s: s][len(made) % 3](spec)
        made.append(spec["id"])
        from devices.virtual.tasks import Task

        return Task.from_dict(spec)

    monkeypatch.setattr(rounds_service, "_instantiate", tampered)
    rnd = round_create(user=None, generation_weights={
        "domain": {**{d: 0 for d in catalog().domains}, "developer": 1},
        "category": {"tool_use": 1, "memory": 0, "skills": 0, "sub_agent": 0},
    })
    result = task_generate(round=rnd, n_tasks=9, seed=31)
    reasons = [s.validation["reason"] for s in TaskSpec.objects.filter(round=rnd, status=TaskStatus.INVALID)]
    assert any(r.startswith("infeasible: reference failed:") for r in reasons), reasons
    assert any(r == "trivially true: do-nothing passes" for r in reasons), reasons
    assert result["rejections"].get("infeasible", 0) >= 1 and result["rejections"].get("trivially true", 0) >= 1


@pytest.fixture
def rewriter():
    """A local OpenAI-compatible server (``vllm serve``'s protocol) whose reply rewords the last user
    message; ``rewriter.fail = True`` makes it answer 500 like an overloaded server."""

    def respond(req):
        if rewriter_server.fail or req["path"] != "/v1/chat/completions":
            return None
        text = "Could you please do this for me: " + req["messages"][-1]["content"]
        return {"id": "cmpl-1", "object": "chat.completion", "model": req["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}}

    rewriter_server = OpenAIStandIn(respond=respond)
    rewriter_server.fail = False
    with rewriter_server:
        yield rewriter_server


def test_llm_rewrite_rewords_instructions_through_an_openai_compatible_endpoint(rewriter):
    rnd = round_create(user=None)
    result = task_generate(round=rnd, n_tasks=6, seed=41,
                           rewrite={"url": rewriter.url, "model": "tiny-rewriter", "api_key": "sk-test"})
    valid = list(TaskSpec.objects.filter(round=rnd, status=TaskStatus.PENDING))
    assert valid and result["rewritten"] == len(valid)
    for s in valid:
        assert s.instruction.startswith("Could you please do this for me: ")
        assert s.spec["instruction"] == s.instruction
        assert s.instruction.endswith(s.validation["template_instruction"])
        assert s.source == "llm:tiny-rewriter"
    assert rewriter.requests[0]["path"] == "/v1/chat/completions"
    assert rewriter.requests[0]["auth"] == "Bearer sk-test"
    assert rewriter.requests[0]["model"] == "tiny-rewriter"


def test_llm_rewrite_failure_keeps_template_wording_and_records_why(rewriter):
    rewriter.fail = True
    rnd = round_create(user=None)
    result = task_generate(round=rnd, n_tasks=4, seed=43, rewrite={"url": rewriter.url, "model": "m"})
    valid = list(TaskSpec.objects.filter(round=rnd, status=TaskStatus.PENDING))
    assert valid and result["rewritten"] == 0
    for s in valid:
        assert s.source == "template"
        assert "rewrite endpoint error" in s.validation["rewrite_error"]
        assert s.instruction == catalog().templates[s.template].instantiate(s.seed).instruction


def test_task_edit_apply_revalidates_and_refuses_malformed_edits():
    rnd = round_create(user=None)
    spec = _spec()
    task = TaskSpec.objects.create(round=rnd, template=spec["template"], category=spec["category"],
                                   domains=spec["domains"], difficulty=spec["difficulty"], seed=spec["seed"],
                                   instruction=spec["instruction"], spec=spec, param_hash="x", state_hash="y")
    new_spec, validation = task_edit_apply(task=task, changes={"instruction": "  Set the animations, please. "})
    assert new_spec["instruction"] == "Set the animations, please." and validation["ok"]
    assert task.spec["instruction"] == spec["instruction"]  # the stored task is untouched
    path = next(iter(spec["goal"]))
    _, validation = task_edit_apply(task=task, changes={"goal": {path: "no such value anywhere"}})
    assert not validation["ok"] and validation["reason"].startswith("infeasible")
    for bad, message in [
        ("text", "non-empty object"), ({}, "non-empty object"), ({"budget": 3}, "Cannot edit budget"),
        ({"instruction": ""}, "non-empty string"), ({"goal": []}, "must be an object"),
        ({"goal": {"not.a.goal": 1}}, "is not a goal of this task"), ({"setup": {"bad path!": 1}}, "dotted"),
    ]:
        with pytest.raises(ValueError, match=message):
            task_edit_apply(task=task, changes=bad)


def test_round_numbers_and_weights_are_validated():
    manager = factories.user_create(role=Role.MANAGER)
    a = round_create(user=manager, name="first")
    b = round_create(user=manager)
    assert (a.number, b.number) == (1, 2) and b.name == "Round 2" and a.created_by == manager
    updated = round_weights_set(round=a, weights={"category": {"memory": 2, "skills": 0.5}, "difficulty": {"3": 1}},
                                user=manager)
    assert updated.generation_weights == {"category": {"memory": 2.0, "skills": 0.5}, "difficulty": {"3": 1.0}}
    for bad, message in [
        ({"category": {"memory": -1}}, "at least 0"), ({"category": {"cooking": 1}}, "Unknown category 'cooking'"),
        ({"domain": {"notes": "lots"}}, "must be a number"), ({"colour": {}}, "Unknown weight axis"),
        ([1, 2], "must be an object"), ({"difficulty": {"7": 1}}, "Unknown difficulty"),
    ]:
        with pytest.raises(ValueError, match=message):
            round_weights_set(round=a, weights=bad, user=manager)
    annotator = factories.user_create(role=Role.ANNOTATOR)
    from console.services.jobs import PermissionDenied

    with pytest.raises(PermissionDenied):
        round_weights_set(round=a, weights={}, user=annotator)
    with pytest.raises(PermissionDenied, match="Only managers can start rounds"):
        round_create(user=annotator)
    with pytest.raises(ValueError, match="Unknown category"):
        round_create(user=manager, generation_weights={"category": {"cooking": 1}})
