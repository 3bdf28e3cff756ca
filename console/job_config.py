"""Validation of a job's typed config: a frozen dataclass per job kind, checked when it is enqueued.

Hand-written rather than a DRF serializer because the job code wants a typed object (attribute
access, defaults, type hints its editor understands), and the fields needed are few: bool, int,
float, str, list[str], dict (any JSON object; the kind's ``validate`` checks its content) and optional
variants, bounded by ``field(metadata={"min":.., "max":..})``.
Errors are per field, in the shape DRF uses: ``{"field": ["message"]}``.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any


class ConfigError(ValueError):
    """An invalid job config; ``errors`` maps each bad field to what was wrong with it."""

    def __init__(self, errors: dict[str, list[str]]):
        self.errors = errors
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items()))


def _check_value(name: str, value: Any, hint: Any, meta: typing.Mapping[str, Any]) -> tuple[Any, str | None]:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None, None
        inner = [a for a in args if a is not type(None)]
        return _check_value(name, value, inner[0], meta)
    if hint is bool:
        if not isinstance(value, bool):
            return None, "must be true or false."
        return value, None
    if hint in (int, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None, f"must be a {'whole ' if hint is int else ''}number."
        if hint is int and not float(value).is_integer():
            return None, "must be a whole number."
        value = hint(value)
        if value != value or value in (float("inf"), float("-inf")):
            return None, "must be a finite number."
        low, high = meta.get("min"), meta.get("max")
        if low is not None and value < low:
            return None, f"must be at least {low}."
        if high is not None and value > high:
            return None, f"must be at most {high}."
        return value, None
    if hint is str:
        if not isinstance(value, str):
            return None, "must be a string."
        if len(value) > meta.get("max_length", 500):
            return None, f"must be at most {meta.get('max_length', 500)} characters."
        pattern = meta.get("pattern")
        if pattern is not None:
            import re

            if not re.fullmatch(pattern, value):
                return None, meta.get("pattern_help", f"must match {pattern}.")
        return value, None
    if hint is dict or origin is dict:
        if not isinstance(value, dict):
            return None, "must be a JSON object."
        return dict(value), None
    if origin in (list, tuple) and args and args[0] is str:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return None, "must be a list of strings."
        choices = meta.get("choices")
        if choices is not None:
            bad = [v for v in value if v not in choices]
            if bad:
                return None, f"has unknown items {bad}; allowed: {sorted(choices)}."
        return tuple(value) if origin is tuple else list(value), None
    raise TypeError(f"unsupported config field type {hint!r} for {name}")


def validate_config(config_type: type, data: Any) -> Any:
    """Build ``config_type`` from JSON-like ``data`` or raise ConfigError naming every bad field."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError({"config": ["must be a JSON object."]})
    hints = typing.get_type_hints(config_type)
    fields = {f.name: f for f in dataclasses.fields(config_type)}
    errors: dict[str, list[str]] = {}
    for key in data:
        if key not in fields:
            errors[key] = [f"is not a field of this job kind; known fields: {', '.join(sorted(fields))}."]
    values: dict[str, Any] = {}
    for name, spec in fields.items():
        if name not in data:
            if spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
                errors[name] = ["is required."]
            continue
        value, error = _check_value(name, data[name], hints[name], spec.metadata)
        if error:
            errors[name] = [error]
        else:
            values[name] = value
    if errors:
        raise ConfigError(errors)
    instance = config_type(**values)
    check = getattr(instance, "validate", None)
    if check is not None:
        extra = check()
        if extra:
            raise ConfigError(extra)
    return instance


def config_to_json(config: Any) -> dict[str, Any]:
    return dataclasses.asdict(config)


def config_defaults(config_type: type) -> dict[str, Any]:
    """The default config (fields without a default are left out), shown as a template in forms."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(config_type):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out


def config_field_help(config_type: type) -> dict[str, str]:
    return {f.name: f.metadata.get("help", "") for f in dataclasses.fields(config_type)}
