"""Value-swap augmentation: teach a small planner to copy arguments instead of guessing them.

A from-scratch model first lowers its loss on a call's arguments by learning each template's value
pool (``"language": "French"`` is a fair guess for any captions request), and only much later by
copying the value from the request. Held-out tasks then get the right tool with a wrong value
(German → French, Strava → Spotify). ``swap_values`` rewrites an episode so that guessing cannot
work: every name-like value of the task's parameters (a capitalised string such as an app, city,
language or contact, also inside lists) and every multi-digit number the request states is replaced,
consistently in every message (request, reasoning, call arguments, tool replies, final answer), by a
fresh invented one. The episode stays coherent text; its only new content is values that occur
nowhere else, so its loss on them falls only by copying.

Pure Python; applied to the training data only (never to evaluation).
"""

from __future__ import annotations

import random
import re
from typing import Any

SYLLABLES = ("ka", "lo", "mir", "ven", "to", "ra", "sel", "dun", "bri", "qua", "nor", "fe", "zan", "pol", "tir",
             "mo", "gal", "rue", "shi", "ber", "vin", "da", "lek", "os", "tam", "pri", "hul", "ne", "cor", "jas")
NAME = re.compile(r"^[A-Z][A-Za-z]{2,}(?: [A-Z][A-Za-z]+)*$")


def invented_name(rng: random.Random) -> str:
    """A capitalised made-up word of two or three syllables (one word in five gets a second word)."""
    word = "".join(rng.choice(SYLLABLES) for _ in range(rng.choice((2, 3)))).capitalize()
    if rng.random() < 0.2:
        word += " " + "".join(rng.choice(SYLLABLES) for _ in range(2)).capitalize()
    return word


def invented_number(value: str, rng: random.Random) -> str:
    """A different number of the same shape: same count of digits before and after the point, no leading zero."""
    whole, _, frac = value.partition(".")
    while True:
        w = str(rng.randint(10 ** (len(whole) - 1), 10 ** len(whole) - 1)) if len(whole) > 1 else str(rng.randint(1, 9))
        out = w + ("." + "".join(str(rng.randint(0, 9)) for _ in frac) if frac else "")
        if out != value and (not frac or not out.endswith("0")):
            return out


def _values(params: dict[str, Any]) -> list[Any]:
    out: list[Any] = []
    for v in params.values():
        out.extend(v if isinstance(v, list) else [v])
    return out


def swap_plan(task: dict[str, Any], rng: random.Random) -> dict[str, str]:
    """Old value -> invented value, for the task's name-like values and the multi-digit numbers its request states."""
    instruction = task.get("instruction", "")
    plan: dict[str, str] = {}
    taken = set()
    for v in _values(task.get("params") or {}):
        if isinstance(v, bool):
            continue
        if isinstance(v, str) and NAME.match(v) and v not in plan:
            new = invented_name(rng)
            while new in taken:
                new = invented_name(rng)
            plan[v] = new
        elif isinstance(v, int | float):
            text = str(v).lstrip("-")
            if len(text.replace(".", "")) >= 2 and _pattern({text: text}).search(instruction):
                plan.setdefault(text, invented_number(text, rng))
        taken.update(plan.values())
    return plan


def _pattern(plan: dict[str, str]) -> re.Pattern[str]:
    # Longest first, so "New York" wins over "York"; names match whole words, numbers whole numbers.
    parts = []
    for old in sorted(plan, key=len, reverse=True):
        if old[0].isdigit():
            parts.append(rf"(?<![\w.]){re.escape(old)}(?![\d]|\.\d)")
        else:
            parts.append(rf"(?<![\w]){re.escape(old)}(?![\w])")
    return re.compile("|".join(parts))


def swap_values(episode: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """A copy of ``episode`` (a contract Episode dict) with its task's values swapped in every message.

    Only ``messages`` and the task's ``instruction`` change (params, steps, verdict and costs are
    kept: they are what the verifier saw, and training reads only the messages). An episode with nothing to swap is
    returned unchanged (the same object).
    """
    task = episode.get("task") or {}
    plan = swap_plan(task, rng)
    if not plan:
        return episode
    pat = _pattern(plan)

    def swap(x: Any) -> Any:
        if isinstance(x, str):
            return pat.sub(lambda m: plan[m.group(0)], x)
        if isinstance(x, list):
            return [swap(v) for v in x]
        if isinstance(x, dict):
            return {k: swap(v) for k, v in x.items()}
        return x

    out = dict(episode)
    out["messages"] = swap(episode.get("messages", []))
    out["task"] = dict(task, instruction=swap(task.get("instruction", "")))
    return out
