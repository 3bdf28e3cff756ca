"""Helpers several domains use: id generation, cross-domain checks, on/off switches and screen toggles.

No ``DOMAIN`` here, so the catalogue skips this module; each helper was copied between domains before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from devices.virtual.registry import Element
from harness.contract import Code, ToolResult


def new_id(phone: Any, prefix: str, taken: Any) -> str:
    """A fresh id: the event sequence number is deterministic, so ids need no counter in state (a
    counter would show up as a change the user did not ask for); ``taken`` holds seeded ids to avoid."""
    n = phone.seq + 1
    while f"{prefix}{n}" in taken:
        n += 1
    return f"{prefix}{n}"


def clock_label(phone: Any) -> str:
    """The phone's wall-clock time as shown in the status bar (one minute per planner step)."""
    c = phone.clock
    return f"{9 + c // 60 % 12:02d}:{c % 60:02d}"


def powered_off(phone: Any) -> ToolResult | None:
    """A 412 failure while the power domain says the device is off (a powered-off phone accepts no writes)."""
    dev = phone.state.get("power", {}).get("device")
    if isinstance(dev, dict) and dev.get("state") == "off":
        return ToolResult.fail(Code.PREREQUISITE, "the phone is powered off; power it on first")
    return None


def match_name(name: str, options: Any) -> str | None:
    """The option equal to ``name`` ignoring case and surrounding spaces, or None."""
    low = name.strip().lower()
    return next((o for o in options if o.lower() == low), None)


def switch(phone: Any, obj: dict[str, Any], key: str, value: bool, label: str, event: str) -> ToolResult:
    """Turn one boolean setting on or off, log ``event`` (enabled=value) only when it changes, and report
    "<label> on|off"."""
    if obj[key] != value:
        obj[key] = value
        phone.log(event, enabled=value)
    return ToolResult.ok(f"{label} {'on' if value else 'off'}", {key: value})


def switch_check(domain: str, key: str) -> Callable[[Any, dict[str, Any]], bool]:
    """A tool ``check``: the top-level setting ``key`` of ``domain`` now equals the call's ``enabled``."""
    return lambda ph, a: ph.state[domain][key] == a["enabled"]


def toggle(
    id: str,
    text: str,
    on: bool,
    tool: str,
    args: dict[str, Any] | None = None,
    *,
    key: str = "enabled",
    clickable: bool = True,
) -> Element:
    """A screen toggle showing ``on``; a tap calls ``tool`` with ``args`` plus ``key`` set to the flipped value."""
    flip = {**(args or {}), key: not on}
    return Element(id, text, kind="toggle", clickable=clickable, checked=on, tool=(tool, flip))


def changed_items(before: dict[str, Any], after: dict[str, Any], skip: tuple[str, ...] = ()) -> list[str]:
    """Ids of items that existed before and were edited or deleted (collateral inside an allowed collection)."""
    return [k for k, v in before.items() if k not in skip and after.get(k) != v]
