"""Feedback: competence per category and domain → next round's weights (more where the planner fails)."""

from __future__ import annotations

import pytest

from console.models import Role, Round, TaskSpec, Trajectory
from console.services.feedback import feedback_weights, round_weights_set, weights_from_competence
from console.services.rounds import round_create
from devices.virtual.registry import catalog
from devices.virtual.tasks import CATEGORIES
from tests import factories

pytestmark = [pytest.mark.django_db]


def _trajectory(rnd: Round, category: str, domain: str, success: bool, n: int) -> None:
    task = TaskSpec.objects.create(round=rnd, template=f"t.{category}.{domain}.{n}", category=category,
                                   domains=[domain], seed=n, instruction="x", spec={}, param_hash=str(n),
                                   state_hash=str(n))
    Trajectory.objects.create(task=task, round=rnd, planner="p", success=success, progress=float(success),
                              episode={})


def test_weights_rise_where_the_planner_fails_from_collection_success():
    rnd = round_create(user=None)
    n = 0
    for category, domain, successes, total in [("tool_use", "notes", 9, 10), ("memory", "health", 1, 10),
                                               ("skills", "notes", 5, 10)]:
        for i in range(total):
            n += 1
            _trajectory(rnd, category, domain, i < successes, n)
    out = feedback_weights(round=rnd)
    rnd.refresh_from_db()
    weights = rnd.suggested_weights
    assert out["source"] == "collection" and out["weights"] == weights
    assert out["competence"]["category"]["memory"] == {"success": 0.1, "n": 10}
    cat = weights["category"]
    assert cat["memory"] > cat["skills"] > cat["tool_use"] > 0
    # w = floor + (1 - success), unseen categories at the mean, scaled to mean 1
    raw = {"tool_use": 0.2 + 0.1, "memory": 0.2 + 0.9, "skills": 0.2 + 0.5}
    raw["sub_agent"] = sum(raw.values()) / 3
    scale = 4 / sum(raw.values())
    assert cat == {k: pytest.approx(v * scale, abs=1e-4) for k, v in raw.items()}
    assert sum(cat.values()) == pytest.approx(len(CATEGORIES), abs=1e-3)
    dom = weights["domain"]
    assert set(dom) == set(catalog().domains)
    assert dom["health"] > dom["notes"]


def test_latest_evaluation_results_take_precedence():
    rnd = round_create(user=None, config={"evaluation": {"category": {"tool_use": 80, "memory": 20, "skills": 50,
                                                                      "sub_agent": 50}}})
    _trajectory(rnd, "memory", "notes", True, 1)  # collection says memory is easy; evaluation says otherwise
    out = feedback_weights(round=rnd)
    assert out["source"] == "evaluation"
    cat = out["weights"]["category"]
    assert cat["memory"] > cat["skills"] == cat["sub_agent"] > cat["tool_use"]
    assert "domain" not in out["weights"]


def test_managers_edit_suggested_weights_with_clear_errors():
    manager = factories.user_create(role=Role.MANAGER)
    rnd = round_create(user=manager)
    suggestion = weights_from_competence({"category": {"memory": {"success": 0.0, "n": 3}}})
    rnd = round_weights_set(round=rnd, weights=suggestion, user=manager)
    assert rnd.generation_weights["category"]["memory"] == suggestion["category"]["memory"]
    with pytest.raises(ValueError, match="must be a finite number of at least 0"):
        round_weights_set(round=rnd, weights={"domain": {"notes": -0.5}}, user=manager)
    with pytest.raises(ValueError, match="Unknown domain 'kitchen'"):
        round_weights_set(round=rnd, weights={"domain": {"kitchen": 1}}, user=manager)
    rnd.refresh_from_db()
    assert rnd.generation_weights["category"]["memory"] == suggestion["category"]["memory"]
