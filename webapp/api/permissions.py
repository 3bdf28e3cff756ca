"""Role permissions of the API; docs/roles.md is the matrix they implement."""

from __future__ import annotations

from rest_framework.permissions import SAFE_METHODS, BasePermission


class CanRunJobsOrReadOnly(BasePermission):
    """Every signed-in role reads jobs; only managers (and admins) start and cancel them."""

    message = "Only managers can start or cancel jobs."

    def has_permission(self, request, view) -> bool:
        user = request.user
        if not (user and user.is_authenticated):
            return False
        return request.method in SAFE_METHODS or user.can_run_jobs


class CanManageRoundsOrReadOnly(BasePermission):
    """Every signed-in role reads rounds; only managers (and admins) start them and set their weights."""

    message = "Only managers can start rounds or change their weights."

    def has_permission(self, request, view) -> bool:
        user = request.user
        if not (user and user.is_authenticated):
            return False
        return request.method in SAFE_METHODS or user.can_run_jobs


class CanReviewOrReadOnly(BasePermission):
    """Every signed-in role reads the queues; annotators and managers (and admins) claim and decide."""

    message = "Only annotators and managers review; analysts read the queues."

    def has_permission(self, request, view) -> bool:
        user = request.user
        if not (user and user.is_authenticated):
            return False
        return request.method in SAFE_METHODS or user.can_review
