"""GUI sub-agents behind the ``control_gui_agent`` tool: sessions (start/execute/status) and executors.

The default executor is scripted: it asks the app's ``gui_script`` to read the instruction and
performs the resulting taps, typing and waits on the app's real screens, so effects land in the
same state the verifier reads. A model-driven executor plugs in through ``GuiExecutor``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from devices.virtual.registry import catalog, check_arguments
from harness.contract import Code, ToolResult, ToolSpec

if TYPE_CHECKING:
    from devices.virtual.phone import VirtualPhone

TOOL_NAME = "control_gui_agent"

GUI_AGENT_SPEC = ToolSpec(
    name=TOOL_NAME,
    description=(
        "Delegate work inside one app to a GUI agent that operates the app's screens. "
        "action=start with appName and instruction returns a sessionId (pending); "
        "action=execute with sessionId runs it and returns completed/failed, a step log and the confirmed "
        "artifacts; action=status reports a session."
    ),
    parameters={
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["start", "execute", "status"], "description": "what to do"},
            "appName": {"type": "string", "description": "the app to operate (start)"},
            "instruction": {"type": "string", "description": "what to do in the app, with exact names (start)"},
            "sessionId": {"type": "string", "description": "session from start (execute, status)"},
        },
        "required": ["action"],
        "additionalProperties": False,
    },
    domain="subagents",
    kind="subagent",
)


@dataclass
class GuiRun:
    """What an executor reports: completed or failed, its step log and the artifacts it confirmed."""

    status: str  # completed | failed
    steps: list[dict[str, Any]] = field(default_factory=list)
    artifacts: list[str] = field(default_factory=list)
    error: str = ""


class GuiExecutor(Protocol):
    """Operates one app to carry out an instruction within ``budget`` GUI actions."""

    name: str

    def run(self, phone: VirtualPhone, app: str, instruction: str, budget: int) -> GuiRun: ...


class ScriptedGuiExecutor:
    """Runs the app's ``gui_script(instruction)`` as real GUI actions; 'wait' lets the phone clock run."""

    name = "scripted"

    def run(self, phone: VirtualPhone, app: str, instruction: str, budget: int) -> GuiRun:
        steps: list[dict[str, Any]] = []

        def log(action: str, detail: str, ok: bool, **extra: Any) -> None:
            steps.append({"step": len(steps) + 1, "action": action, "detail": detail, "ok": ok, **extra})

        spec = catalog().apps[app]
        script = spec.script(instruction) if spec.script is not None else None
        if script is None:
            return GuiRun("failed", steps, [], f"could not understand instruction for {app}: {instruction!r}")
        opened = phone.open_app(app)
        log("launch_app", f"open {app}", opened.success, screen=opened.data.get("screen", ""))
        if not opened.success:
            return GuiRun("failed", steps, [], opened.error)
        artifacts: list[str] = []
        for action in script:
            if len(steps) >= budget:
                return GuiRun("failed", steps, artifacts, f"ran out of GUI steps ({budget})")
            kind = action[0]
            if kind == "confirm":
                text, artifact = action[1], action[2] if len(action) > 2 else action[1]
                scr = phone.screen()
                low = text.lower()
                found = any(low in e.text.lower() for e in scr.elements)
                log("verify_result", f"look for '{text}' on {scr.title}", found, artifact=artifact if found else None)
                if not found:
                    return GuiRun("failed", steps, artifacts, f"could not confirm '{text}' on the {scr.title} screen")
                if artifact and artifact not in artifacts:
                    artifacts.append(artifact)
                continue
            if kind == "wait":
                n = int(action[1]) if len(action) > 1 else 1
                phone.advance(n)
                log("operate_ui", f"wait {n} step(s)", True, screen=phone.screen().title)
                continue
            if kind == "tap":
                res = phone.tap(action[1])
                detail = f"tap '{action[1]}'"
            elif kind == "type":
                res = phone.type_text(action[1], action[2] if len(action) > 2 else None)
                detail = f"type '{action[1]}'"
            elif kind == "back":
                res, detail = phone.back(), "back"
            elif kind == "home":
                res, detail = phone.home(), "home"
            elif kind == "swipe":
                res, detail = phone.swipe(action[1] if len(action) > 1 else "up"), f"swipe {action[1:2]}"
            else:
                return GuiRun("failed", steps, artifacts, f"unknown GUI action {kind!r}")
            extra = {} if res.success else {"error": res.error}
            log("operate_ui", detail, res.success, screen=phone.screen().title, **extra)
            if not res.success:
                return GuiRun("failed", steps, artifacts, f"{detail} failed: {res.error}")
        return GuiRun("completed", steps, artifacts)


@dataclass
class GuiSession:
    id: str
    app: str
    instruction: str
    status: str = "pending"  # pending | completed | failed
    run: GuiRun | None = None

    def view(self) -> dict[str, Any]:
        d: dict[str, Any] = {"sessionId": self.id, "appName": self.app, "execution_status": self.status}
        if self.run is not None:
            d["steps"] = self.run.steps
            d["artifacts"] = list(self.run.artifacts)
            if self.run.error:
                d["error"] = self.run.error
        return d


class SubAgents:
    """The episode's GUI-agent sessions and the ``control_gui_agent`` tool."""

    def __init__(self, executor: GuiExecutor | None = None, budget: int = 30):
        self.executor: GuiExecutor = executor or ScriptedGuiExecutor()
        self.budget = budget
        self.sessions: dict[str, GuiSession] = {}

    def reset(self) -> None:
        self.sessions = {}

    def call(self, phone: VirtualPhone, args: dict[str, Any]) -> ToolResult:
        problem = check_arguments(GUI_AGENT_SPEC, args)
        if problem:
            return ToolResult.fail(Code.BAD_ARGUMENT, problem)
        action = args["action"]
        if action == "start":
            missing = [k for k in ("appName", "instruction") if not args.get(k)]
            if missing:
                return ToolResult.fail(Code.BAD_ARGUMENT, f"action=start needs {' and '.join(missing)}")
            apps = catalog().apps
            app = next((a for a in apps if a.lower() == args["appName"].strip().lower()), None)
            if app is None:
                known = ", ".join(sorted(apps))
                return ToolResult.fail(Code.NOT_FOUND, f"no app named '{args['appName']}'; apps: {known}")
            sid = f"gui_{len(self.sessions) + 1}"
            self.sessions[sid] = GuiSession(sid, app, args["instruction"])
            return ToolResult.ok(f"GUI agent session {sid} created for {app}", self.sessions[sid].view())
        sid = args.get("sessionId")
        if not sid:
            return ToolResult.fail(Code.BAD_ARGUMENT, f"action={action} needs sessionId (from action=start)")
        sess = self.sessions.get(sid)
        if sess is None:
            return ToolResult.fail(Code.NOT_FOUND, f"no GUI agent session '{sid}'; start one first")
        if action == "status":
            return ToolResult.ok(f"session {sid} is {sess.status}", sess.view())
        if sess.status != "pending":
            return ToolResult.fail(Code.CONFLICT, f"session {sid} already {sess.status}; start a new session")
        sess.run = self.executor.run(phone, sess.app, sess.instruction, self.budget)
        sess.status = sess.run.status
        if sess.status == "completed":
            return ToolResult.ok(f"GUI agent completed the task in {sess.app}", sess.view())
        # A failed run is still a successful tool call: its step log is the evidence the planner needs.
        return ToolResult.ok(f"GUI agent failed in {sess.app}: {sess.run.error}", sess.view())
