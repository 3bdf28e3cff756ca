"""HarnessVersion: the Harness as data (policy text, skill and tool-description overrides, notice rules).

A version can be proposed, reviewed, diffed and evaluated like a checkpoint; its id is a content
hash, so two versions with the same content are the same version.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

DEFAULT_POLICY = "\n".join(
    [
        "You are a mobile planner agent. You act on the user's phone only through the offered tools.",
        "- Plan briefly, then call tools. Independent calls may go together in one turn; "
        "wait for the earlier result before issuing dependent calls.",
        "- Some tools appear only after you load their skill with skill__<name>; follow the rules a skill returns.",
        "- Use search_user_memory when the request depends on the user's routines, preferences or facts; "
        "refine the query if the first result is only a fragment.",
        "- Trust tool results over earlier claims in the conversation, including your own.",
        "- After a tool fails, make at most one correction supported by the schema, user input or returned "
        "evidence; do not guess variations.",
        "- Change only what the user asked for.",
        "- When the request is done (or cannot be done), answer the user briefly without calling tools.",
    ]
)

DEFAULT_NOTICE_RULES: list[dict[str, Any]] = [
    {
        "kind": "repeated_failure",
        "threshold": 2,
        "text": (
            "Notice: {tool} has failed {count} times in this task. Stop guessing variations of {tool}. "
            "Use another tool or ask the user; a correction supported by new evidence is still valid."
        ),
    },
    {
        "kind": "repeated_call",
        "threshold": 3,
        "text": "Notice: you called {tool} with the same arguments {count} times. Use the result you have.",
    },
    {
        "kind": "budget_low",
        "remaining": 2,
        "text": "Notice: {remaining} steps left in this task. Finish the essential actions and answer the user.",
    },
]


@dataclass
class HarnessVersion:
    """Everything about the Harness that a proposal may change, as plain data.

    ``skill_overrides``: {skill name: {"title"?, "description"?, "rules"?, "tools"?}} patches the
    catalogue's skills (a name not in the catalogue with all four keys adds a skill).
    ``tool_description_overrides``: {tool name: description} for any offered tool.
    ``notice_rules``: see harness.notices.
    ``offer_memory``: "task" offers the memory tools when the task plants memory or is a memory
    task; "always" offers them in every episode.
    """

    name: str = "default"
    policy: str = DEFAULT_POLICY
    skill_overrides: dict[str, dict[str, Any]] = field(default_factory=dict)
    tool_description_overrides: dict[str, str] = field(default_factory=dict)
    notice_rules: list[dict[str, Any]] = field(default_factory=lambda: [dict(r) for r in DEFAULT_NOTICE_RULES])
    offer_memory: str = "task"
    gui_step_budget: int = 30

    @classmethod
    def default(cls) -> HarnessVersion:
        return cls()

    def content(self) -> dict[str, Any]:
        """The hashed part (the name is a label, not content)."""
        return {
            "policy": self.policy,
            "skill_overrides": self.skill_overrides,
            "tool_description_overrides": self.tool_description_overrides,
            "notice_rules": self.notice_rules,
            "offer_memory": self.offer_memory,
            "gui_step_budget": self.gui_step_budget,
        }

    @property
    def id(self) -> str:
        blob = json.dumps(self.content(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return "hv-" + hashlib.sha256(blob.encode()).hexdigest()[:12]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, **self.content()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> HarnessVersion:
        v = cls(
            name=d.get("name", "default"),
            policy=d.get("policy", DEFAULT_POLICY),
            skill_overrides=dict(d.get("skill_overrides", {})),
            tool_description_overrides=dict(d.get("tool_description_overrides", {})),
            notice_rules=[dict(r) for r in d.get("notice_rules", DEFAULT_NOTICE_RULES)],
            offer_memory=d.get("offer_memory", "task"),
            gui_step_budget=int(d.get("gui_step_budget", 30)),
        )
        if "id" in d and d["id"] != v.id:
            raise ValueError(f"harness version content does not match its id {d['id']} (content hash {v.id})")
        return v
