"""The virtual phone: a deterministic, seeded sandbox of live app databases behind the device interface.

``reset(task)`` loads the base state of every domain (one ``pickle.loads`` of a cached blob, which
is what keeps a reset well under a millisecond) and applies the task's patch and faults; ``call``
validates arguments, injects faults and runs the domain's handler; ``snapshot`` is what verifiers
read; ``screen`` and the GUI actions operate the same state through app screens.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from typing import Any

from devices.virtual.registry import Element, catalog, check_arguments
from devices.virtual.state import META, diff, set_path, state_hash
from devices.virtual.tasks import Task
from harness.contract import Code, ToolCall, ToolResult, ToolSpec

SCREEN_W, SCREEN_H = 360, 720
STATUS_H, ROW_H, TITLE_H = 28, 44, 52


@dataclass
class Screen:
    app: str | None
    route: str
    title: str
    elements: list[Element]
    status: dict[str, Any]

    def tree(self) -> list[dict[str, Any]]:
        """The UI tree as plain dicts (what a GUI agent or the console reads)."""
        return [
            {
                "id": e.id,
                "text": e.text,
                "kind": e.kind,
                "clickable": e.clickable,
                "checked": e.checked,
                "bounds": list(e.bounds),
            }
            for e in self.elements
        ]

    def find(self, text: str) -> Element | None:
        """The first element whose text or id matches ``text`` (case-insensitive, exact, then prefix)."""
        low = text.lower()
        for e in self.elements:
            if e.id.lower() == low or e.text.lower() == low:
                return e
        for e in self.elements:
            if e.text.lower().startswith(low):
                return e
        return None

    def image(self):  # -> PIL.Image.Image
        from devices.virtual.screens import render

        return render(self)


class VirtualPhone:
    """One virtual phone. Not thread-safe: one episode drives one phone."""

    name = "virtual"

    def __init__(self, *, strict: bool = False):
        # strict: let handler exceptions propagate (tests); otherwise they become 503 results.
        self.strict = strict
        self.cat = catalog()
        base: dict[str, Any] = {name: dom.initial for name, dom in self.cat.domains.items()}
        base[META] = {"clock": 0, "seq": 0, "events": [], "faults": [], "gui": _gui_home()}
        self._base = pickle.dumps(base, protocol=pickle.HIGHEST_PROTOCOL)
        self.state: dict[str, Any] = pickle.loads(self._base)
        self.task: Task | None = None

    # -- environment interface -----------------------------------------------------------------

    def reset(self, task: Task | None = None) -> dict[str, Any]:
        self.state = state = pickle.loads(self._base)
        self.task = task
        if task is not None:
            for path, value in task.setup.items():
                set_path(state, path, pickle.loads(pickle.dumps(value)) if isinstance(value, (dict, list)) else value)
            state[META]["faults"] = [dict(f, left=f.get("times", 1)) for f in task.faults]
        return state

    def tools(self, names: list[str] | None = None) -> list[ToolSpec]:
        return self.cat.tool_specs(names)

    def call(self, call: ToolCall | tuple[str, dict[str, Any]], *, inject_faults: bool = True) -> ToolResult:
        name, args = (call.name, call.arguments) if isinstance(call, ToolCall) else call
        tool = self.cat.tools.get(name)
        if tool is None:
            return ToolResult.fail(Code.NOT_FOUND, f"unknown tool '{name}'")
        problem = check_arguments(tool.spec, args)
        if problem:
            return ToolResult.fail(Code.BAD_ARGUMENT, problem)
        if inject_faults:
            fault = self._fault(name)
            if fault is not None:
                return fault
        try:
            return tool.handler(self, self.state[tool.spec.domain], args)
        except Exception as exc:  # a handler bug must not kill an episode; tests run strict
            if self.strict:
                raise
            return ToolResult.fail(Code.SERVICE, f"{name} failed inside the service: {type(exc).__name__}")

    def verify_call(self, name: str, args: dict[str, Any], result: ToolResult, seq_before: int) -> bool | None:
        """Per-call verification from state: None for queries and failures, else whether the effect shows."""
        tool = self.cat.tools.get(name)
        if tool is None or not result.success or tool.spec.read_only:
            return None
        if tool.check is not None:
            return bool(tool.check(self, args))
        return self.state[META]["seq"] > seq_before or None

    def snapshot(self) -> dict[str, Any]:
        return pickle.loads(pickle.dumps(self.state, protocol=pickle.HIGHEST_PROTOCOL))

    def state_hash(self) -> str:
        return state_hash(self.state)

    @staticmethod
    def diff(a: dict[str, Any], b: dict[str, Any]) -> list[dict[str, Any]]:
        return diff(a, b)

    # -- what handlers use ---------------------------------------------------------------------

    @property
    def clock(self) -> int:
        return self.state[META]["clock"]

    @property
    def seq(self) -> int:
        return self.state[META]["seq"]

    def log(self, event: str, **data: Any) -> None:
        """Record a state-changing event (ordering checks and per-call verification read this)."""
        meta = self.state[META]
        meta["seq"] += 1
        meta["events"].append({"seq": meta["seq"], "t": meta["clock"], "event": event, **data})

    def advance(self, steps: int = 1) -> None:
        """Let time pass (one planner step): async work such as downloads progresses."""
        for _ in range(steps):
            self.state[META]["clock"] += 1
            for dom in self.cat.domains.values():
                for hook in dom.tick_hooks:
                    hook(self, self.state[dom.name])

    def slowdown(self, tool: str) -> int:
        """Extra steps a 'slow' fault adds to an async operation started by ``tool``."""
        return sum(f.get("delay", 3) for f in self.state[META]["faults"] if f["kind"] == "slow" and f["tool"] == tool)

    def _fault(self, tool: str) -> ToolResult | None:
        for f in self.state[META]["faults"]:
            if f["tool"] != tool or f["kind"] == "slow" or f["left"] <= 0:
                continue
            f["left"] -= 1
            default = {
                "fail": (Code.BAD_ARGUMENT, f"{tool} could not process the request"),
                "outage": (Code.SERVICE, f"{tool}: service temporarily unavailable"),
                "conflict": (Code.CONFLICT, f"{tool}: the resource is busy"),
            }[f["kind"]]
            return ToolResult.fail(f.get("code", default[0]), f.get("error", default[1]))
        return None

    # -- screens and GUI actions -----------------------------------------------------------------

    @property
    def gui(self) -> dict[str, Any]:
        return self.state[META]["gui"]

    def screen(self) -> Screen:
        g = self.gui
        if g["app"] is None:
            title = "Home"
            elements = [
                Element(id=f"app:{name}", text=name, kind="button", clickable=True, to=f"open:{name}")
                for name in sorted(self.cat.apps)
            ]
        else:
            app = self.cat.apps[g["app"]]
            title, elements = app.screen(self, g["route"])
        _layout(elements, g.get("scroll", 0))
        return Screen(app=g["app"], route=g["route"], title=title, elements=elements, status=self._status())

    def _status(self) -> dict[str, Any]:
        conn = self.state.get("connectivity", {})
        power = self.state.get("power", {})
        c = self.clock
        return {
            "time": f"{9 + c // 60 % 12:02d}:{c % 60:02d}",
            "battery": power.get("battery", {}).get("level", 80) if isinstance(power.get("battery"), dict) else 80,
            "wifi": bool(conn.get("wifi", {}).get("enabled")) if isinstance(conn.get("wifi"), dict) else False,
        }

    def open_app(self, name: str) -> ToolResult:
        match = next((a for a in self.cat.apps if a.lower() == name.lower()), None)
        if match is None:
            return ToolResult.fail(Code.NOT_FOUND, f"no app named '{name}'; apps: {', '.join(sorted(self.cat.apps))}")
        self.state[META]["gui"] = {"app": match, "route": "main", "stack": [], "inputs": {}, "scroll": 0}
        self.log("gui.open_app", app=match)
        return ToolResult.ok(f"opened {match}", {"app": match, "screen": self.screen().title})

    def home(self) -> ToolResult:
        self.state[META]["gui"] = _gui_home()
        return ToolResult.ok("home screen", {"screen": "Home"})

    def back(self) -> ToolResult:
        g = self.gui
        if g["app"] is None:
            return ToolResult.ok("already on the home screen", {"screen": "Home"})
        if g["stack"]:
            g["route"] = g["stack"].pop()
            g["scroll"] = 0
        else:
            return self.home()
        return ToolResult.ok("went back", {"screen": self.screen().title})

    def swipe(self, direction: str) -> ToolResult:
        if direction not in ("up", "down"):
            return ToolResult.fail(Code.BAD_ARGUMENT, "direction must be 'up' or 'down'")
        g = self.gui
        g["scroll"] = max(0, g.get("scroll", 0) + (5 if direction == "up" else -5))
        return ToolResult.ok(f"swiped {direction}", {"scroll": g["scroll"]})

    def type_text(self, text: str, element: str | None = None) -> ToolResult:
        scr = self.screen()
        target = None
        target = scr.find(element) if element else next((e for e in scr.elements if e.kind == "input"), None)
        if target is None or target.kind != "input":
            return ToolResult.fail(Code.NOT_FOUND, f"no text field {element or ''} on {scr.title}".replace("  ", " "))
        self.gui["inputs"][target.id] = text
        return ToolResult.ok(f"typed into {target.id}", {"element": target.id, "text": text})

    def tap(self, target: str | tuple[int, int]) -> ToolResult:
        """Tap an element by id or text, or at (x, y). A tap runs the element's action on state."""
        scr = self.screen()
        el: Element | None
        if isinstance(target, tuple):
            x, y = target
            el = next(
                (e for e in scr.elements if e.bounds[0] <= x < e.bounds[2] and e.bounds[1] <= y < e.bounds[3]), None
            )
        else:
            el = scr.find(target)
        if el is None:
            return ToolResult.fail(Code.NOT_FOUND, f"nothing to tap matching {target!r} on {scr.title}")
        if not el.clickable:
            return ToolResult.fail(Code.CONFLICT, f"'{el.text}' is not clickable")
        if el.to and el.to.startswith("open:"):
            return self.open_app(el.to[5:])
        result = ToolResult.ok(f"tapped '{el.text}'", {"element": el.id})
        if el.tool is not None:
            name, args = el.tool
            inputs = self.gui.get("inputs", {})
            args = {k: _fill_input(v, inputs) for k, v in args.items()}
            result = self.call((name, args), inject_faults=False)
        if el.to and result.success:
            g = self.gui
            g.setdefault("stack", []).append(g["route"])
            g["route"] = el.to
            g["scroll"] = 0
        return result


def _gui_home() -> dict[str, Any]:
    return {"app": None, "route": "", "stack": [], "inputs": {}, "scroll": 0}


def _fill_input(value: Any, inputs: dict[str, str]) -> Any:
    if isinstance(value, str) and value.startswith("{input:") and value.endswith("}"):
        return inputs.get(value[7:-1], "")
    return value


def _layout(elements: list[Element], scroll: int) -> None:
    """Stack elements vertically below the status bar and title; ``scroll`` skips rows."""
    y = STATUS_H + TITLE_H - scroll * ROW_H
    for e in elements:
        h = ROW_H + (8 if e.kind == "header" else 0)
        e.bounds = (0, y, SCREEN_W, y + h)
        y += h
