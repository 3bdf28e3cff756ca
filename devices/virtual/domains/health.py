"""Health: daily activity, heart rate, sleep, workouts, water, weight, goals, medication reminders, data sharing."""

from __future__ import annotations

import datetime as dt
import random
import re
from typing import Any

from devices.virtual.domains._shared import changed_items, new_id, toggle
from devices.virtual.registry import Domain, Element, P, err, ok
from devices.virtual.tasks import Act, Call, Draft, Say, Task, Template, gui_agent
from devices.virtual.wording import pick
from harness.contract import Code, ToolResult

TODAY = dt.date(2026, 12, 2)
DATES = [(TODAY - dt.timedelta(days=k)).isoformat() for k in range(6, -1, -1)]  # oldest first; DATES[-1] is today
WORKOUT_TYPES = ["running", "cycling", "walking", "swimming", "yoga", "strength"]
DISTANCE_TYPES = {"running", "cycling", "walking", "swimming"}
DATA_TYPES = ["steps", "heart_rate", "sleep", "workouts", "weight", "water"]
SHARING_APPS = ["FitTrack", "RunClub", "Insurance+", "SleepWell"]
GOAL_RANGES = {
    "steps": (1000, 50000),
    "water_ml": (500, 6000),
    "sleep_min": (240, 720),
    "active_min": (5, 300),
    "weight_kg": (30, 250),
}
_TIME = re.compile(r"^([01]\d|2[0-3]):[0-5]\d$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]


def _day(steps: int, rhr: int, sleep: int, water: int, active: int) -> dict[str, int]:
    return {
        "steps": steps,
        "resting_hr": rhr,
        "avg_hr": rhr + 14,
        "sleep_min": sleep,
        "deep_sleep_min": sleep // 5,
        "water_ml": water,
        "active_min": active,
    }


def sample_days(rng: random.Random) -> dict[str, dict[str, int]]:
    """A seeded week of daily data with distinct step counts, sleep and resting heart rates per day."""
    steps = rng.sample(range(2500, 16000), 7)
    sleeps = rng.sample(range(300, 540), 7)
    rhrs = rng.sample(range(52, 75), 7)
    return {
        d: _day(
            steps[i],
            rhrs[i],
            sleeps[i],
            rng.randrange(0, 2000, 250) if d == DATES[-1] else rng.randrange(1000, 3000, 250),
            rng.randrange(5, 90),
        )
        for i, d in enumerate(DATES)
    }


DOMAIN = Domain(
    "health",
    "Health & fitness",
    initial={
        "days": {d: _day(6000 + 731 * i, 60 + i, 400 + 9 * i, 1500, 20 + 3 * i) for i, d in enumerate(DATES)},
        "heart_rate": {"latest_bpm": 72, "measured_at": "08:55"},
        "workouts": {
            "w1": {
                "id": "w1",
                "type": "running",
                "date": DATES[-3],
                "duration_min": 32,
                "distance_km": 5.1,
                "calories": 340,
            },
            "w2": {
                "id": "w2",
                "type": "yoga",
                "date": DATES[-2],
                "duration_min": 45,
                "distance_km": None,
                "calories": 150,
            },
        },
        "weight": [{"date": DATES[0], "kg": 71.4}, {"date": DATES[3], "kg": 71.0}],
        "goals": {"steps": 8000, "water_ml": 2000, "sleep_min": 450, "active_min": 30, "weight_kg": 70.0},
        "medications": {
            "r1": {"id": "r1", "name": "Vitamin D", "dose": "1000 IU", "time": "08:00", "enabled": True},
        },
        "sharing": {
            "FitTrack": {
                "steps": True,
                "heart_rate": True,
                "sleep": False,
                "workouts": True,
                "weight": False,
                "water": False,
            },
            "RunClub": {
                "steps": True,
                "heart_rate": False,
                "sleep": False,
                "workouts": True,
                "weight": False,
                "water": False,
            },
            "Insurance+": {
                "steps": True,
                "heart_rate": True,
                "sleep": True,
                "workouts": False,
                "weight": True,
                "water": False,
            },
            "SleepWell": {
                "steps": False,
                "heart_rate": True,
                "sleep": True,
                "workouts": False,
                "weight": False,
                "water": False,
            },
        },
    },
)
D = DOMAIN


# -- helpers --------------------------------------------------------------------------------------


def resolve_date(raw: str | None) -> tuple[str | None, ToolResult | None]:
    """'today', 'yesterday', a weekday of the past week, or YYYY-MM-DD, as an ISO date."""
    if raw is None:
        return DATES[-1], None
    r = raw.strip().lower()
    if r == "today":
        return DATES[-1], None
    if r == "yesterday":
        return DATES[-2], None
    if r in WEEKDAYS:
        back = (TODAY.weekday() - WEEKDAYS.index(r)) % 7
        return (TODAY - dt.timedelta(days=back)).isoformat(), None
    if _DATE.match(r):
        return r, None
    return None, ToolResult.fail(
        Code.BAD_ARGUMENT, f"date must be 'today', 'yesterday', a weekday or YYYY-MM-DD (got {raw!r})"
    )


def _day_data(s: dict[str, Any], raw: str | None) -> tuple[str | None, dict[str, Any] | None, ToolResult | None]:
    date, bad = resolve_date(raw)
    if bad is not None:
        return None, None, bad
    day = s["days"].get(date)
    if day is None:
        return (
            date,
            None,
            ToolResult.fail(Code.NOT_FOUND, f"no health data for {date}; data covers {DATES[0]} to {DATES[-1]}"),
        )
    return date, day, None


def hours_minutes(minutes: int) -> str:
    return f"{minutes // 60} h {minutes % 60} min"


_DATE_ARG = P.string("'today', 'yesterday', a weekday (last 7 days) or YYYY-MM-DD; default today")


# -- activity, heart, sleep ---------------------------------------------------------------------------


@D.tool(
    "get_daily_activity",
    "Get steps, active minutes and estimated distance for one day.",
    {"date": _DATE_ARG},
    read_only=True,
    codes=(400, 404),
    cases=[ok({}), ok({"date": "monday"}), err(404, {"date": "2025-01-01"}), err(400, {"date": "last week"})],
)
def get_daily_activity(phone, s, args):
    date, day, bad = _day_data(s, args.get("date"))
    if bad is not None:
        return bad
    goal = s["goals"]["steps"]
    return ToolResult.ok(
        f"{day['steps']} steps on {date}",
        {
            "date": date,
            "steps": day["steps"],
            "step_goal": goal,
            "goal_reached": day["steps"] >= goal,
            "active_min": day["active_min"],
            "distance_km": round(day["steps"] * 0.00075, 2),
        },
    )


@D.tool(
    "get_step_history",
    "Get daily step counts for the last N days.",
    {"days": P.integer("how many days (default 7)", 1, 7)},
    read_only=True,
    cases=[ok({}), ok({"days": 3}), err(400, {"days": 30})],
)
def get_step_history(phone, s, args):
    n = args.get("days", 7)
    rows = [{"date": d, "steps": s["days"][d]["steps"]} for d in DATES[-n:] if d in s["days"]]
    return ToolResult.ok(
        f"steps for {len(rows)} day(s)",
        {"days": rows, "average": round(sum(r["steps"] for r in rows) / max(len(rows), 1))},
    )


@D.tool(
    "get_heart_rate",
    "Get the latest heart rate and one day's resting and average heart rate.",
    {"date": _DATE_ARG},
    read_only=True,
    codes=(400, 404),
    cases=[ok({}), ok({"date": "yesterday"}), err(404, {"date": "2020-02-02"}), err(400, {"date": "someday"})],
)
def get_heart_rate(phone, s, args):
    date, day, bad = _day_data(s, args.get("date"))
    if bad is not None:
        return bad
    hr = s["heart_rate"]
    return ToolResult.ok(
        f"resting {day['resting_hr']} bpm on {date}",
        {
            "date": date,
            "resting_bpm": day["resting_hr"],
            "average_bpm": day["avg_hr"],
            "latest_bpm": hr["latest_bpm"],
            "latest_measured_at": hr["measured_at"],
        },
    )


@D.tool(
    "get_sleep_summary",
    "Get the sleep of the night that ended on a date.",
    {"date": _DATE_ARG},
    read_only=True,
    codes=(400, 404),
    cases=[ok({"date": "today"}), err(404, {"date": "2024-06-01"}), err(400, {"date": "last night"})],
)
def get_sleep_summary(phone, s, args):
    date, day, bad = _day_data(s, args.get("date"))
    if bad is not None:
        return bad
    total = day["sleep_min"]
    return ToolResult.ok(
        f"slept {hours_minutes(total)} (night ending {date})",
        {
            "date": date,
            "total_min": total,
            "duration": hours_minutes(total),
            "deep_min": day["deep_sleep_min"],
            "goal_min": s["goals"]["sleep_min"],
        },
    )


# -- workouts -------------------------------------------------------------------------------------------


@D.tool(
    "log_workout",
    "Record a workout.",
    {
        "type": P.enum(WORKOUT_TYPES, "kind of workout"),
        "duration_min": P.integer("minutes", 1, 600),
        "distance_km": P.number("distance in km (running, cycling, walking, swimming)", 0, 500),
        "date": _DATE_ARG,
    },
    ["type", "duration_min"],
    codes=(400, 409),
    cases=[
        ok({"type": "running", "duration_min": 30, "distance_km": 5.0}),
        ok({"type": "yoga", "duration_min": 20}),
        err(400, {"type": "yoga", "duration_min": 20, "distance_km": 2.0}),
        err(409, {"type": "running", "duration_min": 32, "date": DATES[-3]}, note="already logged"),
        err(400, {"type": "dancing", "duration_min": 20}),
    ],
    check=lambda ph, a: any(
        w["type"] == a["type"] and w["duration_min"] == a["duration_min"]
        for w in ph.state["health"]["workouts"].values()
    ),
)
def log_workout(phone, s, args):
    date, bad = resolve_date(args.get("date"))
    if bad is not None:
        return bad
    kind = args["type"]
    if "distance_km" in args and kind not in DISTANCE_TYPES:
        return ToolResult.fail(Code.BAD_ARGUMENT, f"{kind} has no distance; leave distance_km out")
    for w in s["workouts"].values():
        if (w["type"], w["date"], w["duration_min"]) == (kind, date, args["duration_min"]):
            return ToolResult.fail(
                Code.CONFLICT, f"a {args['duration_min']}-minute {kind} on {date} is already logged ({w['id']})"
            )
    wid = new_id(phone, "w", s["workouts"])
    per_min = {"running": 10, "cycling": 8, "walking": 4, "swimming": 9, "yoga": 3, "strength": 6}[kind]
    s["workouts"][wid] = {
        "id": wid,
        "type": kind,
        "date": date,
        "duration_min": args["duration_min"],
        "distance_km": args.get("distance_km"),
        "calories": per_min * args["duration_min"],
    }
    phone.log("health.workout_log", workout_id=wid)
    return ToolResult.ok(
        f"logged {args['duration_min']} min of {kind} on {date}", dict(s["workouts"][wid], workout_id=wid)
    )


@D.tool(
    "list_workouts",
    "List recorded workouts, optionally of one type.",
    {"type": P.enum(WORKOUT_TYPES, "only this kind")},
    read_only=True,
    cases=[ok({}), ok({"type": "running"})],
)
def list_workouts(phone, s, args):
    rows = [dict(w) for w in s["workouts"].values() if "type" not in args or w["type"] == args["type"]]
    rows.sort(key=lambda w: w["date"], reverse=True)
    return ToolResult.ok(f"{len(rows)} workout(s)", {"workouts": rows, "total": len(rows)})


@D.tool(
    "delete_workout",
    "Delete a recorded workout.",
    {"workout_id": P.string("id from list_workouts")},
    ["workout_id"],
    codes=(404,),
    cases=[ok({"workout_id": "w2"}), err(404, {"workout_id": "w99"})],
    check=lambda ph, a: a["workout_id"] not in ph.state["health"]["workouts"],
)
def delete_workout(phone, s, args):
    w = s["workouts"].pop(args["workout_id"], None)
    if w is None:
        return ToolResult.fail(Code.NOT_FOUND, f"no workout with id '{args['workout_id']}'")
    phone.log("health.workout_delete", workout_id=w["id"])
    return ToolResult.ok(f"deleted the {w['type']} of {w['date']}", {"workout_id": w["id"]})


# -- water and weight ---------------------------------------------------------------------------------


@D.tool(
    "log_water_intake",
    "Add water you drank today.",
    {"amount_ml": P.integer("millilitres", 50, 2000)},
    ["amount_ml"],
    cases=[ok({"amount_ml": 250}), err(400, {"amount_ml": 5000})],
)
def log_water_intake(phone, s, args):
    day = s["days"][DATES[-1]]
    day["water_ml"] += args["amount_ml"]
    phone.log("health.water_log", amount_ml=args["amount_ml"])
    return ToolResult.ok(
        f"added {args['amount_ml']} ml; {day['water_ml']} ml today",
        {"today_ml": day["water_ml"], "goal_ml": s["goals"]["water_ml"]},
    )


@D.tool(
    "get_water_intake",
    "Get how much water was logged on a day.",
    {"date": _DATE_ARG},
    read_only=True,
    codes=(400, 404),
    cases=[ok({}), err(404, {"date": "2023-03-03"}), err(400, {"date": "03/03"})],
)
def get_water_intake(phone, s, args):
    date, day, bad = _day_data(s, args.get("date"))
    if bad is not None:
        return bad
    return ToolResult.ok(
        f"{day['water_ml']} ml on {date}",
        {"date": date, "water_ml": day["water_ml"], "goal_ml": s["goals"]["water_ml"]},
    )


@D.tool(
    "log_weight",
    "Record today's body weight (replaces an entry already made today).",
    {"kg": P.number("weight in kilograms", 20, 400)},
    ["kg"],
    cases=[ok({"kg": 70.6}), err(400, {"kg": 4})],
    check=lambda ph, a: ph.state["health"]["weight"][-1] == {"date": DATES[-1], "kg": a["kg"]},
)
def log_weight(phone, s, args):
    entries = s["weight"]
    if entries and entries[-1]["date"] == DATES[-1]:
        entries[-1]["kg"] = args["kg"]
    else:
        entries.append({"date": DATES[-1], "kg": args["kg"]})
    phone.log("health.weight_log", kg=args["kg"])
    return ToolResult.ok(f"recorded {args['kg']} kg", {"date": DATES[-1], "kg": args["kg"]})


@D.tool(
    "get_weight_history",
    "Get recorded body weights, newest first.",
    {"limit": P.integer("entries (default 10)", 1, 100)},
    read_only=True,
    cases=[ok({})],
)
def get_weight_history(phone, s, args):
    rows = [dict(e) for e in reversed(s["weight"][-args.get("limit", 10) :])]
    return ToolResult.ok(
        f"{len(rows)} weight entr{'y' if len(rows) == 1 else 'ies'}",
        {"entries": rows, "goal_kg": s["goals"]["weight_kg"]},
    )


# -- goals ----------------------------------------------------------------------------------------------


@D.tool(
    "get_health_goals",
    "Get the daily goals: steps, water, sleep, active minutes, target weight.",
    read_only=True,
    cases=[ok({})],
)
def get_health_goals(phone, s, args):
    return ToolResult.ok("health goals", dict(s["goals"]))


@D.tool(
    "set_health_goal",
    "Set one health goal.",
    {"metric": P.enum(list(GOAL_RANGES), "which goal"), "target": P.number("the new target value")},
    ["metric", "target"],
    codes=(400,),
    cases=[
        ok({"metric": "steps", "target": 10000}),
        err(400, {"metric": "sleep_min", "target": 30}),
        err(400, {"metric": "calories", "target": 2000}),
    ],
    check=lambda ph, a: ph.state["health"]["goals"][a["metric"]] == a["target"],
)
def set_health_goal(phone, s, args):
    lo, hi = GOAL_RANGES[args["metric"]]
    if not lo <= args["target"] <= hi:
        return ToolResult.fail(Code.BAD_ARGUMENT, f"{args['metric']} goal must be between {lo} and {hi}")
    old = s["goals"][args["metric"]]
    if old != args["target"]:
        s["goals"][args["metric"]] = args["target"]
        phone.log("health.goal", metric=args["metric"], target=args["target"])
    return ToolResult.ok(
        f"{args['metric']} goal set to {args['target']}",
        {"metric": args["metric"], "target": args["target"], "previous": old},
    )


# -- medication reminders -------------------------------------------------------------------------------


@D.tool("list_medication_reminders", "List medication reminders.", read_only=True, cases=[ok({})])
def list_medication_reminders(phone, s, args):
    rows = sorted((dict(m) for m in s["medications"].values()), key=lambda m: (m["time"], m["name"]))
    return ToolResult.ok(f"{len(rows)} reminder(s)", {"reminders": rows, "total": len(rows)})


@D.tool(
    "add_medication_reminder",
    "Add a daily reminder to take a medication.",
    {
        "name": P.string("medication name"),
        "dose": P.string("dose, e.g. '500 mg'"),
        "time": P.string("daily time, HH:MM"),
    },
    ["name", "dose", "time"],
    codes=(400, 409),
    cases=[
        ok({"name": "Metformin", "dose": "500 mg", "time": "20:00"}),
        err(400, {"name": "Metformin", "dose": "500 mg", "time": "8pm"}),
        err(409, {"name": "vitamin d", "dose": "1000 IU", "time": "08:00"}),
    ],
    check=lambda ph, a: any(
        m["name"].lower() == a["name"].lower() and m["time"] == a["time"]
        for m in ph.state["health"]["medications"].values()
    ),
)
def add_medication_reminder(phone, s, args):
    if not _TIME.match(args["time"]):
        return ToolResult.fail(Code.BAD_ARGUMENT, f"time must be HH:MM on a 24-hour clock (got {args['time']!r})")
    for m in s["medications"].values():
        if m["name"].lower() == args["name"].strip().lower() and m["time"] == args["time"]:
            return ToolResult.fail(
                Code.CONFLICT, f"a reminder for {m['name']} at {m['time']} already exists ({m['id']})"
            )
    rid = new_id(phone, "r", s["medications"])
    s["medications"][rid] = {
        "id": rid,
        "name": args["name"].strip(),
        "dose": args["dose"],
        "time": args["time"],
        "enabled": True,
    }
    phone.log("health.med_add", reminder_id=rid)
    return ToolResult.ok(
        f"reminder set: {args['name']} {args['dose']} at {args['time']}", dict(s["medications"][rid], reminder_id=rid)
    )


@D.tool(
    "set_medication_reminder_enabled",
    "Turn a medication reminder on or off.",
    {"reminder_id": P.string("id from list_medication_reminders"), "enabled": P.boolean("true to turn on")},
    ["reminder_id", "enabled"],
    codes=(404,),
    cases=[ok({"reminder_id": "r1", "enabled": False}), err(404, {"reminder_id": "r9", "enabled": False})],
    check=lambda ph, a: ph.state["health"]["medications"][a["reminder_id"]]["enabled"] == a["enabled"],
)
def set_medication_reminder_enabled(phone, s, args):
    m = s["medications"].get(args["reminder_id"])
    if m is None:
        return ToolResult.fail(Code.NOT_FOUND, f"no reminder with id '{args['reminder_id']}'")
    if m["enabled"] != args["enabled"]:
        m["enabled"] = args["enabled"]
        phone.log("health.med_enabled", reminder_id=m["id"], enabled=args["enabled"])
    return ToolResult.ok(
        f"{m['name']} reminder {'on' if m['enabled'] else 'off'}", {"reminder_id": m["id"], "enabled": m["enabled"]}
    )


# -- data sharing ---------------------------------------------------------------------------------------


@D.tool(
    "get_health_sharing",
    "Get which health data each connected app may read (or one app's).",
    {"app": P.string("connected app name")},
    read_only=True,
    codes=(404,),
    cases=[ok({}), ok({"app": "FitTrack"}), err(404, {"app": "Snoopy"})],
)
def get_health_sharing(phone, s, args):
    if "app" in args:
        perms = s["sharing"].get(args["app"])
        if perms is None:
            return ToolResult.fail(Code.NOT_FOUND, f"no connected app '{args['app']}'; apps: {', '.join(s['sharing'])}")
        return ToolResult.ok(f"{args['app']} permissions", {"app": args["app"], "permissions": dict(perms)})
    return ToolResult.ok(f"{len(s['sharing'])} connected apps", {"apps": {a: dict(p) for a, p in s["sharing"].items()}})


@D.tool(
    "set_health_sharing",
    "Allow or stop a connected app reading one type of health data.",
    {
        "app": P.string("connected app name"),
        "data_type": P.enum(DATA_TYPES, "the kind of data"),
        "allowed": P.boolean("true to allow, false to revoke"),
    },
    ["app", "data_type", "allowed"],
    codes=(404,),
    cases=[
        ok({"app": "FitTrack", "data_type": "heart_rate", "allowed": False}),
        err(404, {"app": "Snoopy", "data_type": "steps", "allowed": False}),
        err(400, {"app": "FitTrack", "data_type": "dna", "allowed": False}),
    ],
    check=lambda ph, a: ph.state["health"]["sharing"][a["app"]][a["data_type"]] == a["allowed"],
)
def set_health_sharing(phone, s, args):
    perms = s["sharing"].get(args["app"])
    if perms is None:
        return ToolResult.fail(Code.NOT_FOUND, f"no connected app '{args['app']}'; apps: {', '.join(s['sharing'])}")
    if perms[args["data_type"]] != args["allowed"]:
        perms[args["data_type"]] = args["allowed"]
        phone.log("health.sharing", app=args["app"], data_type=args["data_type"], allowed=args["allowed"])
    verb = "may now read" if args["allowed"] else "can no longer read"
    return ToolResult.ok(f"{args['app']} {verb} {args['data_type']}", {"app": args["app"], "permissions": dict(perms)})


D.skill(
    "health_privacy",
    "Health data sharing",
    "Review and change which connected apps can read health data.",
    ["get_health_sharing", "set_health_sharing"],
    [
        "Read the app's current permissions before changing anything.",
        "Change only the data types the user named; leave every other permission as it is.",
        "Revoking a permission that is already off is not needed; say so instead.",
        "Report the final permissions of the app.",
    ],
)


# -- app screen -----------------------------------------------------------------------------------------


@D.app("Health", package="com.google.android.apps.fitness")
def health_screen(phone, route):
    s = phone.state["health"]
    today = s["days"][DATES[-1]]
    if route == "water":
        return "Water", [
            Element("water_today", f"Water today: {today['water_ml']} ml of {s['goals']['water_ml']} ml"),
            Element("add_250", "+250 ml", kind="button", clickable=True, tool=("log_water_intake", {"amount_ml": 250})),
            Element("add_500", "+500 ml", kind="button", clickable=True, tool=("log_water_intake", {"amount_ml": 500})),
        ]
    if route == "meds":
        els = [Element("hdr_meds", "Medication reminders", kind="header")]
        for m in sorted(s["medications"].values(), key=lambda m: m["time"]):
            els.append(
                toggle(
                    f"med:{m['id']}",
                    f"{m['time']} {m['name']} {m['dose']}",
                    m["enabled"],
                    "set_medication_reminder_enabled",
                    {"reminder_id": m["id"]},
                )
            )
        return "Medication", els
    if route == "workouts":
        els = [Element("hdr_workouts", "Workouts", kind="header")]
        for w in sorted(s["workouts"].values(), key=lambda w: w["date"], reverse=True):
            els.append(Element(f"workout:{w['id']}", f"{w['date']} {w['type']} {w['duration_min']} min", kind="item"))
        return "Workouts", els
    return "Health", [
        Element("steps", f"Steps today: {today['steps']} / {s['goals']['steps']}"),
        Element("water", "Water", kind="item", clickable=True, to="water"),
        Element("workouts", "Workouts", kind="item", clickable=True, to="workouts"),
        Element("meds", "Medication", kind="item", clickable=True, to="meds"),
        Element("sleep", f"Last night: {hours_minutes(today['sleep_min'])}"),
    ]


_GUI_WATER = re.compile(r"add (?P<ml>250|500) ml of water (?P<n>\d+) times?", re.I)


@D.gui_script("Health")
def health_gui_script(instruction: str) -> list[tuple[Any, ...]] | None:
    """'Add 250 ml of water N times': open Water, tap the button N times, confirm the total line."""
    m = _GUI_WATER.search(instruction)
    if m is None:
        return None
    n = int(m.group("n"))
    if not 1 <= n <= 8:
        return None
    return (
        [("tap", "Water")]
        + [("tap", f"+{m.group('ml')} ml")] * n
        + [("confirm", "Water today", f"added {n} x {m.group('ml')} ml")]
    )


# -- task templates -------------------------------------------------------------------------------------


def _when(rng: random.Random, date: str) -> str:
    """How a user names a date of the past week."""
    if date == DATES[-1]:
        return "today"
    if date == DATES[-2]:
        return rng.choice(["yesterday", WEEKDAYS[dt.date.fromisoformat(date).weekday()].capitalize()])
    return rng.choice([WEEKDAYS[dt.date.fromisoformat(date).weekday()].capitalize(), date])


def _stat_question(rng: random.Random) -> Draft:
    """Question task: steps, sleep or resting heart rate on a sampled day; the answer must state the value."""
    days = sample_days(rng)
    date = rng.choice(DATES[:-1])
    when = _when(rng, date)
    metric = rng.choice(["steps", "sleep", "resting_hr"])
    day = days[date]
    arg = when.lower() if when in ("today", "yesterday") or when.lower() in WEEKDAYS else date
    on_when = when if when in ("today", "yesterday") else f"on {when}"
    if metric == "steps":
        instr = pick(rng, [f"How many steps did I do {on_when}?", f"What was my step count {on_when}?"])
        tool, needle, say = "get_daily_activity", str(day["steps"]), f"You walked {day['steps']} steps on {date}."
    elif metric == "sleep":
        instr = pick(
            rng, [f"How long did I sleep the night before {when}?", f"How much sleep did I get (night ending {when})?"]
        )
        tool, needle = "get_sleep_summary", hours_minutes(day["sleep_min"])
        say = f"You slept {needle} in the night ending {date}."
    else:
        instr = pick(rng, [f"What was my resting heart rate {on_when}?", f"Resting pulse {on_when}?"])
        tool, needle, say = (
            "get_heart_rate",
            f"{day['resting_hr']} bpm",
            f"Your resting heart rate on {date} was {day['resting_hr']} bpm.",
        )
    return Draft(
        instruction=instr,
        params={"metric": metric, "date": date},
        setup={"health.days": days},
        tools=[
            "get_daily_activity",
            "get_step_history",
            "get_heart_rate",
            "get_sleep_summary",
            "log_workout",
            "set_health_goal",
        ],
        answer=[needle],
        plan=[Act(f"Read the {metric.replace('_', ' ')} for {date}.", [Call(tool, {"date": arg})]), Say(say)],
    )


def _check_workout(task: Task, initial: dict[str, Any], final: dict[str, Any], answer: str) -> tuple[bool, str]:
    p = task.params
    if touched := changed_items(initial["health"]["workouts"], final["health"]["workouts"]):
        return False, f"changed or deleted earlier workouts: {', '.join(touched)}"
    new = [w for wid, w in final["health"]["workouts"].items() if wid not in initial["health"]["workouts"]]
    if len(new) != 1:
        return False, f"expected one new workout, found {len(new)}"
    w = new[0]
    got = (w["type"], w["duration_min"], w["date"], w["distance_km"])
    want = (p["type"], p["minutes"], DATES[-1], p["km"])
    return (got == want, f"logged {got}, expected {want}")


def _workout_then_water(rng: random.Random) -> Draft:
    """Log today's workout; a follow-up turn adds water (multi-turn state tracking)."""
    kind = rng.choice(["running", "cycling", "walking", "swimming"])
    minutes = rng.randrange(15, 95)
    km = round(
        minutes * {"running": 0.16, "cycling": 0.4, "walking": 0.09, "swimming": 0.03}[kind] * rng.uniform(0.8, 1.2), 1
    )
    water0 = rng.randrange(0, 1500, 250)
    ml = rng.choice([250, 330, 500, 750])
    days = sample_days(rng)
    days[DATES[-1]]["water_ml"] = water0
    noun = {"running": "run", "cycling": "bike ride", "walking": "walk", "swimming": "swim"}[kind]
    return Draft(
        instruction=pick(
            rng,
            [
                f"Log a {minutes}-minute {noun} of {km} km for today.",
                f"I just did a {km} km {noun} in {minutes} minutes, record it.",
                f"Add today's workout: {noun}, {minutes} min, {km} km.",
            ],
        ),
        params={"type": kind, "minutes": minutes, "km": km, "ml": ml},
        setup={"health.days": days},
        tools=[
            "log_workout",
            "list_workouts",
            "delete_workout",
            "log_water_intake",
            "get_water_intake",
            "set_health_goal",
        ],
        followups=[pick(rng, [f"Also, I drank {ml} ml of water.", f"And log {ml} ml of water please."])],
        goal={f"health.days.{DATES[-1]}.water_ml": water0 + ml},
        allowed=["health.workouts"],
        plan=[
            Act(
                f"Log the {kind} workout.",
                [Call("log_workout", {"type": kind, "duration_min": minutes, "distance_km": km})],
            ),
            Say(f"Logged your {minutes}-minute {noun} ({km} km) for today."),
            Act(f"Add {ml} ml of water.", [Call("log_water_intake", {"amount_ml": ml})]),
            Say(f"Added {ml} ml of water; you're at {water0 + ml} ml today."),
        ],
    )


_MEDS = [
    ("Metformin", "500 mg"),
    ("Lisinopril", "10 mg"),
    ("Amoxicillin", "250 mg"),
    ("Levothyroxine", "50 mcg"),
    ("Atorvastatin", "20 mg"),
    ("Omeprazole", "20 mg"),
]


def _check_meds(task: Task, initial: dict[str, Any], final: dict[str, Any], answer: str) -> tuple[bool, str]:
    p = task.params
    if touched := changed_items(initial["health"]["medications"], final["health"]["medications"]):
        return False, f"changed existing reminders: {', '.join(touched)}"
    new = sorted(
        (m["name"].lower(), m["dose"].replace(" ", "").lower(), m["time"])
        for rid, m in final["health"]["medications"].items()
        if rid not in initial["health"]["medications"]
    )
    want = sorted((p["name"].lower(), p["dose"].replace(" ", "").lower(), t) for t in p["times"])
    return (new == want, f"new reminders {new}, expected {want}")


def _meds_from_memory(rng: random.Random) -> Draft:
    """Memory: the prescription (drug, dose, times) is the gold memory; other meds are neighbours."""
    (name, dose), (n2, d2), (n3, d3) = rng.sample(_MEDS, 3)
    times = sorted(
        rng.sample(
            ["07:00", "08:00", "09:00", "12:00", "13:00", "18:00", "20:00", "21:00", "22:00"], rng.choice([1, 2, 3])
        )
    )
    doctor = rng.choice(["Dr. Novak", "Dr. Haddad", "Dr. Silva"])
    memory = [
        {
            "id": "mem_rx",
            "category": "important_info",
            "title": f"Prescription from {doctor}",
            "content": f"{doctor} prescribed {name} {dose}, to take daily at {' and '.join(times)}.",
            "tags": ["health", "medication"],
        },
        {
            "id": "mem_old",
            "category": "important_info",
            "title": f"Old prescription: {n2}",
            "content": f"Stopped taking {n2} {d2} last spring; no longer needed.",
            "tags": ["health", "medication"],
        },
        {
            "id": "mem_prn",
            "category": "important_info",
            "title": f"{n3} only when needed",
            "content": f"Take {n3} {d3} only when needed, never on a schedule.",
            "tags": ["health", "medication"],
        },
        {
            "id": "mem_allergy",
            "category": "important_info",
            "title": "Allergy",
            "content": "Allergic to penicillin.",
            "tags": ["health"],
        },
        {
            "id": "mem_gym",
            "category": "routines_habits",
            "title": "Gym days",
            "content": "Goes to the gym Monday and Thursday evenings.",
            "tags": ["health", "routine"],
        },
    ]
    rng.shuffle(memory)
    return Draft(
        instruction=pick(
            rng,
            [
                f"Set up reminders for the medication {doctor} prescribed.",
                "Add reminders for my new prescription, the way the doctor said.",
                f"Remind me to take what {doctor} prescribed, at the right times.",
            ],
        ),
        params={"name": name, "dose": dose, "times": times},
        tools=[
            "list_medication_reminders",
            "add_medication_reminder",
            "set_medication_reminder_enabled",
            "get_health_goals",
        ],
        memory=memory,
        allowed=["health.medications"],
        plan=[
            Act(
                "Find the prescription in memory.",
                [Call("search_user_memory", {"query": f"{doctor} prescribed medication"})],
            ),
            Act(
                f"{name} {dose} at {', '.join(times)}: add one reminder per time, in parallel.",
                [Call("add_medication_reminder", {"name": name, "dose": dose, "time": t}) for t in times],
            ),
            Say(f"Reminders set for {name} {dose} at {', '.join(times)}."),
        ],
    )


def _revoke_sharing(rng: random.Random) -> Draft:
    """Skills: with health_privacy loaded, revoke exactly the named data types for one app."""
    app = rng.choice(SHARING_APPS)
    revoke = rng.sample(DATA_TYPES, rng.choice([1, 2]))
    perms = {a: {t: rng.random() < 0.5 for t in DATA_TYPES} for a in SHARING_APPS}
    for t in revoke:
        perms[app][t] = True
    perms[app][rng.choice([t for t in DATA_TYPES if t not in revoke])] = True  # something that must stay on
    words = {
        "steps": "steps",
        "heart_rate": "heart rate",
        "sleep": "sleep",
        "workouts": "workouts",
        "weight": "weight",
        "water": "water intake",
    }
    named = " and ".join(words[t] for t in revoke)
    return Draft(
        instruction=pick(
            rng,
            [
                f"Stop {app} from reading my {named}. Leave everything else alone.",
                f"I don't want {app} to see my {named} any more.",
                f"Revoke {app}'s access to my {named} data.",
            ],
        ),
        params={"app": app, "revoke": revoke},
        setup={"health.sharing": perms},
        tools=["get_daily_activity"],
        skills=["health_privacy", "unit_conversion"],
        goal={f"health.sharing.{app}.{t}": False for t in revoke},
        plan=[
            Act("Load the health privacy skill.", [Call("skill__health_privacy", {"reason": f"revoke {app} access"})]),
            Act(f"Check {app}'s current permissions first.", [Call("get_health_sharing", {"app": app})]),
            Act(
                f"Revoke {named} only.",
                [Call("set_health_sharing", {"app": app, "data_type": t, "allowed": False}) for t in revoke],
            ),
            Say(f"{app} can no longer read your {named}; its other permissions are unchanged."),
        ],
    )


def _raise_step_goal(rng: random.Random) -> Draft:
    """Read the current goal, then set it higher; the goal service fails once (503) and the retry works."""
    old = rng.randrange(5000, 12001, 500)
    more = rng.choice([500, 1000, 1500, 2000, 2500])
    return Draft(
        instruction=pick(
            rng,
            [
                f"Raise my daily step goal by {more}.",
                f"Bump my step target up by {more} steps.",
                f"Increase my steps goal by {more} a day.",
            ],
        ),
        params={"old": old, "more": more},
        setup={"health.goals.steps": old},
        tools=["get_health_goals", "set_health_goal", "get_daily_activity", "get_step_history"],
        faults=[
            {
                "tool": "set_health_goal",
                "kind": "outage",
                "times": 1,
                "code": 503,
                "error": "health sync service unavailable; try again",
            }
        ],
        goal={"health.goals.steps": old + more},
        plan=[
            Act("Read the current goals.", [Call("get_health_goals")]),
            Act(
                f"The goal is {old}; set it to {old + more}.",
                [Call("set_health_goal", {"metric": "steps", "target": old + more})],
                may_fail=True,
            ),
            Act(
                "The sync service was briefly down (503); retry once.",
                [Call("set_health_goal", {"metric": "steps", "target": old + more})],
            ),
            Say(f"Your daily step goal is now {old + more} (was {old})."),
        ],
    )


def _gui_water(rng: random.Random) -> Draft:
    """Sub-agent: the GUI agent logs glasses of water by tapping the Health app's button."""
    n = rng.randrange(1, 5)
    days = sample_days(rng)
    water0 = days[DATES[-1]]["water_ml"]
    glasses = f"{n} glasses (250 ml each)" if n > 1 else "a 250 ml glass"
    return Draft(
        instruction=pick(
            rng,
            [
                f"Use the Health app to log {glasses} of water.",
                f"In the Health app, add {n} x 250 ml of water.",
            ],
        ),
        params={"n": n},
        setup={"health.days": days},
        tools=["get_water_intake", "get_health_goals"],
        subagent=True,
        goal={f"health.days.{DATES[-1]}.water_ml": water0 + 250 * n},
        plan=[
            *gui_agent(
                "Health", f"Add 250 ml of water {n} times.", think="Let the GUI agent tap through the Health app."
            ),
            Act("Check the total it left.", [Call("get_water_intake")]),
            Say(f"Logged {n * 250} ml of water; today's total is {water0 + 250 * n} ml."),
        ],
    )


D.add_template(
    Template(
        "health.stat_question",
        "health",
        "tool_use",
        "Answer steps, sleep or resting heart rate for a day of the past week.",
        _stat_question,
        difficulty=1,
    )
)
D.add_template(
    Template(
        "health.workout_then_water",
        "health",
        "tool_use",
        "Log a workout, then a follow-up's water intake.",
        _workout_then_water,
        tags=("multi_turn",),
        difficulty=2,
        check=_check_workout,
    )
)
D.add_template(
    Template(
        "health.medication_from_memory",
        "health",
        "memory",
        "Create medication reminders from the prescription kept in memory.",
        _meds_from_memory,
        difficulty=2,
        check=_check_meds,
    )
)
D.add_template(
    Template(
        "health.skill_revoke_sharing",
        "health",
        "skills",
        "Load health_privacy; revoke only the named data types for one app.",
        _revoke_sharing,
        difficulty=2,
    )
)
D.add_template(
    Template(
        "health.raise_step_goal",
        "health",
        "tool_use",
        "Raise the step goal relative to its current value; retry after a 503.",
        _raise_step_goal,
        tags=("error_recovery",),
        difficulty=1,
    )
)
D.add_template(
    Template(
        "health.gui_log_water",
        "health",
        "sub_agent",
        "A GUI agent logs glasses of water in the Health app.",
        _gui_water,
        difficulty=1,
    )
)
