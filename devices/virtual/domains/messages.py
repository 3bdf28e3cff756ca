"""Messages and contacts: the address book (search, edit, favourite, block) and SMS threads (send, read, schedule)."""

from __future__ import annotations

import random
import re
from typing import Any

from devices.virtual.domains._shared import clock_label, new_id, toggle
from devices.virtual.registry import Domain, Element, P, err, ok
from devices.virtual.tasks import Act, Call, Draft, Say, Task, Template, gui_agent
from devices.virtual.wording import pick
from harness.contract import Code, ToolResult

FIRST_NAMES = [
    "Alice",
    "Bruno",
    "Carla",
    "Dana",
    "Elif",
    "Farid",
    "Grace",
    "Hiro",
    "Ines",
    "Jonas",
    "Kemi",
    "Luca",
    "Maya",
    "Nadia",
    "Omar",
    "Priya",
    "Quinn",
    "Rosa",
    "Sven",
    "Tara",
    "Umar",
    "Vera",
    "Wen",
    "Yusuf",
]
LAST_NAMES = [
    "Chen",
    "Martin",
    "Diaz",
    "Okafor",
    "Novak",
    "Haddad",
    "Kim",
    "Tanaka",
    "Silva",
    "Berg",
    "Adeyemi",
    "Rossi",
    "Patel",
    "Moreau",
    "Lindqvist",
    "Costa",
    "Schmidt",
    "Nakamura",
    "Rahman",
    "Walsh",
]
AREA_CODES = ["415", "212", "312", "617", "206", "303", "512"]

DOMAIN = Domain(
    "messages",
    "Contacts & messages",
    initial={
        "contacts": {
            "c1": {
                "id": "c1",
                "name": "Alice Chen",
                "phone": "+14155550101",
                "email": "alice@example.com",
                "favourite": False,
                "blocked": False,
            },
            "c2": {
                "id": "c2",
                "name": "Bruno Martin",
                "phone": "+12125550102",
                "email": "",
                "favourite": True,
                "blocked": False,
            },
            "c3": {
                "id": "c3",
                "name": "Carla Diaz",
                "phone": "+13125550103",
                "email": "carla@example.com",
                "favourite": False,
                "blocked": False,
            },
            "c4": {
                "id": "c4",
                "name": "Dana Okafor",
                "phone": "+16175550104",
                "email": "",
                "favourite": False,
                "blocked": True,
            },
        },
        "threads": {
            "+12125550102": {
                "number": "+12125550102",
                "messages": [
                    {"id": "m1", "dir": "in", "body": "Lunch on Friday?", "time": "08:12", "read": False},
                ],
            },
        },
        "scheduled": {},
    },
)
D = DOMAIN

_SEND_AT = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}$")


# -- helpers ------------------------------------------------------------------------------------


def normalise_number(raw: str) -> str | None:
    """Digits with an optional leading '+', or None when ``raw`` is not a plausible phone number."""
    s = raw.strip()
    if not s or not (s[0] == "+" or s[0].isdigit()):
        return None
    digits = "".join(ch for ch in s if ch.isdigit())
    if len(digits) < 7 or len(digits) > 15 or any(not (ch.isdigit() or ch in "+ -()") for ch in s):
        return None
    return ("+" if s[0] == "+" else "") + digits


def _looks_like_number(raw: str) -> bool:
    s = raw.strip()
    return bool(s) and (s[0] == "+" or s[0].isdigit())


def _contact_by_number(s: dict[str, Any], number: str) -> dict[str, Any] | None:
    for c in s["contacts"].values():
        if c["phone"] == number:
            return c
    return None


def _resolve(s: dict[str, Any], recipient: str) -> tuple[str | None, dict[str, Any] | None, ToolResult | None]:
    """(number, contact, error) for a contact id, exact contact name or phone number."""
    if recipient in s["contacts"]:
        c = s["contacts"][recipient]
        return c["phone"], c, None
    if _looks_like_number(recipient):
        number = normalise_number(recipient)
        if number is None:
            return (
                None,
                None,
                ToolResult.fail(Code.BAD_ARGUMENT, f"'{recipient}' is not a valid phone number (7-15 digits)"),
            )
        return number, _contact_by_number(s, number), None
    low = recipient.strip().lower()
    found = [c for c in s["contacts"].values() if c["name"].lower() == low]
    if not found:
        return (
            None,
            None,
            ToolResult.fail(
                Code.NOT_FOUND,
                f"no contact named '{recipient}'; use search_contacts to find the exact name or contact_id",
            ),
        )
    if len(found) > 1:
        ids = ", ".join(c["id"] for c in found)
        return (
            None,
            None,
            ToolResult.fail(Code.CONFLICT, f"several contacts are named '{recipient}' ({ids}); pass a contact_id"),
        )
    return found[0]["phone"], found[0], None


def _name_for(s: dict[str, Any], number: str) -> str:
    c = _contact_by_number(s, number)
    return c["name"] if c else number


def _message_ids(s: dict[str, Any]) -> set[str]:
    return {m["id"] for t in s["threads"].values() for m in t["messages"]}


def _public_contact(c: dict[str, Any]) -> dict[str, Any]:
    return {k: c[k] for k in ("id", "name", "phone", "email", "favourite", "blocked")}


def sample_contacts(rng: random.Random, n: int = 6) -> dict[str, dict[str, Any]]:
    """``n`` distinct contacts with seeded names, numbers and flags (a template's address book)."""
    firsts = rng.sample(FIRST_NAMES, n)
    lasts = rng.sample(LAST_NAMES, n)
    numbers = rng.sample(range(100, 1000), n)
    out: dict[str, dict[str, Any]] = {}
    for i in range(n):
        cid = f"c{i + 1}"
        name = f"{firsts[i]} {lasts[i]}"
        out[cid] = {
            "id": cid,
            "name": name,
            "phone": f"+1{rng.choice(AREA_CODES)}5550{numbers[i]}",
            "email": f"{firsts[i].lower()}.{lasts[i].lower()}@example.com" if rng.random() < 0.5 else "",
            "favourite": rng.random() < 0.3,
            "blocked": False,
        }
    return out


def new_outgoing(initial: dict[str, Any], final: dict[str, Any]) -> list[tuple[str, str]]:
    """(number, body) of every outgoing SMS present in ``final`` but not in ``initial`` (verifiers use this)."""
    before = {m["id"] for t in initial["messages"]["threads"].values() for m in t["messages"]}
    return [
        (num, m["body"])
        for num, t in final["messages"]["threads"].items()
        for m in t["messages"]
        if m["dir"] == "out" and m["id"] not in before
    ]


def thread_setup(number: str, incoming: list[tuple[str, str]], read: bool = False) -> dict[str, Any]:
    """A thread with incoming messages [(time, body)], for a template's setup patch."""
    return {
        "number": number,
        "messages": [
            {"id": f"i{number[-4:]}{k}", "dir": "in", "body": body, "time": tm, "read": read}
            for k, (tm, body) in enumerate(incoming)
        ],
    }


# -- contacts -----------------------------------------------------------------------------------


@D.tool(
    "list_contacts",
    "List contacts, optionally only favourites or only blocked ones.",
    {"filter": P.enum(["all", "favourites", "blocked"], "which contacts to list (default all)")},
    read_only=True,
    cases=[ok({}), ok({"filter": "favourites"}), err(400, {"filter": "starred"})],
)
def list_contacts(phone, s, args):
    f = args.get("filter", "all")
    rows = [
        _public_contact(c)
        for c in s["contacts"].values()
        if f == "all" or (f == "favourites" and c["favourite"]) or (f == "blocked" and c["blocked"])
    ]
    return ToolResult.ok(f"{len(rows)} contact(s)", {"contacts": rows, "total": len(rows)})


@D.tool(
    "search_contacts",
    "Search contacts by part of a name, phone number or email.",
    {"query": P.string("text to look for")},
    ["query"],
    read_only=True,
    cases=[ok({"query": "ali"}), ok({"query": "0103"}, note="no match is an empty list, not an error")],
)
def search_contacts(phone, s, args):
    q = args["query"].strip().lower()
    digits = "".join(ch for ch in q if ch.isdigit())
    rows = [
        _public_contact(c)
        for c in s["contacts"].values()
        if q in c["name"].lower() or q in c["email"].lower() or (len(digits) >= 3 and digits in c["phone"])
    ]
    return ToolResult.ok(f"{len(rows)} match(es) for '{args['query']}'", {"contacts": rows, "total": len(rows)})


@D.tool(
    "get_contact",
    "Get one contact by id.",
    {"contact_id": P.string("contact id, e.g. c3")},
    ["contact_id"],
    read_only=True,
    codes=(404,),
    cases=[ok({"contact_id": "c1"}), err(404, {"contact_id": "c99"})],
)
def get_contact(phone, s, args):
    c = s["contacts"].get(args["contact_id"])
    if c is None:
        return ToolResult.fail(Code.NOT_FOUND, f"no contact with id '{args['contact_id']}'; use search_contacts")
    return ToolResult.ok(c["name"], _public_contact(c))


@D.tool(
    "add_contact",
    "Add a new contact.",
    {
        "name": P.string("full name"),
        "phone": P.string("phone number, e.g. +14155550123"),
        "email": P.string("email address", allow_empty=True),
    },
    ["name", "phone"],
    codes=(400, 409),
    cases=[
        ok({"name": "Eva Stone", "phone": "+14155550999"}),
        err(409, {"name": "Al", "phone": "+14155550101"}),
        err(400, {"name": "Eva Stone", "phone": "call me"}),
    ],
    check=lambda ph, a: any(c["name"] == a["name"] for c in ph.state["messages"]["contacts"].values()),
)
def add_contact(phone, s, args):
    number = normalise_number(args["phone"])
    if number is None:
        return ToolResult.fail(Code.BAD_ARGUMENT, f"'{args['phone']}' is not a valid phone number (7-15 digits)")
    other = _contact_by_number(s, number)
    if other is not None:
        return ToolResult.fail(Code.CONFLICT, f"{number} already belongs to {other['name']} ({other['id']})")
    cid = new_id(phone, "c", s["contacts"])
    s["contacts"][cid] = {
        "id": cid,
        "name": args["name"].strip(),
        "phone": number,
        "email": args.get("email", ""),
        "favourite": False,
        "blocked": False,
    }
    phone.log("messages.contact_add", contact_id=cid)
    return ToolResult.ok(f"added {args['name']}", {"contact_id": cid, **_public_contact(s["contacts"][cid])})


@D.tool(
    "update_contact",
    "Change a contact's name, phone number or email.",
    {
        "contact_id": P.string("contact id"),
        "name": P.string("new name"),
        "phone": P.string("new phone number"),
        "email": P.string("new email", allow_empty=True),
    },
    ["contact_id"],
    codes=(400, 404, 409),
    cases=[
        ok({"contact_id": "c1", "phone": "+14155550777"}),
        err(404, {"contact_id": "c99", "name": "X"}),
        err(400, {"contact_id": "c1"}, note="nothing to change"),
        err(409, {"contact_id": "c1", "phone": "+13125550103"}),
    ],
    check=lambda ph, a: all(
        ph.state["messages"]["contacts"][a["contact_id"]].get(k) in (a[k], normalise_number(a[k]))
        for k in ("name", "phone", "email")
        if k in a
    ),
)
def update_contact(phone, s, args):
    c = s["contacts"].get(args["contact_id"])
    if c is None:
        return ToolResult.fail(Code.NOT_FOUND, f"no contact with id '{args['contact_id']}'; use search_contacts")
    fields = {k: args[k] for k in ("name", "phone", "email") if k in args}
    if not fields:
        return ToolResult.fail(Code.BAD_ARGUMENT, "nothing to change: pass name, phone or email")
    if "phone" in fields:
        number = normalise_number(fields["phone"])
        if number is None:
            return ToolResult.fail(Code.BAD_ARGUMENT, f"'{fields['phone']}' is not a valid phone number (7-15 digits)")
        other = _contact_by_number(s, number)
        if other is not None and other["id"] != c["id"]:
            return ToolResult.fail(Code.CONFLICT, f"{number} already belongs to {other['name']} ({other['id']})")
        fields["phone"] = number
    changed = {k: v for k, v in fields.items() if c[k] != v}
    if changed:
        c.update(changed)
        phone.log("messages.contact_update", contact_id=c["id"], fields=sorted(changed))
    return ToolResult.ok(f"updated {c['name']}", _public_contact(c))


@D.tool(
    "set_contact_favourite",
    "Mark or unmark a contact as a favourite.",
    {"contact_id": P.string("contact id"), "favourite": P.boolean("true to add to favourites")},
    ["contact_id", "favourite"],
    codes=(404,),
    cases=[ok({"contact_id": "c1", "favourite": True}), err(404, {"contact_id": "c99", "favourite": True})],
    check=lambda ph, a: ph.state["messages"]["contacts"][a["contact_id"]]["favourite"] == a["favourite"],
)
def set_contact_favourite(phone, s, args):
    c = s["contacts"].get(args["contact_id"])
    if c is None:
        return ToolResult.fail(Code.NOT_FOUND, f"no contact with id '{args['contact_id']}'")
    if c["favourite"] != args["favourite"]:
        c["favourite"] = args["favourite"]
        phone.log("messages.contact_favourite", contact_id=c["id"], favourite=args["favourite"])
    return ToolResult.ok(
        f"{c['name']} {'added to' if c['favourite'] else 'removed from'} favourites",
        {"contact_id": c["id"], "favourite": c["favourite"]},
    )


@D.tool(
    "block_contact",
    "Block or unblock a contact (blocked contacts cannot be messaged).",
    {"contact_id": P.string("contact id"), "blocked": P.boolean("true to block, false to unblock")},
    ["contact_id", "blocked"],
    codes=(404,),
    cases=[
        ok({"contact_id": "c1", "blocked": True}),
        ok({"contact_id": "c4", "blocked": False}),
        err(404, {"contact_id": "c99", "blocked": True}),
    ],
    check=lambda ph, a: ph.state["messages"]["contacts"][a["contact_id"]]["blocked"] == a["blocked"],
)
def block_contact(phone, s, args):
    c = s["contacts"].get(args["contact_id"])
    if c is None:
        return ToolResult.fail(Code.NOT_FOUND, f"no contact with id '{args['contact_id']}'")
    if c["blocked"] != args["blocked"]:
        c["blocked"] = args["blocked"]
        phone.log("messages.contact_block", contact_id=c["id"], blocked=args["blocked"])
    return ToolResult.ok(
        f"{c['name']} {'blocked' if c['blocked'] else 'unblocked'}", {"contact_id": c["id"], "blocked": c["blocked"]}
    )


# -- messages -----------------------------------------------------------------------------------


@D.tool(
    "send_sms",
    "Send a text message to a contact (id or exact name) or a phone number.",
    {"recipient": P.string("contact id, exact contact name, or phone number"), "body": P.string("message text")},
    ["recipient", "body"],
    codes=(400, 404, 409),
    cases=[
        ok({"recipient": "c1", "body": "On my way"}),
        ok({"recipient": "Carla Diaz", "body": "Hi"}),
        ok({"recipient": "+1 (303) 555-0188", "body": "Hello"}),
        err(404, {"recipient": "Zed", "body": "Hi"}),
        err(409, {"recipient": "c4", "body": "Hi"}),
        err(400, {"recipient": "12", "body": "Hi"}),
        err(400, {"recipient": "c1", "body": ""}),
    ],
    check=lambda ph, a: any(
        m["dir"] == "out" and m["body"] == a["body"]
        for t in ph.state["messages"]["threads"].values()
        for m in t["messages"]
    ),
)
def send_sms(phone, s, args):
    number, contact, bad = _resolve(s, args["recipient"])
    if bad is not None:
        return bad
    if contact is not None and contact["blocked"]:
        return ToolResult.fail(Code.CONFLICT, f"{contact['name']} is blocked; unblock the contact before messaging")
    thread = s["threads"].setdefault(number, {"number": number, "messages": []})
    mid = new_id(phone, "m", _message_ids(s))
    thread["messages"].append({"id": mid, "dir": "out", "body": args["body"], "time": clock_label(phone), "read": True})
    phone.log("messages.sms_sent", message_id=mid, number=number)
    who = contact["name"] if contact else number
    return ToolResult.ok(
        f"message sent to {who}", {"message_id": mid, "to": who, "number": number, "body": args["body"]}
    )


def _thread_row(s: dict[str, Any], t: dict[str, Any]) -> dict[str, Any]:
    last = t["messages"][-1] if t["messages"] else None
    return {
        "number": t["number"],
        "contact": _name_for(s, t["number"]),
        "unread": sum(1 for m in t["messages"] if not m["read"]),
        "last_message": last["body"] if last else "",
        "last_time": last["time"] if last else "",
    }


@D.tool(
    "list_message_threads",
    "List SMS conversations with their unread counts and last message.",
    {"unread_only": P.boolean("only threads with unread messages")},
    read_only=True,
    cases=[ok({}), ok({"unread_only": True})],
)
def list_message_threads(phone, s, args):
    rows = [_thread_row(s, t) for t in s["threads"].values()]
    if args.get("unread_only"):
        rows = [r for r in rows if r["unread"]]
    return ToolResult.ok(f"{len(rows)} conversation(s)", {"threads": rows, "total": len(rows)})


def _thread_for(s: dict[str, Any], recipient: str) -> tuple[dict[str, Any] | None, ToolResult | None]:
    number, _, bad = _resolve(s, recipient)
    if bad is not None:
        return None, bad
    t = s["threads"].get(number)
    if t is None:
        return None, ToolResult.fail(Code.NOT_FOUND, f"no conversation with {recipient}")
    return t, None


@D.tool(
    "read_message_thread",
    "Read the messages of one conversation (does not mark them read).",
    {
        "recipient": P.string("contact id, exact contact name, or phone number"),
        "limit": P.integer("most recent messages to return (default 20)", 1, 100),
    },
    ["recipient"],
    read_only=True,
    codes=(404,),
    cases=[ok({"recipient": "Bruno Martin"}), err(404, {"recipient": "c1"}, note="no conversation yet")],
)
def read_message_thread(phone, s, args):
    t, bad = _thread_for(s, args["recipient"])
    if bad is not None:
        return bad
    msgs = t["messages"][-args.get("limit", 20) :]
    return ToolResult.ok(
        f"{len(msgs)} message(s) with {_name_for(s, t['number'])}",
        {"number": t["number"], "contact": _name_for(s, t["number"]), "messages": [dict(m) for m in msgs]},
    )


def _thread_all_read(s: dict[str, Any], recipient: str) -> bool:
    t, _ = _thread_for(s, recipient)
    return t is not None and all(m["read"] for m in t["messages"])


@D.tool(
    "mark_thread_read",
    "Mark every message of a conversation as read.",
    {"recipient": P.string("contact id, exact contact name, or phone number")},
    ["recipient"],
    codes=(404,),
    cases=[ok({"recipient": "c2"}), err(404, {"recipient": "Zed"})],
    check=lambda ph, a: _thread_all_read(ph.state["messages"], a["recipient"]),
)
def mark_thread_read(phone, s, args):
    t, bad = _thread_for(s, args["recipient"])
    if bad is not None:
        return bad
    n = 0
    for m in t["messages"]:
        if not m["read"]:
            m["read"] = True
            n += 1
    if n:
        phone.log("messages.thread_read", number=t["number"], count=n)
    return ToolResult.ok(f"marked {n} message(s) read", {"number": t["number"], "marked": n})


@D.tool(
    "delete_message",
    "Delete one message by its id.",
    {"message_id": P.string("message id from read_message_thread")},
    ["message_id"],
    codes=(404,),
    cases=[ok({"message_id": "m1"}), err(404, {"message_id": "m404"})],
    check=lambda ph, a: all(
        m["id"] != a["message_id"] for t in ph.state["messages"]["threads"].values() for m in t["messages"]
    ),
)
def delete_message(phone, s, args):
    for t in s["threads"].values():
        for i, m in enumerate(t["messages"]):
            if m["id"] == args["message_id"]:
                del t["messages"][i]
                phone.log("messages.sms_delete", message_id=m["id"], number=t["number"])
                return ToolResult.ok("message deleted", {"message_id": m["id"], "number": t["number"]})
    return ToolResult.fail(Code.NOT_FOUND, f"no message with id '{args['message_id']}'")


@D.tool(
    "schedule_sms",
    "Schedule a text message to be sent later.",
    {
        "recipient": P.string("contact id, exact contact name, or phone number"),
        "body": P.string("message text"),
        "send_at": P.string("local date and time, 'YYYY-MM-DD HH:MM'"),
    },
    ["recipient", "body", "send_at"],
    codes=(400, 404, 409),
    cases=[
        ok({"recipient": "c1", "body": "Happy birthday!", "send_at": "2026-12-24 09:00"}),
        err(400, {"recipient": "c1", "body": "Hi", "send_at": "tomorrow 9am"}),
        err(404, {"recipient": "Zed", "body": "Hi", "send_at": "2026-12-24 09:00"}),
        err(409, {"recipient": "c4", "body": "Hi", "send_at": "2026-12-24 09:00"}),
    ],
    check=lambda ph, a: any(
        x["body"] == a["body"] and x["send_at"] == a["send_at"] for x in ph.state["messages"]["scheduled"].values()
    ),
)
def schedule_sms(phone, s, args):
    if not _SEND_AT.match(args["send_at"]):
        return ToolResult.fail(
            Code.BAD_ARGUMENT, f"send_at must look like '2026-12-24 09:00' (got {args['send_at']!r})"
        )
    number, contact, bad = _resolve(s, args["recipient"])
    if bad is not None:
        return bad
    if contact is not None and contact["blocked"]:
        return ToolResult.fail(Code.CONFLICT, f"{contact['name']} is blocked; unblock the contact before messaging")
    sid = new_id(phone, "s", s["scheduled"])
    s["scheduled"][sid] = {
        "id": sid,
        "number": number,
        "contact": contact["name"] if contact else None,
        "body": args["body"],
        "send_at": args["send_at"],
    }
    phone.log("messages.sms_scheduled", schedule_id=sid, number=number)
    return ToolResult.ok(
        f"message to {contact['name'] if contact else number} scheduled for {args['send_at']}",
        dict(s["scheduled"][sid], schedule_id=sid),
    )


@D.tool("list_scheduled_sms", "List text messages scheduled for later.", read_only=True, cases=[ok({})])
def list_scheduled_sms(phone, s, args):
    rows = sorted(s["scheduled"].values(), key=lambda x: x["send_at"])
    return ToolResult.ok(
        f"{len(rows)} scheduled message(s)", {"scheduled": [dict(r) for r in rows], "total": len(rows)}
    )


@D.tool(
    "cancel_scheduled_sms",
    "Cancel a scheduled text message.",
    {"schedule_id": P.string("id from list_scheduled_sms")},
    ["schedule_id"],
    codes=(404,),
    cases=[
        ok(
            {"schedule_id": "s1"},
            {
                "messages.scheduled.s1": {
                    "id": "s1",
                    "number": "+14155550101",
                    "contact": "Alice Chen",
                    "body": "Hi",
                    "send_at": "2026-12-24 09:00",
                }
            },
        ),
        err(404, {"schedule_id": "s9"}),
    ],
    check=lambda ph, a: a["schedule_id"] not in ph.state["messages"]["scheduled"],
)
def cancel_scheduled_sms(phone, s, args):
    x = s["scheduled"].pop(args["schedule_id"], None)
    if x is None:
        return ToolResult.fail(Code.NOT_FOUND, f"no scheduled message with id '{args['schedule_id']}'")
    phone.log("messages.sms_unscheduled", schedule_id=x["id"])
    return ToolResult.ok(f"cancelled the message scheduled for {x['send_at']}", {"schedule_id": x["id"]})


D.skill(
    "sms_scheduling",
    "Scheduled messages",
    "Schedule, review and cancel text messages that are sent later.",
    ["schedule_sms", "list_scheduled_sms", "cancel_scheduled_sms"],
    [
        "Resolve the recipient with search_contacts first and pass the contact_id, never a guessed name.",
        "Before scheduling, list scheduled messages: a message already scheduled to the same person for the same "
        "occasion is replaced (cancel the old one, then schedule the new one), never duplicated.",
        "send_at is local time in the form 'YYYY-MM-DD HH:MM'.",
        "Confirm the schedule_id the tool returns; do not claim success without it.",
    ],
)


# -- app screen -------------------------------------------------------------------------------------


@D.app("Messages", package="com.google.android.apps.messaging")
def messages_screen(phone, route):
    s = phone.state["messages"]
    inputs = phone.gui.get("inputs", {})
    if route == "contacts":
        els = [Element("hdr_contacts", "Contacts", kind="header")]
        for c in sorted(s["contacts"].values(), key=lambda c: c["name"]):
            els.append(Element(f"contact:{c['id']}", c["name"], kind="item", clickable=True, to=f"contact:{c['id']}"))
        return "Contacts", els
    if route.startswith("contact:"):
        c = s["contacts"].get(route[8:])
        if c is None:
            return "Contact", [Element("missing", "This contact no longer exists")]
        return c["name"], [
            Element("phone", c["phone"]),
            toggle(
                "favourite",
                "Favourite",
                c["favourite"],
                "set_contact_favourite",
                {"contact_id": c["id"]},
                key="favourite",
            ),
            toggle("blocked", "Blocked", c["blocked"], "block_contact", {"contact_id": c["id"]}, key="blocked"),
            Element("message", "Send message", kind="button", clickable=not c["blocked"], to=f"thread:{c['phone']}"),
        ]
    if route.startswith("thread:"):
        number = route[7:]
        t = s["threads"].get(number, {"messages": []})
        who = _name_for(s, number).split()[0]
        els = [
            Element(f"{m['dir']}:{m['id']}", f"{'You' if m['dir'] == 'out' else who}: {m['body']}", kind="item")
            for m in t["messages"][-8:]
        ]
        els.append(Element("compose", inputs.get("compose", ""), kind="input", clickable=True))
        els.append(
            Element(
                "send",
                "Send",
                kind="button",
                clickable=True,
                tool=("send_sms", {"recipient": number, "body": "{input:compose}"}),
            )
        )
        return _name_for(s, number), els
    els = [
        Element("contacts", "Contacts", kind="button", clickable=True, to="contacts"),
        Element("hdr_threads", "Conversations", kind="header"),
    ]
    for t in s["threads"].values():
        row = _thread_row(s, t)
        dot = f"({row['unread']} new) " if row["unread"] else ""
        els.append(
            Element(
                f"thread:{t['number']}",
                f"{dot}{row['contact']}: {row['last_message'][:28]}",
                kind="item",
                clickable=True,
                to=f"thread:{t['number']}",
            )
        )
    return "Messages", els


_GUI_SEND = re.compile(r"""send (?:the )?(?:message |text )?["“'](?P<body>.+?)["”'] to (?P<name>[^.]+?)\.?$""", re.I)


@D.gui_script("Messages")
def messages_gui_script(instruction: str) -> list[tuple[Any, ...]] | None:
    """'Send "BODY" to NAME': open the contact, open the conversation, type, send, confirm it shows."""
    m = _GUI_SEND.search(instruction.strip())
    if m is None:
        return None
    body, name = m.group("body"), m.group("name").strip()
    return [
        ("tap", "Contacts"),
        ("tap", name),
        ("tap", "Send message"),
        ("type", body, "compose"),
        ("tap", "Send"),
        ("confirm", body, f"sent to {name}: {body}"),
    ]


# -- task templates ---------------------------------------------------------------------------------

_CONTACT_TOOLS = ["search_contacts", "get_contact", "list_contacts"]
_BODIES = [
    "Running 10 minutes late, sorry!",
    "Can you grab milk on the way home?",
    "The meeting moved to 3pm.",
    "Happy birthday! Have a great day.",
    "Dinner is at 7, see you there.",
    "I left the keys under the mat.",
    "Call me when you land.",
    "Thanks for today, it was great!",
]


def _check_sent(task: Task, initial: dict[str, Any], final: dict[str, Any], answer: str) -> tuple[bool, str]:
    """Exactly one new SMS, to the right number, with the exact requested body."""
    sent = new_outgoing(initial, final)
    want = (task.params["number"], task.params["body"])
    if sent == [want]:
        return True, "the message was sent"
    return False, f"expected exactly one SMS {want}, found {sent}"


def _send_to_contact(rng: random.Random) -> Draft:
    """Send a text to a contact found by search; the SMS service fails once (503) and the retry succeeds."""
    contacts = sample_contacts(rng, 6)
    target = contacts[rng.choice(list(contacts))]
    # A neighbour with the same first name makes the exact-name lookup matter.
    twin_id = next(cid for cid in contacts if cid != target["id"])
    twin_last = rng.choice([n for n in LAST_NAMES if n not in target["name"]])
    contacts[twin_id]["name"] = f"{target['name'].split()[0]} {twin_last}"
    body = rng.choice(_BODIES)
    full = target["name"]
    return Draft(
        instruction=pick(
            rng, [f'Text {full}: "{body}"', f'Send {full} a message saying "{body}"', f'Can you SMS {full} "{body}"?']
        ),
        params={"contact_id": target["id"], "number": target["phone"], "body": body},
        setup={"messages.contacts": contacts, "messages.threads": {}},
        tools=_CONTACT_TOOLS + ["send_sms", "list_message_threads", "block_contact"],
        faults=[
            {
                "tool": "send_sms",
                "kind": "outage",
                "times": 1,
                "code": 503,
                "error": "SMS service temporarily unavailable; try again",
            }
        ],
        allowed=[f"messages.threads.{target['phone']}"],
        plan=[
            Act(
                f"Find {full} among the contacts to get the exact id.",
                [Call("search_contacts", {"query": full.split()[0]}, name="found")],
            ),
            Act(
                f"Two contacts share the first name; {full} is {target['id']}. Send the text.",
                [Call("send_sms", {"recipient": target["id"], "body": body})],
                may_fail=True,
            ),
            Act(
                "The SMS service had a temporary outage (503); retry once.",
                [Call("send_sms", {"recipient": target["id"], "body": body})],
            ),
            Say(f'Sent "{body}" to {full}.'),
        ],
    )


def _update_number_memory(rng: random.Random) -> Draft:
    """Memory: the gold entry holds a contact's new number among neighbour memories; a follow-up adds a favourite."""
    contacts = sample_contacts(rng, 6)
    for c in contacts.values():
        c["favourite"] = False
    ids = list(contacts)
    target = contacts[rng.choice(ids)]
    others = [contacts[i] for i in ids if i != target["id"]]
    new_number = f"+1{rng.choice(AREA_CODES)}5550{rng.randrange(100, 1000)}"
    while any(c["phone"] == new_number for c in contacts.values()):
        new_number = f"+1{rng.choice(AREA_CODES)}5550{rng.randrange(100, 1000)}"
    first = target["name"].split()[0]
    gold = {
        "id": "mem_gold",
        "category": "important_info",
        "title": f"{first}'s new phone number",
        "content": f"{target['name']} changed phone number; the new number is {new_number}.",
        "tags": ["contacts", first.lower()],
    }
    neighbours = [
        {
            "id": "mem_n1",
            "category": "important_info",
            "title": f"{others[0]['name'].split()[0]}'s work email",
            "content": f"{others[0]['name']}'s work email is {others[0]['name'].split()[0].lower()}@work.example.com.",
            "tags": ["contacts"],
        },
        {
            "id": "mem_n2",
            "category": "important_event",
            "title": f"{first}'s birthday",
            "content": f"{target['name']}'s birthday is on {rng.choice(['3 March', '19 July', '8 October'])}.",
            "tags": [first.lower()],
        },
        {
            "id": "mem_n3",
            "category": "important_info",
            "title": f"{others[1]['name'].split()[0]}'s old number",
            "content": f"{others[1]['name']} used to have the number "
            f"+1{rng.choice(AREA_CODES)}5550{rng.randrange(100, 1000)}.",
            "tags": ["contacts"],
        },
        {
            "id": "mem_n4",
            "category": "preferences",
            "title": "Texting style",
            "content": "Prefers short texts without emojis.",
            "tags": ["messages"],
        },
    ]
    memory = [gold] + neighbours
    rng.shuffle(memory)
    return Draft(
        instruction=pick(
            rng,
            [
                f"{first} got a new phone number, I saved it somewhere. Update the contact.",
                f"Update {first}'s contact with the new number I told you about.",
                f"Fix {first}'s number in my contacts; you should have the new one in memory.",
            ],
        ),
        params={"contact_id": target["id"], "new_number": new_number},
        setup={"messages.contacts": contacts},
        tools=_CONTACT_TOOLS + ["update_contact", "set_contact_favourite", "add_contact"],
        memory=memory,
        followups=[pick(rng, [f"Thanks. Also make {first} a favourite.", f"Great, and add {first} to my favourites."])],
        goal={
            f"messages.contacts.{target['id']}.phone": new_number,
            f"messages.contacts.{target['id']}.favourite": True,
        },
        plan=[
            Act(
                "Look for the new number in memory and find the contact in parallel.",
                [
                    Call("search_user_memory", {"query": f"{first} new phone number"}),
                    Call("search_contacts", {"query": first}),
                ],
            ),
            Act(
                f"Memory says the new number is {new_number}; update {target['id']}.",
                [Call("update_contact", {"contact_id": target["id"], "phone": new_number})],
            ),
            Say(f"Updated {target['name']}'s number to {new_number}."),
            Act(
                f"Mark {target['name']} as a favourite.",
                [Call("set_contact_favourite", {"contact_id": target["id"], "favourite": True})],
            ),
            Say(f"{target['name']} is now in your favourites."),
        ],
    )


def _read_unread(rng: random.Random) -> Draft:
    """Question task: read an unread conversation, mark it read, and answer with the time proposed in it."""
    contacts = sample_contacts(rng, 5)
    ids = list(contacts)
    target = contacts[rng.choice(ids)]
    other = contacts[rng.choice([i for i in ids if i != target["id"]])]
    hour, minute = rng.randrange(5, 10), rng.choice(["00", "15", "30", "45"])
    meet = f"{hour}:{minute}"
    wrong = f"{hour - 1}:{minute}"
    place = rng.choice(["the cinema", "Luigi's", "the station", "the climbing gym"])
    threads = {
        target["phone"]: thread_setup(
            target["phone"],
            [
                ("11:02", f"Are we still on for tonight? Plan was {wrong}"),
                ("11:05", f"Change of plan: let's meet at {place} at {meet} instead."),
            ],
        ),
        other["phone"]: thread_setup(other["phone"], [("10:40", f"See you at {rng.randrange(1, 5)}:30 tomorrow!")]),
    }
    first = target["name"].split()[0]
    return Draft(
        instruction=pick(
            rng,
            [
                f"What time does {first} want to meet? Mark the chat as read too.",
                f"Check {target['name']}'s unread texts, mark them read and tell me when we're meeting.",
                f"When am I meeting {first}? Read the new messages and mark them as read.",
            ],
        ),
        params={"number": target["phone"], "meet": meet},
        setup={"messages.contacts": contacts, "messages.threads": threads},
        tools=_CONTACT_TOOLS + ["list_message_threads", "read_message_thread", "mark_thread_read", "delete_message"],
        goal={
            f"messages.threads.{target['phone']}.messages.0.read": True,
            f"messages.threads.{target['phone']}.messages.1.read": True,
        },
        answer=[meet],
        plan=[
            Act("See which conversations have unread messages.", [Call("list_message_threads", {"unread_only": True})]),
            Act(
                f"Read the conversation with {target['name']}.",
                [Call("read_message_thread", {"recipient": target["phone"]})],
            ),
            Act(
                "The latest message changes the time; mark the thread read.",
                [Call("mark_thread_read", {"recipient": target["phone"]})],
            ),
            Say(f"{first} changed the plan: you're meeting at {place} at {meet}. I marked the messages as read."),
        ],
    )


def _check_schedule(task: Task, initial: dict[str, Any], final: dict[str, Any], answer: str) -> tuple[bool, str]:
    p = task.params
    sched = list(final["messages"]["scheduled"].values())
    mine = [x for x in sched if x["number"] == p["number"]]
    if len(mine) != 1:
        return False, f"expected exactly one message scheduled to {p['number']}, found {len(mine)}"
    x = mine[0]
    if (x["body"], x["send_at"]) != (p["body"], p["send_at"]):
        return False, f"scheduled {x['body']!r} at {x['send_at']}, expected {p['body']!r} at {p['send_at']}"
    if final["messages"]["scheduled"].get(p["other_id"]) != initial["messages"]["scheduled"][p["other_id"]]:
        return False, "changed or cancelled an unrelated scheduled message"
    return True, "scheduled message replaced"


def _schedule_replace(rng: random.Random) -> Draft:
    """Skills: load sms_scheduling, find the duplicate scheduled message, cancel it, schedule the new one."""
    contacts = sample_contacts(rng, 6)
    ids = list(contacts)
    target, other = (contacts[i] for i in rng.sample(ids, 2))
    day = rng.randrange(10, 28)
    old_at, new_at = f"2026-12-{day:02d} 08:00", f"2026-12-{day:02d} {rng.choice(['09:00', '09:30', '10:15', '12:00'])}"
    old_body = "Happy birthday!"
    body = pick(
        rng,
        [
            f"Happy birthday {target['name'].split()[0]}! Have a wonderful day.",
            f"Happy birthday, {target['name'].split()[0]}! Dinner on me this week.",
        ],
    )
    scheduled = {
        "s_old": {
            "id": "s_old",
            "number": target["phone"],
            "contact": target["name"],
            "body": old_body,
            "send_at": old_at,
        },
        "s_keep": {
            "id": "s_keep",
            "number": other["phone"],
            "contact": other["name"],
            "body": "Don't forget the tickets",
            "send_at": f"2026-12-{day:02d} 18:00",
        },
    }
    return Draft(
        instruction=pick(
            rng,
            [
                f'Change {target["name"]}\'s birthday text to "{body}" and send it at {new_at[-5:]} '
                f"on Dec {day} instead.",
                f'Replace the birthday message I scheduled for {target["name"]}: new text "{body}", send at {new_at}.',
            ],
        ),
        params={"number": target["phone"], "body": body, "send_at": new_at, "other_id": "s_keep"},
        setup={"messages.contacts": contacts, "messages.scheduled": scheduled},
        tools=["search_contacts", "send_sms"],
        skills=["sms_scheduling", "screen_casting"],
        allowed=["messages.scheduled"],
        order=["messages.sms_unscheduled", "messages.sms_scheduled"],
        plan=[
            Act(
                "Load the scheduling skill for its tools and rules.",
                [Call("skill__sms_scheduling", {"reason": "replace a scheduled text"})],
            ),
            Act(
                "Resolve the contact and look at what is scheduled, in parallel.",
                [Call("search_contacts", {"query": target["name"]}), Call("list_scheduled_sms")],
            ),
            Act(
                "An old birthday text to the same person is scheduled; cancel it first.",
                [Call("cancel_scheduled_sms", {"schedule_id": "s_old"})],
            ),
            Act(
                "Now schedule the new text.",
                [Call("schedule_sms", {"recipient": target["id"], "body": body, "send_at": new_at})],
            ),
            Say(f"Cancelled the old birthday text and scheduled the new one to {target['name']} for {new_at}."),
        ],
    )


def _gui_send(rng: random.Random) -> Draft:
    """Sub-agent: the GUI agent sends the text through the Messages app's screens."""
    contacts = sample_contacts(rng, 5)
    target = contacts[rng.choice(list(contacts))]
    body = rng.choice(_BODIES)
    gui_instruction = f'Send the message "{body}" to {target["name"]}.'
    return Draft(
        instruction=pick(
            rng,
            [
                f'Use the Messages app to send {target["name"]} "{body}"',
                f'Open Messages and text {target["name"]}: "{body}"',
            ],
        ),
        params={"number": target["phone"], "body": body},
        setup={"messages.contacts": contacts, "messages.threads": {}},
        tools=["search_contacts", "list_message_threads"],
        subagent=True,
        allowed=[f"messages.threads.{target['phone']}"],
        plan=[
            *gui_agent(
                "Messages",
                gui_instruction,
                think="Hand the app work to the GUI agent.",
                run="Run it and wait for its result.",
            ),
            Say(f'The GUI agent sent "{body}" to {target["name"]} in Messages.'),
        ],
    )


def _unblock_then_text(rng: random.Random) -> Draft:
    """A blocked contact must be unblocked (the user asks for it) before the text goes out; order matters."""
    contacts = sample_contacts(rng, 5)
    target = contacts[rng.choice(list(contacts))]
    target["blocked"] = True
    body = rng.choice(_BODIES)
    first = target["name"].split()[0]
    return Draft(
        instruction=pick(
            rng,
            [
                f'I blocked {first} by mistake. Unblock {target["name"]} and text them "{body}"',
                f'Unblock {target["name"]}, then send "{body}"',
            ],
        ),
        params={"contact_id": target["id"], "number": target["phone"], "body": body},
        setup={"messages.contacts": contacts, "messages.threads": {}},
        tools=_CONTACT_TOOLS + ["block_contact", "send_sms", "set_contact_favourite"],
        goal={f"messages.contacts.{target['id']}.blocked": False},
        allowed=[f"messages.threads.{target['phone']}"],
        order=["messages.contact_block", "messages.sms_sent"],
        plan=[
            Act(f"Find {target['name']}'s contact id.", [Call("search_contacts", {"query": target["name"]})]),
            Act(
                "Unblock first: a blocked contact cannot be messaged.",
                [Call("block_contact", {"contact_id": target["id"], "blocked": False})],
            ),
            Act("Now send the text.", [Call("send_sms", {"recipient": target["id"], "body": body})]),
            Say(f'{target["name"]} is unblocked and your message "{body}" was sent.'),
        ],
    )


D.add_template(
    Template(
        "messages.send_sms_to_contact",
        "messages",
        "tool_use",
        "Text a contact picked out among same-first-name neighbours; retry after a 503.",
        _send_to_contact,
        tags=("error_recovery",),
        difficulty=2,
        check=_check_sent,
    )
)
D.add_template(
    Template(
        "messages.update_number_from_memory",
        "messages",
        "memory",
        "Update a contact's number from the gold memory; a follow-up makes them a favourite.",
        _update_number_memory,
        tags=("multi_turn",),
        difficulty=2,
    )
)
D.add_template(
    Template(
        "messages.read_unread_and_answer",
        "messages",
        "tool_use",
        "Read an unread conversation, mark it read, answer with the latest proposed time.",
        _read_unread,
        difficulty=1,
    )
)
D.add_template(
    Template(
        "messages.skill_replace_scheduled",
        "messages",
        "skills",
        "Load sms_scheduling; cancel the duplicate scheduled text, then schedule the new one.",
        _schedule_replace,
        difficulty=2,
        check=_check_schedule,
    )
)
D.add_template(
    Template(
        "messages.gui_send_text",
        "messages",
        "sub_agent",
        "A GUI agent sends a text through the Messages app.",
        _gui_send,
        difficulty=2,
        check=_check_sent,
    )
)
D.add_template(
    Template(
        "messages.unblock_then_text",
        "messages",
        "tool_use",
        "Unblock a contact before texting them (order matters).",
        _unblock_then_text,
        difficulty=1,
        check=_check_sent,
    )
)
