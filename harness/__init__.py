"""The planner runtime: contract, memory, skills, sub-agents, notices and the episode loop (no Django)."""
