"""Runtime notices: data rules evaluated after every step that inject a short message the planner sees.

Rule kinds (each a dict in ``HarnessVersion.notice_rules``; ``text`` is a format string):
- ``repeated_failure`` {threshold}: a tool failed ``threshold`` times in this task (fires once per tool
  at the threshold). Fields: {tool}, {count}, {code}, {error}.
- ``repeated_call`` {threshold}: the identical state-changing call (tool + arguments) was issued
  ``threshold`` times (queries are exempt: polling an async operation repeats them legitimately).
- ``budget_low`` {remaining}: this many steps remain in the budget (fires once).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.contract import CallRecord


class NoticeTracker:
    """Per-episode counters behind the rules, so each step costs a few dict updates."""

    def __init__(self, rules: list[dict[str, Any]], read_only: Callable[[str], bool] = lambda name: False):
        self.rules = rules
        self.read_only = read_only
        self.failures: dict[str, int] = {}
        self.calls: dict[str, int] = {}
        self.fired: set[tuple[str, str]] = set()

    def after_step(self, calls: list[CallRecord], steps_done: int, budget: int) -> list[str]:
        """Update counters with this step's calls and return the notices that fire now."""
        if not self.rules:
            return []
        touched_fail: dict[str, CallRecord] = {}
        touched_call: dict[str, str] = {}
        for rec in calls:
            name = rec.call.name
            if not self.read_only(name):
                key = rec.call.key()
                self.calls[key] = self.calls.get(key, 0) + 1
                touched_call[key] = name
            if not rec.result.success:
                self.failures[name] = self.failures.get(name, 0) + 1
                touched_fail[name] = rec
        out: list[str] = []
        remaining = budget - steps_done
        for i, rule in enumerate(self.rules):
            kind = rule.get("kind")
            text = rule.get("text", "")
            if kind == "repeated_failure":
                for name, rec in touched_fail.items():
                    count = self.failures[name]
                    if count >= rule.get("threshold", 2) and (f"rf{i}", name) not in self.fired:
                        self.fired.add((f"rf{i}", name))
                        out.append(text.format(tool=name, count=count, code=rec.result.code, error=rec.result.error))
            elif kind == "repeated_call":
                for key, name in touched_call.items():
                    count = self.calls[key]
                    if count >= rule.get("threshold", 3) and (f"rc{i}", key) not in self.fired:
                        self.fired.add((f"rc{i}", key))
                        out.append(text.format(tool=name, count=count))
            elif kind == "budget_low" and (
                0 < remaining <= rule.get("remaining", 2) and (f"bl{i}", "") not in self.fired
            ):
                self.fired.add((f"bl{i}", ""))
                out.append(text.format(remaining=remaining))
        return out
