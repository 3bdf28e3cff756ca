"""Wording variation for task instructions: seeded choices among paraphrases."""

from __future__ import annotations

import random
from typing import TypeVar

T = TypeVar("T")


def pick(rng: random.Random, options: list[T]) -> T:
    """One of ``options``, chosen by the task's seeded generator (so wording is reproducible)."""
    return options[rng.randrange(len(options))]
