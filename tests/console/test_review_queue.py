"""Review queues: claim-next under concurrency, leases that expire and are reclaimed, stale submissions
refused, decisions with edits and step labels, overlap with majority and Cohen's κ, the automatic gate."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import timedelta

import pytest
from django.db import close_old_connections, connection, connections
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from console.models import (
    Decision,
    Gate,
    ItemStatus,
    QueueItem,
    Review,
    Role,
    TaskStatus,
    TrajectoryStatus,
)
from console.selectors.review import cohen_kappa, review_agreement, review_queue_progress, round_funnel
from console.services.jobs import PermissionDenied
from console.services.review import (
    LeaseLost,
    ReviewError,
    review_auto_gate,
    review_claim_next,
    review_decide,
    review_items_create,
    review_lease_renew,
    review_release,
)
from console.services.rounds import param_hash, state_hash
from tests import factories


@pytest.fixture
def rnd(db):
    return factories.round_create()


def _expire(item: QueueItem) -> None:
    QueueItem.objects.filter(pk=item.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))


# ---------------------------------------------------------------------------------------------
# Concurrency: real transactions in 50 threads, each with its own database connection


@pytest.mark.django_db(transaction=True)
def test_fifty_concurrent_claimers_claim_every_item_exactly_once():
    rnd = factories.round_create()
    tasks = factories.task_specs_create(round=rnd, n=505)
    assert review_items_create(queue="task", round=rnd, objects=tasks) == 505
    # 100 of the 500 were claimed by someone whose lease has expired: they must be reclaimed. 5 more are
    # held under a live lease: nobody else may take them.
    gone, away = factories.user_create(), factories.user_create()
    pks = list(QueueItem.objects.order_by("created_at").values_list("pk", flat=True))
    QueueItem.objects.filter(pk__in=pks[:100]).update(
        claimed_by=gone, lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    held = pks[-5:]
    QueueItem.objects.filter(pk__in=held).update(claimed_by=away, lease_expires_at=timezone.now() + timedelta(hours=1))
    users = [factories.user_create() for _ in range(50)]
    claims: dict[str, list[str]] = {u.username: [] for u in users}
    errors: list[BaseException] = []
    start = threading.Barrier(len(users))

    def claimer(user) -> None:
        try:
            start.wait()
            while True:
                item = review_claim_next(queue="task", user=user)
                if item is None:
                    return
                claims[user.username].append(str(item.pk))
                review_decide(item=item, user=user, decision="approve")
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=claimer, args=(u,)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    claimed = [i for ids in claims.values() for i in ids]
    counts = Counter(claimed)
    assert len(counts) == 500 and set(counts.values()) == {1}, "an item was claimed twice or lost"
    assert set(counts) == {str(pk) for pk in pks[:-5]}  # the 100 expired ones included
    assert QueueItem.objects.filter(status=ItemStatus.DONE).count() == 500
    assert set(QueueItem.objects.filter(status=ItemStatus.PENDING).values_list("pk", "claimed_by")) == {
        (pk, away.pk) for pk in held
    }
    assert Review.objects.count() == 500
    assert sum(1 for ids in claims.values() if ids) > 1, "the claims were not spread over several threads"
    close_old_connections()


# ---------------------------------------------------------------------------------------------
# Leases


def test_claim_returns_own_live_claim_first_then_the_next_by_priority(rnd):
    low, high = factories.task_spec_create(round=rnd), factories.task_spec_create(round=rnd)
    factories.queue_item_create(subject=low, priority=1.0)
    factories.queue_item_create(subject=high, priority=5.0)
    alice = factories.user_create()
    first = review_claim_next(queue="task", user=alice)
    assert first.task_id == high.pk and first.claimed_by == alice
    assert first.lease_expires_at > timezone.now()
    again = review_claim_next(queue="task", user=alice)  # a reload keeps the same item
    assert again.pk == first.pk
    bob = factories.user_create()
    assert review_claim_next(queue="task", user=bob).task_id == low.pk
    assert review_claim_next(queue="task", user=factories.user_create()) is None


def test_claim_uses_the_partial_claim_index(rnd):
    tasks = factories.task_specs_create(round=rnd, n=3)
    review_items_create(queue="task", round=rnd, objects=tasks)
    with CaptureQueriesContext(connection) as ctx:
        review_claim_next(queue="task", user=factories.user_create())
    claim_sql = next(q["sql"] for q in ctx.captured_queries if "SKIP LOCKED" in q["sql"] and "NOT" in q["sql"])
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN " + claim_sql.replace("FOR UPDATE SKIP LOCKED", ""))
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "queue_claim_order" in plan, plan


def test_expired_lease_is_reclaimed_and_the_stale_submission_refused(rnd):
    task = factories.task_spec_create(round=rnd)
    factories.queue_item_create(subject=task)
    alice, bob = factories.user_create(), factories.user_create()
    item = review_claim_next(queue="task", user=alice)
    assert review_claim_next(queue="task", user=bob) is None  # alice's lease is live
    _expire(item)
    taken = review_claim_next(queue="task", user=bob)
    assert taken.pk == item.pk and taken.claimed_by == bob
    with pytest.raises(LeaseLost, match="Another reviewer holds this item"):
        review_decide(item=item, user=alice, decision="approve")
    with pytest.raises(LeaseLost):
        review_lease_renew(item=item, user=alice)
    assert Review.objects.count() == 0
    review_decide(item=taken, user=bob, decision="approve")
    task.refresh_from_db()
    assert task.status == TaskStatus.APPROVED


def test_own_expired_lease_nobody_took_is_still_yours(rnd):
    factories.queue_item_create(subject=factories.task_spec_create(round=rnd))
    alice = factories.user_create()
    item = review_claim_next(queue="task", user=alice)
    _expire(item)
    renewed = review_lease_renew(item=item, user=alice)
    assert renewed.lease_expires_at > timezone.now()
    assert review_claim_next(queue="task", user=alice).pk == item.pk


def test_release_hands_the_item_back(rnd):
    factories.queue_item_create(subject=factories.task_spec_create(round=rnd))
    alice, bob = factories.user_create(), factories.user_create()
    item = review_claim_next(queue="task", user=alice)
    with pytest.raises(LeaseLost):
        review_release(item=item, user=bob)
    review_release(item=item, user=alice)
    assert review_claim_next(queue="task", user=bob).pk == item.pk
    with pytest.raises(LeaseLost, match="Another reviewer holds this item"):
        review_decide(item=QueueItem.objects.get(pk=item.pk), user=alice, decision="approve")


def test_decision_on_an_unclaimed_or_decided_item_is_refused(rnd):
    item = factories.queue_item_create(subject=factories.task_spec_create(round=rnd))
    alice = factories.user_create()
    with pytest.raises(LeaseLost, match="claim it first"):
        review_decide(item=item, user=alice, decision="approve")
    item = review_claim_next(queue="task", user=alice)
    review_decide(item=item, user=alice, decision="approve")
    with pytest.raises(LeaseLost, match="already been decided"):
        review_decide(item=item, user=alice, decision="reject", reason_code="ambiguous")
    assert Review.objects.count() == 1


def test_analysts_cannot_claim_or_decide(rnd):
    item = factories.queue_item_create(subject=factories.task_spec_create(round=rnd))
    analyst = factories.user_create(role=Role.ANALYST)
    with pytest.raises(PermissionDenied):
        review_claim_next(queue="task", user=analyst)
    with pytest.raises(PermissionDenied):
        review_decide(item=item, user=analyst, decision="approve")


# ---------------------------------------------------------------------------------------------
# Decisions


def test_reject_needs_an_active_reason_of_the_queue(rnd):
    factories.queue_item_create(subject=factories.task_spec_create(round=rnd))
    alice = factories.user_create()
    item = review_claim_next(queue="task", user=alice)
    with pytest.raises(ReviewError, match="needs a reason code"):
        review_decide(item=item, user=alice, decision="reject")
    with pytest.raises(ReviewError, match="Unknown reason code 'wrong_outcome'"):
        review_decide(item=item, user=alice, decision="reject", reason_code="wrong_outcome")  # trajectory's
    review = review_decide(item=item, user=alice, decision="reject", reason_code="ambiguous", comment="which?")
    assert (review.decision, review.reason_code, review.comment) == ("reject", "ambiguous", "which?")
    assert review.reviewer == alice and review.gate == Gate.HUMAN
    item.task.refresh_from_db()
    assert item.task.status == TaskStatus.REJECTED


def test_skip_is_logged_and_hands_the_slot_to_someone_else(rnd):
    task = factories.task_spec_create(round=rnd)
    factories.queue_item_create(subject=task)
    alice, bob = factories.user_create(), factories.user_create()
    item = review_claim_next(queue="task", user=alice)
    review_decide(item=item, user=alice, decision="skip")
    assert Review.objects.get().decision == Decision.SKIP
    assert QueueItem.objects.get().status == ItemStatus.PENDING
    assert review_claim_next(queue="task", user=alice) is None  # not offered again to who skipped it
    assert review_claim_next(queue="task", user=bob).pk == item.pk
    task.refresh_from_db()
    assert task.status == TaskStatus.PENDING


def test_edit_revalidates_and_logs_before_and_after(rnd):
    task = factories.task_spec_create(round=rnd)
    factories.queue_item_create(subject=task)
    alice = factories.user_create()
    item = review_claim_next(queue="task", user=alice)
    old = task.instruction
    with pytest.raises(ReviewError, match="Cannot edit colour"):
        review_decide(item=item, user=alice, decision="edit", edit={"colour": "red"})
    with pytest.raises(ReviewError, match="edit needs the changes"):
        review_decide(item=item, user=alice, decision="edit")
    review = review_decide(item=item, user=alice, decision="approve", edit={"instruction": old + " Please."})
    assert review.decision == Decision.EDIT
    assert review.before["instruction"] == old and review.after["instruction"] == old + " Please."
    assert review.after["spec"] == {"instruction": old + " Please."}
    task.refresh_from_db()
    assert task.instruction == old + " Please." and task.spec["instruction"] == old + " Please."
    assert task.status == TaskStatus.APPROVED
    # The near-duplicate hashes are those generation computes for the edited spec (not the factory's).
    assert (task.param_hash, task.state_hash) == (param_hash(task.spec), state_hash(task.spec))


def test_a_setup_edit_moves_the_state_hash_with_it(rnd):
    task = factories.task_spec_create(round=rnd, template="accessibility.captions_then_audio", seed=3)
    factories.queue_item_create(subject=task)
    alice = factories.user_create()
    item = review_claim_next(queue="task", user=alice)
    before = state_hash(task.spec)
    review = review_decide(item=item, user=alice, decision="edit", edit={"setup": {"display.brightness": 55}})
    assert review.decision == Decision.EDIT
    task.refresh_from_db()
    assert task.spec["setup"]["display.brightness"] == 55
    assert task.state_hash == state_hash(task.spec) != before
    assert task.param_hash == param_hash(task.spec)


def test_an_edit_the_reference_solver_cannot_reach_is_refused(rnd):
    task = factories.task_spec_create(round=rnd, template="accessibility.captions_then_audio", seed=3)
    factories.queue_item_create(subject=task)
    alice = factories.user_create()
    item = review_claim_next(queue="task", user=alice)
    with pytest.raises(ReviewError, match="fails validation .*infeasible"):
        review_decide(item=item, user=alice, decision="edit", edit={"goal": {"accessibility.audio_balance": 41}})
    task.refresh_from_db()
    assert task.spec["goal"]["accessibility.audio_balance"] == 40 and task.status == TaskStatus.PENDING
    assert Review.objects.count() == 0
    review = review_decide(item=item, user=alice, decision="edit", edit={"goal": {"accessibility.audio_balance": 40}})
    assert review.decision == Decision.APPROVE and review.after is None  # valid, but it changed nothing


def test_step_labels_are_saved_on_steps_and_in_the_log(rnd):
    trajectory = factories.trajectory_create(task=factories.task_spec_create(round=rnd, status=TaskStatus.APPROVED))
    review_items_create(queue="trajectory", round=rnd, objects=[trajectory])
    alice = factories.user_create()
    item = review_claim_next(queue="trajectory", user=alice)
    with pytest.raises(ReviewError, match="no step 99"):
        review_decide(item=item, user=alice, decision="approve", step_labels=[{"index": 99, "label": "correct"}])
    with pytest.raises(ReviewError, match="Unknown step label 'great'"):
        review_decide(item=item, user=alice, decision="approve", step_labels={"0": "great"})
    review = review_decide(
        item=item, user=alice, decision="reject", reason_code="inefficient",
        step_labels=[{"index": 0, "label": "erroneous", "comment": "wrong tool"}, {"index": 1, "label": "recovery"}],
    )
    steps = {s.index: s for s in trajectory.steps.all()}
    assert (steps[0].label, steps[0].comment, steps[1].label) == ("erroneous", "wrong tool", "recovery")
    assert review.before == {"steps": {"0": {"label": "", "comment": ""}, "1": {"label": "", "comment": ""}}}
    assert review.after["steps"]["0"] == {"label": "erroneous", "comment": "wrong tool"}
    assert review.trajectory == trajectory and review.task == trajectory.task
    trajectory.refresh_from_db()
    assert trajectory.status == TrajectoryStatus.REJECTED


# ---------------------------------------------------------------------------------------------
# Overlap, majority, agreement


def test_overlap_gives_each_object_n_slots_for_different_people_and_a_tie_rejects(rnd):
    task = factories.task_spec_create(round=rnd)
    assert review_items_create(queue="task", round=rnd, objects=[task], overlap=2) == 2
    assert review_items_create(queue="task", round=rnd, objects=[task], overlap=2) == 0  # idempotent
    alice, bob = factories.user_create(), factories.user_create()
    a = review_claim_next(queue="task", user=alice)
    review_decide(item=a, user=alice, decision="approve")
    assert review_claim_next(queue="task", user=alice) is None  # never the same object twice
    task.refresh_from_db()
    assert task.status == TaskStatus.PENDING  # one slot still open
    b = review_claim_next(queue="task", user=bob)
    assert b.task_id == task.pk and b.slot != a.slot
    review_decide(item=b, user=bob, decision="reject", reason_code="ambiguous")
    task.refresh_from_db()
    assert task.status == TaskStatus.REJECTED


def test_majority_of_three_approves(rnd):
    task = factories.task_spec_create(round=rnd)
    review_items_create(queue="task", round=factories.round_create(config={"overlap": 3}), objects=[task])
    votes = ["approve", "reject", "approve"]
    for vote in votes:
        user = factories.user_create()
        item = review_claim_next(queue="task", user=user)
        review_decide(item=item, user=user, decision=vote, reason_code="ambiguous" if vote == "reject" else "")
    task.refresh_from_db()
    assert task.status == TaskStatus.APPROVED


def test_cohen_kappa_matches_hand_computed_values():
    # a: A A A R R ; b: A A R R R -> p_o = 4/5, p_e = .6*.4 + .4*.6 = .48, κ = (.8-.48)/.52
    assert cohen_kappa([True, True, True, False, False], [True, True, False, False, False]) == pytest.approx(
        0.32 / 0.52
    )
    assert cohen_kappa([True, False], [False, True]) == pytest.approx(-1.0)
    assert cohen_kappa([True, True], [True, True]) is None  # undefined: no variation
    assert cohen_kappa([], []) is None


def test_agreement_and_progress_per_pair_queue_and_annotator(rnd):
    tasks = factories.task_specs_create(round=rnd, n=4)
    review_items_create(queue="task", round=rnd, objects=tasks, overlap=2)
    alice, bob = factories.user_create(username="alice"), factories.user_create(username="bob")
    plan = {"alice": ["approve", "approve", "reject", "reject"], "bob": ["approve", "reject", "reject", "reject"]}
    by_task = {t.pk: i for i, t in enumerate(tasks)}
    for user in (alice, bob):
        while (item := review_claim_next(queue="task", user=user)) is not None:
            vote = plan[user.username][by_task[item.task_id]]
            review_decide(item=item, user=user, decision=vote, reason_code="ambiguous" if vote == "reject" else "")
    agreement = review_agreement(queue="task")
    (pair,) = agreement["pairs"]
    # alice A A R R, bob A R R R: p_o = 3/4, p_e = .5*.25 + .5*.75 = .5, κ = .5
    assert (pair["a"], pair["b"], pair["n"], pair["agree"]) == ("alice", "bob", 4, 3)
    assert pair["kappa"] == pytest.approx(0.5) and agreement["kappa"] == pytest.approx(0.5)
    assert agreement["objects_with_overlap"] == 4
    progress = review_queue_progress(queue="task", round=rnd)
    assert (progress["total"], progress["done"], progress["pending"], progress["claimed"]) == (8, 8, 0, 0)
    assert progress["objects"] == 4 and progress["objects_decided"] == 4
    rows = {r["username"]: r for r in progress["annotators"]}
    assert rows["alice"]["approve"] == 2 and rows["bob"]["reject"] == 3 and rows["bob"]["decided"] == 4


def test_auto_gate_is_logged_as_the_verifier_never_a_person(rnd):
    good = factories.task_spec_create(round=rnd)
    bad = factories.task_spec_create(round=rnd, validation={"ok": False, "reason": "infeasible"})
    review_items_create(queue="task", round=rnd, objects=[good, bad], overlap=2)
    assert review_auto_gate(queue="task", objects=[good, bad]) == 2
    assert review_auto_gate(queue="task", objects=[good, bad]) == 0  # already decided
    good.refresh_from_db()
    bad.refresh_from_db()
    assert (good.status, bad.status) == (TaskStatus.APPROVED, TaskStatus.REJECTED)
    assert set(Review.objects.values_list("gate", "reviewer", "decision")) == {
        ("auto:verifier", None, "approve"), ("auto:verifier", None, "reject")
    }
    assert not QueueItem.objects.filter(status=ItemStatus.PENDING).exists()
    trajectory = factories.trajectory_create(task=good)
    review_items_create(queue="trajectory", round=rnd, objects=[trajectory])
    assert review_auto_gate(queue="trajectory", objects=[trajectory]) == 1
    trajectory.refresh_from_db()
    assert trajectory.success and trajectory.status == TrajectoryStatus.ACCEPTED
    funnel = round_funnel(round=rnd)
    assert funnel == {"generated": 2, "validated": 2, "approved": 1, "collected": 1, "accepted": 1, "in_dataset": 0}
