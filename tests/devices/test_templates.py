"""Every task template: the reference solver succeeds on 50 seeds, a do-nothing planner fails, a
solver that also changes one unrelated setting fails, and the wrong order fails where order matters."""

from __future__ import annotations

from collections import Counter

import pytest

from devices.virtual.phone import VirtualPhone
from devices.virtual.registry import catalog
from devices.virtual.state import get_path, path_allowed
from devices.virtual.tasks import CATEGORIES, TAGS, instance_seed
from harness.contract import PlannerTurn
from harness.episode import run_episode, run_episodes
from harness.planner import DoNothingPlanner, ScriptedPlanner
from harness.reference import ReferenceSolver

TEMPLATES = sorted(catalog().templates)
SUITE_SEED = 20261202


def _tasks(tid: str, n: int):
    tpl = catalog().templates[tid]
    return [tpl.instantiate(instance_seed(SUITE_SEED, tid, i)) for i in range(n)]


def test_catalogue_breadth():
    cat = catalog()
    assert len(cat.domains) >= 13
    assert len(cat.tools) >= 150
    assert len(cat.templates) >= 60
    cats = Counter(t.category for t in cat.templates.values())
    tags = Counter(tag for t in cat.templates.values() for tag in t.tags)
    assert set(cats) == set(CATEGORIES), cats
    assert all(tags[t] >= 3 for t in TAGS), tags
    for name, dom in cat.domains.items():
        assert dom.templates, f"domain {name} has no task template"


@pytest.mark.parametrize("tid", TEMPLATES)
def test_reference_solver_succeeds_on_50_seeds(tid):
    tasks = _tasks(tid, 50)
    episodes = run_episodes(tasks, ReferenceSolver())
    failed = [(t.seed, e.verdict.reason) for t, e in zip(tasks, episodes, strict=False) if not e.verdict.success]
    assert not failed, f"{tid}: reference failed on {len(failed)}/50, e.g. {failed[:2]}"


@pytest.mark.parametrize("tid", TEMPLATES)
def test_do_nothing_planner_fails(tid):
    for ep in run_episodes(_tasks(tid, 10), DoNothingPlanner()):
        assert not ep.verdict.success, f"{tid}: doing nothing passed ({ep.task['id']})"
        assert ep.verdict.progress < 1.0


# An unrelated setting the collateral solver flips: the first whose path the task does not allow.
_UNRELATED = [
    ("set_hotspot", "connectivity.hotspot.enabled"),
    ("set_bluetooth", "connectivity.bluetooth.enabled"),
]


class CollateralSolver:
    """The reference solver, plus one unrelated setting changed on the device before answering."""

    name = "reference+collateral"

    def __init__(self, phone: VirtualPhone, tool: str, path: str):
        self.inner = ReferenceSolver()
        self.phone, self.tool, self.path = phone, tool, path
        self.done = False

    def generate(self, contexts):
        turns = self.inner.generate(contexts)
        if not self.done and turns[0].is_final:
            self.done = True
            current = get_path(self.phone.state, self.path)
            assert self.phone.call((self.tool, {"enabled": not current})).success
        return turns

    def end_episode(self, episode_id):
        self.inner.end_episode(episode_id)


@pytest.mark.parametrize("tid", TEMPLATES)
def test_changing_an_unrelated_setting_fails(tid):
    for task in _tasks(tid, 5):
        allowed = list(task.goal) + list(task.allowed)
        tool, path = next((t, p) for t, p in _UNRELATED if not path_allowed(p, allowed))
        phone = VirtualPhone()
        ep = run_episode(task, CollateralSolver(phone, tool, path), env=phone)
        assert not ep.verdict.success, f"{tid}: collateral change of {path} was not caught"
        assert path in ep.verdict.reason


ORDERED = [tid for tid in TEMPLATES if any(t.order for t in _tasks(tid, 3))]


def test_some_templates_check_ordering():
    assert len(ORDERED) >= 4


class _BoundaryRecorder:
    """The reference solver, noting the device's event counter at the start of every turn."""

    name = "reference"

    def __init__(self, phone: VirtualPhone):
        self.inner, self.phone, self.seq_at_turn = ReferenceSolver(), phone, []

    def generate(self, contexts):
        self.seq_at_turn.append(self.phone.seq)
        return self.inner.generate(contexts)

    def end_episode(self, episode_id):
        self.inner.end_episode(episode_id)

    def turn_of(self, seq: int) -> int:
        """The turn whose execution logged event number ``seq``."""
        return max(i for i, start in enumerate(self.seq_at_turn) if start < seq)


@pytest.mark.parametrize("tid", ORDERED)
def test_wrong_order_fails(tid):
    """Replay the reference turns with the turn causing the last ordered event moved before the turn
    causing the first one; the verifier must reject it."""
    checked = 0
    for task in _tasks(tid, 5):
        if not task.order:
            continue
        phone = VirtualPhone()
        recorder = _BoundaryRecorder(phone)
        ep = run_episode(task, recorder, env=phone)
        assert ep.verdict.success
        events = phone.state["_meta"]["events"]
        first = recorder.turn_of(next(e["seq"] for e in events if e["event"] == task.order[0]))
        last = recorder.turn_of(max(e["seq"] for e in events if e["event"] == task.order[-1]))
        if first == last:
            continue  # both happen in one turn; nothing to reorder at turn level
        turns: list[PlannerTurn] = [s.turn for s in ep.steps]
        moved = turns[:first] + [turns[last]] + turns[first:last] + turns[last + 1 :]
        bad = run_episode(task, ScriptedPlanner(moved, name="reordered"))
        assert not bad.verdict.success, f"{tid} seed {task.seed}: wrong order passed"
        checked += 1
    assert checked, f"{tid}: no instance could be reordered"
