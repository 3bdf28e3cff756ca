"""The decision log is append-only: no API route changes or deletes a review (405 for every role), the
model refuses, and so does the database for any client (raw SQL UPDATE, DELETE, TRUNCATE)."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction
from rest_framework.test import APIClient

from console.models import AppendOnlyError, Review, Role
from console.services.review import review_claim_next, review_decide, review_items_create
from tests import factories


@pytest.fixture
def review(db) -> Review:
    rnd = factories.round_create()
    task = factories.task_spec_create(round=rnd)
    review_items_create(queue="task", round=rnd, objects=[task])
    user = factories.user_create()
    item = review_claim_next(queue="task", user=user)
    return review_decide(item=item, user=user, decision="approve", edit={"instruction": task.instruction + " Now."})


def _unchanged(review: Review) -> None:
    stored = Review.objects.get(pk=review.pk)
    assert (stored.decision, stored.comment, stored.reviewer_id) == ("edit", "", review.reviewer_id)
    assert stored.after["instruction"].endswith(" Now.")


def _no_purge(cursor) -> None:
    # The test conftest lets every connection purge (to empty tables between tests); a real client cannot.
    cursor.execute("SET LOCAL flywheel.allow_purge = 'off'")
    # Run the test transaction's deferred foreign-key checks now: TRUNCATE refuses to run while any pend.
    cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")


@pytest.mark.parametrize("role", ["annotator", "manager", "analyst", "admin"])
def test_no_api_route_edits_or_deletes_a_review(review, role):
    api = APIClient()
    user = (factories.user_create(superuser=True) if role == "admin" else factories.user_create(role=Role(role)))
    api.force_authenticate(user)
    detail = f"/api/reviews/{review.pk}/"
    assert api.get(detail).json()["decision"] == "edit"
    for method in ("put", "patch", "delete"):
        for path in (detail, "/api/reviews/"):
            response = getattr(api, method)(path, {"decision": "reject", "comment": "rewritten"}, format="json")
            assert response.status_code == 405, (method, path, response.status_code)
    assert api.post("/api/reviews/", {"decision": "reject"}, format="json").status_code == 405
    assert api.post(detail, {"decision": "reject"}, format="json").status_code == 405
    _unchanged(review)


def test_the_model_refuses_changes_and_deletes(review):
    review.comment = "rewritten"
    with pytest.raises(AppendOnlyError, match="cannot be changed"):
        review.save()
    with pytest.raises(AppendOnlyError, match="cannot be deleted"):
        review.delete()
    _unchanged(review)


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE console_review SET comment = 'rewritten' WHERE id = %s",
        "UPDATE console_review SET decision = 'reject', reviewer_id = NULL, gate = 'auto:verifier' WHERE id = %s",
        "DELETE FROM console_review WHERE id = %s",
        "TRUNCATE console_review CASCADE",
    ],
)
def test_the_database_refuses_raw_updates_deletes_and_truncation(review, statement):
    with pytest.raises(DatabaseError, match="append-only"):
        with transaction.atomic(), connection.cursor() as cursor:
            _no_purge(cursor)
            cursor.execute(statement, [review.pk] if "%s" in statement else None)
    _unchanged(review)


def test_querysets_cannot_bypass_the_model(review):
    with pytest.raises(DatabaseError, match="append-only"):
        with transaction.atomic(), connection.cursor() as cursor:
            _no_purge(cursor)
            Review.objects.filter(pk=review.pk).update(comment="rewritten")
    with pytest.raises(DatabaseError, match="append-only"):
        with transaction.atomic(), connection.cursor() as cursor:
            _no_purge(cursor)
            Review.objects.filter(pk=review.pk).delete()
    _unchanged(review)


def test_every_decision_is_a_new_row_with_who_when_and_before_after(review):
    user = review.reviewer
    assert review.created_at is not None and review.gate == "human"
    assert review.before["instruction"] + " Now." == review.after["instruction"]
    rnd = review.task.round
    other = factories.task_spec_create(round=rnd)
    review_items_create(queue="task", round=rnd, objects=[other])
    item = review_claim_next(queue="task", user=user)
    review_decide(item=item, user=user, decision="skip", comment="not sure")
    assert Review.objects.count() == 2
    assert list(Review.objects.order_by("created_at").values_list("decision", flat=True)) == ["edit", "skip"]
    _unchanged(review)
