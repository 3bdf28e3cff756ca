"""Strict readers for environment variables, used by settings.py.

A bad value stops start-up with a message that names the variable, so a typo in a deployment
never silently becomes a default (the habit of Healthchecks' ``hc/settings.py``).
"""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def envstr(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def envbool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(
        f"Environment variable {name}={raw!r} is not a boolean: use true or false."
    )


def envint(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ImproperlyConfigured(
            f"Environment variable {name}={raw!r} is not an integer."
        ) from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"Environment variable {name}={value} must be at least {minimum}.")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"Environment variable {name}={value} must be at most {maximum}.")
    return value


def envlist(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return list(default)
    items = [item.strip() for item in raw.split(",")]
    if any(not item for item in items):
        raise ImproperlyConfigured(
            f"Environment variable {name}={raw!r} has an empty item: use a comma-separated list."
        )
    return items


def envurl(name: str, schemes: tuple[str, ...]) -> str:
    """Return the URL in ``name`` ('' when unset), refusing one whose scheme is not in ``schemes``."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return ""
    scheme = raw.split("://", 1)[0] if "://" in raw else ""
    if scheme not in schemes:
        raise ImproperlyConfigured(
            f"Environment variable {name}={raw!r} must be a URL starting with one of "
            + ", ".join(f"{s}://" for s in schemes)
            + "."
        )
    return raw
