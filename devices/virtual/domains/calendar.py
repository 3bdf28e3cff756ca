"""Calendar and clock: events with overlap conflicts, alarms with repeat days, reminders and timers."""

from __future__ import annotations

import random
import re
from datetime import date, timedelta
from typing import Any

from devices.virtual.domains._shared import powered_off, toggle
from devices.virtual.registry import Domain, Element, P, err, ok
from devices.virtual.tasks import Act, Call, Draft, Say, Template, gui_agent
from devices.virtual.wording import pick
from harness.contract import Code, ToolResult

TODAY = "2026-12-02"  # a Wednesday; the phone's calendar is anchored here so tasks are reproducible
DAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
WEEKDAYS = DAYS[:5]
_TIME_RE = re.compile(r"^([01]\d|2[0-3]):[0-5]\d$")
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _event(
    eid: str, title: str, day: str, start: str, end: str, location: str = "", cal: str = "Personal"
) -> dict[str, Any]:
    return {"id": eid, "title": title, "date": day, "start": start, "end": end, "location": location, "calendar": cal}


def _alarm(aid: str, time: str, label: str, repeat: list[str], enabled: bool = True) -> dict[str, Any]:
    return {"id": aid, "time": time, "label": label, "repeat": list(repeat), "enabled": enabled}


DOMAIN = Domain(
    "calendar",
    "Calendar, alarms & reminders",
    initial={
        "today": TODAY,
        "events": {
            "evt_0001": _event("evt_0001", "Standup", "2026-12-02", "09:30", "09:45", "Zoom", "Work"),
            "evt_0002": _event("evt_0002", "Lunch with Priya", "2026-12-02", "12:30", "13:30", "Cafe Lumen"),
            "evt_0003": _event("evt_0003", "Design review", "2026-12-03", "14:00", "15:00", "Room 4B", "Work"),
            "evt_0004": _event("evt_0004", "Yoga", "2026-12-05", "10:00", "11:00", "Studio 9"),
        },
        "alarms": {
            "alarm_0001": _alarm("alarm_0001", "07:00", "Wake up", WEEKDAYS),
            "alarm_0002": _alarm("alarm_0002", "09:00", "Weekend", ["sat", "sun"], enabled=False),
        },
        "reminders": {
            "rem_0001": {
                "id": "rem_0001",
                "text": "Pay the electricity bill",
                "due": "2026-12-04 18:00",
                "done": False,
            },
        },
        "timers": {},
        "next": {"event": 5, "alarm": 3, "reminder": 2, "timer": 1},
    },
)
D = DOMAIN


def to_min(t: str) -> int:
    return int(t[:2]) * 60 + int(t[3:5])


def fmt(m: int) -> str:
    return f"{m // 60:02d}:{m % 60:02d}"


def _bad_date(d: str) -> str | None:
    if not _DATE_RE.match(d):
        return f"date must be YYYY-MM-DD (got {d!r})"
    try:
        date.fromisoformat(d)
    except ValueError:
        return f"{d} is not a valid date"
    return None


def _bad_time(t: str, what: str = "time") -> str | None:
    return None if _TIME_RE.match(t) else f"{what} must be HH:MM in 24h format (got {t!r})"


def _clash(s: dict[str, Any], day: str, start: str, end: str, skip: str = "") -> dict[str, Any] | None:
    a, b = to_min(start), to_min(end)
    for e in sorted(s["events"].values(), key=lambda e: e["start"]):
        if e["id"] != skip and e["date"] == day and to_min(e["start"]) < b and a < to_min(e["end"]):
            return e
    return None


def _new_id(s: dict[str, Any], kind: str, prefix: str) -> str:
    n = s["next"][kind]
    s["next"][kind] = n + 1
    return f"{prefix}_{n:04d}"


def free_slots(
    events: list[dict[str, Any]], day: str, minutes: int, start: str = "08:00", end: str = "20:00"
) -> list[dict[str, str]]:
    """Gaps of at least ``minutes`` between ``start`` and ``end`` on ``day`` (templates use it too)."""
    busy = sorted((to_min(e["start"]), to_min(e["end"])) for e in events if e["date"] == day)
    out, cur, stop = [], to_min(start), to_min(end)
    for a, b in busy:
        if a - cur >= minutes and cur < stop:
            out.append({"start": fmt(cur), "end": fmt(min(a, stop))})
        cur = max(cur, b)
    if stop - cur >= minutes:
        out.append({"start": fmt(cur), "end": fmt(stop)})
    return [x for x in out if to_min(x["end"]) - to_min(x["start"]) >= minutes]


# -- Events ---------------------------------------------------------------------------------------

_EID = P.string("event id, e.g. evt_0003")


@D.tool(
    "list_events",
    "List calendar events on a date, or between two dates (inclusive), sorted by start time.",
    {"date": P.string("YYYY-MM-DD"), "start_date": P.string("YYYY-MM-DD"), "end_date": P.string("YYYY-MM-DD")},
    read_only=True,
    codes=(400,),
    cases=[
        ok({"date": "2026-12-02"}),
        ok({"start_date": "2026-12-01", "end_date": "2026-12-07"}),
        ok({}),
        err(400, {"date": "tomorrow"}),
    ],
)
def list_events(phone, s, args):
    for k in ("date", "start_date", "end_date"):
        if k in args and (bad := _bad_date(args[k])):
            return ToolResult.fail(Code.BAD_ARGUMENT, bad)
    lo = args.get("date", args.get("start_date", "0000-00-00"))
    hi = args.get("date", args.get("end_date", "9999-99-99"))
    rows = sorted(
        (dict(e) | {"event_id": e["id"]} for e in s["events"].values() if lo <= e["date"] <= hi),
        key=lambda e: (e["date"], e["start"]),
    )
    return ToolResult.ok(f"{len(rows)} events", {"today": s["today"], "events": rows, "total": len(rows)})


@D.tool(
    "get_event",
    "Get one event by id.",
    {"event_id": _EID},
    ["event_id"],
    read_only=True,
    codes=(404,),
    cases=[ok({"event_id": "evt_0001"}), err(404, {"event_id": "evt_0999"})],
)
def get_event(phone, s, args):
    e = s["events"].get(args["event_id"])
    if e is None:
        return ToolResult.fail(Code.NOT_FOUND, f"no event '{args['event_id']}'; use list_events")
    return ToolResult.ok(e["title"], dict(e) | {"event_id": e["id"]})


@D.tool(
    "create_event",
    "Create a calendar event. Refused with 409 when it overlaps another event unless allow_overlap is true.",
    {
        "title": P.string("event title"),
        "date": P.string("YYYY-MM-DD"),
        "start": P.string("start time HH:MM"),
        "end": P.string("end time HH:MM"),
        "location": P.string("where"),
        "allow_overlap": P.boolean("create it even if it overlaps another event"),
    },
    ["title", "date", "start", "end"],
    codes=(400, 409, 412),
    cases=[
        ok({"title": "Dentist", "date": "2026-12-04", "start": "15:00", "end": "15:45"}),
        ok({"title": "Call Ana", "date": "2026-12-02", "start": "09:30", "end": "10:00", "allow_overlap": True}),
        err(409, {"title": "Call Ana", "date": "2026-12-02", "start": "09:30", "end": "10:00"}),
        err(400, {"title": "Dentist", "date": "2026-12-04", "start": "16:00", "end": "15:00"}),
        err(400, {"title": "Dentist", "date": "04/12/2026", "start": "15:00", "end": "16:00"}),
        err(
            412,
            {"title": "Dentist", "date": "2026-12-04", "start": "15:00", "end": "16:00"},
            {"power.device.state": "off"},
        ),
    ],
    check=lambda ph, a: any(
        e["title"] == a["title"] and e["date"] == a["date"] and e["start"] == a["start"]
        for e in ph.state["calendar"]["events"].values()
    ),
)
def create_event(phone, s, args):
    if (off := powered_off(phone)) is not None:
        return off
    for problem in (_bad_date(args["date"]), _bad_time(args["start"], "start"), _bad_time(args["end"], "end")):
        if problem:
            return ToolResult.fail(Code.BAD_ARGUMENT, problem)
    if args["end"] <= args["start"]:
        return ToolResult.fail(Code.BAD_ARGUMENT, f"end {args['end']} must be after start {args['start']}")
    other = _clash(s, args["date"], args["start"], args["end"])
    if other is not None and not args.get("allow_overlap"):
        return ToolResult.fail(
            Code.CONFLICT,
            f"overlaps '{other['title']}' ({other['id']}, {other['start']}-{other['end']}); pick another time "
            "or pass allow_overlap=true",
        )
    eid = _new_id(s, "event", "evt")
    s["events"][eid] = _event(eid, args["title"], args["date"], args["start"], args["end"], args.get("location", ""))
    phone.log("calendar.event_created", event_id=eid, title=args["title"])
    return ToolResult.ok(
        f"'{args['title']}' added on {args['date']} {args['start']}-{args['end']}",
        dict(s["events"][eid]) | {"event_id": eid},
    )


@D.tool(
    "update_event",
    "Change an event's title, date, times or location (409 if the new time overlaps another event).",
    {
        "event_id": _EID,
        "title": P.string("new title"),
        "date": P.string("YYYY-MM-DD"),
        "start": P.string("HH:MM"),
        "end": P.string("HH:MM"),
        "location": P.string("where"),
        "allow_overlap": P.boolean("allow an overlap"),
    },
    ["event_id"],
    codes=(400, 404, 409, 412),
    cases=[
        ok({"event_id": "evt_0004", "start": "11:00", "end": "12:00"}),
        err(400, {"event_id": "evt_0004"}),
        err(404, {"event_id": "evt_0999", "title": "x"}),
        err(409, {"event_id": "evt_0002", "start": "09:00", "end": "10:00"}),
        err(412, {"event_id": "evt_0004", "title": "x"}, {"power.device.state": "off"}),
    ],
    check=lambda ph, a: all(
        ph.state["calendar"]["events"][a["event_id"]][k] == a[k]
        for k in ("title", "date", "start", "end", "location")
        if k in a
    ),
)
def update_event(phone, s, args):
    if (off := powered_off(phone)) is not None:
        return off
    fields = [k for k in ("title", "date", "start", "end", "location") if k in args]
    if not fields:
        return ToolResult.fail(Code.BAD_ARGUMENT, "give at least one of title, date, start, end, location")
    e = s["events"].get(args["event_id"])
    if e is None:
        return ToolResult.fail(Code.NOT_FOUND, f"no event '{args['event_id']}'; use list_events")
    new = {**e, **{k: args[k] for k in fields}}
    for problem in (_bad_date(new["date"]), _bad_time(new["start"], "start"), _bad_time(new["end"], "end")):
        if problem:
            return ToolResult.fail(Code.BAD_ARGUMENT, problem)
    if new["end"] <= new["start"]:
        return ToolResult.fail(Code.BAD_ARGUMENT, f"end {new['end']} must be after start {new['start']}")
    other = _clash(s, new["date"], new["start"], new["end"], skip=e["id"])
    if other is not None and not args.get("allow_overlap"):
        return ToolResult.fail(
            Code.CONFLICT, f"the new time overlaps '{other['title']}' ({other['start']}-{other['end']})"
        )
    if new != e:
        e.update(new)
        phone.log("calendar.event_updated", event_id=e["id"])
    return ToolResult.ok(f"updated '{e['title']}'", dict(e) | {"event_id": e["id"]})


@D.tool(
    "delete_event",
    "Delete a calendar event.",
    {"event_id": _EID},
    ["event_id"],
    codes=(404, 412),
    cases=[
        ok({"event_id": "evt_0004"}),
        err(404, {"event_id": "evt_0999"}),
        err(412, {"event_id": "evt_0004"}, {"power.device.state": "off"}),
    ],
    check=lambda ph, a: a["event_id"] not in ph.state["calendar"]["events"],
)
def delete_event(phone, s, args):
    if (off := powered_off(phone)) is not None:
        return off
    e = s["events"].pop(args["event_id"], None)
    if e is None:
        return ToolResult.fail(Code.NOT_FOUND, f"no event '{args['event_id']}'")
    phone.log("calendar.event_deleted", event_id=e["id"])
    return ToolResult.ok(f"deleted '{e['title']}'", {"event_id": e["id"], "deleted": True})


@D.tool(
    "find_free_slots",
    "Find free time windows of at least duration_min on a date (default between 08:00 and 20:00).",
    {
        "date": P.string("YYYY-MM-DD"),
        "duration_min": P.integer("minutes needed", 5, 600),
        "not_before": P.string("HH:MM"),
        "not_after": P.string("HH:MM"),
    },
    ["date", "duration_min"],
    read_only=True,
    codes=(400,),
    cases=[
        ok({"date": "2026-12-02", "duration_min": 30}),
        ok({"date": "2026-12-03", "duration_min": 60, "not_before": "12:00"}),
        err(400, {"date": "2026-12-02", "duration_min": 30, "not_before": "noon"}),
    ],
)
def find_free_slots(phone, s, args):
    if (
        bad := _bad_date(args["date"])
        or _bad_time(args.get("not_before", "08:00"), "not_before")
        or _bad_time(args.get("not_after", "20:00"), "not_after")
    ):
        return ToolResult.fail(Code.BAD_ARGUMENT, bad)
    slots = free_slots(
        list(s["events"].values()),
        args["date"],
        args["duration_min"],
        args.get("not_before", "08:00"),
        args.get("not_after", "20:00"),
    )
    return ToolResult.ok(f"{len(slots)} free windows", {"date": args["date"], "slots": slots})


# -- Alarms ---------------------------------------------------------------------------------------

_AID = P.string("alarm id, e.g. alarm_0002")


@D.tool(
    "list_alarms", "List alarms with time, label, repeat days and whether they are on.", read_only=True, cases=[ok({})]
)
def list_alarms(phone, s, args):
    rows = sorted((dict(a) | {"alarm_id": a["id"]} for a in s["alarms"].values()), key=lambda a: a["time"])
    return ToolResult.ok(f"{len(rows)} alarms", {"alarms": rows})


@D.tool(
    "create_alarm",
    "Create an alarm. repeat_days empty = rings once. 409 if an alarm already exists at that time on those days.",
    {
        "time": P.string("HH:MM"),
        "label": P.string("label"),
        "repeat_days": P.array(P.enum(DAYS, "day"), "days it repeats"),
    },
    ["time"],
    codes=(400, 409, 412),
    cases=[
        ok({"time": "06:30", "label": "Gym", "repeat_days": ["mon", "wed", "fri"]}),
        ok({"time": "14:15"}),
        err(400, {"time": "6.30"}),
        err(409, {"time": "07:00", "repeat_days": ["mon"]}),
        err(412, {"time": "06:30"}, {"power.device.state": "off"}),
    ],
    check=lambda ph, a: any(x["time"] == a["time"] for x in ph.state["calendar"]["alarms"].values()),
)
def create_alarm(phone, s, args):
    if (off := powered_off(phone)) is not None:
        return off
    if bad := _bad_time(args["time"]):
        return ToolResult.fail(Code.BAD_ARGUMENT, bad)
    days = [d for d in DAYS if d in set(args.get("repeat_days", []))]
    for a in s["alarms"].values():
        if a["time"] == args["time"] and (set(a["repeat"]) & set(days) or not a["repeat"] or not days):
            state = "on" if a["enabled"] else "off"
            return ToolResult.fail(
                Code.CONFLICT,
                f"an alarm at {a['time']} already exists ({a['id']}, '{a['label']}', "
                f"{state}); turn that one on or change it instead",
            )
    aid = _new_id(s, "alarm", "alarm")
    s["alarms"][aid] = _alarm(aid, args["time"], args.get("label", "Alarm"), days)
    phone.log("calendar.alarm_created", alarm_id=aid, time=args["time"])
    return ToolResult.ok(
        f"alarm set for {args['time']}" + (f" on {', '.join(days)}" if days else " (once)"),
        dict(s["alarms"][aid]) | {"alarm_id": aid},
    )


@D.tool(
    "set_alarm_enabled",
    "Turn an alarm on or off.",
    {"alarm_id": _AID, "enabled": P.boolean("true to turn it on")},
    ["alarm_id", "enabled"],
    codes=(404, 412),
    cases=[
        ok({"alarm_id": "alarm_0002", "enabled": True}),
        err(404, {"alarm_id": "alarm_0999", "enabled": True}),
        err(412, {"alarm_id": "alarm_0002", "enabled": True}, {"power.device.state": "off"}),
    ],
    check=lambda ph, a: ph.state["calendar"]["alarms"][a["alarm_id"]]["enabled"] == a["enabled"],
)
def set_alarm_enabled(phone, s, args):
    if (off := powered_off(phone)) is not None:
        return off
    a = s["alarms"].get(args["alarm_id"])
    if a is None:
        return ToolResult.fail(Code.NOT_FOUND, f"no alarm '{args['alarm_id']}'; use list_alarms")
    if a["enabled"] != args["enabled"]:
        a["enabled"] = args["enabled"]
        phone.log("calendar.alarm_toggled", alarm_id=a["id"], enabled=args["enabled"])
    return ToolResult.ok(f"alarm {a['time']} {'on' if a['enabled'] else 'off'}", dict(a) | {"alarm_id": a["id"]})


@D.tool(
    "delete_alarm",
    "Delete an alarm.",
    {"alarm_id": _AID},
    ["alarm_id"],
    codes=(404, 412),
    cases=[
        ok({"alarm_id": "alarm_0002"}),
        err(404, {"alarm_id": "alarm_0999"}),
        err(412, {"alarm_id": "alarm_0002"}, {"power.device.state": "off"}),
    ],
    check=lambda ph, a: a["alarm_id"] not in ph.state["calendar"]["alarms"],
)
def delete_alarm(phone, s, args):
    if (off := powered_off(phone)) is not None:
        return off
    a = s["alarms"].pop(args["alarm_id"], None)
    if a is None:
        return ToolResult.fail(Code.NOT_FOUND, f"no alarm '{args['alarm_id']}'")
    phone.log("calendar.alarm_deleted", alarm_id=a["id"])
    return ToolResult.ok(f"deleted the {a['time']} alarm", {"alarm_id": a["id"], "deleted": True})


# -- Reminders ------------------------------------------------------------------------------------


@D.tool(
    "create_reminder",
    "Create a reminder due at a date and time.",
    {"text": P.string("what to be reminded of"), "due": P.string("YYYY-MM-DD HH:MM")},
    ["text", "due"],
    codes=(400, 412),
    cases=[
        ok({"text": "Call mum", "due": "2026-12-03 19:00"}),
        err(400, {"text": "Call mum", "due": "tomorrow"}),
        err(412, {"text": "Call mum", "due": "2026-12-03 19:00"}, {"power.device.state": "off"}),
    ],
    check=lambda ph, a: any(r["text"] == a["text"] for r in ph.state["calendar"]["reminders"].values()),
)
def create_reminder(phone, s, args):
    if (off := powered_off(phone)) is not None:
        return off
    d, _, t = args["due"].partition(" ")
    if bad := _bad_date(d) or _bad_time(t, "due time"):
        return ToolResult.fail(Code.BAD_ARGUMENT, f"due must be 'YYYY-MM-DD HH:MM': {bad}")
    rid = _new_id(s, "reminder", "rem")
    s["reminders"][rid] = {"id": rid, "text": args["text"], "due": args["due"], "done": False}
    phone.log("calendar.reminder_created", reminder_id=rid)
    return ToolResult.ok(f"reminder set for {args['due']}", dict(s["reminders"][rid]) | {"reminder_id": rid})


@D.tool(
    "list_reminders",
    "List reminders (open ones, or all).",
    {"include_done": P.boolean("also completed ones")},
    read_only=True,
    cases=[ok({}), ok({"include_done": True})],
)
def list_reminders(phone, s, args):
    rows = sorted(
        (
            dict(r) | {"reminder_id": r["id"]}
            for r in s["reminders"].values()
            if args.get("include_done") or not r["done"]
        ),
        key=lambda r: r["due"],
    )
    return ToolResult.ok(f"{len(rows)} reminders", {"reminders": rows})


@D.tool(
    "complete_reminder",
    "Mark a reminder as done.",
    {"reminder_id": P.string("reminder id, e.g. rem_0001")},
    ["reminder_id"],
    codes=(404, 409),
    cases=[
        ok({"reminder_id": "rem_0001"}),
        err(404, {"reminder_id": "rem_0999"}),
        err(409, {"reminder_id": "rem_0001"}, {"calendar.reminders.rem_0001.done": True}),
    ],
    check=lambda ph, a: ph.state["calendar"]["reminders"][a["reminder_id"]]["done"],
)
def complete_reminder(phone, s, args):
    r = s["reminders"].get(args["reminder_id"])
    if r is None:
        return ToolResult.fail(Code.NOT_FOUND, f"no reminder '{args['reminder_id']}'")
    if r["done"]:
        return ToolResult.fail(Code.CONFLICT, f"'{r['text']}' is already done")
    r["done"] = True
    phone.log("calendar.reminder_done", reminder_id=r["id"])
    return ToolResult.ok(f"'{r['text']}' done", dict(r))


# -- Timers (one planner step is one minute on the phone clock) -----------------------------------


@D.on_tick
def _countdown(phone, s: dict[str, Any]) -> None:
    for t in s["timers"].values():
        if t["status"] == "running":
            t["remaining_s"] = max(0, t["remaining_s"] - 60)
            if t["remaining_s"] == 0:
                t["status"] = "finished"
                phone.log("calendar.timer_finished", timer_id=t["id"])


@D.tool(
    "start_timer",
    "Start a countdown timer. 409 if a running timer already has that label.",
    {"minutes": P.integer("length in minutes", 1, 1440), "label": P.string("label")},
    ["minutes"],
    codes=(409, 412),
    cases=[
        ok({"minutes": 12, "label": "Pasta"}),
        err(400, {"minutes": 0}),
        err(
            409,
            {"minutes": 5, "label": "Tea"},
            {
                "calendar.timers.timer_0001": {
                    "id": "timer_0001",
                    "label": "Tea",
                    "duration_s": 240,
                    "remaining_s": 120,
                    "status": "running",
                }
            },
        ),
        err(412, {"minutes": 5}, {"power.device.state": "off"}),
    ],
    check=lambda ph, a: any(t["duration_s"] == a["minutes"] * 60 for t in ph.state["calendar"]["timers"].values()),
)
def start_timer(phone, s, args):
    if (off := powered_off(phone)) is not None:
        return off
    label = args.get("label", "Timer")
    if any(t["label"].lower() == label.lower() and t["status"] == "running" for t in s["timers"].values()):
        return ToolResult.fail(Code.CONFLICT, f"a '{label}' timer is already running; cancel it or use another label")
    tid = _new_id(s, "timer", "timer")
    s["timers"][tid] = {
        "id": tid,
        "label": label,
        "duration_s": args["minutes"] * 60,
        "remaining_s": args["minutes"] * 60,
        "status": "running",
    }
    phone.log("calendar.timer_started", timer_id=tid)
    return ToolResult.ok(f"{label} timer started for {args['minutes']} min", dict(s["timers"][tid]) | {"timer_id": tid})


@D.tool("list_timers", "List timers with their remaining time.", read_only=True, cases=[ok({})])
def list_timers(phone, s, args):
    return ToolResult.ok(
        f"{len(s['timers'])} timers", {"timers": [dict(t) | {"timer_id": t["id"]} for t in s["timers"].values()]}
    )


@D.tool(
    "cancel_timer",
    "Cancel a running timer.",
    {"timer_id": P.string("timer id, e.g. timer_0001")},
    ["timer_id"],
    codes=(404, 409),
    cases=[
        ok(
            {"timer_id": "timer_0001"},
            {
                "calendar.timers.timer_0001": {
                    "id": "timer_0001",
                    "label": "Tea",
                    "duration_s": 240,
                    "remaining_s": 120,
                    "status": "running",
                }
            },
        ),
        err(404, {"timer_id": "timer_0999"}),
        err(
            409,
            {"timer_id": "timer_0001"},
            {
                "calendar.timers.timer_0001": {
                    "id": "timer_0001",
                    "label": "Tea",
                    "duration_s": 240,
                    "remaining_s": 0,
                    "status": "finished",
                }
            },
        ),
    ],
    check=lambda ph, a: ph.state["calendar"]["timers"][a["timer_id"]]["status"] == "cancelled",
)
def cancel_timer(phone, s, args):
    t = s["timers"].get(args["timer_id"])
    if t is None:
        return ToolResult.fail(Code.NOT_FOUND, f"no timer '{args['timer_id']}'; use list_timers")
    if t["status"] != "running":
        return ToolResult.fail(Code.CONFLICT, f"the '{t['label']}' timer already {t['status']}")
    # Replace rather than mutate: the record may be a dict shared with a task's setup.
    t = s["timers"][t["id"]] = {**t, "status": "cancelled"}
    phone.log("calendar.timer_cancelled", timer_id=t["id"])
    return ToolResult.ok(f"cancelled the '{t['label']}' timer", dict(t))


D.skill(
    "calendar_planning",
    "Calendar planning",
    "Find free time and book, move or cancel calendar events without double-booking.",
    ["list_events", "get_event", "find_free_slots", "create_event", "update_event", "delete_event"],
    [
        "Check free slots before booking; never double-book unless the user explicitly allows it.",
        "A 409 on create_event names the clashing event: choose a time after it or ask the user.",
        "Use ISO dates (YYYY-MM-DD) and 24h times (HH:MM).",
    ],
)


# -- App screen -----------------------------------------------------------------------------------


def event_label(e: dict[str, Any]) -> str:
    return f"{e['title']} · {e['date']} {e['start']}-{e['end']}"


@D.app("Calendar", package="com.flywheel.calendar")
def calendar_screen(phone, route):
    s = phone.state["calendar"]
    inputs = phone.gui.get("inputs", {})
    if route == "new":
        return "New event", [
            Element("title", inputs.get("title", "Title"), kind="input", clickable=True),
            Element("date", inputs.get("date", "Date (YYYY-MM-DD)"), kind="input", clickable=True),
            Element("start", inputs.get("start", "Start (HH:MM)"), kind="input", clickable=True),
            Element("end", inputs.get("end", "End (HH:MM)"), kind="input", clickable=True),
            Element(
                "save",
                "Save event",
                kind="button",
                clickable=True,
                to="main",
                tool=(
                    "create_event",
                    {"title": "{input:title}", "date": "{input:date}", "start": "{input:start}", "end": "{input:end}"},
                ),
            ),
        ]
    if route == "alarms":
        els = [Element("new_alarm", "New alarm", kind="button", clickable=True, to="new_alarm")]
        for a in sorted(s["alarms"].values(), key=lambda a: a["time"]):
            days = ", ".join(a["repeat"]) or "once"
            els.append(
                toggle(
                    f"alarm:{a['id']}",
                    f"{a['time']} {a['label']} ({days})",
                    a["enabled"],
                    "set_alarm_enabled",
                    {"alarm_id": a["id"]},
                )
            )
        return "Alarms", els
    if route == "new_alarm":
        return "New alarm", [
            Element("time", inputs.get("time", "Time (HH:MM)"), kind="input", clickable=True),
            Element("label", inputs.get("label", "Label"), kind="input", clickable=True),
            Element(
                "save_alarm",
                "Save alarm",
                kind="button",
                clickable=True,
                to="alarms",
                tool=("create_alarm", {"time": "{input:time}", "label": "{input:label}"}),
            ),
        ]
    els = [
        Element("new", "New event", kind="button", clickable=True, to="new"),
        Element("alarms", "Alarms", kind="button", clickable=True, to="alarms"),
        Element("hdr", f"Upcoming from {s['today']}", kind="header"),
    ]
    for e in sorted(s["events"].values(), key=lambda e: (e["date"], e["start"])):
        if e["date"] >= s["today"]:
            els.append(Element(f"event:{e['id']}", event_label(e), kind="item"))
    return "Calendar", els


_QUOTED = re.compile(r"""["'“‘]([^"'”’]+)["'”’]""")
_BARE_TITLE = re.compile(
    r"(?:event\s+(?:called|titled|named)|called|titled|named|event)\s+(.+?)\s+(?:on|for)\s+\d{4}-", re.I
)
_DATE_IN = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_TIME_IN = re.compile(r"\b(\d{1,2})[:.](\d{2})\b")


def _times(text: str) -> list[str]:
    return [f"{int(h):02d}:{m}" for h, m in _TIME_IN.findall(text)]


@D.gui_script("Calendar")
def calendar_gui_script(instruction: str) -> list[tuple[Any, ...]] | None:
    """'Add the event "Dentist" on 2026-12-05 from 14:00 to 15:00' -> New event, fill the form, Save event,
    confirm the listing; 'Set an alarm for 06:30 labelled "Gym"' -> Alarms, New alarm, Save alarm."""
    times = _times(instruction)
    q = _QUOTED.search(instruction)
    if "alarm" in instruction.lower() and times:
        label = q.group(1).strip() if q else "Alarm"
        return [
            ("tap", "Alarms"),
            ("tap", "New alarm"),
            ("type", times[0], "time"),
            ("type", label, "label"),
            ("tap", "Save alarm"),
            ("confirm", f"{times[0]} {label}", f"alarm {times[0]}"),
        ]
    d = _DATE_IN.search(instruction)
    m = q or _BARE_TITLE.search(instruction)
    if d is None or m is None or len(times) < 2:
        return None
    title, start, end = m.group(1).strip(), times[0], times[1]
    label = event_label({"title": title, "date": d.group(0), "start": start, "end": end})
    return [
        ("tap", "New event"),
        ("type", title, "title"),
        ("type", d.group(0), "date"),
        ("type", start, "start"),
        ("type", end, "end"),
        ("tap", "Save event"),
        ("confirm", label, title),
    ]


# -- Task templates -------------------------------------------------------------------------------

_TITLES = [
    "Dentist",
    "Call with Ana",
    "Car service",
    "Parent-teacher meeting",
    "Haircut",
    "1:1 with Marco",
    "Physio",
    "Budget review",
    "Coffee with Lee",
    "Flat viewing",
]
_BUSY = ["Team lunch", "Client call", "School run", "Gym class", "Focus block", "Doctor"]


def _day(rng: random.Random) -> tuple[str, str]:
    # Days without base events, so the sampled busy events are the whole day the reference plan reasons about.
    taken = {e["date"] for e in D.initial["events"].values()}
    d = rng.choice(
        [x for x in (date.fromisoformat(TODAY) + timedelta(days=i) for i in range(1, 10)) if x.isoformat() not in taken]
    )
    return d.isoformat(), d.strftime("%A %-d %B")


def _busy_day(rng: random.Random, day: str, first_id: int) -> dict[str, Any]:
    """Two to three events on ``day`` at sampled times (no overlaps among them)."""
    out: dict[str, Any] = {}
    cursor = rng.choice([8 * 60, 8 * 60 + 30, 9 * 60])
    for i, title in enumerate(rng.sample(_BUSY, rng.randint(2, 3))):
        start = cursor + rng.choice([0, 30, 60, 90])
        length = rng.choice([30, 45, 60, 90])
        eid = f"evt_{first_id + i:04d}"
        out[f"calendar.events.{eid}"] = _event(eid, title, day, fmt(start), fmt(start + length))
        cursor = start + length
    return out


def _event_conflict(rng: random.Random) -> Draft:
    """Create an event; when it overlaps, put it right after the clashing event (the user's rule)."""
    title = rng.choice(_TITLES)
    day, spoken = _day(rng)
    setup = _busy_day(rng, day, 20)
    busy = sorted(setup.values(), key=lambda e: e["start"])
    length = rng.choice([30, 45, 60])
    clash = rng.random() < 0.6
    if clash:
        victim = rng.choice(busy)
        start = to_min(victim["start"]) + rng.choice([0, 15])  # every busy event lasts >= 30 min: still a clash
    else:
        start = max(to_min(e["end"]) for e in busy) + rng.choice([30, 60, 120])
    want = (fmt(start), fmt(start + length))
    final = want
    plan: list[Any] = []
    if clash:
        # Follow the chain: after the clashing event, the next one may clash too.
        s = {"events": {e["id"]: e for e in busy}}
        cur = start
        while (hit := _clash(s, day, fmt(cur), fmt(cur + length))) is not None:
            cur = to_min(hit["end"])
        final = (fmt(cur), fmt(cur + length))
        plan.append(
            Act(
                f"Create '{title}' at {want[0]}.",
                [Call("create_event", {"title": title, "date": day, "start": want[0], "end": want[1]})],
                may_fail=True,
            )
        )
        plan.append(
            Act(
                "409: it overlaps; per the user's rule move it right after the clashing event. Check the day.",
                [Call("list_events", {"date": day})],
            )
        )
        plan.append(
            Act(
                f"The first free start after the clash is {final[0]}.",
                [Call("create_event", {"title": title, "date": day, "start": final[0], "end": final[1]})],
            )
        )
    else:
        plan.append(
            Act(
                f"Create '{title}'.",
                [Call("create_event", {"title": title, "date": day, "start": want[0], "end": want[1]})],
            )
        )
    plan.append(Say(f"'{title}' is booked on {day} from {final[0]} to {final[1]}."))
    nid = "evt_0030"
    return Draft(
        instruction=pick(
            rng,
            [
                f"Put '{title}' in my calendar on {day} from {want[0]} to {want[1]}. If it clashes with something, "
                "schedule it right after that instead.",
                f"Book {title} for {spoken} ({day}), {want[0]}-{want[1]}; if that overlaps another event, move it to "
                "straight after it.",
                f"Add {title} on {day} at {want[0]} for {length} minutes - no double booking, just push it "
                "after whatever is in the way.",
            ],
        ),
        params={"title": title, "date": day, "want": list(want), "final": list(final), "clash": clash},
        setup={**setup, "calendar.next.event": 30},
        tools=["create_event", "list_events", "find_free_slots", "update_event", "delete_event", "create_reminder"],
        goal={f"calendar.events.{nid}": _event(nid, title, day, final[0], final[1])},
        allowed=["calendar.next.event"],
        plan=plan,
    )


_WAKE = [("06:15", "Run"), ("06:45", "Gym"), ("07:10", "Wake up"), ("05:50", "Early shift")]


def _memory_alarm(rng: random.Random) -> Draft:
    """Memory: the weekday wake-up routine; an old disabled alarm at that time may already exist (409)."""
    time, label = rng.choice(_WAKE)
    days = rng.choice([WEEKDAYS, ["mon", "wed", "fri"], ["tue", "thu"]])
    spoken = {5: "weekdays", 3: "Mondays, Wednesdays and Fridays", 2: "Tuesdays and Thursdays"}[len(days)]
    memory = [
        {
            "id": "mem_wake",
            "category": "routines_habits",
            "title": "Wake-up alarm",
            "content": f"On {spoken} I get up at {time} ('{label}').",
            "tags": ["alarm", "morning"],
        }
    ]
    memory += [
        {
            "id": "mem_w2",
            "category": "routines_habits",
            "title": "Weekend lie-in",
            "content": "Weekends: no alarm before 09:00.",
            "tags": ["alarm"],
        },
        {
            "id": "mem_w3",
            "category": "routines_habits",
            "title": "Medication",
            "content": "Take the blue pill at 21:00 daily.",
            "tags": ["reminder"],
        },
        {
            "id": "mem_w4",
            "category": "important_event",
            "title": "Flight",
            "content": "Flight to Lisbon on the 12th, 06:00 taxi.",
            "tags": ["travel"],
        },
        {
            "id": "mem_w5",
            "category": "preferences",
            "title": "Alarm sound",
            "content": "Prefers the 'Sunrise' alarm tone.",
            "tags": ["alarm"],
        },
    ]
    rng.shuffle(memory)
    existing = rng.random() < 0.4
    setup: dict[str, Any] = {"calendar.next.alarm": 5}
    if existing:
        setup["calendar.alarms.alarm_0004"] = _alarm("alarm_0004", time, label, days, enabled=False)
        goal = {"calendar.alarms.alarm_0004.enabled": True}
        plan = [
            Act(
                "Find the user's wake-up routine in memory.",
                [Call("search_user_memory", {"query": "wake up alarm time", "maxResults": 5})],
            ),
            Act(
                f"Create the {time} alarm on {', '.join(days)}.",
                [Call("create_alarm", {"time": time, "label": label, "repeat_days": list(days)})],
                may_fail=True,
            ),
            Act(
                "409: an alarm at that time exists but is off; turn it on instead.",
                [Call("set_alarm_enabled", {"alarm_id": "alarm_0004", "enabled": True})],
            ),
        ]
    else:
        goal = {"calendar.alarms.alarm_0005": _alarm("alarm_0005", time, label, days)}
        plan = [
            Act(
                "Find the user's wake-up routine in memory.",
                [Call("search_user_memory", {"query": "wake up alarm time", "maxResults": 5})],
            ),
            Act(
                f"Create the {time} alarm on {', '.join(days)}.",
                [Call("create_alarm", {"time": time, "label": label, "repeat_days": list(days)})],
            ),
        ]
    plan.append(Say(f"Your {time} '{label}' alarm is on for {spoken}."))
    return Draft(
        instruction=pick(
            rng,
            [
                "Set my usual wake-up alarm.",
                "Make sure my normal morning alarm is set.",
                "Alarm for getting up, the usual one please.",
            ],
        ),
        params={"time": time, "label": label, "days": list(days), "existing": existing},
        setup=setup,
        memory=memory,
        tools=["create_alarm", "list_alarms", "set_alarm_enabled", "delete_alarm", "create_reminder"],
        goal=goal,
        allowed=["calendar.next.alarm"],
        plan=plan,
    )


def _skill_slot(rng: random.Random) -> Draft:
    """Skills: load calendar_planning (note_taking is a distractor), find the earliest free slot, book it."""
    title = rng.choice(_TITLES)
    day, spoken = _day(rng)
    setup = _busy_day(rng, day, 40)
    length = rng.choice([30, 45, 60])
    after = rng.choice(["08:00", "09:00", "10:00"])
    slots = free_slots(list(setup.values()), day, length, after, "20:00")
    start = slots[0]["start"]
    end = fmt(to_min(start) + length)
    nid = "evt_0050"
    return Draft(
        instruction=pick(
            rng,
            [
                f"Find the earliest {length}-minute gap on {day} after {after} and book '{title}' there.",
                f"Book {title} ({length} min) on {spoken} ({day}) at the first free time from {after}.",
                f"Slot in '{title}' for {length} minutes on {day}, as early as possible but not before {after}.",
            ],
        ),
        params={"title": title, "date": day, "length": length, "start": start},
        setup={**setup, "calendar.next.event": 50},
        skills=["calendar_planning", "note_taking"],
        goal={f"calendar.events.{nid}": _event(nid, title, day, start, end)},
        allowed=["calendar.next.event"],
        plan=[
            Act(
                "Load the calendar planning skill.",
                [Call("skill__calendar_planning", {"reason": "find a free slot and book"})],
            ),
            Act(
                "Find free windows.",
                [Call("find_free_slots", {"date": day, "duration_min": length, "not_before": after})],
            ),
            Act(
                f"The earliest window starts at {start}; book it.",
                [Call("create_event", {"title": title, "date": day, "start": start, "end": end})],
            ),
            Say(f"Booked '{title}' on {day} from {start} to {end}, the first free slot."),
        ],
    )


def _gui_event(rng: random.Random) -> Draft:
    """Sub-agent: a GUI agent adds the event through the Calendar app's form."""
    title = rng.choice(_TITLES)
    day, spoken = _day(rng)
    start_m = rng.choice([7, 18, 19]) * 60 + rng.choice([0, 30])  # outside the sampled busy hours
    length = rng.choice([30, 60])
    start, end = fmt(start_m), fmt(start_m + length)
    setup = {
        f"calendar.events.evt_{20 + i:04d}": _event(f"evt_{20 + i:04d}", t, day, f"{10 + 2 * i}:00", f"{11 + 2 * i}:00")
        for i, t in enumerate(rng.sample(_BUSY, 2))
    }
    setup["calendar.next.event"] = 60
    nid = "evt_0060"
    return Draft(
        instruction=pick(
            rng,
            [
                f"Use the Calendar app to add '{title}' on {day} from {start} to {end}.",
                f"Open Calendar and put {title} in for {spoken} ({day}), {start}-{end}.",
                f"Have the calendar app record {title} on {day}, {start} until {end}.",
            ],
        ),
        params={"title": title, "date": day, "start": start, "end": end},
        setup=setup,
        tools=["list_events", "get_event"],
        subagent=True,
        goal={f"calendar.events.{nid}": _event(nid, title, day, start, end)},
        allowed=["calendar.next.event"],
        plan=[
            *gui_agent(
                "Calendar",
                f'Add the event "{title}" on {day} from {start} to {end}',
                think="Delegate to a GUI agent on the Calendar app.",
            ),
            Act("Verify the event is in the calendar.", [Call("list_events", {"date": day})]),
            Say(f"'{title}' is in your calendar on {day}, {start}-{end}."),
        ],
        budget=12,
    )


_TODO = [
    "renew the parking permit",
    "call the landlord",
    "send the tax forms",
    "water the plants",
    "book the vet",
    "pick up the dry cleaning",
]


def _reminder_alarm(rng: random.Random) -> Draft:
    """Multi-turn: a reminder, then the follow-up asks for a one-off alarm some minutes before it."""
    what = rng.choice(_TODO)
    day, _ = _day(rng)
    t = rng.choice(["08:30", "12:00", "17:45", "19:15"])
    before = rng.choice([10, 15, 30])
    alarm_t = fmt(to_min(t) - before)
    return Draft(
        instruction=pick(
            rng,
            [
                f"Remind me to {what} on {day} at {t}.",
                f"Set a reminder: {what}, {day} {t}.",
                f"On {day} at {t} remind me to {what}.",
            ],
        ),
        params={"what": what, "due": f"{day} {t}", "alarm": alarm_t},
        setup={"calendar.next.reminder": 7, "calendar.next.alarm": 7},
        followups=[
            pick(
                rng,
                [
                    f"And set a one-off alarm {before} minutes before that.",
                    f"Also an alarm {before} min earlier, just once.",
                ],
            )
        ],
        tools=["create_reminder", "list_reminders", "create_alarm", "list_alarms", "create_event", "start_timer"],
        goal={
            "calendar.reminders.rem_0007": {"id": "rem_0007", "text": what, "due": f"{day} {t}", "done": False},
            "calendar.alarms.alarm_0007.time": alarm_t,
            "calendar.alarms.alarm_0007.repeat": [],
        },
        allowed=["calendar.next", "calendar.alarms.alarm_0007"],
        plan=[
            Act("Create the reminder.", [Call("create_reminder", {"text": what, "due": f"{day} {t}"})]),
            Say(f"I'll remind you to {what} on {day} at {t}."),
            Act(
                f"{before} minutes before {t} is {alarm_t}; a one-off alarm has no repeat days.",
                [Call("create_alarm", {"time": alarm_t, "label": what.capitalize()})],
            ),
            Say(f"Alarm set for {alarm_t}, {before} minutes before the reminder."),
        ],
    )


def _timer_swap(rng: random.Random) -> Draft:
    """Cancel the running timer the user names and start a new one, in parallel (both ids known)."""
    old = rng.choice(["Tea", "Laundry", "Oven", "Parking"])
    new, minutes = rng.choice([("Pasta", 11), ("Eggs", 7), ("Nap", 20), ("Bread", 35)])
    other = rng.choice([x for x in ["Tea", "Laundry", "Oven", "Parking"] if x != old])
    timers = {
        "timer_0001": {"id": "timer_0001", "label": old, "duration_s": 1800, "remaining_s": 1500, "status": "running"},
        "timer_0002": {
            "id": "timer_0002",
            "label": other,
            "duration_s": 3600,
            "remaining_s": 3300,
            "status": "running",
        },
    }
    if rng.random() < 0.5:
        timers["timer_0001"]["label"], timers["timer_0002"]["label"] = other, old
    old_id = next(k for k, v in timers.items() if v["label"] == old)
    return Draft(
        instruction=pick(
            rng,
            [
                f"Cancel the {old.lower()} timer and start a {minutes}-minute {new.lower()} timer.",
                f"Stop my {old} timer; I need {minutes} minutes for {new.lower()} instead.",
                f"Swap the {old.lower()} timer for a {new.lower()} one, {minutes} min.",
            ],
        ),
        params={"old": old, "old_id": old_id, "new": new, "minutes": minutes},
        setup={"calendar.timers": timers, "calendar.next.timer": 3},
        tools=["list_timers", "cancel_timer", "start_timer", "create_alarm", "list_alarms"],
        goal={
            f"calendar.timers.{old_id}.status": "cancelled",
            "calendar.timers.timer_0003.label": new,
            "calendar.timers.timer_0003.duration_s": minutes * 60,
        },
        # Running timers count down by themselves; only their remaining time may change besides the goal.
        allowed=[
            "calendar.next.timer",
            "calendar.timers.timer_0001.remaining_s",
            "calendar.timers.timer_0002.remaining_s",
            "calendar.timers.timer_0003",
        ],
        plan=[
            Act("Find the timer ids.", [Call("list_timers", {})]),
            Act(
                f"Cancel {old_id} and start the new timer, in parallel.",
                [Call("cancel_timer", {"timer_id": old_id}), Call("start_timer", {"minutes": minutes, "label": new})],
            ),
            Say(f"Cancelled the {old.lower()} timer and started a {minutes}-minute {new.lower()} timer."),
        ],
    )


D.add_template(
    Template(
        "calendar.event_conflict_push_after",
        "calendar",
        "tool_use",
        "Create an event; on a 409 overlap, book it right after the clashing event.",
        _event_conflict,
        tags=("error_recovery",),
        difficulty=2,
    )
)
D.add_template(
    Template(
        "calendar.memory_wake_alarm",
        "calendar",
        "memory",
        "Set the wake-up alarm from memory (an existing disabled one may need enabling instead).",
        _memory_alarm,
        tags=("error_recovery",),
        difficulty=2,
    )
)
D.add_template(
    Template(
        "calendar.skill_earliest_slot",
        "calendar",
        "skills",
        "Load calendar_planning, find the earliest free slot and book it.",
        _skill_slot,
        difficulty=2,
    )
)
D.add_template(
    Template(
        "calendar.gui_agent_add_event",
        "calendar",
        "sub_agent",
        "A GUI agent adds an event through the Calendar app.",
        _gui_event,
        difficulty=2,
    )
)
D.add_template(
    Template(
        "calendar.reminder_then_alarm",
        "calendar",
        "tool_use",
        "Create a reminder; a follow-up adds a one-off alarm before it.",
        _reminder_alarm,
        tags=("multi_turn",),
        difficulty=2,
    )
)
D.add_template(
    Template(
        "calendar.timer_swap",
        "calendar",
        "tool_use",
        "Cancel a named running timer and start a new one.",
        _timer_swap,
        difficulty=1,
    )
)
