"""Plain-dict state helpers: dotted-path access, structural diff, stable hashing.

State is JSON-safe nested dicts/lists. ``_meta`` holds the phone's bookkeeping (clock, event log,
GUI focus); it is device state verifiers may read (for ordering) but never a user-visible change,
so ``diff`` and collateral checks skip it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

META = "_meta"


def get_path(state: dict[str, Any], path: str, default: Any = None) -> Any:
    cur: Any = state
    for part in path.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            return default
    return cur


def set_path(state: dict[str, Any], path: str, value: Any) -> None:
    parts = path.split(".")
    cur = state
    for part in parts[:-1]:
        cur = cur.setdefault(part, {})
    cur[parts[-1]] = value


def diff(a: Any, b: Any, prefix: str = "", *, include_meta: bool = False) -> list[dict[str, Any]]:
    """Every leaf that differs between two states: ``[{path, before, after}]`` (lists compared whole
    when their lengths differ, else element-wise)."""
    out: list[dict[str, Any]] = []
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            if not include_meta and not prefix and key == META:
                continue
            p = f"{prefix}.{key}" if prefix else str(key)
            if key not in a:
                out.append({"path": p, "before": None, "after": b[key]})
            elif key not in b:
                out.append({"path": p, "before": a[key], "after": None})
            elif a[key] != b[key]:
                out.extend(diff(a[key], b[key], p, include_meta=include_meta))
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            if x != y:
                out.extend(diff(x, y, f"{prefix}.{i}", include_meta=include_meta))
    elif a != b:
        out.append({"path": prefix, "before": a, "after": b})
    return out


def state_hash(state: dict[str, Any], *, include_meta: bool = False) -> str:
    body = state if include_meta else {k: v for k, v in state.items() if k != META}
    blob = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def path_allowed(path: str, allowed: list[str] | tuple[str, ...]) -> bool:
    """True when ``path`` equals or lies under one of ``allowed`` (or an allowed path lies under it,
    as when a whole list changed length)."""
    return any(path == a or path.startswith(a + ".") or a.startswith(path + ".") for a in allowed)
