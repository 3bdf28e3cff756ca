"""The skill library: ``skill__<name>(reason)`` tools that load a tool family and its rules into the context.

Skills come from the catalogue (each domain declares its own) patched by a HarnessVersion's
``skill_overrides``; before a skill is loaded its tools are not offered (tool-conditioned context).
"""

from __future__ import annotations

from typing import Any

from devices.virtual.registry import Skill, catalog
from harness.contract import Code, ToolResult, ToolSpec

PREFIX = "skill__"


def skill_tool_name(skill: str) -> str:
    return PREFIX + skill


class SkillLibrary:
    """All skills the Harness knows, by name."""

    def __init__(self, overrides: dict[str, dict[str, Any]] | None = None):
        self.skills: dict[str, Skill] = {}
        for name, s in catalog().skills.items():
            self.skills[name] = Skill(name=s.name, title=s.title, description=s.description, tools=list(s.tools),
                                      rules=list(s.rules))
        for name, patch in (overrides or {}).items():
            base = self.skills.get(name)
            if base is None:
                if not {"title", "description", "tools", "rules"} <= set(patch):
                    raise ValueError(f"skill override {name} adds a new skill but lacks title/description/tools/rules")
                self.skills[name] = Skill(name=name, title=patch["title"], description=patch["description"],
                                          tools=list(patch["tools"]), rules=list(patch["rules"]))
                continue
            for key in ("title", "description", "tools", "rules"):
                if key in patch:
                    setattr(base, key, list(patch[key]) if key in ("tools", "rules") else patch[key])
        self._specs: dict[str, ToolSpec] = {}

    def __contains__(self, name: str) -> bool:
        return name in self.skills

    def spec(self, name: str) -> ToolSpec:
        """The ``skill__<name>`` tool (cached: its schema is the same in every episode)."""
        spec = self._specs.get(name)
        if spec is None:
            s = self.skills[name]
            unlocks = f" Unlocks: {', '.join(s.tools)}." if s.tools else " Procedure only (no tools)."
            spec = ToolSpec(
                name=skill_tool_name(name),
                description=f"Load the '{s.title}' skill: {s.description}{unlocks} Returns its rules.",
                parameters={
                    "type": "object",
                    "properties": {"reason": {"type": "string", "description": "why this skill is needed now"}},
                    "required": ["reason"],
                    "additionalProperties": False,
                },
                domain="skills",
                kind="skill",
                read_only=True,
            )
            self._specs[name] = spec
        return spec

    def provider(self, tool: str, offered: list[str]) -> str | None:
        """The first offered skill whose family includes ``tool`` (for the 412 'load skill first' error)."""
        for name in offered:
            s = self.skills.get(name)
            if s is not None and tool in s.tools:
                return name
        return None

    def load(self, name: str, args: dict[str, Any], loaded: set[str]) -> ToolResult:
        """Run ``skill__<name>``: mark it loaded (``loaded`` is the episode's set) and return its rules."""
        s = self.skills.get(name)
        if s is None:
            return ToolResult.fail(Code.NOT_FOUND, f"unknown skill '{name}'")
        reason = args.get("reason") if isinstance(args, dict) else None
        if not isinstance(reason, str) or not reason.strip():
            return ToolResult.fail(Code.BAD_ARGUMENT, f"missing required argument 'reason' for {skill_tool_name(name)}")
        extra = set(args) - {"reason"}
        if extra:
            bad = sorted(extra)[0]
            return ToolResult.fail(Code.BAD_ARGUMENT, f"unknown argument '{bad}' for {skill_tool_name(name)}")
        again = name in loaded
        loaded.add(name)
        data = {"status": "loaded", "loaded_tools": list(s.tools), "instructions": s.instructions()}
        if again:
            data["already_loaded"] = True
        msg = f"skill {name} already loaded" if again else f"skill {name} loaded"
        return ToolResult.ok(msg, data)
