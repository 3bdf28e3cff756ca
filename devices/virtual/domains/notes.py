"""Notes: notes with ids, folders, pins and checklists, whose writes stay pending until they are saved."""

from __future__ import annotations

import random
import re
from typing import Any

from devices.virtual.domains._shared import powered_off, toggle
from devices.virtual.registry import Domain, Element, P, err, ok
from devices.virtual.tasks import Act, Call, Draft, R, Say, Template
from devices.virtual.wording import pick
from harness.contract import Code, ToolResult

FOLDERS = ["Personal", "Work", "Ideas"]


def _note(
    nid: str,
    title: str,
    body: str,
    folder: str,
    *,
    pinned: bool = False,
    locked: bool = False,
    checklist: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "id": nid,
        "title": title,
        "body": body,
        "folder": folder,
        "pinned": pinned,
        "locked": locked,
        "checklist": checklist or [],
        "saved": True,
        "updated": 0,
    }


DOMAIN = Domain(
    "notes",
    "Notes",
    initial={
        "notes": {
            "note_0001": _note(
                "note_0001",
                "Grocery list",
                "",
                "Personal",
                checklist=[{"text": "Milk", "done": False}, {"text": "Eggs", "done": True}],
            ),
            "note_0002": _note(
                "note_0002", "Team sync agenda", "Roadmap review; hiring update; Q&A", "Work", pinned=True
            ),
            "note_0003": _note("note_0003", "Gift ideas", "Board game for Sam, scarf for Mia", "Ideas"),
            "note_0004": _note(
                "note_0004", "Wi-Fi passwords", "Guest network: see router label", "Personal", locked=True
            ),
            "note_0005": _note("note_0005", "Book notes", "Chapter 3: habits compound over years", "Ideas"),
            "note_0006": _note("note_0006", "Expense report", "Taxi 23.40, lunch 18.00", "Work"),
        },
        "folders": list(FOLDERS),
        "pending": [],  # ids of notes with unsaved writes (saved at the next sync tick or by save_note)
        "auto_save": True,  # off: writes stay pending until save_note
        "next_id": 7,
    },
)
D = DOMAIN


def _find(s: dict[str, Any], nid: str) -> dict[str, Any] | ToolResult:
    n = s["notes"].get(nid)
    if n is None:
        return ToolResult.fail(Code.NOT_FOUND, f"no note with id '{nid}'; use list_notes or search_notes to find ids")
    return n


def _writable(phone, s: dict[str, Any], nid: str) -> dict[str, Any] | ToolResult:
    if (off := powered_off(phone)) is not None:
        return off
    n = _find(s, nid)
    if isinstance(n, ToolResult):
        return n
    if n["locked"]:
        return ToolResult.fail(
            Code.CONFLICT, f"note '{n['title']}' ({nid}) is locked; unlock it in the Notes app first"
        )
    return n


def _mark_pending(phone, s: dict[str, Any], n: dict[str, Any]) -> None:
    n["saved"] = False
    n["updated"] = phone.clock
    if n["id"] not in s["pending"]:
        s["pending"].append(n["id"])


def _status(n: dict[str, Any]) -> str:
    return "saved" if n["saved"] else "pending"


def _summary(n: dict[str, Any]) -> dict[str, Any]:
    return {"note_id": n["id"], "title": n["title"], "folder": n["folder"], "pinned": n["pinned"], "status": _status(n)}


def _full(n: dict[str, Any]) -> dict[str, Any]:
    return {
        "note_id": n["id"],
        "title": n["title"],
        "body": n["body"],
        "folder": n["folder"],
        "pinned": n["pinned"],
        "locked": n["locked"],
        "checklist": [dict(i) for i in n["checklist"]],
        "saved": n["saved"],
        "status": _status(n),
    }


@D.on_tick
def _sync(phone, s: dict[str, Any]) -> None:
    """Pending writes reach storage at the next step (the notes app's background sync)."""
    if not s["pending"] or not s["auto_save"]:
        return
    for nid in s["pending"]:
        n = s["notes"].get(nid)
        if n is not None and not n["saved"]:
            n["saved"] = True
            phone.log("notes.note_saved", note_id=nid)
    s["pending"] = []


# -- Notes ----------------------------------------------------------------------------------------

_NOTE_ID = P.string("note id, e.g. note_0007")


@D.tool(
    "create_note",
    "Create a note (optionally with checklist items) in a folder. Returns the new note id with status "
    "'pending'; the write is saved at the next sync or by save_note.",
    {
        "title": P.string("note title"),
        "body": P.string("note text", allow_empty=True),
        "folder": P.string("folder name (default Personal)"),
        "checklist": P.array(P.string("item"), "checklist items, unchecked"),
        "pinned": P.boolean("pin the note"),
    },
    ["title"],
    codes=(404, 412),
    cases=[
        ok({"title": "Call plumber", "body": "Ask about the leak"}),
        ok({"title": "Packing", "checklist": ["Passport", "Charger"], "folder": "Personal"}),
        err(404, {"title": "X", "folder": "Nowhere"}),
        err(412, {"title": "X"}, {"power.device.state": "off"}),
        err(400, {"body": "no title"}),
    ],
    check=lambda ph, a: any(n["title"] == a["title"] for n in ph.state["notes"]["notes"].values()),
)
def create_note(phone, s, args):
    if (off := powered_off(phone)) is not None:
        return off
    folder = args.get("folder", "Personal")
    if folder not in s["folders"]:
        return ToolResult.fail(Code.NOT_FOUND, f"folder '{folder}' does not exist; folders: {', '.join(s['folders'])}")
    nid = f"note_{s['next_id']:04d}"
    s["next_id"] += 1
    n = _note(
        nid,
        args["title"],
        args.get("body", ""),
        folder,
        pinned=args.get("pinned", False),
        checklist=[{"text": t, "done": False} for t in args.get("checklist", [])],
    )
    s["notes"][nid] = n
    _mark_pending(phone, s, n)
    phone.log("notes.note_created", note_id=nid, title=n["title"])
    return ToolResult.ok(
        f"note '{n['title']}' created as {nid}; saving", {"note_id": nid, "status": "pending", "folder": folder}
    )


@D.tool(
    "get_note",
    "Get a note by id: title, text, folder, checklist and whether it is saved.",
    {"note_id": _NOTE_ID},
    ["note_id"],
    read_only=True,
    codes=(404,),
    cases=[ok({"note_id": "note_0001"}), err(404, {"note_id": "note_9999"})],
)
def get_note(phone, s, args):
    n = _find(s, args["note_id"])
    if isinstance(n, ToolResult):
        return n
    return ToolResult.ok(f"note {n['id']} ({_status(n)})", {**_full(n), "auto_save": s["auto_save"]})


@D.tool(
    "list_notes",
    "List notes, pinned first; optionally only one folder or only pinned notes.",
    {"folder": P.string("folder name"), "pinned_only": P.boolean("only pinned notes")},
    read_only=True,
    codes=(404,),
    cases=[ok({}), ok({"folder": "Work"}), err(404, {"folder": "Nowhere"})],
)
def list_notes(phone, s, args):
    folder = args.get("folder")
    if folder is not None and folder not in s["folders"]:
        return ToolResult.fail(Code.NOT_FOUND, f"folder '{folder}' does not exist; folders: {', '.join(s['folders'])}")
    notes = [
        n
        for n in s["notes"].values()
        if (folder is None or n["folder"] == folder) and (not args.get("pinned_only") or n["pinned"])
    ]
    notes.sort(key=lambda n: (not n["pinned"], n["id"]))
    return ToolResult.ok(f"{len(notes)} notes", {"notes": [_summary(n) for n in notes], "total": len(notes)})


@D.tool(
    "search_notes",
    "Search notes by words in the title, text or checklist items.",
    {"query": P.string("words to look for")},
    ["query"],
    read_only=True,
    cases=[ok({"query": "gift"}), ok({"query": "zzz"})],
)
def search_notes(phone, s, args):
    q = args["query"].lower()
    hits = []
    for n in s["notes"].values():
        hay = " ".join([n["title"], n["body"], *(i["text"] for i in n["checklist"])]).lower()
        if q in hay or all(w in hay for w in q.split()):
            hits.append(_summary(n))
    return ToolResult.ok(f"{len(hits)} matching notes", {"results": hits, "total": len(hits)})


@D.tool(
    "update_note",
    "Replace a note's title and/or text (the write is pending until saved).",
    {"note_id": _NOTE_ID, "title": P.string("new title"), "body": P.string("new text", allow_empty=True)},
    ["note_id"],
    codes=(400, 404, 409, 412),
    cases=[
        ok({"note_id": "note_0003", "body": "Puzzle for Sam"}),
        err(400, {"note_id": "note_0003"}),
        err(404, {"note_id": "note_0999", "title": "x"}),
        err(409, {"note_id": "note_0004", "body": "x"}),
        err(412, {"note_id": "note_0003", "title": "x"}, {"power.device.state": "off"}),
    ],
    check=lambda ph, a: all(ph.state["notes"]["notes"][a["note_id"]][k] == a[k] for k in ("title", "body") if k in a),
)
def update_note(phone, s, args):
    if "title" not in args and "body" not in args:
        return ToolResult.fail(Code.BAD_ARGUMENT, "give a new title, a new body, or both")
    n = _writable(phone, s, args["note_id"])
    if isinstance(n, ToolResult):
        return n
    for k in ("title", "body"):
        if k in args:
            n[k] = args[k]
    _mark_pending(phone, s, n)
    phone.log("notes.note_updated", note_id=n["id"])
    return ToolResult.ok(f"note {n['id']} updated; saving", {"note_id": n["id"], "status": "pending"})


@D.tool(
    "append_to_note",
    "Append a line of text to the end of a note's text.",
    {"note_id": _NOTE_ID, "text": P.string("text to append")},
    ["note_id", "text"],
    codes=(404, 409, 412),
    cases=[
        ok({"note_id": "note_0005", "text": "Chapter 4: identity"}),
        err(404, {"note_id": "note_0999", "text": "x"}),
        err(409, {"note_id": "note_0004", "text": "x"}),
        err(412, {"note_id": "note_0005", "text": "x"}, {"power.device.state": "off"}),
    ],
    check=lambda ph, a: ph.state["notes"]["notes"][a["note_id"]]["body"].endswith(a["text"]),
)
def append_to_note(phone, s, args):
    n = _writable(phone, s, args["note_id"])
    if isinstance(n, ToolResult):
        return n
    n["body"] = f"{n['body']}\n{args['text']}" if n["body"] else args["text"]
    _mark_pending(phone, s, n)
    phone.log("notes.note_appended", note_id=n["id"])
    return ToolResult.ok(f"appended to {n['id']}; saving", {"note_id": n["id"], "body": n["body"], "status": "pending"})


@D.tool(
    "save_note",
    "Save a note's pending writes now (instead of waiting for the next sync).",
    {"note_id": _NOTE_ID},
    ["note_id"],
    codes=(404, 412),
    cases=[
        ok({"note_id": "note_0003"}, {"notes.notes.note_0003.saved": False, "notes.pending": ["note_0003"]}),
        ok({"note_id": "note_0003"}, note="already saved: no change"),
        err(404, {"note_id": "note_0999"}),
        err(412, {"note_id": "note_0003"}, {"power.device.state": "off"}),
    ],
    check=lambda ph, a: ph.state["notes"]["notes"][a["note_id"]]["saved"],
)
def save_note(phone, s, args):
    if (off := powered_off(phone)) is not None:
        return off
    n = _find(s, args["note_id"])
    if isinstance(n, ToolResult):
        return n
    if n["saved"]:
        return ToolResult.ok(f"note {n['id']} is already saved", {"note_id": n["id"], "status": "saved"})
    n["saved"] = True
    if n["id"] in s["pending"]:
        s["pending"].remove(n["id"])
    phone.log("notes.note_saved", note_id=n["id"])
    return ToolResult.ok(f"note {n['id']} saved", {"note_id": n["id"], "status": "saved"})


@D.tool(
    "list_unsaved_notes",
    "List notes whose writes are still pending (not yet saved).",
    read_only=True,
    cases=[ok({}), ok({}, {"notes.notes.note_0003.saved": False, "notes.pending": ["note_0003"]})],
)
def list_unsaved_notes(phone, s, args):
    pend = [_summary(s["notes"][i]) for i in s["pending"] if i in s["notes"]]
    return ToolResult.ok(
        f"{len(pend)} notes with unsaved writes", {"pending": pend, "total": len(pend), "auto_save": s["auto_save"]}
    )


@D.tool(
    "delete_note",
    "Delete a note permanently.",
    {"note_id": _NOTE_ID},
    ["note_id"],
    codes=(404, 409, 412),
    cases=[
        ok({"note_id": "note_0005"}),
        err(404, {"note_id": "note_0999"}),
        err(409, {"note_id": "note_0004"}),
        err(412, {"note_id": "note_0005"}, {"power.device.state": "off"}),
    ],
    check=lambda ph, a: a["note_id"] not in ph.state["notes"]["notes"],
)
def delete_note(phone, s, args):
    n = _writable(phone, s, args["note_id"])
    if isinstance(n, ToolResult):
        return n
    del s["notes"][n["id"]]
    if n["id"] in s["pending"]:
        s["pending"].remove(n["id"])
    phone.log("notes.note_deleted", note_id=n["id"])
    return ToolResult.ok(f"deleted note '{n['title']}' ({n['id']})", {"note_id": n["id"], "deleted": True})


@D.tool(
    "pin_note",
    "Pin or unpin a note (pinned notes are listed first).",
    {"note_id": _NOTE_ID, "pinned": P.boolean("true to pin, false to unpin")},
    ["note_id", "pinned"],
    codes=(404, 412),
    cases=[
        ok({"note_id": "note_0003", "pinned": True}),
        err(404, {"note_id": "note_0999", "pinned": True}),
        err(412, {"note_id": "note_0003", "pinned": True}, {"power.device.state": "off"}),
    ],
    check=lambda ph, a: ph.state["notes"]["notes"][a["note_id"]]["pinned"] == a["pinned"],
)
def pin_note(phone, s, args):
    if (off := powered_off(phone)) is not None:
        return off
    n = _find(s, args["note_id"])
    if isinstance(n, ToolResult):
        return n
    if n["pinned"] != args["pinned"]:
        n["pinned"] = args["pinned"]
        phone.log("notes.note_pinned", note_id=n["id"], pinned=args["pinned"])
    return ToolResult.ok(
        f"note {n['id']} {'pinned' if n['pinned'] else 'unpinned'}", {"note_id": n["id"], "pinned": n["pinned"]}
    )


@D.tool(
    "move_note_to_folder",
    "Move a note into another folder.",
    {"note_id": _NOTE_ID, "folder": P.string("destination folder")},
    ["note_id", "folder"],
    codes=(404, 409, 412),
    cases=[
        ok({"note_id": "note_0003", "folder": "Work"}),
        err(404, {"note_id": "note_0003", "folder": "Nowhere"}),
        err(404, {"note_id": "note_0999", "folder": "Work"}),
        err(409, {"note_id": "note_0004", "folder": "Work"}),
        err(412, {"note_id": "note_0003", "folder": "Work"}, {"power.device.state": "off"}),
    ],
    check=lambda ph, a: ph.state["notes"]["notes"][a["note_id"]]["folder"] == a["folder"],
)
def move_note_to_folder(phone, s, args):
    n = _writable(phone, s, args["note_id"])
    if isinstance(n, ToolResult):
        return n
    if args["folder"] not in s["folders"]:
        return ToolResult.fail(
            Code.NOT_FOUND, f"folder '{args['folder']}' does not exist; create it with create_note_folder"
        )
    if n["folder"] != args["folder"]:
        n["folder"] = args["folder"]
        phone.log("notes.note_moved", note_id=n["id"], folder=args["folder"])
    return ToolResult.ok(f"note {n['id']} is in {args['folder']}", {"note_id": n["id"], "folder": args["folder"]})


# -- Checklists -----------------------------------------------------------------------------------


@D.tool(
    "add_checklist_item",
    "Add an unchecked item to a note's checklist.",
    {"note_id": _NOTE_ID, "text": P.string("item text")},
    ["note_id", "text"],
    codes=(404, 409, 412),
    cases=[
        ok({"note_id": "note_0001", "text": "Bread"}),
        err(404, {"note_id": "note_0999", "text": "x"}),
        err(409, {"note_id": "note_0001", "text": "Milk"}, note="item already on the list"),
        err(412, {"note_id": "note_0001", "text": "x"}, {"power.device.state": "off"}),
    ],
    check=lambda ph, a: any(i["text"] == a["text"] for i in ph.state["notes"]["notes"][a["note_id"]]["checklist"]),
)
def add_checklist_item(phone, s, args):
    n = _writable(phone, s, args["note_id"])
    if isinstance(n, ToolResult):
        return n
    if any(i["text"].lower() == args["text"].lower() for i in n["checklist"]):
        return ToolResult.fail(Code.CONFLICT, f"'{args['text']}' is already on the checklist of {n['id']}")
    n["checklist"].append({"text": args["text"], "done": False})
    _mark_pending(phone, s, n)
    phone.log("notes.checklist_added", note_id=n["id"], text=args["text"])
    return ToolResult.ok(
        f"added '{args['text']}' to {n['id']}", {"note_id": n["id"], "checklist": [dict(i) for i in n["checklist"]]}
    )


@D.tool(
    "set_checklist_item",
    "Check or uncheck a checklist item, by its text.",
    {"note_id": _NOTE_ID, "item": P.string("the item's text"), "done": P.boolean("true to check it")},
    ["note_id", "item", "done"],
    codes=(404, 409, 412),
    cases=[
        ok({"note_id": "note_0001", "item": "Milk", "done": True}),
        err(404, {"note_id": "note_0001", "item": "Caviar", "done": True}),
        err(409, {"note_id": "note_0004", "item": "x", "done": True}),
        err(412, {"note_id": "note_0001", "item": "Milk", "done": True}, {"power.device.state": "off"}),
    ],
    check=lambda ph, a: any(
        i["text"].lower() == a["item"].lower() and i["done"] == a["done"]
        for i in ph.state["notes"]["notes"][a["note_id"]]["checklist"]
    ),
)
def set_checklist_item(phone, s, args):
    n = _writable(phone, s, args["note_id"])
    if isinstance(n, ToolResult):
        return n
    item = next((i for i in n["checklist"] if i["text"].lower() == args["item"].lower()), None)
    if item is None:
        have = ", ".join(i["text"] for i in n["checklist"]) or "none"
        return ToolResult.fail(Code.NOT_FOUND, f"no checklist item '{args['item']}' in {n['id']}; items: {have}")
    if item["done"] != args["done"]:
        item["done"] = args["done"]
        _mark_pending(phone, s, n)
        phone.log("notes.checklist_set", note_id=n["id"], item=item["text"], done=args["done"])
    return ToolResult.ok(
        f"'{item['text']}' {'checked' if item['done'] else 'unchecked'}", {"note_id": n["id"], "item": dict(item)}
    )


# -- Folders --------------------------------------------------------------------------------------


@D.tool("list_note_folders", "List note folders with how many notes each holds.", read_only=True, cases=[ok({})])
def list_note_folders(phone, s, args):
    counts = {f: 0 for f in s["folders"]}
    for n in s["notes"].values():
        counts[n["folder"]] = counts.get(n["folder"], 0) + 1
    return ToolResult.ok(
        f"{len(s['folders'])} folders", {"folders": [{"name": f, "notes": counts[f]} for f in s["folders"]]}
    )


@D.tool(
    "create_note_folder",
    "Create a note folder.",
    {"name": P.string("folder name")},
    ["name"],
    codes=(409, 412),
    cases=[
        ok({"name": "Travel"}),
        err(409, {"name": "Work"}),
        err(412, {"name": "Travel"}, {"power.device.state": "off"}),
    ],
    check=lambda ph, a: a["name"] in ph.state["notes"]["folders"],
)
def create_note_folder(phone, s, args):
    if (off := powered_off(phone)) is not None:
        return off
    name = args["name"].strip()
    if any(f.lower() == name.lower() for f in s["folders"]):
        return ToolResult.fail(Code.CONFLICT, f"a folder named '{name}' already exists")
    s["folders"].append(name)
    phone.log("notes.folder_created", folder=name)
    return ToolResult.ok(f"folder '{name}' created", {"folder": name, "folders": list(s["folders"])})


@D.tool(
    "delete_note_folder",
    "Delete an empty note folder.",
    {"name": P.string("folder name")},
    ["name"],
    codes=(404, 409, 412),
    cases=[
        ok({"name": "Ideas"}, {"notes.notes.note_0003.folder": "Personal", "notes.notes.note_0005.folder": "Personal"}),
        err(409, {"name": "Work"}),
        err(404, {"name": "Nowhere"}),
        err(412, {"name": "Ideas"}, {"power.device.state": "off"}),
    ],
    check=lambda ph, a: a["name"] not in ph.state["notes"]["folders"],
)
def delete_note_folder(phone, s, args):
    if (off := powered_off(phone)) is not None:
        return off
    if args["name"] not in s["folders"]:
        return ToolResult.fail(Code.NOT_FOUND, f"folder '{args['name']}' does not exist")
    inside = [n["id"] for n in s["notes"].values() if n["folder"] == args["name"]]
    if inside:
        return ToolResult.fail(
            Code.CONFLICT, f"folder '{args['name']}' is not empty ({len(inside)} notes); move them first"
        )
    s["folders"].remove(args["name"])
    phone.log("notes.folder_deleted", folder=args["name"])
    return ToolResult.ok(f"folder '{args['name']}' deleted", {"folders": list(s["folders"])})


_NOTE_TOOLS = [
    "create_note",
    "get_note",
    "list_notes",
    "search_notes",
    "update_note",
    "append_to_note",
    "save_note",
    "list_unsaved_notes",
    "delete_note",
    "pin_note",
    "move_note_to_folder",
    "add_checklist_item",
    "set_checklist_item",
    "list_note_folders",
    "create_note_folder",
    "delete_note_folder",
]

D.skill(
    "note_taking",
    "Note taking",
    "Create, find, edit and organise notes, folders and checklists.",
    _NOTE_TOOLS,
    [
        "Search or list notes to get a note's id before editing it; never guess ids.",
        "Writes are pending until saved: confirm with get_note that the note's status is 'saved' (or call save_note).",
        "Create a missing folder before moving or creating notes in it.",
        "Locked notes cannot be edited (409); tell the user instead of retrying.",
    ],
)


# -- App screen -----------------------------------------------------------------------------------


@D.app("Notes", package="com.flywheel.notes")
def notes_screen(phone, route):
    s = phone.state["notes"]
    inputs = phone.gui.get("inputs", {})
    if route == "new":
        return "New note", [
            Element("title", inputs.get("title", "Title"), kind="input", clickable=True),
            Element("body", inputs.get("body", "Note text"), kind="input", clickable=True),
            Element("folder", inputs.get("folder", "Folder (Personal)"), kind="input", clickable=True),
            Element(
                "save",
                "Save note",
                kind="button",
                clickable=True,
                tool=("create_note", {"title": "{input:title}", "body": "{input:body}"}),
                to="main",
            ),
        ]
    if route.startswith("note:"):
        n = s["notes"].get(route[5:])
        if n is None:
            return "Note", [Element("gone", "This note was deleted.")]
        els = [
            Element("hdr", n["title"], kind="header"),
            Element("body", n["body"] or "(no text)"),
            Element("folder", f"Folder: {n['folder']}"),
        ]
        for i, item in enumerate(n["checklist"]):
            els.append(
                toggle(
                    f"item:{i}",
                    item["text"],
                    item["done"],
                    "set_checklist_item",
                    {"note_id": n["id"], "item": item["text"]},
                    key="done",
                )
            )
        els.append(
            Element(
                "pin",
                "Unpin" if n["pinned"] else "Pin",
                kind="button",
                clickable=True,
                tool=("pin_note", {"note_id": n["id"], "pinned": not n["pinned"]}),
            )
        )
        if not n["saved"]:
            els.append(Element("save", "Save", kind="button", clickable=True, tool=("save_note", {"note_id": n["id"]})))
        els.append(Element("status", "Status: saved" if n["saved"] else "Status: saving…"))
        return n["title"], els
    els = [Element("new", "New note", kind="button", clickable=True, to="new")]
    for n in sorted(s["notes"].values(), key=lambda n: (not n["pinned"], n["id"])):
        # An unsaved note is shown with a prefix so that its bare title appears only once it is saved.
        text = n["title"] if n["saved"] else f"(unsaved) {n['title']}"
        els.append(
            Element(
                f"note:{n['id']}", text, kind="item", clickable=True, checked=n["pinned"] or None, to=f"note:{n['id']}"
            )
        )
    return "Notes", els


_TITLE_RE = re.compile(r"""(?:titled|called|named|title)\s*[:=]?\s*["'“‘]([^"'”’]+)["'”’]""", re.I)
# Unquoted titles end where the text starts ("... titled Parking spot with the text: ...").
_TITLE_BARE_RE = re.compile(
    r"(?:titled|called|named|title)\s*[:=]?\s*(.+?)\s*(?=,|;|\bwith\b|\bsaying\b|\bthat says\b|\bcontaining\b|$)", re.I
)
_BODY_RE = re.compile(r"""(?:text|body|content|saying|says|containing)\s*[:=]?\s*["'“‘]?(.+?)["'”’]?\s*\.?$""", re.I)


@D.gui_script("Notes")
def notes_gui_script(instruction: str) -> list[tuple[Any, ...]] | None:
    """'Create a note titled "X" with the text: Y' -> New note, type title and text, Save note, let it sync,
    open the note and confirm its status reads saved."""
    if not re.search(r"\b(create|new|write|add|make|jot|record)\b", instruction, re.I):
        return None
    m = _TITLE_RE.search(instruction) or _TITLE_BARE_RE.search(instruction)
    if m is None or not m.group(1).strip():
        return None
    title = m.group(1).strip()
    b = _BODY_RE.search(instruction[m.end() :])
    body = b.group(1).strip() if b is not None else ""
    return [
        ("tap", "New note"),
        ("type", title, "title"),
        ("type", body, "body"),
        ("tap", "Save note"),
        ("wait", 1),
        ("tap", title),
        ("confirm", "Status: saved", title),
    ]


# -- Task templates -------------------------------------------------------------------------------

_TOPICS = [
    ("Plumber call", "Call the plumber about the kitchen leak before Friday"),
    ("Parking spot", "Car is on level 3, bay C14"),
    ("Book club", "Next pick: The Left Hand of Darkness"),
    ("Recipe tweak", "Use half the sugar and add lemon zest"),
    ("Locker code", "Gym locker 218, code 4471"),
    ("Birthday plan", "Book the table at Lumen for 8 people"),
    ("Meeting follow-up", "Send the budget sheet to Priya"),
    ("Garden", "Water the tomatoes every second evening"),
]
_CHECKLISTS = [
    ("Weekend groceries", ["Oat milk", "Bananas", "Rye bread", "Coffee beans", "Spinach"]),
    ("Camping kit", ["Tent pegs", "Head torch", "Gas canister", "Water filter", "First aid kit"]),
    ("Moving day", ["Label boxes", "Defrost freezer", "Read meters", "Return keys"]),
    ("Trip packing", ["Passport", "Adapter plug", "Sunscreen", "Phone charger", "Swimwear"]),
    ("Party supplies", ["Candles", "Paper plates", "Ice", "Napkins", "Balloons"]),
]
_EXTRA_FOLDERS = ["Travel", "Home", "Recipes", "Projects", "Health"]


def _next_id(rng: random.Random) -> int:
    return rng.randint(7, 60)


def _note_allowed(nid: str) -> list[str]:
    return [f"notes.notes.{nid}.updated", f"notes.notes.{nid}.saved", "notes.pending"]


def _create_checklist(rng: random.Random) -> Draft:
    title, items = rng.choice(_CHECKLISTS)
    items = rng.sample(items, rng.randint(3, len(items)))
    folder = rng.choice(_EXTRA_FOLDERS)
    exists = rng.random() < 0.5
    nxt = _next_id(rng)
    nid = f"note_{nxt:04d}"
    setup: dict[str, Any] = {"notes.next_id": nxt}
    if exists:
        setup["notes.folders"] = [*FOLDERS, folder]
    plan: list[Any] = []
    if not exists:
        plan.append(Act(f"The {folder} folder may not exist; check the folders first.", [Call("list_note_folders")]))
        plan.append(Act(f"No {folder} folder yet; create it.", [Call("create_note_folder", {"name": folder})]))
    plan += [
        Act(
            f"Create the checklist note in {folder}.",
            [Call("create_note", {"title": title, "checklist": items, "folder": folder}, name="note")],
        ),
        Act(
            "Confirm the note was saved.",
            [
                Call(
                    "get_note",
                    {"note_id": R("note", "data.note_id")},
                    until=lambda r: r.get("data", {}).get("saved") is True,
                )
            ],
        ),
        Say(f"Created the checklist '{title}' in {folder} with {len(items)} items: {', '.join(items)}."),
    ]
    listed = ", ".join(items[:-1]) + f" and {items[-1]}"
    return Draft(
        instruction=pick(
            rng,
            [
                f"Make a checklist note called '{title}' in my {folder} folder with {listed}.",
                f"Create a '{title}' checklist in {folder}: {', '.join(items)}.",
                f"I need a to-do list named '{title}' under {folder} with these items: {listed}.",
            ],
        ),
        params={"title": title, "items": items, "folder": folder, "folder_exists": exists, "note_id": nid},
        setup=setup,
        tools=[
            "create_note",
            "get_note",
            "list_note_folders",
            "create_note_folder",
            "list_notes",
            "add_checklist_item",
            "delete_note_folder",
        ],
        goal={
            f"notes.notes.{nid}.title": title,
            f"notes.notes.{nid}.folder": folder,
            f"notes.notes.{nid}.checklist": [{"text": t, "done": False} for t in items],
            f"notes.notes.{nid}.saved": True,
            **({} if exists else {"notes.folders": [*FOLDERS, folder]}),
        },
        allowed=["notes.next_id", *_note_allowed(nid), f"notes.notes.{nid}"],
        plan=plan,
    )


def _distractor_notes(rng: random.Random, k: int, skip: str) -> dict[str, Any]:
    """Extra notes with sampled ids and content (the ids must stay below next_id)."""
    out: dict[str, Any] = {}
    pool = [t for t in _TOPICS if t[0] != skip]
    for i, (title, body) in enumerate(rng.sample(pool, k)):
        nid = f"note_{10 + i * 3 + rng.randint(0, 2):04d}"
        out[f"notes.notes.{nid}"] = _note(nid, title, body, rng.choice(FOLDERS))
    return out


def _append_found(rng: random.Random) -> Draft:
    """Find a note by its title words (the search service fails once: 503), then append a line."""
    title, body = rng.choice(_TOPICS)
    line = rng.choice(
        [
            "Confirmed on the phone today",
            "Reminder set for next week",
            "Budget approved",
            "Ask again on Monday",
            "Done, receipt in the drawer",
        ]
    )
    outage = rng.random() < 0.6
    setup = _distractor_notes(rng, 3, title)
    nid = f"note_{40 + rng.randint(0, 9):04d}"
    setup[f"notes.notes.{nid}"] = _note(nid, title, body, rng.choice(FOLDERS))
    setup["notes.next_id"] = 60
    plan: list[Any] = []
    if outage:
        plan.append(Act(f"Find the '{title}' note.", [Call("search_notes", {"query": title})], may_fail=True))
        plan.append(Act("The search service failed (503); retry once.", [Call("search_notes", {"query": title})]))
    else:
        plan.append(Act(f"Find the '{title}' note.", [Call("search_notes", {"query": title})]))
    plan += [
        Act(f"The note is {nid}; append the line.", [Call("append_to_note", {"note_id": nid, "text": line})]),
        Act("Make sure the write is saved.", [Call("save_note", {"note_id": nid})]),
        Say(f"Added \"{line}\" to your '{title}' note and saved it."),
    ]
    return Draft(
        instruction=pick(
            rng,
            [
                f'Add "{line}" to my {title.lower()} note.',
                f"In the note about {title.lower()}, append: {line}",
                f"Put \"{line}\" at the end of my '{title}' note, please.",
            ],
        ),
        params={"title": title, "line": line, "note_id": nid, "outage": outage},
        setup=setup,
        faults=[{"tool": "search_notes", "kind": "outage", "times": 1}] if outage else [],
        tools=["search_notes", "get_note", "append_to_note", "save_note", "update_note", "delete_note"],
        goal={f"notes.notes.{nid}.body": f"{body}\n{line}", f"notes.notes.{nid}.saved": True},
        allowed=_note_allowed(nid),
        plan=plan,
    )


_ROUTINES = [
    ("Gym bag", ["Towel", "Water bottle", "Lock", "Trainers"], "routines_habits"),
    ("Weekly reset", ["Change bed sheets", "Meal prep", "Water plants", "Review budget"], "routines_habits"),
    (
        "Flight checklist",
        ["Check in online", "Download boarding pass", "Pack liquids bag", "Charge power bank"],
        "routines_habits",
    ),
    ("Sunday shopping", ["Coffee", "Eggs", "Bread", "Fruit"], "preferences"),
]


def _memory_checklist(rng: random.Random) -> Draft:
    """The routine's items live in memory: a focused search finds them; write them as a checklist."""
    name, items, cat = rng.choice(_ROUTINES)
    others = [r for r in _ROUTINES if r[0] != name]
    memory = [
        {
            "id": "mem_gold",
            "category": cat,
            "title": f"{name} routine",
            "content": f"My {name.lower()} list, in this order: {', '.join(items)}.",
            "tags": ["checklist", name.lower()],
        }
    ]
    for i, (oname, oitems, ocat) in enumerate(rng.sample(others, 2)):
        memory.append(
            {
                "id": f"mem_n{i}",
                "category": ocat,
                "title": f"{oname} routine",
                "content": f"My {oname.lower()} list: {', '.join(oitems)}.",
                "tags": ["checklist"],
            }
        )
    memory += [
        {
            "id": "mem_n8",
            "category": "important_info",
            "title": "Doctor",
            "content": "Dr. Alvarez, clinic on Rue Verte.",
            "tags": [],
        },
        {
            "id": "mem_n9",
            "category": "preferences",
            "title": "Note style",
            "content": f"Keep {name.lower()} notes short; no emoji.",
            "tags": ["notes"],
        },
    ]
    rng.shuffle(memory)
    nxt = _next_id(rng)
    nid = f"note_{nxt:04d}"
    return Draft(
        instruction=pick(
            rng,
            [
                f"Make me a checklist note of my usual {name.lower()} items.",
                f"Write down my {name.lower()} list as a checklist, titled '{name}'.",
                f"Can you turn my {name.lower()} routine into a checklist note called '{name}'?",
            ],
        ),
        params={"name": name, "items": items, "note_id": nid},
        setup={"notes.next_id": nxt},
        memory=memory,
        tools=["create_note", "get_note", "list_notes", "search_notes", "add_checklist_item", "pin_note"],
        goal={
            f"notes.notes.{nid}.title": name,
            f"notes.notes.{nid}.checklist": [{"text": t, "done": False} for t in items],
            f"notes.notes.{nid}.saved": True,
        },
        allowed=["notes.next_id", f"notes.notes.{nid}"],
        plan=[
            Act(
                f"The items are in the user's memory; search for the {name.lower()} routine.",
                [Call("search_user_memory", {"query": f"{name} list", "maxResults": 5})],
            ),
            Act(
                "The gold entry lists the items; create the checklist.",
                [Call("create_note", {"title": name, "checklist": items}, name="note")],
            ),
            Act(
                "Confirm it was saved.",
                [
                    Call(
                        "get_note",
                        {"note_id": R("note", "data.note_id")},
                        until=lambda r: r.get("data", {}).get("saved") is True,
                    )
                ],
            ),
            Say(f"Your '{name}' checklist is saved with: {', '.join(items)}."),
        ],
    )


def _skill_organize(rng: random.Random) -> Draft:
    """Skills: load note_taking (power_management is a distractor), move a note into a new folder and pin it."""
    title, body = rng.choice(_TOPICS)
    folder = rng.choice(_EXTRA_FOLDERS)
    setup = _distractor_notes(rng, 2, title)
    nid = f"note_{50 + rng.randint(0, 9):04d}"
    setup[f"notes.notes.{nid}"] = _note(nid, title, body, rng.choice(FOLDERS))
    setup["notes.next_id"] = 61
    return Draft(
        instruction=pick(
            rng,
            [
                f"Put my '{title}' note in a new {folder} folder and pin it.",
                f"Create a {folder} folder, move the {title.lower()} note there, and pin it to the top.",
                f"File the note '{title}' under {folder} (new folder) and keep it pinned.",
            ],
        ),
        params={"title": title, "folder": folder, "note_id": nid},
        setup=setup,
        tools=[],
        skills=["note_taking", "power_management"],
        goal={
            "notes.folders": [*FOLDERS, folder],
            f"notes.notes.{nid}.folder": folder,
            f"notes.notes.{nid}.pinned": True,
        },
        plan=[
            Act(
                "Load the note-taking skill for its tools and rules.",
                [Call("skill__note_taking", {"reason": "organise a note"})],
            ),
            Act(f"Find the '{title}' note's id.", [Call("search_notes", {"query": title})]),
            Act(f"Create the {folder} folder first.", [Call("create_note_folder", {"name": folder})]),
            Act(
                f"Move {nid} there and pin it.",
                [
                    Call("move_note_to_folder", {"note_id": nid, "folder": folder}),
                    Call("pin_note", {"note_id": nid, "pinned": True}),
                ],
            ),
            Say(f"Your '{title}' note is now pinned in the new {folder} folder."),
        ],
    )


def _gui_note(rng: random.Random) -> Draft:
    """Sub-agent: a GUI agent creates the note through the Notes app's screens."""
    title, body = rng.choice(_TOPICS)
    nxt = _next_id(rng)
    nid = f"note_{nxt:04d}"
    instr = f'Create a note titled "{title}" with the text: {body}'
    return Draft(
        instruction=pick(
            rng,
            [
                f"Use the Notes app to jot down '{title}': {body}.",
                f"Open Notes and add a note '{title}' saying: {body}.",
                f"Have the notes app record this under '{title}': {body}.",
            ],
        ),
        params={"title": title, "body": body, "note_id": nid},
        setup={"notes.next_id": nxt},
        tools=["list_notes", "get_note"],
        subagent=True,
        goal={f"notes.notes.{nid}.title": title, f"notes.notes.{nid}.body": body, f"notes.notes.{nid}.saved": True},
        allowed=["notes.next_id", f"notes.notes.{nid}"],
        plan=[
            Act(
                "Delegate the note to a GUI agent on the Notes app.",
                [Call("control_gui_agent", {"action": "start", "appName": "Notes", "instruction": instr}, name="gui")],
            ),
            Act(
                "Run it.",
                [
                    Call(
                        "control_gui_agent",
                        {"action": "execute", "sessionId": R("gui", "data.sessionId")},
                        name="run",
                        until=lambda r: r.get("data", {}).get("execution_status") == "completed",
                    )
                ],
            ),
            Act("Check the note really exists.", [Call("list_notes", {})]),
            Say(f"The Notes app now has your note '{title}'."),
        ],
        budget=12,
    )


def _multi_turn_note(rng: random.Random) -> Draft:
    """Multi-turn: create a note, then the follow-up asks to add a line and pin it (same note id)."""
    title, body = rng.choice(_TOPICS)
    extra = rng.choice(["Bring the receipts", "Ask Jordan first", "Check the weather", "Budget 40 euros"])
    nxt = _next_id(rng)
    nid = f"note_{nxt:04d}"
    return Draft(
        instruction=pick(
            rng,
            [
                f"New note '{title}': {body}.",
                f"Write a note titled '{title}' that says {body}.",
                f"Note down '{title}' - {body}.",
            ],
        ),
        params={"title": title, "body": body, "extra": extra, "note_id": nid},
        setup={"notes.next_id": nxt},
        followups=[
            pick(
                rng,
                [
                    f'Also add "{extra}" to that note and pin it.',
                    f'Oh, and append "{extra}" to it, then pin it please.',
                ],
            )
        ],
        tools=["create_note", "get_note", "append_to_note", "pin_note", "search_notes", "delete_note"],
        goal={
            f"notes.notes.{nid}.title": title,
            f"notes.notes.{nid}.body": f"{body}\n{extra}",
            f"notes.notes.{nid}.pinned": True,
            f"notes.notes.{nid}.saved": True,
        },
        allowed=["notes.next_id", f"notes.notes.{nid}"],
        plan=[
            Act("Create the note.", [Call("create_note", {"title": title, "body": body}, name="note")]),
            Act(
                "Confirm the id and that it saved.",
                [
                    Call(
                        "get_note",
                        {"note_id": R("note", "data.note_id")},
                        until=lambda r: r.get("data", {}).get("saved") is True,
                    )
                ],
            ),
            Say(f"Saved your note '{title}' ({nid})."),
            Act(
                "Follow-up on the same note id: append and pin in parallel.",
                [
                    Call("append_to_note", {"note_id": nid, "text": extra}),
                    Call("pin_note", {"note_id": nid, "pinned": True}),
                ],
            ),
            Act(
                "Confirm the appended text is saved.",
                [Call("get_note", {"note_id": nid}, until=lambda r: r.get("data", {}).get("saved") is True)],
            ),
            Say(f"Added \"{extra}\" to '{title}' and pinned it."),
        ],
    )


D.add_template(
    Template(
        "notes.create_checklist",
        "notes",
        "tool_use",
        "Create a checklist note in a folder, creating the folder when missing.",
        _create_checklist,
        difficulty=1,
    )
)
D.add_template(
    Template(
        "notes.append_after_search_outage",
        "notes",
        "tool_use",
        "Find a note by title (search may fail once with 503) and append a line.",
        _append_found,
        tags=("error_recovery",),
        difficulty=2,
    )
)
D.add_template(
    Template(
        "notes.memory_routine_checklist",
        "notes",
        "memory",
        "Turn a routine found in memory into a checklist note.",
        _memory_checklist,
        difficulty=2,
    )
)
D.add_template(
    Template(
        "notes.skill_file_and_pin",
        "notes",
        "skills",
        "Load note_taking, create a folder, move a note there and pin it.",
        _skill_organize,
        difficulty=2,
    )
)
D.add_template(
    Template(
        "notes.gui_agent_create_note",
        "notes",
        "sub_agent",
        "A GUI agent creates a note through the Notes app.",
        _gui_note,
        difficulty=2,
    )
)
D.add_template(
    Template(
        "notes.multi_turn_append_pin",
        "notes",
        "tool_use",
        "Create a note, then a follow-up appends to it and pins it.",
        _multi_turn_note,
        tags=("multi_turn",),
        difficulty=2,
    )
)
