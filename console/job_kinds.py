"""The registry of job kinds: what each kind is called, its typed config, queue and time limit.

The console reads it to validate and enqueue jobs; ``workers/kinds/`` fills it (from
``WorkersConfig.ready``) so that a kind is defined in one place, next to the code that runs it,
without the console importing the workers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from console.job_config import ConfigError, config_defaults, config_field_help, validate_config

QUEUES = ("default", "collect", "train")


class UnknownJobKind(LookupError):
    pass


@dataclass(frozen=True)
class JobKindSpec:
    name: str
    config_type: type
    title: str
    description: str = ""
    queue: str = "default"
    time_limit_s: int = 3600

    @property
    def task_name(self) -> str:
        return f"jobs.{self.name}"

    def validate(self, data: Any) -> Any:
        return validate_config(self.config_type, data)

    def defaults(self) -> dict[str, Any]:
        return config_defaults(self.config_type)

    def field_help(self) -> dict[str, str]:
        return config_field_help(self.config_type)


_REGISTRY: dict[str, JobKindSpec] = {}


def register(spec: JobKindSpec) -> JobKindSpec:
    if spec.queue not in QUEUES:
        raise ValueError(f"job kind {spec.name}: queue must be one of {QUEUES}")
    existing = _REGISTRY.get(spec.name)
    if existing is not None and existing != spec:
        raise ValueError(f"job kind {spec.name} is registered twice")
    _REGISTRY[spec.name] = spec
    return spec


def get(name: str) -> JobKindSpec:
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise UnknownJobKind(f"Unknown job kind {name!r}; known kinds: {known}.") from None


def all_kinds() -> list[JobKindSpec]:
    return [_REGISTRY[name] for name in sorted(_REGISTRY)]


__all__ = ["ConfigError", "JobKindSpec", "UnknownJobKind", "all_kinds", "get", "register"]
