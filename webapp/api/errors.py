"""One error shape for the API: DRF's, plus clear messages for 404s and malformed JSON, and the services'
own exceptions turned into their HTTP status with the service's message (so views need not catch them):
a refused role → 403, a review lease that is not yours → 409, a review decision to fix → 400."""

from __future__ import annotations

from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.views import exception_handler as drf_exception_handler

from console.services.jobs import PermissionDenied
from console.services.review import LeaseLost, ReviewError


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The request conflicts with the current state; nothing was saved."
    default_code = "conflict"


class BadRequest(exceptions.APIException):
    status_code = status.HTTP_400_BAD_REQUEST
    default_detail = "The request cannot be carried out as sent."
    default_code = "bad_request"


def exception_handler(exc, context):
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) or "Not found.")
    elif isinstance(exc, exceptions.ParseError):
        exc = exceptions.ParseError(f"The request body is not valid JSON: {exc.detail}")
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied(str(exc))
    elif isinstance(exc, LeaseLost):
        exc = Conflict(str(exc))
    elif isinstance(exc, ReviewError):
        exc = BadRequest(str(exc))
    return drf_exception_handler(exc, context)
