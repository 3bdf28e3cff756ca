"""Secrets inside stored job configs (an endpoint's API key), sealed so pages, the API and logs never show them.

A job's config is stored as JSON, shown on its page and in the API, and read back by the worker
that runs it (also after a crash, on another worker). A secret in it is therefore kept encrypted:
AES-GCM from ``cryptography`` (a well-kept library that Daphne already brings; pinned in
requirements.txt) under a key derived from ``SECRET_KEY``, with a *context* (e.g. the endpoint URL)
as associated data, so a sealed key copied into another config for another URL does not open.
A config class declares each secret field once as a ``SealedField`` and calls it from ``__post_init__``
(seal), ``validate`` (does it open?) and the job (open, just before sending requests).
"""

from __future__ import annotations

import base64
import math
import os
import re
from dataclasses import dataclass
from typing import Any

from django.utils.crypto import salted_hmac

SEALED_PREFIX = "sealed:v1:"
# Config fields that hold secrets: sealed when stored, and blanked when a refused form is shown again.
SECRET_FIELDS = ("endpoint_key", "api_key", "rewrite_api_key")
_NONCE_BYTES = 12
_TAG_BYTES = 16


class SealError(ValueError):
    """A sealed value that does not open: another SECRET_KEY, another context, or not a sealed value."""


def _cipher():
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    return AESGCM(salted_hmac("flywheel.sealing", "v1", algorithm="sha256").digest())


def is_sealed(value: str) -> bool:
    return isinstance(value, str) and value.startswith(SEALED_PREFIX)


def secret_seal(*, text: str, context: str) -> str:
    """``text`` encrypted and authenticated together with ``context`` (which is not stored)."""
    nonce = os.urandom(_NONCE_BYTES)
    blob = nonce + _cipher().encrypt(nonce, text.encode(), context.encode())
    return SEALED_PREFIX + base64.urlsafe_b64encode(blob).decode()


def secret_unseal(*, token: str, context: str) -> str:
    """The text ``secret_seal`` sealed with this ``context``; SealError otherwise."""
    from cryptography.exceptions import InvalidTag

    if not is_sealed(token):
        raise SealError("is not a sealed value.")
    try:
        blob = base64.urlsafe_b64decode(token[len(SEALED_PREFIX):].encode())
        return _cipher().decrypt(blob[:_NONCE_BYTES], blob[_NONCE_BYTES:], context.encode()).decode()
    except (InvalidTag, ValueError) as exc:
        raise SealError("does not open here: it was sealed for another endpoint or with another SECRET_KEY; "
                        "give the key again.") from exc


def sealed_length(clear_chars: int) -> int:
    """The longest sealed form of a secret of ``clear_chars`` characters (UTF-8: up to 4 bytes each)."""
    return len(SEALED_PREFIX) + 4 * math.ceil((_NONCE_BYTES + 4 * clear_chars + _TAG_BYTES) / 3)


@dataclass(frozen=True)
class SealedField:
    """A secret field of a job's config dataclass, sealed for the URL held in another of its fields.

    The context is ``"<kind> <name> for <url>"``, so a sealed value opens only in the same field of
    the same kind for the same URL. ``max_length`` bounds the secret in clear; the config field's own
    ``max_length`` (``metadata``) is that of the sealed form, as the worker validates the stored row again.
    """

    kind: str  # the job kind, e.g. "train.evaluate"
    name: str  # the secret field, e.g. "endpoint_key"
    url_field: str  # the field holding the URL the secret is sent to, e.g. "endpoint_url"
    max_length: int = 500

    def __post_init__(self) -> None:
        if self.name not in SECRET_FIELDS:  # else a refused form would show it again
            raise ValueError(f"add {self.name!r} to console.sealing.SECRET_FIELDS")

    def metadata(self, help_text: str) -> dict[str, Any]:
        """The config field's ``metadata``: room for the sealed form, and its help text."""
        return {"max_length": sealed_length(self.max_length), "help": help_text}

    def _context(self, config: Any) -> str:
        return f"{self.kind} {self.name} for {getattr(config, self.url_field) or ''}"

    def seal(self, config: Any) -> None:
        """Seal the field of a frozen config in place (from its ``__post_init__``); a sealed value stays as is."""
        value = getattr(config, self.name)
        if value and not is_sealed(value):
            object.__setattr__(config, self.name, secret_seal(text=value, context=self._context(config)))

    def open(self, config: Any) -> str | None:
        """The secret in clear, for the request header only (never log or store it); None when not given."""
        value = getattr(config, self.name)
        return secret_unseal(token=value, context=self._context(config)) if value else None

    def errors(self, config: Any) -> dict[str, list[str]]:
        """Field errors for ``validate``: a sealed value that does not open here, or a secret too long."""
        try:
            clear = self.open(config)
        except SealError as exc:
            return {self.name: [str(exc)]}
        if clear is not None and len(clear) > self.max_length:
            return {self.name: [f"must be at most {self.max_length} characters."]}
        return {}


_SECRET_VALUE = re.compile(r'("(?:' + "|".join(SECRET_FIELDS) + r')"\s*:\s*)"(?:[^"\\]|\\.)*"')


def secrets_scrub(raw: str) -> str:
    """A config's JSON text with every secret field's string value blanked, for showing a refused form
    again (as Django's PasswordInput does not render a password back). Works on invalid JSON too."""
    return _SECRET_VALUE.sub(r'\1""', raw)
