"""Role permissions of the API; docs/roles.md is the matrix they implement."""

from __future__ import annotations

from rest_framework.permissions import SAFE_METHODS, BasePermission


class _SignedInReadsWritesNeed(BasePermission):
    """Every signed-in role reads; writes need the user property named by ``capability``."""

    capability = ""

    def has_permission(self, request, view) -> bool:
        user = request.user
        if not (user and user.is_authenticated):
            return False
        return request.method in SAFE_METHODS or bool(getattr(user, self.capability))


class CanRunJobsOrReadOnly(_SignedInReadsWritesNeed):
    """Every signed-in role reads jobs; only managers (and admins) start and cancel them."""

    capability = "can_run_jobs"
    message = "Only managers can start or cancel jobs."


class CanManageRoundsOrReadOnly(_SignedInReadsWritesNeed):
    """Every signed-in role reads rounds; only managers (and admins) start them and set their weights."""

    capability = "can_run_jobs"
    message = "Only managers can start rounds or change their weights."


class CanReviewOrReadOnly(_SignedInReadsWritesNeed):
    """Every signed-in role reads the queues; annotators and managers (and admins) claim and decide."""

    capability = "can_review"
    message = "Only annotators and managers review; analysts read the queues."
