"""Developer options: unlocking via the build number, USB and wireless debugging, animation scales, mock location
and bug reports."""

from __future__ import annotations

import random
from typing import Any

from devices.virtual.domains._shared import switch, switch_check, toggle
from devices.virtual.registry import Domain, Element, P, err, ok
from devices.virtual.tasks import Act, Call, Draft, Say, Template, gui_agent
from devices.virtual.wording import pick
from harness.contract import Code, ToolResult

TAPS_TO_UNLOCK = 7
SCALES = [0.0, 0.5, 1.0, 1.5, 2.0, 5.0, 10.0]
MOCK_CAPABLE = ["Fake GPS Go", "GPS Joystick"]  # apps (apps domain) that declare the mock-location capability
BUG_REPORT_STEPS = {"interactive": 2, "full": 4}  # planner steps until a report is ready

DOMAIN = Domain(
    "developer",
    "Developer options",
    initial={
        "build_taps": 0,
        "unlocked": False,
        "enabled": False,
        "usb_debugging": False,
        "wireless_debugging": False,
        "authorized_computers": ["Work Laptop"],
        "stay_awake": False,
        "animation": {"window": 1.0, "transition": 1.0, "animator": 1.0},
        "mock_location_app": None,
        "show_taps": False,
        "pointer_location": False,
        "usb_config": "charging",
        "background_limit": "standard",
        "dont_keep_activities": False,
        "bug_reports": [],
        "next_report": 1,
    },
)
D = DOMAIN

_OFF_MSG = "developer options are off; turn them on first (set_developer_options)"
_ON = {"developer.unlocked": True, "developer.enabled": True}


def _need_dev(s: dict[str, Any]) -> ToolResult | None:
    if not s["enabled"]:
        return ToolResult.fail(Code.PREREQUISITE, _OFF_MSG)
    return None


def _flag(phone: Any, s: dict[str, Any], key: str, value: bool, label: str) -> ToolResult:
    """Set one boolean developer setting (needs developer options on) and log it as developer.<key>."""
    if (bad := _need_dev(s)) is not None:
        return bad
    return switch(phone, s, key, value, label, f"developer.{key}")


# -- Unlocking and the master switch --------------------------------------------------------------


@D.tool(
    "get_developer_options",
    "Get whether developer options are unlocked and on, and every developer setting.",
    read_only=True,
    cases=[ok({}), ok({}, _ON)],
)
def get_developer_options(phone, s, args):
    data = {k: v for k, v in s.items() if k not in ("bug_reports", "next_report")}
    data["animation"] = dict(s["animation"])
    data["authorized_computers"] = list(s["authorized_computers"])
    if not s["unlocked"]:
        data["hint"] = (
            f"tap the build number {TAPS_TO_UNLOCK - s['build_taps']} more time(s) to unlock developer options"
        )
    return ToolResult.ok("developer options " + ("on" if s["enabled"] else "off"), data)


@D.tool(
    "tap_build_number",
    "Tap 'Build number' in About phone once; seven taps unlock developer options.",
    cases=[ok({}), ok({}, {"developer.build_taps": 6}), ok({}, _ON)],
    check=lambda ph, a: ph.state["developer"]["build_taps"] > 0 or ph.state["developer"]["unlocked"],
)
def tap_build_number(phone, s, args):
    if s["unlocked"]:
        return ToolResult.ok("No need, you are already a developer.", {"developer": True, "steps_left": 0})
    s["build_taps"] += 1
    left = TAPS_TO_UNLOCK - s["build_taps"]
    if left <= 0:
        s["unlocked"] = s["enabled"] = True
        phone.log("developer.options", enabled=True)
        return ToolResult.ok("You are now a developer! Developer options are on.", {"developer": True, "steps_left": 0})
    phone.log("developer.build_tap", taps=s["build_taps"])
    return ToolResult.ok(
        f"You are now {left} step{'s' if left > 1 else ''} away from being a developer.",
        {"developer": False, "steps_left": left},
    )


@D.tool(
    "set_developer_options",
    "Turn developer options on or off. Turning them off resets debugging and other developer settings.",
    {"enabled": P.boolean("true to turn developer options on")},
    ["enabled"],
    codes=(412,),
    cases=[
        ok({"enabled": True}, {"developer.unlocked": True}),
        ok({"enabled": False}, _ON),
        err(412, {"enabled": True}, note="still hidden: tap the build number"),
        err(400, {"enabled": 1}),
    ],
    prerequisites=["developer options unlocked (build number tapped 7 times)"],
    check=switch_check("developer", "enabled"),
)
def set_developer_options(phone, s, args):
    if args["enabled"] and not s["unlocked"]:
        left = TAPS_TO_UNLOCK - s["build_taps"]
        return ToolResult.fail(
            Code.PREREQUISITE, f"developer options are hidden; tap the build number {left} more time(s) to unlock them"
        )
    if s["enabled"] != args["enabled"]:
        s["enabled"] = args["enabled"]
        if not args["enabled"]:
            # As on Android: switching developer options off turns the debugging switches off too.
            for key in ("usb_debugging", "wireless_debugging", "stay_awake", "show_taps", "pointer_location"):
                s[key] = False
        phone.log("developer.options", enabled=args["enabled"])
    return ToolResult.ok(f"developer options {'on' if args['enabled'] else 'off'}", {"enabled": s["enabled"]})


# -- Debugging ------------------------------------------------------------------------------------


@D.tool(
    "set_usb_debugging",
    "Turn USB debugging (adb over USB) on or off. Needs developer options on.",
    {"enabled": P.boolean("true to allow USB debugging")},
    ["enabled"],
    codes=(412,),
    cases=[
        ok({"enabled": True}, _ON),
        err(412, {"enabled": True}),
        err(412, {"enabled": True}, {"developer.unlocked": True}),
    ],
    prerequisites=["developer options on"],
    check=switch_check("developer", "usb_debugging"),
)
def set_usb_debugging(phone, s, args):
    return _flag(phone, s, "usb_debugging", args["enabled"], "USB debugging")


@D.tool(
    "set_wireless_debugging",
    "Turn wireless debugging (adb over Wi-Fi) on or off. Needs developer options on and a Wi-Fi connection.",
    {"enabled": P.boolean("true to allow wireless debugging")},
    ["enabled"],
    codes=(412,),
    cases=[
        ok({"enabled": True}, _ON),
        err(412, {"enabled": True}),
        err(412, {"enabled": True}, {**_ON, "connectivity.wifi.enabled": False, "connectivity.wifi.connected": None}),
    ],
    prerequisites=["developer options on", "connected to Wi-Fi"],
    check=switch_check("developer", "wireless_debugging"),
)
def set_wireless_debugging(phone, s, args):
    if args["enabled"] and s["enabled"]:
        wifi = phone.state.get("connectivity", {}).get("wifi", {})
        if not wifi.get("connected"):
            return ToolResult.fail(
                Code.PREREQUISITE, "wireless debugging needs a Wi-Fi connection; connect to Wi-Fi first"
            )
    res = _flag(phone, s, "wireless_debugging", args["enabled"], "wireless debugging")
    if res.success and args["enabled"]:
        res.data["pairing_network"] = phone.state["connectivity"]["wifi"]["connected"]
    return res


@D.tool(
    "revoke_usb_debugging_authorizations",
    "Forget every computer previously allowed to debug this phone over USB.",
    codes=(409, 412),
    cases=[ok({}, _ON), err(409, {}, {**_ON, "developer.authorized_computers": []}), err(412, {})],
    check=lambda ph, a: ph.state["developer"]["authorized_computers"] == [],
)
def revoke_usb_debugging_authorizations(phone, s, args):
    if (bad := _need_dev(s)) is not None:
        return bad
    if not s["authorized_computers"]:
        return ToolResult.fail(Code.CONFLICT, "no computers are authorized for USB debugging")
    gone = s["authorized_computers"]
    s["authorized_computers"] = []
    phone.log("developer.revoke_authorizations", count=len(gone))
    return ToolResult.ok(f"revoked {len(gone)} authorization(s)", {"revoked": gone})


@D.tool(
    "set_usb_configuration",
    "Choose what a USB connection is used for by default.",
    {"mode": P.enum(["charging", "file_transfer", "ptp", "midi", "usb_tethering"], "default USB mode")},
    ["mode"],
    codes=(412,),
    cases=[ok({"mode": "file_transfer"}, _ON), err(412, {"mode": "ptp"}), err(400, {"mode": "warp"})],
    prerequisites=["developer options on"],
    check=lambda ph, a: ph.state["developer"]["usb_config"] == a["mode"],
)
def set_usb_configuration(phone, s, args):
    if (bad := _need_dev(s)) is not None:
        return bad
    if s["usb_config"] != args["mode"]:
        s["usb_config"] = args["mode"]
        phone.log("developer.usb_config", mode=args["mode"])
    return ToolResult.ok(f"default USB configuration: {args['mode']}", {"usb_config": args["mode"]})


# -- Display and behaviour switches ----------------------------------------------------------------


@D.tool(
    "set_stay_awake",
    "Keep the screen on while charging (developer option).",
    {"enabled": P.boolean("true to keep the screen awake while charging")},
    ["enabled"],
    codes=(412,),
    cases=[ok({"enabled": True}, _ON), err(412, {"enabled": True})],
    prerequisites=["developer options on"],
    check=switch_check("developer", "stay_awake"),
)
def set_stay_awake(phone, s, args):
    return _flag(phone, s, "stay_awake", args["enabled"], "stay awake while charging")


@D.tool(
    "set_show_taps",
    "Show a visual dot where the screen is touched (for demos and recordings).",
    {"enabled": P.boolean("true to show taps")},
    ["enabled"],
    codes=(412,),
    cases=[ok({"enabled": True}, _ON), err(412, {"enabled": True})],
    prerequisites=["developer options on"],
    check=switch_check("developer", "show_taps"),
)
def set_show_taps(phone, s, args):
    return _flag(phone, s, "show_taps", args["enabled"], "show taps")


@D.tool(
    "set_pointer_location",
    "Overlay the current touch coordinates on screen.",
    {"enabled": P.boolean("true to show pointer location")},
    ["enabled"],
    codes=(412,),
    cases=[ok({"enabled": True}, _ON), err(412, {"enabled": True})],
    prerequisites=["developer options on"],
    check=switch_check("developer", "pointer_location"),
)
def set_pointer_location(phone, s, args):
    return _flag(phone, s, "pointer_location", args["enabled"], "pointer location")


@D.tool(
    "set_dont_keep_activities",
    "Destroy every activity as soon as the user leaves it (app testing).",
    {"enabled": P.boolean("true to destroy activities")},
    ["enabled"],
    codes=(412,),
    cases=[ok({"enabled": True}, _ON), err(412, {"enabled": True})],
    prerequisites=["developer options on"],
    check=switch_check("developer", "dont_keep_activities"),
)
def set_dont_keep_activities(phone, s, args):
    return _flag(phone, s, "dont_keep_activities", args["enabled"], "don't keep activities")


@D.tool(
    "set_animation_scale",
    "Set window, transition and/or animator duration scale (0 turns animations off).",
    {
        "kind": P.enum(["window", "transition", "animator", "all"], "which scale; 'all' sets the three"),
        "scale": P.number("one of 0, 0.5, 1, 1.5, 2, 5, 10", 0, 10),
    },
    ["kind", "scale"],
    codes=(400, 412),
    cases=[
        ok({"kind": "all", "scale": 0.5}, _ON),
        ok({"kind": "window", "scale": 0}, _ON),
        err(400, {"kind": "all", "scale": 0.7}, _ON, note="unsupported scale"),
        err(412, {"kind": "all", "scale": 0.5}),
        err(400, {"kind": "all", "scale": 20}),
    ],
    prerequisites=["developer options on"],
    check=lambda ph, a: all(
        ph.state["developer"]["animation"][k] == a["scale"]
        for k in (("window", "transition", "animator") if a["kind"] == "all" else (a["kind"],))
    ),
)
def set_animation_scale(phone, s, args):
    if (bad := _need_dev(s)) is not None:
        return bad
    scale = float(args["scale"])
    if scale not in SCALES:
        return ToolResult.fail(
            Code.BAD_ARGUMENT, f"scale {args['scale']} is not offered; choose one of 0, 0.5, 1, 1.5, 2, 5, 10"
        )
    kinds = ("window", "transition", "animator") if args["kind"] == "all" else (args["kind"],)
    anim = s["animation"]
    changed = [k for k in kinds if anim[k] != scale]
    for k in changed:
        anim[k] = scale
    if changed:
        phone.log("developer.animation", kinds=changed, scale=scale)
    return ToolResult.ok(f"{args['kind']} animation scale {scale:g}x", {"animation": dict(anim)})


@D.tool(
    "set_background_process_limit",
    "Limit how many apps may keep running in the background.",
    {"limit": P.enum(["standard", "none", "1", "2", "3", "4"], "'standard', 'none' or a maximum number of processes")},
    ["limit"],
    codes=(412,),
    cases=[ok({"limit": "2"}, _ON), err(412, {"limit": "2"}), err(400, {"limit": "9"})],
    prerequisites=["developer options on"],
    check=lambda ph, a: ph.state["developer"]["background_limit"] == a["limit"],
)
def set_background_process_limit(phone, s, args):
    if (bad := _need_dev(s)) is not None:
        return bad
    if s["background_limit"] != args["limit"]:
        s["background_limit"] = args["limit"]
        phone.log("developer.background_limit", limit=args["limit"])
    return ToolResult.ok(f"background process limit: {args['limit']}", {"background_limit": args["limit"]})


@D.tool(
    "set_mock_location_app",
    "Choose the app allowed to fake the phone's location ('none' clears it). "
    "The app must hold the location permission.",
    {"app": P.string("installed mock-location app, or 'none'")},
    ["app"],
    codes=(404, 409, 412),
    cases=[
        ok({"app": "Fake GPS Go"}, _ON),
        ok({"app": "none"}, _ON),
        err(412, {"app": "Fake GPS Go"}),
        err(412, {"app": "GPS Joystick"}, _ON, note="location permission not granted"),
        err(409, {"app": "Maps"}, _ON, note="not a mock location app"),
        err(404, {"app": "Teleporter"}, _ON),
    ],
    prerequisites=["developer options on", "app installed with location permission"],
    check=lambda ph, a: (ph.state["developer"]["mock_location_app"] or "none").lower() == a["app"].strip().lower(),
)
def set_mock_location_app(phone, s, args):
    if (bad := _need_dev(s)) is not None:
        return bad
    name = args["app"].strip()
    if name.lower() == "none":
        app = None
    else:
        installed = phone.state["apps"]["installed"]
        app = next((n for n in installed if n.lower() == name.lower()), None)
        if app is None:
            return ToolResult.fail(Code.NOT_FOUND, f"no installed app named '{name}'")
        if app not in MOCK_CAPABLE:
            return ToolResult.fail(
                Code.CONFLICT,
                f"{app} is not a mock location app; installed ones: "
                + ", ".join(n for n in MOCK_CAPABLE if n in installed),
            )
        if not installed[app]["permissions"].get("location"):
            return ToolResult.fail(Code.PREREQUISITE, f"{app} needs the location permission; grant it first")
    if s["mock_location_app"] != app:
        s["mock_location_app"] = app
        phone.log("developer.mock_location", app=app)
    return ToolResult.ok(f"mock location app: {app or 'none'}", {"mock_location_app": app})


# -- Bug reports (asynchronous) ---------------------------------------------------------------------


@D.tool(
    "take_bug_report",
    "Start capturing a bug report; it completes in the background over a few steps.",
    {"kind": P.enum(["interactive", "full"], "interactive (faster, smaller) or full")},
    ["kind"],
    codes=(409, 412),
    cases=[
        ok({"kind": "full"}, _ON),
        err(412, {"kind": "full"}),
        err(
            409,
            {"kind": "full"},
            {
                **_ON,
                "developer.bug_reports": [
                    {"id": "bugreport-1", "kind": "full", "status": "in_progress", "steps_left": 3}
                ],
            },
        ),
        err(400, {"kind": "tiny"}),
    ],
    prerequisites=["developer options on", "no bug report in progress"],
    check=lambda ph, a: bool(ph.state["developer"]["bug_reports"]),
)
def take_bug_report(phone, s, args):
    if (bad := _need_dev(s)) is not None:
        return bad
    if s["bug_reports"] and s["bug_reports"][-1]["status"] == "in_progress":
        return ToolResult.fail(
            Code.CONFLICT, f"bug report {s['bug_reports'][-1]['id']} is still being captured; wait for it"
        )
    rid = f"bugreport-{s['next_report']}"
    s["next_report"] += 1
    rep = {
        "id": rid,
        "kind": args["kind"],
        "status": "in_progress",
        "steps_left": BUG_REPORT_STEPS[args["kind"]] + phone.slowdown("take_bug_report"),
    }
    s["bug_reports"].append(rep)
    phone.log("developer.bug_report_start", id=rid)
    return ToolResult.ok(f"capturing {args['kind']} bug report {rid}", {"id": rid, "status": "in_progress"})


@D.tool(
    "get_bug_report_status",
    "Get the status of the latest (or a named) bug report.",
    {"report_id": P.string("bug report id, e.g. bugreport-3")},
    read_only=True,
    codes=(404,),
    cases=[
        ok({}, {"developer.bug_reports": [{"id": "bugreport-1", "kind": "full", "status": "ready", "steps_left": 0}]}),
        err(404, {}),
        err(404, {"report_id": "bugreport-9"}),
    ],
)
def get_bug_report_status(phone, s, args):
    reps = s["bug_reports"]
    rep = (
        next((r for r in reps if r["id"] == args["report_id"]), None)
        if "report_id" in args
        else (reps[-1] if reps else None)
    )
    if rep is None:
        return ToolResult.fail(
            Code.NOT_FOUND, "no such bug report" if "report_id" in args else "no bug report has been taken"
        )
    data = {"id": rep["id"], "kind": rep["kind"], "status": rep["status"]}
    if rep["status"] == "ready":
        data["file"] = f"{rep['id']}.zip"
    return ToolResult.ok(f"{rep['id']}: {rep['status']}", data)


@D.on_tick
def _bug_report_progress(phone, s):
    reps = s["bug_reports"]
    if reps and reps[-1]["status"] == "in_progress":
        rep = reps[-1]
        rep["steps_left"] -= 1
        if rep["steps_left"] <= 0:
            rep["status"] = "ready"
            phone.log("developer.bug_report_ready", id=rep["id"])


D.skill(
    "developer_tools",
    "Developer tools",
    "Developer options, USB and wireless debugging, and debugging authorizations.",
    [
        "get_developer_options",
        "set_developer_options",
        "tap_build_number",
        "set_usb_debugging",
        "set_wireless_debugging",
        "revoke_usb_debugging_authorizations",
    ],
    [
        "Read get_developer_options first; every debugging switch needs developer options on (412 otherwise).",
        "If developer options are hidden, tap the build number until the result says you are a developer.",
        "Wireless debugging also needs a Wi-Fi connection; connect Wi-Fi before enabling it.",
        "Do not turn developer options off to fix a problem: it resets every debugging switch.",
    ],
)


# -- App screen -----------------------------------------------------------------------------------

_SWITCHES = [
    ("usb_debugging", "USB debugging", "set_usb_debugging"),
    ("wireless_debugging", "Wireless debugging", "set_wireless_debugging"),
    ("stay_awake", "Stay awake", "set_stay_awake"),
    ("show_taps", "Show taps", "set_show_taps"),
    ("pointer_location", "Pointer location", "set_pointer_location"),
    ("dont_keep_activities", "Don't keep activities", "set_dont_keep_activities"),
]


@D.app("Developer Options", package="com.android.settings.development")
def developer_screen(phone, route):
    s = phone.state["developer"]
    if route == "about":
        return "About phone", [
            Element("model", "Model: Flywheel Virtual Phone"),
            Element("android", "Android version: 15"),
            Element("build_number", "Build number", kind="item", clickable=True, tool=("tap_build_number", {})),
            Element(
                "dev_state",
                "You are a developer" if s["unlocked"] else f"{TAPS_TO_UNLOCK - s['build_taps']} taps to go",
            ),
        ]
    if route == "animation":
        els = [Element("hdr_anim", "Animation scale (all)", kind="header")]
        for sc in SCALES:
            els.append(
                Element(
                    f"scale:{sc:g}",
                    f"{sc:g}x",
                    kind="item",
                    clickable=s["enabled"],
                    tool=("set_animation_scale", {"kind": "all", "scale": sc}),
                )
            )
        return "Animation scale", els
    els = [
        Element("about", "About phone", kind="item", clickable=True, to="about"),
        toggle("master", "Use developer options", s["enabled"], "set_developer_options", clickable=s["unlocked"]),
    ]
    if not s["unlocked"]:
        els.append(Element("hidden", "Hidden: tap Build number 7 times"))
        return "Developer options", els
    for key, label, tool in _SWITCHES:
        els.append(toggle(key, label, s[key], tool, clickable=s["enabled"]))
    a = s["animation"]
    els.append(
        Element(
            "animation",
            f"Animation scale: {a['window']:g}x / {a['transition']:g}x / {a['animator']:g}x",
            kind="item",
            clickable=s["enabled"],
            to="animation",
        )
    )
    return "Developer options", els


@D.gui_script("Developer Options")
def developer_gui(instruction: str) -> list[tuple[Any, ...]] | None:
    """Scripted GUI agent: unlock developer options, or flip one named switch."""
    low = instruction.lower()
    if "unlock" in low or "become a developer" in low or "build number" in low:
        return (
            [("tap", "About phone")]
            + [("tap", "Build number")] * TAPS_TO_UNLOCK
            + [("confirm", "You are a developer", "developer options unlocked"), ("back",)]
        )
    for key, label, _tool in _SWITCHES:
        if label.lower() in low:
            return [("tap", key), ("confirm", label, f"{label} toggled")]
    if "developer options" in low and ("on" in low.split() or "enable" in low):
        return [("tap", "master"), ("confirm", "USB debugging", "developer options on")]
    return None


# -- Task templates -------------------------------------------------------------------------------

_ROUTINE_NAMES = ["Desk Mode", "Deep Work setup", "Build Mode", "Focus Desk"]
_PEERS = ["Work Laptop", "Home PC", "Studio iMac", "Travel Notebook"]


def _laptop_routine(rng: random.Random) -> Draft:
    """Showcase 1: a fragment points to the full routine; a focused second search finds it; run it in order."""
    editor = rng.choice(["Acode", "Spck Editor"])
    peer = rng.choice(_PEERS)
    method = rng.choice(["wifi", "wifi", "bluetooth"])
    code = rng.choice(_ROUTINE_NAMES)
    dev_on = rng.random() < 0.6
    via = {"wifi": "Wi-Fi", "bluetooth": "Bluetooth"}[method]
    memory = [
        {
            "id": "m-laptop-fragment",
            "category": "routines_habits",
            "title": "Working on the laptop",
            "content": f"When I work on my laptop, set the phone up with {code}; see my full list for the steps.",
            "tags": ["laptop", "work"],
        },
        {
            "id": "m-routine-full",
            "category": "routines_habits",
            "title": f"{code} steps",
            "content": f"{code} steps, in this order: 1) open {editor}; 2) share keyboard and mouse from the {peer} "
            f"to this phone over {via}; 3) enable USB debugging as the very last step.",
            "tags": [code.lower(), "steps"],
        },
        {
            "id": "m-laptop-charger",
            "category": "important_info",
            "title": "Laptop charger",
            "content": "The laptop charger is in the blue backpack, front pocket.",
            "tags": ["laptop"],
        },
        {
            "id": "m-gaming",
            "category": "routines_habits",
            "title": "Gaming routine",
            "content": "For gaming: do not disturb on, brightness max, close Slack.",
            "tags": ["gaming"],
        },
        {
            "id": "m-commute",
            "category": "routines_habits",
            "title": "Commute",
            "content": "On the train I open Spotify and turn on Bluetooth for the Galaxy Buds.",
            "tags": ["commute"],
        },
        {
            "id": "m-demo",
            "category": "preferences",
            "title": "Demo recordings",
            "content": "When recording demos I turn on show taps and keep animations at 1x.",
            "tags": ["demo", "developer"],
        },
    ]
    rng.shuffle(memory)
    setup: dict[str, Any] = {"developer.unlocked": True, "developer.enabled": dev_on}
    goal: dict[str, Any] = {
        "apps.foreground": editor,
        f"apps.installed.{editor}.running": True,
        "connectivity.sharing.enabled": True,
        "connectivity.sharing.peer": peer,
        "connectivity.sharing.direction": "laptop_to_phone",
        "connectivity.sharing.method": method,
        "developer.usb_debugging": True,
    }
    plan: list[Any] = [
        Act(
            "The user means a saved routine; search memory for it.",
            [Call("search_user_memory", {"query": "working on laptop phone routine", "maxResults": 3})],
        ),
        Act(
            f"That entry is only a pointer to the '{code}' routine; search for the full steps.",
            [Call("search_user_memory", {"query": f"{code} steps", "maxResults": 3})],
        ),
        Act(f"Step 1 of {code}: open {editor}.", [Call("launch_app", {"app": editor})]),
    ]
    if method == "bluetooth":
        plan.append(Act("Sharing over Bluetooth needs Bluetooth on.", [Call("set_bluetooth", {"enabled": True})]))
        goal["connectivity.bluetooth.enabled"] = True
    plan.append(
        Act(
            f"Step 2: share keyboard and mouse from the {peer} to the phone over {via}.",
            [
                Call(
                    "set_keyboard_mouse_sharing",
                    {"enabled": True, "peer": peer, "direction": "laptop_to_phone", "method": method},
                )
            ],
        )
    )
    plan.append(
        Act("Step 3 is USB debugging, which needs developer options; check them.", [Call("get_developer_options")])
    )
    if not dev_on:
        plan.append(
            Act("Developer options are off; turn them on first.", [Call("set_developer_options", {"enabled": True})])
        )
        goal["developer.enabled"] = True
    plan += [
        Act("Last step: USB debugging.", [Call("set_usb_debugging", {"enabled": True})]),
        Say(
            f"{code} is ready: {editor} is open, the {peer}'s keyboard and mouse control the phone over {via}, "
            "and USB debugging is on (enabled last)."
        ),
    ]
    return Draft(
        instruction=pick(
            rng,
            [
                "I'm starting work on my laptop. Set my phone up the usual way.",
                "Laptop time: get the phone ready like I always do.",
                "Set up my phone for working from the laptop, my usual routine.",
            ],
        ),
        params={"editor": editor, "peer": peer, "method": method, "routine": code, "dev_on": dev_on},
        setup=setup,
        memory=memory,
        tools=[
            "launch_app",
            "close_app",
            "set_keyboard_mouse_sharing",
            "get_keyboard_mouse_sharing",
            "set_bluetooth",
            "get_developer_options",
            "set_developer_options",
            "set_usb_debugging",
            "set_stay_awake",
        ],
        goal=goal,
        order=["apps.open", "connectivity.sharing", "developer.usb_debugging"],
        plan=plan,
        budget=20,
    )


def _usb_prereq(rng: random.Random) -> Draft:
    """Error recovery: USB debugging fails with 412; unlock or enable developer options, then retry."""
    unlocked = rng.random() < 0.5
    taps = 0 if unlocked else rng.randint(0, 5)
    setup: dict[str, Any] = {
        "developer.unlocked": unlocked,
        "developer.build_taps": TAPS_TO_UNLOCK if unlocked else taps,
    }
    plan: list[Any] = [Act("Turn USB debugging on.", [Call("set_usb_debugging", {"enabled": True})], may_fail=True)]
    if unlocked:
        plan.append(
            Act("412: developer options are off. Turn them on.", [Call("set_developer_options", {"enabled": True})])
        )
    else:
        plan.append(
            Act(
                "412: developer options are off. Try turning them on.",
                [Call("set_developer_options", {"enabled": True})],
                may_fail=True,
            )
        )
        plan.append(
            Act(
                f"They are hidden; tap the build number until unlocked ({TAPS_TO_UNLOCK - taps} taps).",
                [Call("tap_build_number", until=lambda r: bool(r.get("data", {}).get("developer")))],
            )
        )
    plan += [
        Act("Developer options are on now; retry USB debugging.", [Call("set_usb_debugging", {"enabled": True})]),
        Say(
            "USB debugging is on. It needed developer options, which I "
            + ("turned on" if unlocked else "unlocked by tapping the build number")
            + " first."
        ),
    ]
    return Draft(
        instruction=pick(
            rng,
            [
                "Turn on USB debugging.",
                "Enable adb / USB debugging on my phone.",
                "I need USB debugging enabled so I can connect Android Studio.",
            ],
        ),
        params={"unlocked": unlocked, "taps": taps},
        setup=setup,
        tools=[
            "set_usb_debugging",
            "set_developer_options",
            "tap_build_number",
            "get_developer_options",
            "set_stay_awake",
            "set_usb_configuration",
        ],
        goal={"developer.usb_debugging": True, "developer.enabled": True},
        allowed=["developer.unlocked", "developer.build_taps"],
        plan=plan,
        budget=20,
    )


def _animations(rng: random.Random) -> Draft:
    scale = rng.choice([0.0, 0.5, 1.5, 2.0])
    dev_on = rng.random() < 0.6
    start = rng.choice([1.0, 1.0, 5.0]) if scale != 1.0 else 1.0
    setup: dict[str, Any] = {
        "developer.unlocked": True,
        "developer.enabled": dev_on,
        "developer.animation": {"window": start, "transition": 1.0, "animator": start},
    }
    what = {
        0.0: "Turn off all animations",
        0.5: "Make animations twice as fast (0.5x)",
        1.5: "Slow animations down to 1.5x",
        2.0: "Slow every animation to 2x",
    }[scale]
    plan: list[Any] = [Act("Animation scales are developer options; check them.", [Call("get_developer_options")])]
    goal: dict[str, Any] = {f"developer.animation.{k}": scale for k in ("window", "transition", "animator")}
    if not dev_on:
        plan.append(Act("Developer options are off; turn them on.", [Call("set_developer_options", {"enabled": True})]))
        goal["developer.enabled"] = True
    plan += [
        Act(f"Set all three scales to {scale:g}x.", [Call("set_animation_scale", {"kind": "all", "scale": scale})]),
        Say(f"Window, transition and animator scales are now {scale:g}x."),
    ]
    return Draft(
        instruction=pick(
            rng, [f"{what}.", f"{what}, all three animation scales.", f"Developer settings: {what.lower()}."]
        ),
        params={"scale": scale, "dev_on": dev_on},
        setup=setup,
        tools=[
            "get_developer_options",
            "set_developer_options",
            "set_animation_scale",
            "set_show_taps",
            "set_pointer_location",
        ],
        goal=goal,
        plan=plan,
    )


def _skill_wireless(rng: random.Random) -> Draft:
    """Skills: load developer_tools; wireless debugging needs developer options and a Wi-Fi connection."""
    wifi_off = rng.random() < 0.5
    dev_on = rng.random() < 0.5
    setup: dict[str, Any] = {"developer.unlocked": True, "developer.enabled": dev_on}
    goal: dict[str, Any] = {"developer.wireless_debugging": True}
    allowed: list[str] = []
    plan: list[Any] = [
        Act(
            "Load the developer tools skill.", [Call("skill__developer_tools", {"reason": "enable wireless debugging"})]
        ),
        Act(
            "Rules say: read the developer options and Wi-Fi first (independent, in parallel).",
            [Call("get_developer_options"), Call("get_wifi_status")],
        ),
    ]
    if wifi_off:
        setup.update({"connectivity.wifi.enabled": False, "connectivity.wifi.connected": None})
        plan.append(Act("Wi-Fi is off; wireless debugging needs a connection.", [Call("set_wifi", {"enabled": True})]))
        goal["connectivity.wifi.enabled"] = True
        allowed.append("connectivity.wifi.connected")
    if not dev_on:
        plan.append(Act("Developer options are off; turn them on.", [Call("set_developer_options", {"enabled": True})]))
        goal["developer.enabled"] = True
    plan += [
        Act("Enable wireless debugging.", [Call("set_wireless_debugging", {"enabled": True})]),
        Say(
            "Wireless debugging is on" + (" (I turned Wi-Fi on for it)" if wifi_off else "") + "; pair from Android "
            "Studio with the pairing code."
        ),
    ]
    return Draft(
        instruction=pick(
            rng,
            [
                "Turn on wireless debugging so I can use adb over Wi-Fi.",
                "Enable wireless adb on the phone.",
                "I want to debug over Wi-Fi; switch on wireless debugging.",
            ],
        ),
        params={"wifi_off": wifi_off, "dev_on": dev_on},
        setup=setup,
        tools=["get_wifi_status", "set_wifi", "set_bluetooth"],
        skills=["developer_tools", "app_permissions", "screen_casting"],
        goal=goal,
        allowed=allowed,
        plan=plan,
    )


def _bug_report(rng: random.Random) -> Draft:
    kind = rng.choice(["interactive", "full"])
    n = rng.randint(1, 40)
    slow = rng.random() < 0.3
    rid = f"bugreport-{n}"
    return Draft(
        instruction=pick(
            rng,
            [
                f"Take a {kind} bug report and tell me its id when it's done.",
                f"Capture a {kind} bug report; let me know the report id once it's ready.",
                f"I need a {kind} bug report for the developers. Tell me when it's finished.",
            ],
        ),
        params={"kind": kind, "id": rid, "slow": slow},
        setup={**_ON, "developer.next_report": n},
        faults=[{"tool": "take_bug_report", "kind": "slow", "delay": 3}] if slow else [],
        tools=["take_bug_report", "get_bug_report_status", "get_developer_options", "set_usb_debugging"],
        goal={"developer.bug_reports.0.status": "ready", "developer.bug_reports.0.kind": kind},
        allowed=["developer.bug_reports", "developer.next_report"],
        answer=[rid],
        plan=[
            Act(f"Start a {kind} bug report.", [Call("take_bug_report", {"kind": kind}, name="rep")]),
            Act(
                "It completes in the background; poll until it is ready.",
                [
                    Call(
                        "get_bug_report_status",
                        {"report_id": rid},
                        until=lambda r: r.get("data", {}).get("status") == "ready",
                        max_tries=12,
                    )
                ],
            ),
            Say(f"The {kind} bug report is ready: {rid} ({rid}.zip)."),
        ],
        budget=24,
    )


def _mock_location(rng: random.Random) -> Draft:
    """Multi-turn + error recovery: the mock app lacks location permission (412); grant it, retry; then a follow-up."""
    app = rng.choice(MOCK_CAPABLE)
    dev_on = rng.random() < 0.7
    follow = rng.choice(["stay_awake", "show_taps"])
    setup: dict[str, Any] = {
        "developer.unlocked": True,
        "developer.enabled": dev_on,
        f"apps.installed.{app}.permissions.location": False,
    }
    goal: dict[str, Any] = {
        "developer.mock_location_app": app,
        f"apps.installed.{app}.permissions.location": True,
        f"developer.{follow}": True,
    }
    plan: list[Any] = []
    if not dev_on:
        plan.append(Act("Mock location is a developer option; check them.", [Call("get_developer_options")]))
        plan.append(Act("Developer options are off; turn them on.", [Call("set_developer_options", {"enabled": True})]))
        goal["developer.enabled"] = True
    plan += [
        Act(f"Select {app} as the mock location app.", [Call("set_mock_location_app", {"app": app})], may_fail=True),
        Act(
            f"412: {app} needs the location permission; grant it.",
            [Call("set_app_permission", {"app": app, "permission": "location", "granted": True})],
        ),
        Act("Retry.", [Call("set_mock_location_app", {"app": app})]),
        Say(f"{app} is now the mock location app (I granted it the location permission it needed)."),
        Act("The follow-up asks for one more developer switch.", [Call(f"set_{follow}", {"enabled": True})]),
        Say(
            {"stay_awake": "The screen now stays on while charging.", "show_taps": "Taps are now shown on screen."}[
                follow
            ]
        ),
    ]
    return Draft(
        instruction=pick(
            rng,
            [
                f"Use {app} to fake my GPS location.",
                f"Set {app} as my mock location app.",
                f"I'm testing a maps app; make {app} the mock location provider.",
            ],
        ),
        params={"app": app, "dev_on": dev_on, "follow": follow},
        setup=setup,
        tools=[
            "set_mock_location_app",
            "get_developer_options",
            "set_developer_options",
            "set_app_permission",
            "get_app_permissions",
            "set_stay_awake",
            "set_show_taps",
            "set_pointer_location",
        ],
        followups=[
            {
                "stay_awake": "Thanks. Also keep the screen on while it's charging.",
                "show_taps": "Great. Can you also make my taps visible on screen? I'm recording.",
            }[follow]
        ],
        goal=goal,
        plan=plan,
    )


D.add_template(
    Template(
        "developer.laptop_work_routine",
        "developer",
        "memory",
        "Fragment memory -> focused search -> open editor, share keyboard/mouse, USB debugging last.",
        _laptop_routine,
        difficulty=3,
        domains=("developer", "connectivity", "apps"),
    )
)
D.add_template(
    Template(
        "developer.usb_debugging_prerequisite",
        "developer",
        "tool_use",
        "USB debugging 412 -> enable or unlock developer options -> retry.",
        _usb_prereq,
        tags=("error_recovery",),
        difficulty=2,
    )
)
D.add_template(
    Template(
        "developer.animation_scales",
        "developer",
        "tool_use",
        "Set all animation scales, enabling developer options if needed.",
        _animations,
        difficulty=1,
    )
)
D.add_template(
    Template(
        "developer.skill_wireless_debugging",
        "developer",
        "skills",
        "Load developer_tools; meet Wi-Fi and developer-options prerequisites; enable wireless debugging.",
        _skill_wireless,
        difficulty=2,
        domains=("developer", "connectivity"),
    )
)
D.add_template(
    Template(
        "developer.bug_report_async",
        "developer",
        "tool_use",
        "Take a bug report and poll until it is ready (sometimes slow); answer with its id.",
        _bug_report,
        difficulty=2,
    )
)
D.add_template(
    Template(
        "developer.mock_location_permission",
        "developer",
        "tool_use",
        "Mock location app needs location permission (412); then a follow-up developer switch.",
        _mock_location,
        tags=("multi_turn", "error_recovery"),
        difficulty=3,
        domains=("developer", "apps"),
    )
)


def _gui_unlock(rng: random.Random) -> Draft:
    """Sub-agent coordination: a GUI agent unlocks developer options (seven build-number taps); only after it
    confirms does the planner enable the requested debugging switch with its own tool."""
    taps = rng.randint(0, 4)
    switch = rng.choice(["usb_debugging", "stay_awake", "show_taps"])
    label = {"usb_debugging": "USB debugging", "stay_awake": "stay awake while charging", "show_taps": "show taps"}[
        switch
    ]
    return Draft(
        instruction=pick(
            rng,
            [
                f"Developer options are still hidden. Unlock them in the settings screens, then turn on {label}.",
                f"Have the GUI agent tap the build number to unlock developer options, then enable {label}.",
            ],
        ),
        params={"taps": taps, "switch": switch},
        setup={"developer.build_taps": taps},
        tools=["get_developer_options", f"set_{switch}", "set_developer_options", "set_animation_scale"],
        subagent=True,
        goal={"developer.unlocked": True, "developer.enabled": True, f"developer.{switch}": True},
        allowed=["developer.build_taps"],
        order=["developer.options", f"developer.{switch}"],
        plan=[
            *gui_agent(
                "Developer Options",
                "Unlock developer options by tapping the build number",
                think="Unlocking needs taps on the About phone screen; delegate that to the GUI agent.",
                run="Run it and wait for confirmation before touching developer settings.",
            ),
            Act(
                f"The agent confirmed developer options are unlocked; now enable {label}.",
                [Call(f"set_{switch}", {"enabled": True})],
            ),
            Say(f"Developer options are unlocked (the GUI agent tapped the build number) and {label} is on."),
        ],
    )


D.add_template(
    Template(
        "developer.gui_unlock_then_switch",
        "developer",
        "sub_agent",
        "GUI agent unlocks developer options; after it confirms, the planner enables a switch.",
        _gui_unlock,
        difficulty=2,
    )
)
