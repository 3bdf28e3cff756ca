"""One error shape for the API: DRF's, plus clear messages for 404s and malformed JSON."""

from __future__ import annotations

from django.http import Http404
from rest_framework import exceptions
from rest_framework.views import exception_handler as drf_exception_handler


def exception_handler(exc, context):
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) or "Not found.")
    if isinstance(exc, exceptions.ParseError):
        exc = exceptions.ParseError(f"The request body is not valid JSON: {exc.detail}")
    return drf_exception_handler(exc, context)
