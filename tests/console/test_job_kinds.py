"""Job kinds: the registry and typed-config validation."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from console import job_kinds
from console.job_config import ConfigError, validate_config


@dataclass(frozen=True)
class SampleConfig:
    name: str
    ratio: float = field(default=0.5, metadata={"min": 0, "max": 1})
    count: int = 3
    tags: list[str] = field(default_factory=list, metadata={"choices": ("a", "b")})
    note: str | None = None
    enabled: bool = True


def test_valid_config_becomes_typed_object():
    config = validate_config(SampleConfig, {"name": "x", "ratio": 1, "tags": ["a"], "note": None})
    assert config == SampleConfig(name="x", ratio=1.0, tags=["a"])
    assert isinstance(config.ratio, float)


def test_every_bad_field_is_reported_at_once():
    with pytest.raises(ConfigError) as err:
        validate_config(SampleConfig, {"ratio": 2, "count": "3", "tags": ["c"], "enabled": "yes", "extra": 1})
    assert set(err.value.errors) == {"name", "ratio", "count", "tags", "enabled", "extra"}
    assert err.value.errors["name"] == ["is required."]
    assert err.value.errors["ratio"] == ["must be at most 1."]
    assert "unknown items ['c']" in err.value.errors["tags"][0]


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_non_finite_numbers_are_refused(value):
    with pytest.raises(ConfigError):
        validate_config(SampleConfig, {"name": "x", "ratio": value})


def test_registry_knows_shipped_kinds():
    names = [k.name for k in job_kinds.all_kinds()]
    assert "demo.sleep" in names and "maintenance.prune" in names
    assert job_kinds.get("maintenance.prune").defaults()["expire_dirs"] == ["tmp", "exports"]
    with pytest.raises(job_kinds.UnknownJobKind, match="known kinds: demo.sleep"):
        job_kinds.get("nope")


def test_registering_a_kind_twice_differently_is_refused():
    spec = job_kinds.get("demo.sleep")
    with pytest.raises(ValueError, match="registered twice"):
        job_kinds.register(job_kinds.JobKindSpec(name=spec.name, config_type=SampleConfig, title="other"))


def test_each_kind_has_a_celery_task():
    from webapp.celery import app

    for spec in job_kinds.all_kinds():
        assert spec.task_name in app.tasks
        assert app.tasks[spec.task_name].acks_late is True
