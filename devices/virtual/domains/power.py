"""Power: battery, battery saver, performance mode, charging limit, power schedules, restart and power off."""

from __future__ import annotations

import random
import re
from typing import Any

from devices.virtual.domains._shared import toggle
from devices.virtual.registry import Domain, Element, P, err, ok
from devices.virtual.tasks import Act, Call, Draft, R, Say, Template, gui_agent
from devices.virtual.wording import pick
from harness.contract import Code, ToolResult

MODES = ["power_saving", "balanced", "high_performance"]
LIMITS = [80, 85, 90, 95, 100]
TIMERS = [15, 30, 60, 120, 300, 600]
DAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
WEEKDAYS = DAYS[:5]

DOMAIN = Domain(
    "power",
    "Power, battery & performance",
    initial={
        "device": {"state": "on", "restarts": 0},
        "battery": {"level": 64, "charging": False, "health": "good", "temperature_c": 31},
        "battery_saver": {"enabled": False, "auto_on_percent": 15},
        "performance_mode": "balanced",
        "charging_limit": {"enabled": False, "percent": 100},
        "schedule": {"power_on": None, "power_off": None},
        "screen_off_timer_s": 60,
        "adaptive_battery": True,
        "usage": [
            {"app": "Video", "percent": 22},
            {"app": "Browser", "percent": 17},
            {"app": "Maps", "percent": 11},
            {"app": "Messages", "percent": 6},
            {"app": "Screen", "percent": 30},
        ],
    },
)
D = DOMAIN

_TIME_RE = re.compile(r"^([01]\d|2[0-3]):[0-5]\d$")


def _off(s: dict[str, Any]) -> ToolResult | None:
    if s["device"]["state"] == "off":
        return ToolResult.fail(Code.PREREQUISITE, "the phone is powered off; power it on first")
    return None


def _pending_writes(phone) -> list[dict[str, Any]]:
    """Unsaved writes other apps hold (notes with pending saves); powering off would lose them."""
    notes = phone.state.get("notes")
    if not isinstance(notes, dict):
        return []
    out = []
    for nid in notes.get("pending", []):
        n = notes["notes"].get(nid)
        if n is not None and not n["saved"]:
            out.append({"app": "Notes", "note_id": nid, "title": n["title"]})
    return out


def _blocked(phone, what: str) -> ToolResult | None:
    pend = _pending_writes(phone)
    if pend:
        ids = ", ".join(p["note_id"] for p in pend)
        return ToolResult.fail(
            Code.CONFLICT,
            f"{what} refused: {len(pend)} unsaved note write(s) pending ({ids}); "
            "power off only after pending writes are saved (save_note or wait for the sync)",
        )
    return None


# -- Battery --------------------------------------------------------------------------------------


@D.tool(
    "get_battery_status",
    "Get battery level, charging state, health, battery saver, performance mode and charging limit.",
    read_only=True,
    cases=[ok({})],
)
def get_battery_status(phone, s, args):
    b = s["battery"]
    return ToolResult.ok(
        f"battery {b['level']}%{' (charging)' if b['charging'] else ''}",
        {
            "level": b["level"],
            "charging": b["charging"],
            "health": b["health"],
            "temperature_c": b["temperature_c"],
            "battery_saver": s["battery_saver"]["enabled"],
            "performance_mode": s["performance_mode"],
            "charging_limit": dict(s["charging_limit"]),
            "device_state": s["device"]["state"],
        },
    )


@D.tool(
    "get_battery_usage",
    "Get battery usage by app since the last full charge, highest first.",
    read_only=True,
    cases=[ok({})],
)
def get_battery_usage(phone, s, args):
    usage = sorted(s["usage"], key=lambda u: -u["percent"])
    return ToolResult.ok(f"{len(usage)} apps", {"usage": [dict(u) for u in usage]})


@D.tool(
    "set_battery_saver",
    "Turn battery saver on or off. It cannot be on together with high-performance mode (409).",
    {"enabled": P.boolean("true to turn battery saver on")},
    ["enabled"],
    codes=(409, 412),
    cases=[
        ok({"enabled": True}),
        ok({"enabled": False}, {"power.battery_saver.enabled": True}),
        err(409, {"enabled": True}, {"power.performance_mode": "high_performance"}),
        err(412, {"enabled": True}, {"power.device.state": "off"}),
        err(400, {"enabled": 1}),
    ],
    check=lambda ph, a: ph.state["power"]["battery_saver"]["enabled"] == a["enabled"],
)
def set_battery_saver(phone, s, args):
    if (bad := _off(s)) is not None:
        return bad
    if args["enabled"] and s["performance_mode"] == "high_performance":
        return ToolResult.fail(
            Code.CONFLICT,
            "battery saver conflicts with high-performance mode; set the performance mode to balanced first",
        )
    if s["battery_saver"]["enabled"] != args["enabled"]:
        s["battery_saver"]["enabled"] = args["enabled"]
        phone.log("power.battery_saver", enabled=args["enabled"])
    return ToolResult.ok(f"battery saver {'on' if args['enabled'] else 'off'}", dict(s["battery_saver"]))


@D.tool(
    "set_battery_saver_threshold",
    "Set the battery level at which battery saver turns on by itself (a multiple of 5, 5-75%).",
    {"percent": P.integer("battery percent", 5, 75)},
    ["percent"],
    codes=(400, 412),
    cases=[
        ok({"percent": 20}),
        err(400, {"percent": 22}),
        err(400, {"percent": 90}),
        err(412, {"percent": 20}, {"power.device.state": "off"}),
    ],
    check=lambda ph, a: ph.state["power"]["battery_saver"]["auto_on_percent"] == a["percent"],
)
def set_battery_saver_threshold(phone, s, args):
    if (bad := _off(s)) is not None:
        return bad
    if args["percent"] % 5:
        return ToolResult.fail(Code.BAD_ARGUMENT, f"percent must be a multiple of 5 (got {args['percent']})")
    if s["battery_saver"]["auto_on_percent"] != args["percent"]:
        s["battery_saver"]["auto_on_percent"] = args["percent"]
        phone.log("power.saver_threshold", percent=args["percent"])
    return ToolResult.ok(f"battery saver turns on at {args['percent']}%", dict(s["battery_saver"]))


@D.tool(
    "set_performance_mode",
    "Set the performance mode. High performance is refused while battery saver is on (409).",
    {"mode": P.enum(MODES, "performance mode")},
    ["mode"],
    codes=(409, 412),
    cases=[
        ok({"mode": "power_saving"}),
        ok({"mode": "high_performance"}),
        err(409, {"mode": "high_performance"}, {"power.battery_saver.enabled": True}),
        err(412, {"mode": "balanced"}, {"power.device.state": "off"}),
        err(400, {"mode": "turbo"}),
    ],
    check=lambda ph, a: ph.state["power"]["performance_mode"] == a["mode"],
)
def set_performance_mode(phone, s, args):
    if (bad := _off(s)) is not None:
        return bad
    if args["mode"] == "high_performance" and s["battery_saver"]["enabled"]:
        return ToolResult.fail(Code.CONFLICT, "high-performance mode is unavailable while battery saver is on")
    if s["performance_mode"] != args["mode"]:
        s["performance_mode"] = args["mode"]
        phone.log("power.performance_mode", mode=args["mode"])
    return ToolResult.ok(f"performance mode set to {args['mode']}", {"mode": args["mode"]})


@D.tool(
    "set_charging_limit",
    "Limit charging to protect the battery: 80, 85, 90, 95 or 100 percent (100 turns the limit off).",
    {"percent": P.integer("maximum charge percent", 50, 100)},
    ["percent"],
    codes=(400, 412),
    cases=[
        ok({"percent": 85}),
        ok({"percent": 100}, {"power.charging_limit": {"enabled": True, "percent": 80}}),
        err(400, {"percent": 87}),
        err(412, {"percent": 85}, {"power.device.state": "off"}),
    ],
    check=lambda ph, a: ph.state["power"]["charging_limit"]["percent"] == a["percent"],
)
def set_charging_limit(phone, s, args):
    if (bad := _off(s)) is not None:
        return bad
    if args["percent"] not in LIMITS:
        return ToolResult.fail(Code.BAD_ARGUMENT, f"charging limit must be one of {LIMITS} (got {args['percent']})")
    new = {"enabled": args["percent"] < 100, "percent": args["percent"]}
    if s["charging_limit"] != new:
        s["charging_limit"] = new
        phone.log("power.charging_limit", percent=args["percent"])
    msg = f"charging limited to {args['percent']}%" if new["enabled"] else "charging limit off"
    return ToolResult.ok(msg, dict(new))


@D.tool(
    "set_adaptive_battery",
    "Turn adaptive battery (limits background apps you rarely use) on or off.",
    {"enabled": P.boolean("true to turn it on")},
    ["enabled"],
    codes=(412,),
    cases=[ok({"enabled": False}), err(412, {"enabled": False}, {"power.device.state": "off"})],
    check=lambda ph, a: ph.state["power"]["adaptive_battery"] == a["enabled"],
)
def set_adaptive_battery(phone, s, args):
    if (bad := _off(s)) is not None:
        return bad
    if s["adaptive_battery"] != args["enabled"]:
        s["adaptive_battery"] = args["enabled"]
        phone.log("power.adaptive_battery", enabled=args["enabled"])
    return ToolResult.ok(f"adaptive battery {'on' if args['enabled'] else 'off'}", {"enabled": args["enabled"]})


@D.tool(
    "set_screen_off_timer",
    "Set how long the screen stays on without input before it turns off (seconds: 15, 30, 60, 120, 300, 600).",
    {"seconds": P.integer("seconds", 15, 600)},
    ["seconds"],
    codes=(400, 412),
    cases=[
        ok({"seconds": 30}),
        err(400, {"seconds": 45}),
        err(412, {"seconds": 30}, {"power.device.state": "off"}),
    ],
    check=lambda ph, a: ph.state["power"]["screen_off_timer_s"] == a["seconds"],
)
def set_screen_off_timer(phone, s, args):
    if (bad := _off(s)) is not None:
        return bad
    if args["seconds"] not in TIMERS:
        return ToolResult.fail(Code.BAD_ARGUMENT, f"seconds must be one of {TIMERS} (got {args['seconds']})")
    if s["screen_off_timer_s"] != args["seconds"]:
        s["screen_off_timer_s"] = args["seconds"]
        phone.log("power.screen_off_timer", seconds=args["seconds"])
    return ToolResult.ok(f"screen turns off after {args['seconds']} s", {"seconds": args["seconds"]})


# -- Scheduled power on/off -----------------------------------------------------------------------

_TIME = P.string("time of day, 24h HH:MM")
_DAYS = P.array(P.enum(DAYS, "day"), "days it repeats on (default every day)")


@D.tool("get_power_schedule", "Get the scheduled power-on and power-off times.", read_only=True, cases=[ok({})])
def get_power_schedule(phone, s, args):
    sch = s["schedule"]
    return ToolResult.ok(
        "power schedule",
        {k: (dict(v) if v else None) for k, v in sch.items()},
    )


def _schedule(phone, s, args, which: str) -> ToolResult:
    if (bad := _off(s)) is not None:
        return bad
    if not _TIME_RE.match(args["time"]):
        return ToolResult.fail(Code.BAD_ARGUMENT, f"time must be HH:MM in 24h format (got {args['time']!r})")
    days = list(dict.fromkeys(args.get("days") or DAYS))
    other = s["schedule"]["power_off" if which == "power_on" else "power_on"]
    if other and other["time"] == args["time"] and set(other["days"]) & set(days):
        return ToolResult.fail(
            Code.CONFLICT, f"the scheduled {which.replace('_', ' ')} time clashes with the other schedule"
        )
    entry = {"time": args["time"], "days": [d for d in DAYS if d in days]}
    if s["schedule"][which] != entry:
        s["schedule"][which] = entry
        phone.log(f"power.schedule_{which}", time=args["time"])
    return ToolResult.ok(
        f"{which.replace('_', ' ')} scheduled at {args['time']} on {', '.join(entry['days'])}", dict(entry)
    )


@D.tool(
    "schedule_power_on",
    "Schedule the phone to power on at a time of day (replaces any earlier power-on schedule).",
    {"time": _TIME, "days": _DAYS},
    ["time"],
    codes=(400, 409, 412),
    cases=[
        ok({"time": "07:00", "days": ["mon", "tue", "wed", "thu", "fri"]}),
        err(400, {"time": "7am"}),
        err(409, {"time": "23:00"}, {"power.schedule.power_off": {"time": "23:00", "days": DAYS}}),
        err(412, {"time": "07:00"}, {"power.device.state": "off"}),
    ],
    check=lambda ph, a: (ph.state["power"]["schedule"]["power_on"] or {}).get("time") == a["time"],
)
def schedule_power_on(phone, s, args):
    return _schedule(phone, s, args, "power_on")


@D.tool(
    "schedule_power_off",
    "Schedule the phone to power off at a time of day (replaces any earlier power-off schedule).",
    {"time": _TIME, "days": _DAYS},
    ["time"],
    codes=(400, 409, 412),
    cases=[
        ok({"time": "23:30"}),
        err(400, {"time": "25:00"}),
        err(409, {"time": "07:00", "days": ["mon"]}, {"power.schedule.power_on": {"time": "07:00", "days": DAYS}}),
        err(412, {"time": "23:30"}, {"power.device.state": "off"}),
    ],
    check=lambda ph, a: (ph.state["power"]["schedule"]["power_off"] or {}).get("time") == a["time"],
)
def schedule_power_off(phone, s, args):
    return _schedule(phone, s, args, "power_off")


@D.tool(
    "cancel_power_schedule",
    "Cancel the scheduled power-on or power-off.",
    {"which": P.enum(["power_on", "power_off"], "which schedule")},
    ["which"],
    codes=(404, 412),
    cases=[
        ok({"which": "power_off"}, {"power.schedule.power_off": {"time": "23:00", "days": DAYS}}),
        err(404, {"which": "power_on"}),
        err(412, {"which": "power_off"}, {"power.device.state": "off"}),
    ],
    check=lambda ph, a: ph.state["power"]["schedule"][a["which"]] is None,
)
def cancel_power_schedule(phone, s, args):
    if (bad := _off(s)) is not None:
        return bad
    if s["schedule"][args["which"]] is None:
        return ToolResult.fail(Code.NOT_FOUND, f"no {args['which'].replace('_', ' ')} is scheduled")
    s["schedule"][args["which"]] = None
    phone.log("power.schedule_cancel", which=args["which"])
    return ToolResult.ok(f"{args['which'].replace('_', ' ')} schedule cancelled", {"which": args["which"]})


# -- Restart and power off ------------------------------------------------------------------------


@D.tool(
    "check_pending_writes",
    "List unsaved writes in apps (e.g. notes still saving) that must be saved before a restart or power off.",
    read_only=True,
    cases=[ok({}), ok({}, {"notes.notes.note_0003.saved": False, "notes.pending": ["note_0003"]})],
)
def check_pending_writes(phone, s, args):
    pend = _pending_writes(phone)
    msg = f"{len(pend)} pending write(s); save them before powering off" if pend else "no pending writes"
    return ToolResult.ok(msg, {"pending": pend, "total": len(pend), "safe_to_power_off": not pend})


@D.tool(
    "restart_phone",
    "Restart the phone. Refused (409) while app writes are still pending.",
    codes=(409, 412),
    cases=[
        ok({}),
        err(409, {}, {"notes.notes.note_0003.saved": False, "notes.pending": ["note_0003"]}),
        err(412, {}, {"power.device.state": "off"}),
    ],
    prerequisites=["no pending writes"],
    check=lambda ph, a: ph.state["power"]["device"]["state"] == "on",
)
def restart_phone(phone, s, args):
    if (bad := _off(s)) is not None:
        return bad
    if (bad := _blocked(phone, "restart")) is not None:
        return bad
    s["device"]["restarts"] += 1
    phone.log("power.restart", restarts=s["device"]["restarts"])
    return ToolResult.ok("the phone restarted", {"state": "on", "restarts": s["device"]["restarts"]})


@D.tool(
    "power_off_phone",
    "Power the phone off. Refused (409) while app writes are still pending: save them first.",
    codes=(409, 412),
    cases=[
        ok({}),
        err(409, {}, {"notes.notes.note_0003.saved": False, "notes.pending": ["note_0003"]}),
        err(412, {}, {"power.device.state": "off"}, note="already off"),
    ],
    prerequisites=["no pending writes"],
    check=lambda ph, a: ph.state["power"]["device"]["state"] == "off",
)
def power_off_phone(phone, s, args):
    if s["device"]["state"] == "off":
        return ToolResult.fail(Code.PREREQUISITE, "the phone is already powered off")
    if (bad := _blocked(phone, "power off")) is not None:
        return bad
    s["device"]["state"] = "off"
    phone.log("power.power_off")
    return ToolResult.ok("the phone is powering off", {"state": "off"})


D.skill(
    "power_management",
    "Power management",
    "Battery saver, performance mode, charging limit, power schedules, restart and power off.",
    [
        "get_battery_status",
        "set_battery_saver",
        "set_performance_mode",
        "set_charging_limit",
        "check_pending_writes",
        "restart_phone",
        "power_off_phone",
    ],
    [
        "Before a restart or power off, check pending writes; power off only after pending writes are saved.",
        "Battery saver and high-performance mode exclude each other: switch to balanced before enabling battery saver.",
        "Power off is irreversible for this session: do it last, after every other requested action is confirmed.",
    ],
)

D.skill(
    "task_ordering",
    "Task ordering",
    "Rules for ordering dependent and irreversible actions (no tools).",
    [],
    [
        "Wait for the earlier result before issuing dependent calls.",
        "Confirm each write's id (read it back) before any irreversible action.",
        "Irreversible actions (power off, delete) come last, once everything else is confirmed.",
        "Load every skill you need in one turn, in parallel.",
    ],
)


# -- App screen -----------------------------------------------------------------------------------


@D.app("Battery", package="com.android.settings.battery")
def battery_screen(phone, route):
    s = phone.state["power"]
    if route == "mode":
        return "Performance mode", [
            Element(
                f"mode:{m}",
                m.replace("_", " ").capitalize(),
                kind="toggle",
                clickable=True,
                checked=s["performance_mode"] == m,
                tool=("set_performance_mode", {"mode": m}),
            )
            for m in MODES
        ]
    if route == "limit":
        return "Charging limit", [
            Element(
                f"limit:{p}",
                f"{p}%" if p < 100 else "No limit (100%)",
                kind="toggle",
                clickable=True,
                checked=s["charging_limit"]["percent"] == p,
                tool=("set_charging_limit", {"percent": p}),
            )
            for p in LIMITS
        ]
    b = s["battery"]
    return "Battery", [
        Element("level", f"{b['level']}%{' · charging' if b['charging'] else ''} · health {b['health']}"),
        toggle(
            "saver",
            f"Battery saver: {'on' if s['battery_saver']['enabled'] else 'off'}",
            s["battery_saver"]["enabled"],
            "set_battery_saver",
        ),
        toggle("adaptive", "Adaptive battery", s["adaptive_battery"], "set_adaptive_battery"),
        Element(
            "mode",
            f"Performance mode: {s['performance_mode'].replace('_', ' ')}",
            kind="item",
            clickable=True,
            to="mode",
        ),
        Element("limit", f"Charging limit: {s['charging_limit']['percent']}%", kind="item", clickable=True, to="limit"),
        Element("restart", "Restart", kind="button", clickable=True, tool=("restart_phone", {})),
        Element("power_off", "Power off", kind="button", clickable=True, tool=("power_off_phone", {})),
    ]


@D.gui_script("Battery")
def battery_gui_script(instruction: str) -> list[tuple[Any, ...]] | None:
    """'Turn on battery saver', 'Set the charging limit to 85%', 'Set performance mode to balanced'."""
    low = instruction.lower()
    if "charging limit" in low and (m := re.search(r"(\d{2,3})\s*%", low)):
        label = f"{m.group(1)}%" if m.group(1) != "100" else "No limit (100%)"
        # Confirm on the main screen, whose summary line reflects the stored value.
        shown = f"Charging limit: {m.group(1)}%"
        return [("tap", "limit"), ("tap", label), ("back",), ("confirm", shown, f"charging limit {m.group(1)}%")]
    if "performance" in low:
        for m in MODES:
            if m.replace("_", " ") in low or m in low:
                label = m.replace("_", " ").capitalize()
                shown = f"Performance mode: {m.replace('_', ' ')}"
                return [("tap", "mode"), ("tap", label), ("back",), ("confirm", shown, m)]
        return None
    if "battery saver" in low and re.search(r"\b(on|enable|turn on)\b", low):
        return [("tap", "Battery saver"), ("confirm", "Battery saver: on", "battery saver on")]
    return None


# -- Task templates -------------------------------------------------------------------------------

_NOTES = [
    ("Meter reading", "Electricity meter: 48213 kWh on the 2nd"),
    ("Parking spot", "Car is on level 3, bay C14"),
    ("Locker code", "Gym locker 218, code 4471"),
    ("Wi-Fi for guests", "Network Orchard-Guest, password on the fridge"),
    ("Call back", "Call Dana back about the invoice tomorrow at 10"),
    ("Package", "Parcel 7731 arrives Thursday, leave with neighbour"),
]


def _note_then_power_off(rng: random.Random) -> Draft:
    """Showcase 5: three skills load in parallel; the note is created and its id confirmed before power off."""
    title, body = rng.choice(_NOTES)
    nxt = rng.randint(7, 80)
    nid = f"note_{nxt:04d}"
    auto = rng.random() < 0.5  # when auto-save is off the write stays pending until save_note
    plan: list[Any] = [
        Act(
            "I need note tools, power tools and the ordering rules: load the three skills in parallel.",
            [
                Call("skill__note_taking", {"reason": "create the note"}),
                Call("skill__power_management", {"reason": "power the phone off"}),
                Call("skill__task_ordering", {"reason": "power off is irreversible; order the steps"}),
            ],
        ),
        Act("Create the note first.", [Call("create_note", {"title": title, "body": body}, name="note")]),
    ]
    if auto:
        plan.append(
            Act(
                "Confirm the note's id and that its write is saved before powering off.",
                [
                    Call(
                        "get_note",
                        {"note_id": R("note", "data.note_id")},
                        until=lambda r: r.get("data", {}).get("saved") is True,
                    )
                ],
            )
        )
    else:
        plan += [
            Act(
                "Confirm the note's id and its save status.", [Call("get_note", {"note_id": R("note", "data.note_id")})]
            ),
            Act(
                "Auto-save is off and the write is pending; save it.",
                [Call("save_note", {"note_id": R("note", "data.note_id")})],
            ),
        ]
    plan += [
        Act("The note is saved; now power off.", [Call("power_off_phone")]),
        Say(f"I saved your note '{title}' ({nid}) and then powered the phone off."),
    ]
    return Draft(
        instruction=pick(
            rng,
            [
                f"Write a note '{title}': {body}. Then turn the phone off.",
                f"Save a note titled '{title}' saying \"{body}\" and power off my phone afterwards.",
                f"Before you switch the phone off, note this down as '{title}': {body}.",
            ],
        ),
        params={"title": title, "body": body, "note_id": nid, "auto_save": auto},
        setup={"notes.next_id": nxt, "notes.auto_save": auto},
        tools=["get_battery_usage", "set_screen_off_timer"],
        skills=["note_taking", "power_management", "task_ordering", "screen_casting"],
        goal={
            f"notes.notes.{nid}.title": title,
            f"notes.notes.{nid}.body": body,
            f"notes.notes.{nid}.saved": True,
            "power.device.state": "off",
        },
        allowed=["notes.next_id", f"notes.notes.{nid}"],
        order=["notes.note_created", "notes.note_saved", "power.power_off"],
        plan=plan,
    )


def _saver_conflict(rng: random.Random) -> Draft:
    """Battery saver is refused (409) in high-performance mode; switch to balanced, then enable it."""
    mode = rng.choice(["high_performance", "high_performance", "balanced", "power_saving"])
    level = rng.randint(9, 45)
    threshold = rng.choice([None, 20, 25, 30])
    plan: list[Any] = []
    goal: dict[str, Any] = {"power.battery_saver.enabled": True}
    if mode == "high_performance":
        plan += [
            Act("Turn on battery saver.", [Call("set_battery_saver", {"enabled": True})], may_fail=True),
            Act(
                "409: it conflicts with high-performance mode; switch to balanced as the error says.",
                [Call("set_performance_mode", {"mode": "balanced"})],
            ),
            Act("Now enable battery saver again.", [Call("set_battery_saver", {"enabled": True})]),
        ]
        goal["power.performance_mode"] = "balanced"
    else:
        plan.append(Act("Turn on battery saver.", [Call("set_battery_saver", {"enabled": True})]))
    ask = ""
    if threshold:
        ask = f" and have it come on by itself at {threshold}% from now on"
        plan.append(
            Act(
                f"Set the automatic threshold to {threshold}%.",
                [Call("set_battery_saver_threshold", {"percent": threshold})],
            )
        )
        goal["power.battery_saver.auto_on_percent"] = threshold
    extra = " (I had to switch performance mode to balanced first)" if mode == "high_performance" else ""
    plan.append(Say(f"Battery saver is on{extra}."))
    return Draft(
        instruction=pick(
            rng,
            [
                f"My battery is at {level}%, turn on battery saver{ask}.",
                f"Switch on power saving mode{ask}, please.",
                f"Enable battery saver{ask}.",
            ],
        ),
        params={"mode": mode, "level": level, "threshold": threshold},
        setup={"power.performance_mode": mode, "power.battery.level": level},
        tools=[
            "get_battery_status",
            "set_battery_saver",
            "set_performance_mode",
            "set_battery_saver_threshold",
            "set_screen_off_timer",
            "set_adaptive_battery",
        ],
        goal=goal,
        plan=plan,
    )


_ROUTINES = {
    "night charging": "Night charging routine: charging limit {limit}%, screen turns off after {timer} seconds.",
    "travel": "Travel routine: charging limit 100%, battery saver on at 30%.",
    "gaming": "Gaming setup: high performance mode, screen off after 10 minutes.",
    "work": "Work day: adaptive battery on, screen off after 2 minutes.",
    "weekend": "Weekend: battery saver threshold 20%.",
}


def _memory_night(rng: random.Random) -> Draft:
    """Memory: the night charging routine holds the limit and timer; apply exactly those two settings."""
    limit = rng.choice([80, 85, 90])
    timer = rng.choice([15, 30, 120])
    start_timer = rng.choice([t for t in (60, 300, 600) if t != timer])
    memory = [
        {
            "id": "mem_night",
            "category": "routines_habits",
            "title": "Night charging routine",
            "content": _ROUTINES["night charging"].format(limit=limit, timer=timer),
            "tags": ["battery", "night"],
        }
    ]
    for i, key in enumerate(rng.sample(["travel", "gaming", "work", "weekend"], 3)):
        memory.append(
            {
                "id": f"mem_p{i}",
                "category": rng.choice(["routines_habits", "preferences"]),
                "title": f"{key.capitalize()} routine",
                "content": _ROUTINES[key],
                "tags": ["battery"],
            }
        )
    memory.append(
        {
            "id": "mem_x",
            "category": "important_event",
            "title": "Phone upgrade",
            "content": "New phone contract renews in March.",
            "tags": [],
        }
    )
    rng.shuffle(memory)
    return Draft(
        instruction=pick(
            rng,
            [
                "Set the phone up for overnight charging the way I usually do.",
                "Apply my night charging routine.",
                "I'm going to bed - do my usual charging setup.",
            ],
        ),
        params={"limit": limit, "timer": timer},
        setup={"power.screen_off_timer_s": start_timer},
        memory=memory,
        tools=[
            "set_charging_limit",
            "set_screen_off_timer",
            "set_battery_saver",
            "set_performance_mode",
            "get_battery_status",
        ],
        goal={
            "power.charging_limit.percent": limit,
            "power.charging_limit.enabled": True,
            "power.screen_off_timer_s": timer,
        },
        plan=[
            Act(
                "The routine is in memory; search for it.",
                [Call("search_user_memory", {"query": "night charging routine", "maxResults": 5})],
            ),
            Act(
                f"The routine says {limit}% and {timer} s: apply both in parallel.",
                [Call("set_charging_limit", {"percent": limit}), Call("set_screen_off_timer", {"seconds": timer})],
            ),
            Say(f"Done: charging stops at {limit}% and the screen turns off after {timer} seconds."),
        ],
    )


def _schedule_task(rng: random.Random) -> Draft:
    off_t = rng.choice(["22:30", "23:00", "23:30", "00:15"])
    on_t = rng.choice(["06:30", "07:00", "07:15", "08:00"])
    weekdays = rng.random() < 0.5
    days = WEEKDAYS if weekdays else DAYS
    old = rng.random() < 0.5
    setup = {"power.schedule.power_off": {"time": "01:00", "days": ["sat", "sun"]}} if old else {}
    when = "on weekdays" if weekdays else "every day"
    args_days = {"days": list(WEEKDAYS)} if weekdays else {}
    return Draft(
        instruction=pick(
            rng,
            [
                f"Turn my phone off at {off_t} and back on at {on_t} {when}.",
                f"Schedule power off {off_t} and power on {on_t}, {when}.",
                f"Can the phone shut down at {off_t} and start again at {on_t} {when}?",
            ],
        ),
        params={"off": off_t, "on": on_t, "days": days, "replaced_old": old},
        setup=setup,
        tools=[
            "get_power_schedule",
            "schedule_power_on",
            "schedule_power_off",
            "cancel_power_schedule",
            "power_off_phone",
            "set_screen_off_timer",
        ],
        goal={
            "power.schedule.power_off": {"time": off_t, "days": list(days)},
            "power.schedule.power_on": {"time": on_t, "days": list(days)},
        },
        plan=[
            Act(
                "Schedule both times; they are independent, so in parallel.",
                [
                    Call("schedule_power_off", {"time": off_t, **args_days}),
                    Call("schedule_power_on", {"time": on_t, **args_days}),
                ],
            ),
            Say(f"Your phone will power off at {off_t} and on at {on_t} {when}."),
        ],
    )


def _restart_pending(rng: random.Random) -> Draft:
    """Restart is refused (409) while a note write is pending; save it, restart; follow-up sets a limit."""
    title, body = rng.choice(_NOTES)
    nid = f"note_{rng.randint(20, 60):04d}"
    limit = rng.choice([80, 85, 90])
    note = {
        "id": nid,
        "title": title,
        "body": body,
        "folder": "Personal",
        "pinned": False,
        "locked": False,
        "checklist": [],
        "saved": False,
        "updated": 0,
    }
    return Draft(
        instruction=pick(rng, ["Restart my phone.", "Please reboot the phone.", "My phone is sluggish, restart it."]),
        params={"note_id": nid, "limit": limit},
        setup={f"notes.notes.{nid}": note, "notes.pending": [nid], "notes.auto_save": False, "notes.next_id": 61},
        followups=[
            pick(
                rng,
                [
                    f"Thanks. Also stop charging at {limit}% from now on.",
                    f"Great. And cap the charge at {limit} percent.",
                ],
            )
        ],
        tools=[
            "restart_phone",
            "power_off_phone",
            "check_pending_writes",
            "save_note",
            "get_battery_status",
            "set_charging_limit",
            "set_battery_saver",
        ],
        goal={
            "power.device.restarts": 1,
            f"notes.notes.{nid}.saved": True,
            "notes.pending": [],
            "power.charging_limit.percent": limit,
            "power.charging_limit.enabled": True,
        },
        allowed=[],
        order=["notes.note_saved", "power.restart"],
        plan=[
            Act("Restart the phone.", [Call("restart_phone")], may_fail=True),
            Act("409: writes are pending; see which.", [Call("check_pending_writes")]),
            Act(f"Note {nid} has an unsaved write; save it.", [Call("save_note", {"note_id": nid})]),
            Act("Now restart.", [Call("restart_phone")]),
            Say(f"Your note '{title}' had unsaved changes, so I saved it first; the phone has restarted."),
            Act(f"Set the charging limit to {limit}%.", [Call("set_charging_limit", {"percent": limit})]),
            Say(f"Charging now stops at {limit}%."),
        ],
    )


def _battery_question(rng: random.Random) -> Draft:
    level = rng.randint(5, 95)
    charging = rng.random() < 0.4
    low = level < 20 and not charging
    goal = {"power.battery_saver.enabled": True} if low else {}
    plan: list[Any] = [Act("Read the battery status.", [Call("get_battery_status")])]
    if low:
        plan.append(
            Act(
                f"{level}% and not charging: below 20%, so turn on battery saver as asked.",
                [Call("set_battery_saver", {"enabled": True})],
            )
        )
        plan.append(Say(f"You're at {level}% and not charging, so I turned battery saver on."))
    else:
        plan.append(
            Say(f"You're at {level}%{' and charging' if charging else ', not charging'}; no need for battery saver.")
        )
    return Draft(
        instruction=pick(
            rng,
            [
                "How much battery do I have? If it's under 20% and not charging, turn on battery saver.",
                "Check my battery; switch battery saver on only if I'm below 20% and not plugged in.",
            ],
        ),
        params={"level": level, "charging": charging},
        setup={"power.battery.level": level, "power.battery.charging": charging},
        tools=["get_battery_status", "set_battery_saver", "get_battery_usage", "set_performance_mode"],
        goal=goal,
        answer=[f"{level}%"],
        plan=plan,
    )


def _gui_battery(rng: random.Random) -> Draft:
    """Sub-agent: a GUI agent changes one battery setting through the Battery app's screens."""
    if rng.random() < 0.5:
        limit = rng.choice([80, 85, 90, 95])
        start = rng.choice([p for p in LIMITS if p != limit])
        instr, setup = (
            f"Set the charging limit to {limit}%",
            {"power.charging_limit": {"enabled": start < 100, "percent": start}},
        )
        goal = {"power.charging_limit": {"enabled": True, "percent": limit}}
        ask = pick(
            rng,
            [
                f"Open the battery settings and cap charging at {limit}%.",
                f"Have the Battery app stop charging at {limit} percent.",
            ],
        )
        done = f"Charging now stops at {limit}%."
    else:
        mode = rng.choice(["power_saving", "high_performance"])
        instr, setup = f"Set performance mode to {mode.replace('_', ' ')}", {}
        goal = {"power.performance_mode": mode}
        ask = pick(
            rng,
            [
                f"In the Battery app, switch performance mode to {mode.replace('_', ' ')}.",
                f"Use the battery settings screen to pick the {mode.replace('_', ' ')} mode.",
            ],
        )
        done = f"Performance mode is now {mode.replace('_', ' ')}."
    return Draft(
        instruction=ask,
        params={"gui_instruction": instr},
        setup=setup,
        tools=["get_battery_status", "get_battery_usage"],
        subagent=True,
        goal=goal,
        plan=[
            *gui_agent("Battery", instr, think="Delegate to a GUI agent on the Battery app.", name="g"),
            Act("Verify in the battery status.", [Call("get_battery_status")]),
            Say(done),
        ],
        budget=10,
    )


D.add_template(
    Template(
        "power.skills_note_then_power_off",
        "power",
        "skills",
        "Load three skills in parallel; create a note, confirm its id and save, then power off.",
        _note_then_power_off,
        difficulty=3,
        domains=("power", "notes"),
    )
)
D.add_template(
    Template(
        "power.battery_saver_mode_conflict",
        "power",
        "tool_use",
        "Enable battery saver, resolving the 409 from high-performance mode.",
        _saver_conflict,
        tags=("error_recovery",),
        difficulty=2,
    )
)
D.add_template(
    Template(
        "power.memory_night_charging",
        "power",
        "memory",
        "Apply the night charging routine found in memory.",
        _memory_night,
        difficulty=2,
    )
)
D.add_template(
    Template(
        "power.schedule_on_off",
        "power",
        "tool_use",
        "Schedule power off and power on times.",
        _schedule_task,
        difficulty=1,
    )
)
D.add_template(
    Template(
        "power.restart_after_pending_note",
        "power",
        "tool_use",
        "Restart refused while a note is unsaved: save, restart; a follow-up sets the charging limit.",
        _restart_pending,
        tags=("multi_turn", "error_recovery"),
        difficulty=3,
        domains=("power", "notes"),
    )
)
D.add_template(
    Template(
        "power.battery_check_question",
        "power",
        "tool_use",
        "Report the battery level and enable battery saver only when low.",
        _battery_question,
        difficulty=1,
    )
)
D.add_template(
    Template(
        "power.gui_agent_battery_setting",
        "power",
        "sub_agent",
        "A GUI agent changes the charging limit or performance mode in the Battery app.",
        _gui_battery,
        difficulty=1,
    )
)
