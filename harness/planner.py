"""The planner interface (a batch of contexts in, one PlannerTurn per context out) and the trivial planner.

A planner may return structured turns (the reference solver) or ``PlannerTurn(raw=text)`` only (a
language model); the episode loop parses raw text. ``end_episode(episode_id)``, when a planner
has it, is called once an episode finishes so per-episode state can be dropped.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from harness.context import Context
from harness.contract import PlannerTurn
from harness.parse import estimate_tokens


@runtime_checkable
class Planner(Protocol):
    name: str

    def generate(self, contexts: list[Context]) -> list[PlannerTurn]:
        """One turn per context, in the same order."""
        ...


class DoNothingPlanner:
    """Answers "Done." at once: every task must fail under it (the goal is not already true)."""

    name = "do-nothing"

    def generate(self, contexts: list[Context]) -> list[PlannerTurn]:
        return [PlannerTurn(content="Done.", output_tokens=estimate_tokens("Done.")) for _ in contexts]


class ScriptedPlanner:
    """Replays fixed turns (PlannerTurns or raw text) per episode, then answers "Done.".

    For tests, and for re-running a stored trajectory's turns under another HarnessVersion.
    """

    def __init__(self, turns: list[PlannerTurn | str], name: str = "scripted"):
        self.turns = list(turns)
        self.name = name
        self._pos: dict[str, int] = {}

    def generate(self, contexts: list[Context]) -> list[PlannerTurn]:
        out: list[PlannerTurn] = []
        for ctx in contexts:
            i = self._pos.get(ctx.episode_id, 0)
            self._pos[ctx.episode_id] = i + 1
            turn = self.turns[i] if i < len(self.turns) else PlannerTurn(content="Done.")
            # Fresh objects each time: the loop assigns call ids and must not touch the script.
            out.append(PlannerTurn(raw=turn) if isinstance(turn, str) else PlannerTurn.from_dict(turn.to_dict()))
        return out

    def end_episode(self, episode_id: str) -> None:
        self._pos.pop(episode_id, None)
