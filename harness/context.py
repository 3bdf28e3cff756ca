"""Context assembly: what the planner sees each turn (policy, offered tool schemas, chat messages).

Offered tools are tool-conditioned: the task's business tools, ``skill__<name>`` for its skills,
the tools of skills already loaded, the memory tools and the GUI agent where the task uses them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from devices.virtual.registry import catalog
from harness.contract import ToolSpec
from harness.memory import MEMORY_TOOLS
from harness.subagents import GUI_AGENT_SPEC
from harness.version import HarnessVersion

if TYPE_CHECKING:
    from devices.virtual.tasks import Task
    from harness.skills import SkillLibrary


@dataclass
class Context:
    """One planner input. ``messages`` is the episode's running list: read it, never mutate it.

    ``task`` is there for task-aware planners (the reference solver); a model must use only
    ``messages`` and ``tools``. ``results`` maps the previous turn's call ids to their result dicts.
    """

    episode_id: str
    messages: list[dict[str, Any]]
    tools: list[ToolSpec]
    step: int = 0
    budget: int = 16
    task: Task | None = None
    results: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_openai(self) -> dict[str, Any]:
        """The request body of an OpenAI-compatible chat completion (messages + tools)."""
        return {"messages": self.messages, "tools": [t.to_openai() for t in self.tools]}


def system_message(version: HarnessVersion) -> dict[str, Any]:
    return {"role": "system", "content": version.policy}


def initial_messages(task: Task, version: HarnessVersion) -> list[dict[str, Any]]:
    """System policy, the task's earlier dialogue (if any), then the user's request."""
    msgs = [system_message(version)]
    msgs.extend(dict(m) for m in task.history)
    msgs.append({"role": "user", "content": task.instruction})
    return msgs


def offers_memory(task: Task, version: HarnessVersion) -> bool:
    return version.offer_memory == "always" or bool(task.memory) or task.category == "memory"


def offered_tools(
    task: Task, version: HarnessVersion, skills: SkillLibrary, loaded: list[str] | tuple[str, ...] = ()
) -> list[ToolSpec]:
    """The tool schemas offered now, in a stable order (task tools, loaded skill tools, skills, memory, GUI)."""
    cat = catalog()
    names: list[str] = [n for n in task.tools if n in cat.tools]
    seen = set(names)
    for skill in loaded:
        for n in skills.skills[skill].tools:
            if n in cat.tools and n not in seen:
                names.append(n)
                seen.add(n)
    specs = [cat.tools[n].spec for n in names]
    specs += [skills.spec(s) for s in task.skills if s in skills]
    if offers_memory(task, version):
        specs += list(MEMORY_TOOLS.values())
    if task.subagent:
        specs.append(GUI_AGENT_SPEC)
    over = version.tool_description_overrides
    if over:
        specs = [replace(s, description=over[s.name]) if s.name in over else s for s in specs]
    return specs
