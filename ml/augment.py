"""Value-swap augmentation: teach a small planner to copy arguments instead of guessing them.

A from-scratch model first lowers its loss on a call's arguments by learning each template's value
pool (``"language": "French"`` is a fair guess for any captions request), and only much later by
copying the value from the request. Held-out tasks then get the right tool with a wrong value
(German → French, Strava → Spotify). ``swap_values`` rewrites an episode so that guessing cannot
work. Three kinds of the task's parameter values (also inside lists) are replaced, consistently in
every message (request, reasoning, call arguments, tool replies, final answer), by fresh invented ones:

- name-like values: a capitalised string such as an app, city, language or contact;
- numbers of two or more digits that the episode states in the request, a later user turn or a tool
  reply (a tip percentage read from memory as well as a total typed in the request); a number inside a
  date or time (``2026-12-10``, ``10:00``) is left alone;
- free words and short phrases (letters, spaces, hyphens, apostrophes; up to six words) that the
  request, a user turn or a tool reply states, matched regardless of case (``eloquent``, a title
  "Book club", a reminder "pick up the dry cleaning"), provided they occur nowhere in the fixed
  vocabulary: the system prompt and the offered tool schemas. That keeps enum values (``large``),
  parameter names and words the tools' descriptions use: those are choices the model must learn,
  not values it copies. Identifiers with digits or underscores (``note_0049``, ``c5``) are kept.

The episode stays coherent text; its only new content is values that occur nowhere else, so its loss
on them falls only by copying.

Pure Python; applied to the training data only (never to evaluation).
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

# Invented words are strings of syllables (onset, vowel, optional coda): 16 x 6 x 5 = 480 syllables, so
# two- and three-syllable words number about 2.3e5 and 1.1e8. A small fixed syllable list (stop 18 used
# 30, i.e. 900 two-syllable words) lets a small model memorise the inventions themselves: held-out
# calls then carried training-only names such as "Seldun" instead of the value the request states.
ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "st")
VOWELS = ("a", "e", "i", "o", "u", "ai")
CODAS = ("", "", "", "n", "r", "l", "s")


def syllable(rng: random.Random) -> str:
    return rng.choice(ONSETS) + rng.choice(VOWELS) + rng.choice(CODAS)


def invented_word(rng: random.Random, syllables: int) -> str:
    return "".join(syllable(rng) for _ in range(syllables))


NAME = re.compile(r"^[A-Z][A-Za-z]{2,}(?: [A-Z][A-Za-z]+)*$")
FREE = re.compile(r"^[A-Za-z][A-Za-z'-]*(?: [A-Za-z][A-Za-z'-]*){0,5}$")


def invented_name(rng: random.Random) -> str:
    """A capitalised made-up word of two or three syllables (one word in five gets a second word)."""
    word = invented_word(rng, rng.choice((2, 3))).capitalize()
    if rng.random() < 0.2:
        word += " " + invented_word(rng, 2).capitalize()
    return word


def invented_number(value: str, rng: random.Random) -> str:
    """A different number of the same shape: same count of digits before and after the point, no leading zero."""
    whole, _, frac = value.partition(".")
    while True:
        w = str(rng.randint(10 ** (len(whole) - 1), 10 ** len(whole) - 1)) if len(whole) > 1 else str(rng.randint(1, 9))
        out = w + ("." + "".join(str(rng.randint(0, 9)) for _ in frac) if frac else "")
        if out != value and (not frac or not out.endswith("0")):
            return out


def invented_phrase(value: str, rng: random.Random) -> str:
    """``value`` with each word of four or more letters (every word, if none is that long) replaced by an
    invented one of the same capitalisation; short words ("at", "the") are kept so a phrase stays a phrase."""
    words = value.split(" ")
    short = max(len(w) for w in words) < 4
    out = []
    for w in words:
        if short or len(w) >= 4:
            new = invented_word(rng, rng.choice((2, 3)))
            w = new.capitalize() if w[0].isupper() else new
        out.append(w)
    return " ".join(out)


def _stated(value: str, text: str) -> bool:
    """Whether ``text`` states ``value`` the way ``swap_values`` would match it (free words in any case)."""
    return _pattern({value: value}).search(text) is not None


def _values(params: dict[str, Any]) -> list[Any]:
    out: list[Any] = []
    for v in params.values():
        out.extend(v if isinstance(v, list) else [v])
    return out


def swap_plan(task: dict[str, Any], rng: random.Random, context: str | None = None, fixed: str = "") -> dict[str, str]:
    """Old value -> invented value for the task's swappable values (see the module docstring).

    ``context`` is the text where a number or free word must be stated to be swapped (default: the
    request alone); ``fixed`` the fixed vocabulary, where a free word must not occur. Names are
    matched case-sensitively, free words regardless of case (their keys are kept as the task has them).
    """
    context = task.get("instruction", "") if context is None else context
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
            if len(text.replace(".", "")) >= 2 and _stated(text, context):
                plan.setdefault(text, invented_number(text, rng))
        elif (isinstance(v, str) and len(v) >= 3 and FREE.match(v) and v.lower() not in {k.lower() for k in plan}
              and _stated(v, context) and not _stated(v, fixed)):
            new = invented_phrase(v, rng)
            while new in taken:
                new = invented_phrase(v, rng)
            plan[v] = new
        taken.update(plan.values())
    return plan


def episode_plan(episode: dict[str, Any], rng: random.Random) -> dict[str, str]:
    """``swap_plan`` for a contract Episode dict: context is the request, user turns and tool replies;
    the fixed vocabulary the system prompt and the offered tool schemas."""
    task = episode.get("task") or {}
    msgs = episode.get("messages", [])
    said = [m.get("content") or "" for m in msgs if m.get("role") in ("user", "tool")]
    system = [m.get("content") or "" for m in msgs if m.get("role") == "system"]
    fixed = "\n".join(system) + "\n" + json.dumps(episode.get("tools") or [])
    return swap_plan(task, rng, "\n".join([task.get("instruction", ""), *said]), fixed)


def _pattern(plan: dict[str, str]) -> re.Pattern[str]:
    # Longest first, so "New York" wins over "York"; names and words match whole words, numbers whole
    # numbers that are not part of a date or time. Free words (not NAME-like) match regardless of case.
    parts = []
    for old in sorted(plan, key=len, reverse=True):
        if old[0].isdigit():
            parts.append(rf"(?<![\w.])(?<!\d[-:/]){re.escape(old)}(?!\d|\.\d|[-:/]\d)")
        elif NAME.match(old):
            parts.append(rf"(?<![\w]){re.escape(old)}(?![\w])")
        else:
            parts.append(rf"(?<![\w])(?i:{re.escape(old)})(?![\w])")
    return re.compile("|".join(parts))


def _replacer(plan: dict[str, str]):
    folded = {k.lower(): v for k, v in plan.items()}

    def repl(m: re.Match[str]) -> str:
        s = m.group(0)
        if s in plan:
            return plan[s]
        new = folded[s.lower()]  # a free word met in another case: give the invention that case's first letter
        return (new[0].upper() if s[0].isupper() else new[0].lower()) + new[1:]

    return repl


def swap_values(episode: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """A copy of ``episode`` (a contract Episode dict) with its task's values swapped in every message.

    Only ``messages`` and the task's ``instruction`` change (params, steps, verdict and costs are
    kept: they are what the verifier saw, and training reads only the messages). An episode with nothing to swap is
    returned unchanged (the same object).
    """
    task = episode.get("task") or {}
    plan = episode_plan(episode, rng)
    if not plan:
        return episode
    pat, repl = _pattern(plan), _replacer(plan)

    def swap(x: Any) -> Any:
        if isinstance(x, str):
            return pat.sub(repl, x)
        if isinstance(x, list):
            return [swap(v) for v in x]
        if isinstance(x, dict):
            return {k: swap(v) for k, v in x.items()}
        return x

    out = dict(episode)
    out["messages"] = swap(episode.get("messages", []))
    out["task"] = dict(task, instruction=swap(task.get("instruction", "")))
    return out
