"""GUI sub-agents: sessions, the scripted executor on real app screens, step logs, artifacts, errors."""

from __future__ import annotations

from devices.virtual.phone import VirtualPhone
from devices.virtual.registry import catalog
from harness.episode import run_episode
from harness.reference import ReferenceSolver
from harness.subagents import GuiRun, SubAgents

SUB_TEMPLATES = sorted(t for t, tpl in catalog().templates.items() if tpl.category == "sub_agent")


def gui_calls(ep):
    return [c for s in ep.steps for c in s.calls if c.kind == "subagent"]


def reference_start(template: str, seed: int = 0):
    """A sub-agent template's reference episode and the arguments of its first start call."""
    ep = run_episode(catalog().templates[template].instantiate(seed), ReferenceSolver())
    start = next(c.call.arguments for c in gui_calls(ep) if c.call.arguments["action"] == "start")
    return ep, start


def test_reference_episodes_use_the_gui_agent_and_log_steps():
    assert SUB_TEMPLATES, "no sub_agent templates in the catalogue"
    for tid in SUB_TEMPLATES:
        ep, _ = reference_start(tid)
        assert ep.verdict.success, (tid, ep.verdict.reason)
        execs = [c for c in gui_calls(ep) if c.call.arguments["action"] == "execute"]
        assert execs and all(c.result.data["execution_status"] == "completed" for c in execs)
        actions = [s["action"] for s in execs[0].result.data["steps"]]
        assert actions[0] == "launch_app" and "operate_ui" in actions
        assert all(c.verification.verified is True for c in execs)
        assert ep.costs.tool_calls["subagent"] >= 2


def test_session_lifecycle_and_errors():
    _, start = reference_start(SUB_TEMPLATES[0])
    phone = VirtualPhone()
    phone.reset(catalog().templates[SUB_TEMPLATES[0]].instantiate(0))
    agents = SubAgents()
    res = agents.call(phone, dict(start))
    assert res.success and res.data["execution_status"] == "pending"
    sid = res.data["sessionId"]
    assert agents.call(phone, {"action": "status", "sessionId": sid}).data["execution_status"] == "pending"
    done = agents.call(phone, {"action": "execute", "sessionId": sid})
    assert done.success and done.data["execution_status"] == "completed"
    assert agents.call(phone, {"action": "execute", "sessionId": sid}).code == 409
    assert agents.call(phone, {"action": "execute", "sessionId": "gui_99"}).code == 404
    assert agents.call(phone, {"action": "execute"}).code == 400
    assert agents.call(phone, {"action": "start", "appName": start["appName"]}).code == 400
    assert agents.call(phone, {"action": "start", "appName": "NoSuchApp", "instruction": "x"}).code == 404
    assert agents.call(phone, {"action": "fly"}).code == 400


def test_unknown_instruction_fails_with_a_step_log():
    _, start = reference_start(SUB_TEMPLATES[0])
    phone = VirtualPhone()
    phone.reset()
    agents = SubAgents()
    sid = agents.call(phone, {"action": "start", "appName": start["appName"],
                              "instruction": "juggle three flaming torches"}).data["sessionId"]
    res = agents.call(phone, {"action": "execute", "sessionId": sid})
    assert res.success and res.data["execution_status"] == "failed"
    assert "could not understand instruction" in res.data["error"]


def test_own_step_budget():
    _, start = reference_start(SUB_TEMPLATES[0])
    phone = VirtualPhone()
    phone.reset(catalog().templates[SUB_TEMPLATES[0]].instantiate(0))
    agents = SubAgents(budget=1)
    sid = agents.call(phone, dict(start)).data["sessionId"]
    res = agents.call(phone, {"action": "execute", "sessionId": sid})
    assert res.data["execution_status"] == "failed" and "ran out of GUI steps" in res.data["error"]


def test_a_model_driven_executor_plugs_in():
    class Fake:
        name = "fake"

        def __init__(self):
            self.seen = []

        def run(self, phone, app, instruction, budget):
            self.seen.append((app, instruction, budget))
            return GuiRun("completed", [{"step": 1, "action": "launch_app"}], ["a.pdf"])

    fake = Fake()
    agents = SubAgents(fake, budget=7)
    app = sorted(catalog().apps)[0]
    started = agents.call(VirtualPhone(), {"action": "start", "appName": app.upper(), "instruction": "do it"})
    sid = started.data["sessionId"]
    res = agents.call(VirtualPhone(), {"action": "execute", "sessionId": sid})
    assert res.data["artifacts"] == ["a.pdf"] and fake.seen == [(app, "do it", 7)]
