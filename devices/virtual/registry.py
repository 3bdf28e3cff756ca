"""How a domain of the virtual phone declares itself: state, tools, app screens, skills and templates.

Each module under ``devices/virtual/domains/`` builds one ``Domain`` and registers everything on it
with decorators; ``catalog()`` imports them all once. Argument checking is hand-written rather than
``jsonschema`` because it runs on every tool call and must cost microseconds (the env targets
20,000 tool steps per second); it covers the schema subset our tools use and tests validate every
tool schema with ``jsonschema`` proper.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.contract import Code, ToolResult, ToolSpec

if TYPE_CHECKING:
    from devices.virtual.phone import VirtualPhone
    from devices.virtual.tasks import Template

Handler = Callable[["VirtualPhone", dict[str, Any], dict[str, Any]], ToolResult]


# ---------------------------------------------------------------------------------------------
# Parameter schema helpers (OpenAI function-calling JSON Schema)


class P:
    """Small builders for parameter schemas, so tool declarations stay one line per argument."""

    @staticmethod
    def string(description: str, **extra: Any) -> dict[str, Any]:
        return {"type": "string", "description": description, **extra}

    @staticmethod
    def enum(values: list[str], description: str) -> dict[str, Any]:
        return {"type": "string", "enum": list(values), "description": description}

    @staticmethod
    def integer(description: str, minimum: int | None = None, maximum: int | None = None) -> dict[str, Any]:
        return _bounded("integer", description, minimum, maximum)

    @staticmethod
    def number(description: str, minimum: float | None = None, maximum: float | None = None) -> dict[str, Any]:
        return _bounded("number", description, minimum, maximum)

    @staticmethod
    def boolean(description: str) -> dict[str, Any]:
        return {"type": "boolean", "description": description}

    @staticmethod
    def array(items: dict[str, Any], description: str, min_items: int = 0) -> dict[str, Any]:
        d: dict[str, Any] = {"type": "array", "items": items, "description": description}
        if min_items:
            d["minItems"] = min_items
        return d


def _bounded(typ: str, description: str, minimum: float | None, maximum: float | None) -> dict[str, Any]:
    d: dict[str, Any] = {"type": typ, "description": description}
    if minimum is not None:
        d["minimum"] = minimum
    if maximum is not None:
        d["maximum"] = maximum
    return d


_PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


def _check_value(name: str, value: Any, schema: dict[str, Any]) -> str | None:
    typ = schema.get("type")
    if typ:
        py = _PY_TYPES[typ]
        # bool is an int in Python; a JSON true is not an integer argument.
        if not isinstance(value, py) or (typ in ("integer", "number") and isinstance(value, bool)):
            return f"argument '{name}' must be {typ} (got {type(value).__name__} {value!r:.40})"
    if "enum" in schema and value not in schema["enum"]:
        return f"argument '{name}' must be one of: {', '.join(map(str, schema['enum']))} (got {value!r:.40})"
    if "minimum" in schema and value < schema["minimum"]:
        return f"argument '{name}' must be >= {schema['minimum']} (got {value})"
    if "maximum" in schema and value > schema["maximum"]:
        return f"argument '{name}' must be <= {schema['maximum']} (got {value})"
    if typ == "string" and not value.strip() and not schema.get("allow_empty"):
        return f"argument '{name}' must not be empty"
    if typ == "array":
        if len(value) < schema.get("minItems", 0):
            return f"argument '{name}' needs at least {schema['minItems']} item(s)"
        items = schema.get("items")
        if items:
            for i, v in enumerate(value):
                err = _check_value(f"{name}[{i}]", v, items)
                if err:
                    return err
    return None


def check_arguments(spec: ToolSpec, args: Any) -> str | None:
    """Return a clear message for the first problem with ``args`` against ``spec``, or None."""
    if not isinstance(args, dict):
        return f"arguments of {spec.name} must be a JSON object"
    props = spec.parameters.get("properties", {})
    for req in spec.parameters.get("required", ()):
        if req not in args:
            return f"missing required argument '{req}' for {spec.name}"
    for key, value in args.items():
        schema = props.get(key)
        if schema is None:
            return f"unknown argument '{key}' for {spec.name}; expected: {', '.join(props) or 'none'}"
        err = _check_value(key, value, schema)
        if err:
            return err
    return None


# ---------------------------------------------------------------------------------------------
# Domain declarations


@dataclass
class Case:
    """A worked example of a tool call, used by the tool test suite.

    ``setup`` patches state by dotted path before the call ("connectivity.cast.active": True);
    ``code`` is the expected failure code, or None for success.
    """

    args: dict[str, Any]
    code: int | None = None
    setup: dict[str, Any] = field(default_factory=dict)
    note: str = ""


def ok(args: dict[str, Any], setup: dict[str, Any] | None = None, note: str = "") -> Case:
    return Case(args=args, code=None, setup=setup or {}, note=note)


def err(code: int | Code, args: dict[str, Any], setup: dict[str, Any] | None = None, note: str = "") -> Case:
    return Case(args=args, code=int(code), setup=setup or {}, note=note)


@dataclass
class Tool:
    spec: ToolSpec
    handler: Handler
    codes: tuple[int, ...]  # failure codes the handler itself can return (400 from schema checks is implicit)
    cases: list[Case]
    check: Callable[[VirtualPhone, dict[str, Any]], bool] | None = None  # is the effect visible in state?
    family: str = ""  # the skill family that unlocks this tool ("" = offered without a skill)


@dataclass
class Skill:
    """Procedural guidance that, when loaded, exposes a family of tools (possibly none) and its rules."""

    name: str
    title: str
    description: str
    tools: list[str]
    rules: list[str]

    def instructions(self) -> str:
        return f"# {self.title}\n## Rules\n" + "\n".join(f"- {r}" for r in self.rules)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "tools": list(self.tools),
            "rules": list(self.rules),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Skill:
        return cls(**d)


@dataclass
class Element:
    """One element of an app screen's UI tree. ``tool`` is the call a tap performs (name, args);
    ``to`` is the route a tap navigates to; argument values "{input:ID}" read a typed input."""

    id: str
    text: str
    kind: str = "text"  # text | button | toggle | input | item | header
    clickable: bool = False
    checked: bool | None = None
    tool: tuple[str, dict[str, Any]] | None = None
    to: str | None = None
    bounds: tuple[int, int, int, int] = (0, 0, 0, 0)  # filled by layout: (left, top, right, bottom)


ScreenFn = Callable[["VirtualPhone", str], tuple[str, list[Element]]]


@dataclass
class App:
    """An app whose screens are rendered from state. ``screen(phone, route) -> (title, elements)``."""

    name: str
    domain: str
    screen: ScreenFn
    package: str = ""
    # The scripted GUI executor's reading of an instruction for this app: a list of GUI actions
    # ("tap", target) | ("type", text, field) | ("back",) | ("swipe", dir) | ("wait", steps)
    # | ("confirm", text_on_screen, artifact); None when the instruction is not understood.
    script: Callable[[str], list[tuple[Any, ...]] | None] | None = None


class Domain:
    """One functional domain of the phone: its state, tools, apps, skills and task templates."""

    def __init__(self, name: str, title: str, initial: dict[str, Any]):
        self.name = name
        self.title = title
        self.initial = initial
        self.tools: dict[str, Tool] = {}
        self.apps: dict[str, App] = {}
        self.skills: dict[str, Skill] = {}
        self.templates: list[Template] = []
        self.tick_hooks: list[Callable[[VirtualPhone, dict[str, Any]], None]] = []

    def tool(
        self,
        name: str,
        description: str,
        params: dict[str, dict[str, Any]] | None = None,
        required: list[str] | None = None,
        *,
        codes: tuple[int, ...] = (),
        cases: list[Case] | None = None,
        prerequisites: list[str] | None = None,
        read_only: bool = False,
        family: str = "",
        check: Callable[[VirtualPhone, dict[str, Any]], bool] | None = None,
    ) -> Callable[[Handler], Handler]:
        def register(fn: Handler) -> Handler:
            spec = ToolSpec(
                name=name,
                description=description,
                parameters={
                    "type": "object",
                    "properties": params or {},
                    "required": list(required or []),
                    "additionalProperties": False,
                },
                domain=self.name,
                kind="business",
                prerequisites=list(prerequisites or []),
                read_only=read_only,
            )
            if name in self.tools:
                raise ValueError(f"tool {name} declared twice in domain {self.name}")
            self.tools[name] = Tool(spec, fn, tuple(codes), list(cases or []), check, family)
            return fn

        return register

    def app(self, name: str, package: str = "") -> Callable[[ScreenFn], ScreenFn]:
        def register(fn: ScreenFn) -> ScreenFn:
            self.apps[name] = App(name=name, domain=self.name, screen=fn, package=package)
            return fn

        return register

    def gui_script(self, app: str) -> Callable:
        """Register how the scripted GUI agent turns an instruction into GUI actions for ``app``."""

        def register(fn: Callable[[str], list[tuple[Any, ...]] | None]) -> Callable:
            self.apps[app].script = fn
            return fn

        return register

    def skill(self, name: str, title: str, description: str, tools: list[str], rules: list[str]) -> Skill:
        s = Skill(name=name, title=title, description=description, tools=list(tools), rules=list(rules))
        self.skills[name] = s
        return s

    def on_tick(self, fn: Callable[[VirtualPhone, dict[str, Any]], None]) -> Callable:
        self.tick_hooks.append(fn)
        return fn

    def add_template(self, template: Template) -> Template:
        self.templates.append(template)
        return template


# ---------------------------------------------------------------------------------------------
# The catalogue: every domain, loaded once


@dataclass
class Catalog:
    domains: dict[str, Domain]
    tools: dict[str, Tool]
    apps: dict[str, App]
    skills: dict[str, Skill]
    templates: dict[str, Template]

    def tool_specs(self, names: list[str] | None = None) -> list[ToolSpec]:
        if names is None:
            return [t.spec for t in self.tools.values()]
        return [self.tools[n].spec for n in names]


_CATALOG: Catalog | None = None


def catalog() -> Catalog:
    """Import every domain module once and index what they declare (names must be unique)."""
    global _CATALOG
    if _CATALOG is not None:
        return _CATALOG
    from devices.virtual import domains as pkg

    doms: dict[str, Domain] = {}
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        mod = importlib.import_module(f"{pkg.__name__}.{info.name}")
        dom = getattr(mod, "DOMAIN", None)
        if isinstance(dom, Domain):
            if dom.name in doms:
                raise ValueError(f"domain {dom.name} declared twice")
            doms[dom.name] = dom
    tools: dict[str, Tool] = {}
    apps: dict[str, App] = {}
    skills: dict[str, Skill] = {}
    templates: dict[str, Template] = {}
    for dom in doms.values():
        for table, items, what in (
            (tools, dom.tools, "tool"),
            (apps, dom.apps, "app"),
            (skills, dom.skills, "skill"),
            (templates, {t.id: t for t in dom.templates}, "template"),
        ):
            for key, item in items.items():
                if key in table:
                    raise ValueError(f"{what} {key} declared twice (domain {dom.name})")
                table[key] = item
    _CATALOG = Catalog(domains=doms, tools=tools, apps=apps, skills=skills, templates=templates)
    return _CATALOG
