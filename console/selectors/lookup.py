"""Object lookup by id for every selector: a 404 for unknown ids, also for ids that are not UUIDs."""

from __future__ import annotations

import uuid
from typing import Any

from django.db.models import Model, QuerySet
from django.http import Http404


def uuid_or_404(value: Any, what: str) -> uuid.UUID:
    """``value`` as a UUID, or Http404 saying there is no ``what`` with this id."""
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise Http404(f"No {what} with this id.") from None


def get_or_404(queryset: QuerySet, value: Any, what: str) -> Model:
    """The row of ``queryset`` whose primary key is ``value``, or Http404."""
    found = queryset.filter(pk=uuid_or_404(value, what)).first()
    if found is None:
        raise Http404(f"No {what} with this id.")
    return found
