"""Files and downloads: a file manager (folders, move/copy/rename/trash), a Browser whose downloads
complete asynchronously over steps, and the apps' screens a GUI agent operates."""

from __future__ import annotations

import random
import re
from typing import Any

from devices.virtual.domains._shared import powered_off
from devices.virtual.registry import Domain, Element, P, err, ok
from devices.virtual.tasks import Act, Call, Draft, R, Say, Template, gui_agent
from devices.virtual.wording import pick
from harness.contract import Code, ToolResult

FOLDERS = ["Documents", "Download", "Music", "Pictures"]
SITE = "https://share.northwind.example/q3/"
_SLUG = re.compile(r"[^a-z0-9]+")
_KINDS = {
    "pdf": "document",
    "docx": "document",
    "txt": "document",
    "xlsx": "spreadsheet",
    "csv": "spreadsheet",
    "pptx": "presentation",
    "jpg": "image",
    "png": "image",
    "mp3": "audio",
    "zip": "archive",
    "apk": "app",
}


def slug(name: str) -> str:
    """A dotless key for a file name, so dotted state paths can address it (a.pdf -> a_pdf)."""
    return _SLUG.sub("_", name.lower()).strip("_")


def file_id(name: str) -> str:
    return f"file_{slug(name)}"


def download_id(name: str) -> str:
    return f"dl_{slug(name)}"


def _kind(name: str) -> str:
    return _KINDS.get(name.rsplit(".", 1)[-1].lower(), "other") if "." in name else "other"


def _file(name: str, folder: str, size_kb: int) -> dict[str, Any]:
    return {"id": file_id(name), "name": name, "folder": folder, "size_kb": size_kb, "type": _kind(name)}


def _files(*rows: tuple[str, str, int]) -> dict[str, Any]:
    return {file_id(n): _file(n, f, k) for n, f, k in rows}


def link(name: str, size_kb: int) -> dict[str, Any]:
    return {"name": name, "url": SITE + name, "size_kb": size_kb}


DOMAIN = Domain(
    "files",
    "Files & downloads",
    initial={
        "folders": list(FOLDERS),
        "items": _files(
            ("boarding_pass.pdf", "Download", 310),
            ("receipt_0931.pdf", "Download", 95),
            ("IMG_2041.jpg", "Download", 2840),
            ("setup_guide.pdf", "Download", 1210),
            ("cv_2026.docx", "Documents", 88),
            ("taxes_2025.pdf", "Documents", 640),
            ("IMG_1999.jpg", "Pictures", 3120),
            ("demo_track.mp3", "Music", 5400),
        ),
        "trash": {},
        "downloads": {},
        "web": {
            "page": "Q3 shared documents",
            "links": [
                link("q3_summary.pdf", 1800),
                link("budget_2027.xlsx", 420),
                link("project_brief.docx", 260),
                link("site_photos.zip", 9600),
                link("press_release.docx", 150),
            ],
        },
        "storage": {"total_mb": 128000, "system_mb": 61234},
    },
)
D = DOMAIN


def _online(phone) -> ToolResult | None:
    conn = phone.state.get("connectivity")
    if isinstance(conn, dict):
        if conn.get("airplane_mode"):
            return ToolResult.fail(Code.PREREQUISITE, "no internet connection: airplane mode is on")
        if not conn.get("wifi", {}).get("enabled"):
            return ToolResult.fail(Code.PREREQUISITE, "no internet connection: Wi-Fi is off; turn Wi-Fi on first")
    return None


def _lookup(s: dict[str, Any], path: str) -> dict[str, Any] | ToolResult:
    """A file by 'Folder/name' (or a bare name when it is unique)."""
    folder, _, name = path.strip().rpartition("/")
    hits = [f for f in s["items"].values() if f["name"] == name and (not folder or f["folder"] == folder)]
    if not hits:
        where = f"in {folder}" if folder else "anywhere"
        return ToolResult.fail(Code.NOT_FOUND, f"no file named '{name}' {where}; use list_files or search_files")
    if len(hits) > 1:
        places = ", ".join(f"{f['folder']}/{f['name']}" for f in hits)
        return ToolResult.fail(Code.CONFLICT, f"several files are named '{name}' ({places}); give the folder too")
    return hits[0]


def _in_folder(s: dict[str, Any], folder: str, name: str) -> bool:
    return any(f["folder"] == folder and f["name"] == name for f in s["items"].values())


def _new_id(s: dict[str, Any], name: str) -> str:
    fid = file_id(name)
    n = 2
    while fid in s["items"] or fid in s["trash"]:
        fid = f"{file_id(name)}_{n}"
        n += 1
    return fid


def _view(f: dict[str, Any]) -> dict[str, Any]:
    return {
        "path": f"{f['folder']}/{f['name']}",
        "name": f["name"],
        "folder": f["folder"],
        "size_kb": f["size_kb"],
        "type": f["type"],
    }


# -- Async downloads ------------------------------------------------------------------------------


@D.on_tick
def _progress(phone, s: dict[str, Any]) -> None:
    """Running downloads advance one step; a finished one lands in the Download folder."""
    for d in s["downloads"].values():
        if d["status"] != "downloading":
            continue
        d["steps_left"] -= 1
        d["progress"] = min(99, int(100 * (d["total_steps"] - d["steps_left"]) / d["total_steps"]))
        if d["steps_left"] <= 0:
            fid = _new_id(s, d["name"])
            s["items"][fid] = {**_file(d["name"], "Download", d["size_kb"]), "id": fid}
            d.update(status="completed", progress=100, file_id=fid)
            phone.log("files.download_complete", name=d["name"], file_id=fid)


def _dl_view(d: dict[str, Any]) -> dict[str, Any]:
    out = {"download_id": d["id"], "name": d["name"], "status": d["status"], "progress": d["progress"], "url": d["url"]}
    if d["status"] == "completed":
        out["path"] = f"Download/{d['name']}"
    return out


@D.tool(
    "list_page_downloads",
    "List the files offered for download on the page open in the Browser (name, URL, size).",
    read_only=True,
    codes=(412,),
    cases=[ok({}), err(412, {}, {"connectivity.wifi.enabled": False})],
)
def list_page_downloads(phone, s, args):
    if (bad := _online(phone)) is not None:
        return bad
    links = s["web"]["links"]
    return ToolResult.ok(
        f"{len(links)} files on '{s['web']['page']}'", {"page": s["web"]["page"], "files": [dict(x) for x in links]}
    )


@D.tool(
    "download_file",
    "Start downloading a file by its URL into the Download folder. Downloads finish asynchronously: poll "
    "list_downloads until the status is 'completed'.",
    {"url": P.string("the file's URL from list_page_downloads")},
    ["url"],
    codes=(404, 409, 412),
    cases=[
        ok({"url": SITE + "budget_2027.xlsx"}),
        err(404, {"url": SITE + "missing.pdf"}),
        err(
            409,
            {"url": SITE + "budget_2027.xlsx"},
            {
                "files.downloads.dl_budget_2027_xlsx": {
                    "id": "dl_budget_2027_xlsx",
                    "name": "budget_2027.xlsx",
                    "url": SITE + "budget_2027.xlsx",
                    "size_kb": 420,
                    "status": "downloading",
                    "progress": 0,
                    "steps_left": 2,
                    "total_steps": 2,
                    "file_id": None,
                }
            },
        ),
        err(412, {"url": SITE + "budget_2027.xlsx"}, {"connectivity.wifi.enabled": False}),
    ],
    check=lambda ph, a: any(a["url"] in (d["url"], d["name"]) for d in ph.state["files"]["downloads"].values()),
)
def download_file(phone, s, args):
    if (bad := powered_off(phone)) is not None:
        return bad
    lk = next((x for x in s["web"]["links"] if x["url"] == args["url"] or x["name"] == args["url"]), None)
    if lk is None:
        return ToolResult.fail(Code.NOT_FOUND, f"no downloadable file at '{args['url']}'; use list_page_downloads")
    if (bad := _online(phone)) is not None:
        return bad
    did = download_id(lk["name"])
    old = s["downloads"].get(did)
    if old is not None and old["status"] == "downloading":
        return ToolResult.fail(Code.CONFLICT, f"{lk['name']} is already downloading ({old['progress']}%)")
    if old is not None and old["status"] == "completed" and old["file_id"] in s["items"]:
        f = s["items"][old["file_id"]]
        return ToolResult.fail(Code.CONFLICT, f"{lk['name']} was already downloaded: {f['folder']}/{f['name']}")
    # Two to four steps by size, plus any "slow" fault: the planner must wait for completion.
    steps = min(4, 2 + lk["size_kb"] // 2500) + phone.slowdown("download_file")
    s["downloads"][did] = {
        "id": did,
        "name": lk["name"],
        "url": lk["url"],
        "size_kb": lk["size_kb"],
        "status": "downloading",
        "progress": 0,
        "steps_left": steps,
        "total_steps": steps,
        "file_id": None,
    }
    phone.log("files.download_start", name=lk["name"])
    return ToolResult.ok(f"downloading {lk['name']}", _dl_view(s["downloads"][did]))


@D.tool(
    "list_downloads",
    "List downloads with their status (downloading, completed, cancelled) and progress.",
    read_only=True,
    cases=[ok({})],
)
def list_downloads(phone, s, args):
    rows = [_dl_view(d) for d in s["downloads"].values()]
    done = sum(1 for r in rows if r["status"] == "completed")
    return ToolResult.ok(f"{len(rows)} downloads, {done} completed", {"downloads": rows, "total": len(rows)})


@D.tool(
    "cancel_download",
    "Cancel a running download by file name.",
    {"name": P.string("file name, e.g. budget_2027.xlsx")},
    ["name"],
    codes=(404, 409),
    cases=[
        ok(
            {"name": "a.pdf"},
            {
                "files.downloads.dl_a_pdf": {
                    "id": "dl_a_pdf",
                    "name": "a.pdf",
                    "url": SITE + "a.pdf",
                    "size_kb": 9,
                    "status": "downloading",
                    "progress": 10,
                    "steps_left": 2,
                    "total_steps": 3,
                    "file_id": None,
                }
            },
        ),
        err(404, {"name": "nothing.pdf"}),
        err(
            409,
            {"name": "a.pdf"},
            {
                "files.downloads.dl_a_pdf": {
                    "id": "dl_a_pdf",
                    "name": "a.pdf",
                    "url": SITE + "a.pdf",
                    "size_kb": 9,
                    "status": "completed",
                    "progress": 100,
                    "steps_left": 0,
                    "total_steps": 3,
                    "file_id": None,
                }
            },
        ),
    ],
    check=lambda ph, a: ph.state["files"]["downloads"][download_id(a["name"])]["status"] == "cancelled",
)
def cancel_download(phone, s, args):
    d = s["downloads"].get(download_id(args["name"]))
    if d is None:
        return ToolResult.fail(Code.NOT_FOUND, f"no download named '{args['name']}'")
    if d["status"] != "downloading":
        return ToolResult.fail(Code.CONFLICT, f"{d['name']} is {d['status']}; only running downloads can be cancelled")
    # Replace rather than mutate: the record may be a dict shared with a task's setup.
    d = s["downloads"][d["id"]] = {**d, "status": "cancelled"}
    phone.log("files.download_cancel", name=d["name"])
    return ToolResult.ok(f"cancelled {d['name']}", _dl_view(d))


# -- File manager ---------------------------------------------------------------------------------

_PATH = P.string("file path as Folder/name, e.g. Download/receipt_0931.pdf")


@D.tool(
    "list_files",
    "List the files in a folder.",
    {"folder": P.string("folder name, e.g. Download")},
    ["folder"],
    read_only=True,
    codes=(404,),
    cases=[ok({"folder": "Download"}), err(404, {"folder": "Nowhere"})],
)
def list_files(phone, s, args):
    if args["folder"] not in s["folders"]:
        return ToolResult.fail(Code.NOT_FOUND, f"no folder '{args['folder']}'; folders: {', '.join(s['folders'])}")
    rows = sorted((_view(f) for f in s["items"].values() if f["folder"] == args["folder"]), key=lambda r: r["name"])
    return ToolResult.ok(
        f"{len(rows)} files in {args['folder']}", {"folder": args["folder"], "files": rows, "total": len(rows)}
    )


@D.tool(
    "search_files",
    "Search all folders for files whose name contains the query; optionally only one type.",
    {"query": P.string("part of the file name"), "type": P.enum(sorted(set(_KINDS.values())), "file type filter")},
    ["query"],
    read_only=True,
    cases=[ok({"query": "receipt"}), ok({"query": "img", "type": "image"})],
)
def search_files(phone, s, args):
    q = args["query"].lower()
    rows = [
        _view(f)
        for f in s["items"].values()
        if q in f["name"].lower() and ("type" not in args or f["type"] == args["type"])
    ]
    return ToolResult.ok(
        f"{len(rows)} files match", {"results": sorted(rows, key=lambda r: r["path"]), "total": len(rows)}
    )


@D.tool(
    "get_file_info",
    "Get a file's folder, size and type.",
    {"path": _PATH},
    ["path"],
    read_only=True,
    codes=(404, 409),
    cases=[
        ok({"path": "Download/receipt_0931.pdf"}),
        ok({"path": "cv_2026.docx"}),
        err(404, {"path": "Download/x.pdf"}),
        err(
            409,
            {"path": "cv_2026.docx"},
            {"files.items.file_cv_2026_docx_2": {**_file("cv_2026.docx", "Download", 88), "id": "file_cv_2026_docx_2"}},
        ),
    ],
)
def get_file_info(phone, s, args):
    f = _lookup(s, args["path"])
    if isinstance(f, ToolResult):
        return f
    return ToolResult.ok(f"{f['folder']}/{f['name']}", _view(f))


@D.tool(
    "create_folder",
    "Create a folder in internal storage.",
    {"name": P.string("folder name")},
    ["name"],
    codes=(400, 409, 412),
    cases=[
        ok({"name": "Reports"}),
        err(409, {"name": "Documents"}),
        err(400, {"name": "a/b"}),
        err(412, {"name": "Reports"}, {"power.device.state": "off"}),
    ],
    check=lambda ph, a: a["name"].strip() in ph.state["files"]["folders"],
)
def create_folder(phone, s, args):
    if (bad := powered_off(phone)) is not None:
        return bad
    name = args["name"].strip()
    if "/" in name or name.startswith("."):
        return ToolResult.fail(Code.BAD_ARGUMENT, "a folder name cannot contain '/' or start with '.'")
    if any(f.lower() == name.lower() for f in s["folders"]):
        return ToolResult.fail(Code.CONFLICT, f"a folder named '{name}' already exists")
    s["folders"].append(name)
    phone.log("files.folder_created", folder=name)
    return ToolResult.ok(f"folder '{name}' created", {"folder": name})


@D.tool("list_folders", "List folders with how many files each holds.", read_only=True, cases=[ok({})])
def list_folders(phone, s, args):
    counts = {f: 0 for f in s["folders"]}
    for f in s["items"].values():
        counts[f["folder"]] = counts.get(f["folder"], 0) + 1
    return ToolResult.ok(f"{len(counts)} folders", {"folders": [{"name": k, "files": v} for k, v in counts.items()]})


@D.tool(
    "move_files",
    "Move files into a folder. create_folder=true creates the destination when it does not exist.",
    {
        "paths": P.array(_PATH, "files to move", min_items=1),
        "destination": P.string("destination folder"),
        "create_folder": P.boolean("create the destination folder if missing (default false)"),
    },
    ["paths", "destination"],
    codes=(404, 409, 412),
    cases=[
        ok({"paths": ["Download/receipt_0931.pdf", "Download/boarding_pass.pdf"], "destination": "Documents"}),
        ok({"paths": ["Download/setup_guide.pdf"], "destination": "Manuals", "create_folder": True}),
        err(404, {"paths": ["Download/receipt_0931.pdf"], "destination": "Nowhere"}),
        err(404, {"paths": ["Download/none.pdf"], "destination": "Documents"}),
        err(
            409,
            {"paths": ["Download/receipt_0931.pdf"], "destination": "Documents"},
            {
                "files.items.file_receipt_0931_pdf_2": {
                    **_file("receipt_0931.pdf", "Documents", 95),
                    "id": "file_receipt_0931_pdf_2",
                }
            },
        ),
        err(412, {"paths": ["Download/receipt_0931.pdf"], "destination": "Documents"}, {"power.device.state": "off"}),
        err(400, {"paths": [], "destination": "Documents"}),
    ],
    check=lambda ph, a: all(
        _in_folder(ph.state["files"], a["destination"].strip(), p.rpartition("/")[2]) for p in a["paths"]
    ),
)
def move_files(phone, s, args):
    if (bad := powered_off(phone)) is not None:
        return bad
    dest = args["destination"].strip()
    if dest not in s["folders"] and not args.get("create_folder"):
        return ToolResult.fail(Code.NOT_FOUND, f"no folder '{dest}'; create it first or pass create_folder=true")
    found = []
    for p in args["paths"]:
        f = _lookup(s, p)
        if isinstance(f, ToolResult):
            return f
        if f["folder"] != dest and _in_folder(s, dest, f["name"]):
            return ToolResult.fail(Code.CONFLICT, f"{dest} already has a file named '{f['name']}'; rename one first")
        found.append(f)
    if dest not in s["folders"]:
        s["folders"].append(dest)
        phone.log("files.folder_created", folder=dest)
    moved = []
    for f in found:
        if f["folder"] != dest:
            f["folder"] = dest
            moved.append(f["name"])
    if moved:
        phone.log("files.files_moved", names=moved, destination=dest)
    return ToolResult.ok(
        f"moved {len(moved)} file(s) to {dest}",
        {"destination": dest, "moved": moved, "paths": [f"{dest}/{f['name']}" for f in found]},
    )


@D.tool(
    "copy_file",
    "Copy a file into a folder.",
    {"path": _PATH, "destination": P.string("destination folder")},
    ["path", "destination"],
    codes=(404, 409, 412),
    cases=[
        ok({"path": "Documents/cv_2026.docx", "destination": "Download"}),
        err(404, {"path": "Documents/cv_2026.docx", "destination": "Nowhere"}),
        err(409, {"path": "Documents/cv_2026.docx", "destination": "Documents"}),
        err(412, {"path": "Documents/cv_2026.docx", "destination": "Download"}, {"power.device.state": "off"}),
    ],
    check=lambda ph, a: _in_folder(ph.state["files"], a["destination"], a["path"].rpartition("/")[2]),
)
def copy_file(phone, s, args):
    if (bad := powered_off(phone)) is not None:
        return bad
    f = _lookup(s, args["path"])
    if isinstance(f, ToolResult):
        return f
    if args["destination"] not in s["folders"]:
        return ToolResult.fail(Code.NOT_FOUND, f"no folder '{args['destination']}'")
    if _in_folder(s, args["destination"], f["name"]):
        return ToolResult.fail(Code.CONFLICT, f"{args['destination']} already has a file named '{f['name']}'")
    fid = _new_id(s, f["name"])
    s["items"][fid] = {**f, "id": fid, "folder": args["destination"]}
    phone.log("files.file_copied", name=f["name"], destination=args["destination"])
    return ToolResult.ok(f"copied {f['name']} to {args['destination']}", _view(s["items"][fid]))


@D.tool(
    "rename_file",
    "Rename a file in place (keep the extension unless asked otherwise).",
    {"path": _PATH, "new_name": P.string("the new file name, with extension")},
    ["path", "new_name"],
    codes=(400, 404, 409, 412),
    cases=[
        ok({"path": "Download/setup_guide.pdf", "new_name": "router_manual.pdf"}),
        err(400, {"path": "Download/setup_guide.pdf", "new_name": "a/b.pdf"}),
        err(404, {"path": "Download/none.pdf", "new_name": "x.pdf"}),
        err(409, {"path": "Download/setup_guide.pdf", "new_name": "receipt_0931.pdf"}),
        err(412, {"path": "Download/setup_guide.pdf", "new_name": "x.pdf"}, {"power.device.state": "off"}),
    ],
    check=lambda ph, a: any(f["name"] == a["new_name"].strip() for f in ph.state["files"]["items"].values()),
)
def rename_file(phone, s, args):
    if (bad := powered_off(phone)) is not None:
        return bad
    new = args["new_name"].strip()
    if "/" in new or new.startswith("."):
        return ToolResult.fail(Code.BAD_ARGUMENT, "a file name cannot contain '/' or start with '.'")
    f = _lookup(s, args["path"])
    if isinstance(f, ToolResult):
        return f
    if new != f["name"] and _in_folder(s, f["folder"], new):
        return ToolResult.fail(Code.CONFLICT, f"{f['folder']} already has a file named '{new}'")
    old = f["name"]
    if new != old:
        f["name"], f["type"] = new, _kind(new)
        phone.log("files.file_renamed", old=old, new=new, file_id=f["id"])
    return ToolResult.ok(f"renamed {old} to {new}", _view(f))


@D.tool(
    "delete_files",
    "Move files to the trash (restore_file brings one back).",
    {"paths": P.array(_PATH, "files to delete", min_items=1)},
    ["paths"],
    codes=(404, 412),
    cases=[
        ok({"paths": ["Download/IMG_2041.jpg"]}),
        err(404, {"paths": ["Download/none.jpg"]}),
        err(412, {"paths": ["Download/IMG_2041.jpg"]}, {"power.device.state": "off"}),
    ],
    check=lambda ph, a: not any(_in_folder(ph.state["files"], *p.rsplit("/", 1)) for p in a["paths"] if "/" in p),
)
def delete_files(phone, s, args):
    if (bad := powered_off(phone)) is not None:
        return bad
    found = []
    for p in args["paths"]:
        f = _lookup(s, p)
        if isinstance(f, ToolResult):
            return f
        if f not in found:
            found.append(f)
    for f in found:
        s["trash"][f["id"]] = s["items"].pop(f["id"])
    phone.log("files.files_deleted", names=[f["name"] for f in found])
    return ToolResult.ok(
        f"moved {len(found)} file(s) to the trash", {"deleted": [f"{f['folder']}/{f['name']}" for f in found]}
    )


@D.tool(
    "restore_file",
    "Restore a file from the trash to its folder.",
    {"name": P.string("file name in the trash")},
    ["name"],
    codes=(404, 409, 412),
    cases=[
        ok({"name": "x.pdf"}, {"files.trash.file_x_pdf": _file("x.pdf", "Download", 5)}),
        err(404, {"name": "x.pdf"}),
        err(
            409,
            {"name": "cv_2026.docx"},
            {"files.trash.file_cv_2026_docx_2": {**_file("cv_2026.docx", "Documents", 8), "id": "file_cv_2026_docx_2"}},
        ),
        err(
            412,
            {"name": "x.pdf"},
            {"files.trash.file_x_pdf": _file("x.pdf", "Download", 5), "power.device.state": "off"},
        ),
    ],
    check=lambda ph, a: any(f["name"] == a["name"] for f in ph.state["files"]["items"].values()),
)
def restore_file(phone, s, args):
    if (bad := powered_off(phone)) is not None:
        return bad
    f = next((f for f in s["trash"].values() if f["name"] == args["name"]), None)
    if f is None:
        names = ", ".join(sorted(t["name"] for t in s["trash"].values())) or "empty"
        return ToolResult.fail(Code.NOT_FOUND, f"'{args['name']}' is not in the trash (trash: {names})")
    if _in_folder(s, f["folder"], f["name"]):
        return ToolResult.fail(Code.CONFLICT, f"{f['folder']} already has a file named '{f['name']}'")
    if f["folder"] not in s["folders"]:
        s["folders"].append(f["folder"])
    s["items"][f["id"]] = s["trash"].pop(f["id"])
    phone.log("files.file_restored", name=f["name"])
    return ToolResult.ok(f"restored {f['folder']}/{f['name']}", _view(f))


@D.tool(
    "get_storage_info",
    "Get used and free internal storage, by file type.",
    read_only=True,
    cases=[ok({})],
)
def get_storage_info(phone, s, args):
    by_type: dict[str, int] = {}
    for f in s["items"].values():
        by_type[f["type"]] = by_type.get(f["type"], 0) + f["size_kb"]
    used = s["storage"]["system_mb"] + sum(by_type.values()) // 1024
    return ToolResult.ok(
        f"{used} MB used of {s['storage']['total_mb']} MB",
        {
            "used_mb": used,
            "free_mb": s["storage"]["total_mb"] - used,
            "total_mb": s["storage"]["total_mb"],
            "by_type_kb": by_type,
            "trash_items": len(s["trash"]),
        },
    )


D.skill(
    "file_management",
    "File management",
    "Find, move, rename, delete and restore files; downloads.",
    [
        "list_files",
        "search_files",
        "get_file_info",
        "move_files",
        "rename_file",
        "delete_files",
        "restore_file",
        "list_folders",
        "get_storage_info",
    ],
    [
        "List or search first and use the exact paths the tools return; never guess file names.",
        "Delete only the files the user named; deleted files go to the trash and can be restored.",
        "A name conflict (409) means that name is taken at the destination: use the user's fallback or ask.",
    ],
)


# -- App screens ----------------------------------------------------------------------------------


def _size(kb: int) -> str:
    return f"{kb / 1024:.1f} MB" if kb >= 1024 else f"{kb} KB"


@D.app("Browser", package="com.flywheel.browser")
def browser_screen(phone, route):
    s = phone.state["files"]
    if route == "downloads":
        els: list[Element] = []
        for d in s["downloads"].values():
            state = {"completed": "Complete", "downloading": f"{d['progress']}%"}.get(
                d["status"], d["status"].capitalize()
            )
            els.append(Element(f"dl:{d['id']}", f"{d['name']} · {state}", kind="item"))
        return "Downloads", els or [Element("empty", "No downloads yet")]
    els = [
        Element("downloads", "Downloads", kind="button", clickable=True, to="downloads"),
        Element("page", s["web"]["page"], kind="header"),
    ]
    for lk in s["web"]["links"]:
        d = s["downloads"].get(download_id(lk["name"]))
        if d is not None and d["status"] in ("downloading", "completed"):
            label = "downloaded" if d["status"] == "completed" else f"downloading {d['progress']}%"
            els.append(Element(f"link:{slug(lk['name'])}", f"{lk['name']} · {label}", kind="item"))
        else:
            els.append(
                Element(
                    f"link:{slug(lk['name'])}",
                    f"Download {lk['name']} · {_size(lk['size_kb'])}",
                    kind="button",
                    clickable=True,
                    tool=("download_file", {"url": lk["url"]}),
                )
            )
    return SITE.split("/")[2], els


def _parse_route(route: str) -> tuple[str, list[str]]:
    """'dir:Download|a.pdf|b.xlsx' -> ('Download', ['a.pdf', 'b.xlsx']): selection lives in the GUI route."""
    parts = route.split(":", 1)[1].split("|")
    return parts[0], [p for p in parts[1:] if p]


@D.app("Files", package="com.flywheel.files")
def files_screen(phone, route):
    s = phone.state["files"]
    if route.startswith("dir:"):
        folder, sel = _parse_route(route)
        els = []
        for f in sorted((f for f in s["items"].values() if f["folder"] == folder), key=lambda f: f["name"]):
            picked = f["name"] in sel
            nxt = [n for n in sel if n != f["name"]] if picked else [*sel, f["name"]]
            els.append(
                Element(
                    f"file:{f['id']}",
                    # Selection shows in the text too (the renderer draws checks only for toggles); taps
                    # still find the item by its name as a prefix.
                    f"{f['name']} (selected)" if picked else f["name"],
                    kind="item",
                    clickable=True,
                    checked=picked,
                    to="|".join([f"dir:{folder}", *nxt]),
                )
            )
        if sel:
            paths = [f"{folder}/{n}" for n in sel]
            els.append(
                Element(
                    "move", f"Move ({len(sel)})", kind="button", clickable=True, to="|".join([f"move:{folder}", *sel])
                )
            )
            els.append(
                Element(
                    "delete",
                    f"Delete ({len(sel)})",
                    kind="button",
                    clickable=True,
                    tool=("delete_files", {"paths": paths}),
                    to=f"dir:{folder}",
                )
            )
        return folder, els or [Element("empty", "This folder is empty")]
    if route.startswith("move:"):
        folder, sel = _parse_route(route)
        paths = [f"{folder}/{n}" for n in sel]
        dest = phone.gui.get("inputs", {}).get("dest", "")
        els = [Element("hdr", f"Move {len(sel)} item(s) to", kind="header")]
        for name in s["folders"]:
            if name != folder:
                els.append(
                    Element(
                        f"to:{name}",
                        name,
                        kind="item",
                        clickable=True,
                        tool=("move_files", {"paths": paths, "destination": name}),
                        to=f"dir:{name}",
                    )
                )
        els.append(Element("dest", dest or "New or existing folder name", kind="input", clickable=True))
        els.append(
            Element(
                "move_here",
                "Move here",
                kind="button",
                clickable=True,
                tool=("move_files", {"paths": paths, "destination": "{input:dest}", "create_folder": True}),
                to=f"dir:{dest}",
            )
        )
        return "Move to", els
    counts = {f: 0 for f in s["folders"]}
    for f in s["items"].values():
        counts[f["folder"]] = counts.get(f["folder"], 0) + 1
    els = [
        Element(f"folder:{name}", f"{name} ({counts[name]})", kind="item", clickable=True, to=f"dir:{name}")
        for name in s["folders"]
    ]
    els.append(Element("trash", f"Trash ({len(s['trash'])})", kind="text"))
    return "Files", els


_FILE_RE = re.compile(r"[A-Za-z0-9][\w\-]*\.[A-Za-z0-9]{2,5}\b")
_DEST_RE = re.compile(
    r"\b(?:into|to|in)\s+(?:the\s+|my\s+)?(?:folder\s+(?:called\s+|named\s+)?)?"
    r"""["'“‘]?([\w][\w\- ]*?)["'”’]?(?:\s+folder)?\s*[.!]?\s*$""",
    re.I,
)
_SRC_RE = re.compile(r"""from\s+(?:the\s+)?["'“‘]?(\w+)["'”’]?(?:\s+folder)?""", re.I)


def _names(text: str) -> list[str]:
    return list(dict.fromkeys(_FILE_RE.findall(text)))


@D.gui_script("Browser")
def browser_gui_script(instruction: str) -> list[tuple[Any, ...]] | None:
    """'Download the files: a.pdf, b.xlsx, c.docx' -> tap each Download button, open Downloads, wait for
    the downloads to finish, then confirm each one reads Complete."""
    if "download" not in instruction.lower():
        return None
    names = _names(instruction)
    if not names:
        return None
    acts: list[tuple[Any, ...]] = [("tap", f"Download {n}") for n in names]
    acts += [("tap", "Downloads"), ("wait", 8)]
    acts += [("confirm", f"{n} · Complete", n) for n in names]
    return acts


@D.gui_script("Files")
def files_gui_script(instruction: str) -> list[tuple[Any, ...]] | None:
    """'Move a.pdf, b.xlsx, c.docx into the folder Reports' -> open the source folder, select each file,
    Move, type the destination, Move here, then confirm the files are listed there."""
    if not re.search(r"\b(move|file|put)\b", instruction, re.I):
        return None
    names = _names(instruction)
    tail = instruction[instruction.rfind(names[-1]) + len(names[-1]) :] if names else ""
    m = _DEST_RE.search(tail)
    if not names or m is None:
        return None
    dest = m.group(1).strip()
    src = _SRC_RE.search(instruction)
    source = src.group(1) if src is not None else "Download"
    if source.lower().startswith("download"):
        source = "Download"
    acts: list[tuple[Any, ...]] = [("tap", source)]
    acts += [("tap", n) for n in names]
    acts += [("tap", "Move"), ("type", dest, "dest"), ("tap", "Move here")]
    acts += [("confirm", n, n) for n in names]
    return acts


# -- Task templates -------------------------------------------------------------------------------

POOL = [
    ("q3_summary.pdf", 1800),
    ("board_minutes.pdf", 640),
    ("travel_policy.pdf", 900),
    ("lease_agreement.pdf", 1300),
    ("onboarding_guide.pdf", 2600),
    ("budget_2027.xlsx", 420),
    ("sales_by_region.xlsx", 780),
    ("headcount_plan.xlsx", 350),
    ("expenses_march.xlsx", 210),
    ("project_brief.docx", 260),
    ("press_release.docx", 150),
    ("meeting_notes.docx", 120),
    ("site_photos.zip", 9600),
    ("logo_pack.zip", 4400),
]
DESTS = ["Reports", "Q3 Review", "Board Pack", "Finance", "Handover", "Client X"]


def _page(rng: random.Random, targets: list[tuple[str, int]]) -> list[dict[str, Any]]:
    others = [p for p in POOL if p not in targets]
    rows = targets + rng.sample(others, rng.randint(2, 4))
    rng.shuffle(rows)
    return [link(n, k) for n, k in rows]


def _join(names: list[str]) -> str:
    return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else names[0]


def downloaded_before_filed(task: Any, initial: dict[str, Any], final: dict[str, Any], answer: str) -> tuple[bool, str]:
    """Each named file finished downloading before it was moved (read from the event log).

    A per-file check rather than ``order``: the GUI agent's waits run the clock inside one planner
    turn, and the three completions interleave with nothing else.
    """
    events = final.get("_meta", {}).get("events", [])
    done = {e["name"]: e["seq"] for e in events if e["event"] == "files.download_complete"}
    for name in task.params["names"]:
        moved = next((e["seq"] for e in events if e["event"] == "files.files_moved" and name in e["names"]), None)
        if name not in done or moved is None or moved < done[name]:
            return False, f"{name} was not downloaded completely before it was moved"
    return True, "every file finished downloading before it was moved"


def _gui_download_file(rng: random.Random) -> Draft:
    """Showcase 3: a Browser GUI agent downloads three files; only once it confirms them are the exact
    names handed to a Files GUI agent that moves them into the folder."""
    targets = rng.sample(POOL, 3)
    names = [n for n, _ in targets]
    dest = rng.choice(DESTS)
    exists = rng.random() < 0.4
    slow = rng.random() < 0.4
    setup: dict[str, Any] = {"files.web.links": _page(rng, targets)}
    if exists:
        setup["files.folders"] = [*FOLDERS, dest]
    listing = ", ".join(names)
    goal: dict[str, Any] = {}
    for n in names:
        goal[f"files.items.{file_id(n)}.folder"] = dest
        goal[f"files.downloads.{download_id(n)}.status"] = "completed"
    if not exists:
        goal["files.folders"] = [*FOLDERS, dest]
    return Draft(
        instruction=pick(
            rng,
            [
                f"Download {_join(names)} from the shared Q3 page, then put them in my '{dest}' folder.",
                f"Grab these three files from the browser page: {listing}. Once they're down, file them under {dest}.",
                f"I need {_join(names)} downloaded and moved into the {dest} folder.",
            ],
        ),
        params={"names": names, "dest": dest, "dest_exists": exists, "slow": slow},
        setup=setup,
        faults=[{"tool": "download_file", "kind": "slow", "times": 1, "delay": 2}] if slow else [],
        tools=["list_downloads", "list_files", "get_storage_info"],
        subagent=True,
        goal=goal,
        allowed=[f"files.downloads.{download_id(n)}" for n in names] + [f"files.items.{file_id(n)}" for n in names],
        plan=[
            Act(
                "Delegate the downloads to a GUI agent in the Browser.",
                [
                    Call(
                        "control_gui_agent",
                        {"action": "start", "appName": "Browser", "instruction": f"Download the files: {listing}"},
                        name="dl",
                    )
                ],
            ),
            Act(
                "Run it and wait for its confirmation.",
                [
                    Call(
                        "control_gui_agent",
                        {"action": "execute", "sessionId": R("dl", "data.sessionId")},
                        name="dl_run",
                    )
                ],
            ),
            Act(
                "It confirmed all three downloads; double-check the download list before filing.",
                [Call("list_downloads", {})],
            ),
            *gui_agent(
                "Files",
                f"Move {listing} from Download into the folder {dest}",
                think="Hand exactly those file names to a GUI agent in the Files app.",
                run="Run the filing agent.",
                name="mv",
            ),
            Say(f"Downloaded {_join(names)} and moved them into {dest}."),
        ],
        budget=16,
    )


def _download_poll(rng: random.Random) -> Draft:
    """Tools: download one file (Wi-Fi may be off: 412), poll until it completes (it may be slow), file it."""
    (name, size) = rng.choice(POOL)
    dest = rng.choice(["Documents", *DESTS[:3]])
    wifi_off = rng.random() < 0.4
    slow = rng.random() < 0.5
    exists = dest == "Documents" or rng.random() < 0.5
    setup: dict[str, Any] = {"files.web.links": _page(rng, [(name, size)])}
    if wifi_off:
        setup["connectivity.wifi.enabled"] = False
        setup["connectivity.wifi.connected"] = None
    if exists and dest not in FOLDERS:
        setup["files.folders"] = [*FOLDERS, dest]
    url = SITE + name
    plan: list[Any] = []
    goal: dict[str, Any] = {f"files.items.{file_id(name)}.folder": dest}
    if wifi_off:
        plan += [
            Act(f"Start downloading {name}.", [Call("download_file", {"url": url})], may_fail=True),
            Act("412: Wi-Fi is off; turn it on, then retry.", [Call("set_wifi", {"enabled": True})]),
        ]
        goal["connectivity.wifi.enabled"] = True
    plan += [
        Act(f"Start downloading {name}.", [Call("download_file", {"url": url})]),
        Act(
            "Downloads finish asynchronously: poll until it is completed.",
            [
                Call(
                    "list_downloads",
                    {},
                    until=lambda r, n=name: any(
                        d["name"] == n and d["status"] == "completed" for d in r.get("data", {}).get("downloads", [])
                    ),
                    max_tries=10,
                )
            ],
        ),
        Act(
            f"Now move it to {dest}.",
            [
                Call(
                    "move_files",
                    {"paths": [f"Download/{name}"], "destination": dest, **({} if exists else {"create_folder": True})},
                )
            ],
        ),
        Say(f"{name} finished downloading and is now in {dest}."),
    ]
    if not exists:
        goal["files.folders"] = [*FOLDERS, dest]
    return Draft(
        instruction=pick(
            rng,
            [
                f"Download {name} from the page I have open and save it in {dest}.",
                f"Get {name} from the browser and move it into my {dest} folder.",
                f"Please fetch {name} and file it under {dest}.",
            ],
        ),
        params={"name": name, "dest": dest, "wifi_off": wifi_off, "slow": slow, "dest_exists": exists},
        setup=setup,
        faults=[{"tool": "download_file", "kind": "slow", "times": 1, "delay": 3}] if slow else [],
        tools=[
            "list_page_downloads",
            "download_file",
            "list_downloads",
            "cancel_download",
            "move_files",
            "list_files",
            "set_wifi",
            "get_wifi_status",
        ],
        goal=goal,
        allowed=[f"files.downloads.{download_id(name)}", f"files.items.{file_id(name)}", "connectivity.wifi.connected"],
        order=["files.download_start", "files.download_complete", "files.files_moved"],
        plan=plan,
        budget=20,
    )


def _gui_download_offline(rng: random.Random) -> Draft:
    """Sub-agent with a prerequisite: the Browser agent needs a connection, and Wi-Fi may be off.
    The planner checks Wi-Fi before delegating (a GUI agent cannot fix it from inside the Browser)."""
    targets = rng.sample(POOL, 2)
    names = [n for n, _ in targets]
    listing = ", ".join(names)
    offline = rng.random() < 0.6
    setup: dict[str, Any] = {"files.web.links": _page(rng, targets)}
    goal: dict[str, Any] = {
        **{f"files.downloads.{download_id(n)}.status": "completed" for n in names},
        **{f"files.items.{file_id(n)}.folder": "Download" for n in names},
    }
    plan: list[Any] = [Act("The Browser agent needs internet; check Wi-Fi first.", [Call("get_wifi_status")])]
    if offline:
        setup["connectivity.wifi.enabled"] = False
        setup["connectivity.wifi.connected"] = None
        goal["connectivity.wifi.enabled"] = True
        plan.append(Act("Wi-Fi is off; turn it on before delegating.", [Call("set_wifi", {"enabled": True})]))
    plan += [
        *gui_agent(
            "Browser",
            f"Download the files: {listing}",
            think="Delegate the downloads to a GUI agent in the Browser.",
            name="a",
        ),
        Say(f"{'Turned Wi-Fi on and d' if offline else 'D'}ownloaded {_join(names)} into Download."),
    ]
    return Draft(
        instruction=pick(
            rng,
            [
                f"Download {_join(names)} from the page open in the browser.",
                f"Use the browser to grab {listing}.",
                f"Get me {_join(names)} off the shared page.",
            ],
        ),
        params={"names": names, "offline": offline},
        setup=setup,
        tools=["list_downloads", "set_wifi", "get_wifi_status", "set_bluetooth", "list_files"],
        subagent=True,
        goal=goal,
        allowed=["connectivity.wifi.connected"],
        plan=plan,
        budget=12,
    )


_DOWNLOAD_MIX = [
    ("scan_0412.pdf", 220),
    ("invoice_7781.pdf", 90),
    ("IMG_3301.jpg", 2900),
    ("IMG_3302.jpg", 3100),
    ("notes_export.txt", 12),
    ("roadmap.pptx", 5400),
    ("podcast_ep12.mp3", 41000),
    ("flyer.png", 800),
    ("contract_v2.pdf", 400),
    ("attendees.csv", 30),
]


def _sort_by_type(rng: random.Random) -> Draft:
    """Move every file of one type out of Download into a folder (the rest stay)."""
    kind, dest = rng.choice([("document", "Documents"), ("image", "Pictures"), ("document", "Paperwork")])
    rows = rng.sample(_DOWNLOAD_MIX, 6)
    while sum(1 for n, _ in rows if _kind(n) == kind) < 2:
        rows = rng.sample(_DOWNLOAD_MIX, 6)
    items = {**D.initial["items"], **{file_id(n): _file(n, "Download", k) for n, k in rows}}
    movers = sorted(v["name"] for v in items.values() if v["folder"] == "Download" and v["type"] == kind)
    word = {"document": "documents (PDFs and text files)", "image": "photos and images"}[kind]
    exists = dest in FOLDERS
    return Draft(
        instruction=pick(
            rng,
            [
                f"Move all the {word} from Download into {dest}.",
                f"Clean up my Download folder: every {kind} goes to {dest}.",
                f"Put the {kind} files sitting in Download into the {dest} folder.",
            ],
        ),
        params={"kind": kind, "dest": dest, "movers": movers},
        setup={"files.items": items},
        tools=["list_files", "search_files", "move_files", "delete_files", "create_folder", "get_file_info"],
        goal={
            **{f"files.items.{file_id(n)}.folder": dest for n in movers},
            **({} if exists else {"files.folders": [*FOLDERS, dest]}),
        },
        plan=[
            Act("See what is in Download.", [Call("list_files", {"folder": "Download"})]),
            *(
                []
                if exists
                else [Act(f"{dest} does not exist yet; create it.", [Call("create_folder", {"name": dest})])]
            ),
            Act(
                f"Move the {len(movers)} {kind} files in one call.",
                [Call("move_files", {"paths": [f"Download/{n}" for n in movers], "destination": dest})],
            ),
            Say(f"Moved {len(movers)} files to {dest}: {', '.join(movers)}."),
        ],
    )


_RULES = [
    ("invoice", "Invoices and receipts go into the folder '{dest}'.", ["Taxes 2026", "Accounting", "Receipts"]),
    ("contract", "Signed contracts are kept in the folder '{dest}'.", ["Legal", "Contracts", "Agreements"]),
    ("scan", "Scanned letters go into the folder '{dest}'.", ["Mail scans", "Letters", "Archive"]),
]


def _memory_filing(rng: random.Random) -> Draft:
    """Memory: where the user keeps this kind of file; the gold rule among other filing rules."""
    idx = rng.randrange(len(_RULES))
    word, rule, dests = _RULES[idx]
    dest = rng.choice(dests)
    name = {
        "invoice": f"invoice_{rng.randint(1000, 9999)}.pdf",
        "contract": f"contract_{rng.choice(['lease', 'gym', 'phone'])}.pdf",
        "scan": f"scan_{rng.randint(100, 999)}.pdf",
    }[word]
    memory = [
        {
            "id": "mem_rule",
            "category": "preferences",
            "title": f"Where {word}s go",
            "content": rule.format(dest=dest),
            "tags": ["files", word],
        }
    ]
    for j, (w2, r2, d2) in enumerate(_RULES):
        if j != idx:
            memory.append(
                {
                    "id": f"mem_r{j}",
                    "category": "preferences",
                    "title": f"Where {w2}s go",
                    "content": r2.format(dest=rng.choice(d2)),
                    "tags": ["files", w2],
                }
            )
    memory += [
        {
            "id": "mem_p",
            "category": "preferences",
            "title": "Photos",
            "content": "Keep photos in Pictures, never delete originals.",
            "tags": ["files"],
        },
        {
            "id": "mem_e",
            "category": "important_event",
            "title": "Accountant",
            "content": "Accountant meeting on the 14th.",
            "tags": [],
        },
    ]
    rng.shuffle(memory)
    exists = rng.random() < 0.5
    setup: dict[str, Any] = {f"files.items.{file_id(name)}": _file(name, "Download", rng.randint(60, 900))}
    if exists:
        setup["files.folders"] = [*FOLDERS, dest]
    return Draft(
        instruction=pick(
            rng,
            [
                f"File the {word} I just downloaded where I usually keep those.",
                f"Put {name} in the right folder, you know where {word}s go.",
                f"Move my new {word} to its usual place.",
            ],
        ),
        params={"name": name, "dest": dest, "dest_exists": exists},
        setup=setup,
        memory=memory,
        tools=["list_files", "search_files", "move_files", "create_folder", "rename_file", "delete_files"],
        goal={f"files.items.{file_id(name)}.folder": dest, **({} if exists else {"files.folders": [*FOLDERS, dest]})},
        plan=[
            Act(
                f"Look up where the user keeps {word}s, and find the file, in parallel.",
                [
                    Call("search_user_memory", {"query": f"where {word}s go folder", "maxResults": 5}),
                    Call("search_files", {"query": word}),
                ],
            ),
            Act(
                f"Memory says '{dest}'; move {name} there (creating the folder if needed).",
                [Call("move_files", {"paths": [f"Download/{name}"], "destination": dest, "create_folder": True})],
            ),
            Say(f"Moved {name} into {dest}, where you keep your {word}s."),
        ],
    )


def _skill_cleanup(rng: random.Random) -> Draft:
    """Skills + multi-turn: load file_management, trash the '-copy' duplicates; the follow-up restores one."""
    base = rng.sample(["report", "slides", "budget", "agenda", "photo", "minutes"], 3)
    exts = [rng.choice(["pdf", "docx", "xlsx"]) for _ in base]
    originals = [f"{b}.{e}" for b, e in zip(base, exts, strict=True)]
    copies = [f"{b}-copy.{e}" for b, e in zip(base, exts, strict=True)]
    keep = rng.choice(copies)
    items = dict(D.initial["items"])
    for n in originals + copies:
        items[file_id(n)] = _file(n, "Download", rng.randint(50, 2000))
    return Draft(
        instruction=pick(
            rng,
            [
                "Delete the duplicate '-copy' files in my Download folder.",
                "Clear out the files ending in -copy from Download.",
                "Get rid of the -copy duplicates in Downloads, keep the originals.",
            ],
        ),
        params={"copies": copies, "keep": keep},
        setup={"files.items": items},
        skills=["file_management", "power_management"],
        followups=[pick(rng, [f"Oh wait, I still need {keep}. Bring it back.", f"Actually restore {keep}, please."])],
        goal={
            **{f"files.items.{file_id(n)}": None for n in copies if n != keep},
            **{f"files.trash.{file_id(n)}.name": n for n in copies if n != keep},
            f"files.items.{file_id(keep)}.folder": "Download",
        },
        allowed=[f"files.trash.{file_id(keep)}"],
        plan=[
            Act(
                "Load the file-management skill.",
                [Call("skill__file_management", {"reason": "delete duplicate files"})],
            ),
            Act("List Download to find the exact -copy names.", [Call("list_files", {"folder": "Download"})]),
            Act(
                "Trash the three copies in one call.",
                [Call("delete_files", {"paths": [f"Download/{n}" for n in copies]})],
            ),
            Say(f"Moved {', '.join(copies)} to the trash; the originals are untouched."),
            Act(f"Restore {keep} from the trash.", [Call("restore_file", {"name": keep})]),
            Say(f"{keep} is back in Download."),
        ],
    )


def _rename_conflict(rng: random.Random) -> Draft:
    """Rename to a name that is taken (409), then use the fallback name the user gave."""
    src = rng.choice(["setup_guide.pdf", "receipt_0931.pdf", "boarding_pass.pdf"])
    wanted, fallback = rng.choice(
        [("manual.pdf", "manual_v2.pdf"), ("trip.pdf", "trip_2026.pdf"), ("keep.pdf", "keep_this.pdf")]
    )
    taken = rng.random() < 0.6
    setup = {f"files.items.{file_id(wanted)}": _file(wanted, "Download", 77)} if taken else {}
    final = fallback if taken else wanted
    plan: list[Any] = []
    if taken:
        plan += [
            Act(
                f"Rename {src} to {wanted}.",
                [Call("rename_file", {"path": f"Download/{src}", "new_name": wanted})],
                may_fail=True,
            ),
            Act(
                f"409: {wanted} exists; use the fallback {fallback} as the user said.",
                [Call("rename_file", {"path": f"Download/{src}", "new_name": fallback})],
            ),
        ]
    else:
        plan.append(
            Act(f"Rename {src} to {wanted}.", [Call("rename_file", {"path": f"Download/{src}", "new_name": wanted})])
        )
    plan.append(Say(f"Renamed {src} to {final}."))
    return Draft(
        instruction=pick(
            rng,
            [
                f"Rename {src} in Download to {wanted}; if that name is taken use {fallback}.",
                f"Call {src} '{wanted}' instead (or '{fallback}' if {wanted} already exists).",
            ],
        ),
        params={"src": src, "wanted": wanted, "fallback": fallback, "taken": taken},
        setup=setup,
        tools=["rename_file", "get_file_info", "list_files", "delete_files", "move_files"],
        goal={f"files.items.{file_id(src)}.name": final},
        allowed=[f"files.items.{file_id(src)}.type"],
        plan=plan,
    )


D.add_template(
    Template(
        "files.gui_download_then_file",
        "files",
        "sub_agent",
        "Browser GUI agent downloads three files; once confirmed, a Files GUI agent moves them.",
        _gui_download_file,
        difficulty=3,
        check=downloaded_before_filed,
    )
)
D.add_template(
    Template(
        "files.download_poll_and_file",
        "files",
        "tool_use",
        "Download a file (Wi-Fi may be off, it may be slow), wait for it, and move it.",
        _download_poll,
        tags=("error_recovery",),
        difficulty=2,
        domains=("files", "connectivity"),
    )
)
D.add_template(
    Template(
        "files.sort_download_by_type",
        "files",
        "tool_use",
        "Move every file of one type from Download into a folder.",
        _sort_by_type,
        difficulty=2,
    )
)
D.add_template(
    Template(
        "files.memory_filing_rule",
        "files",
        "memory",
        "Move a new file to the folder memory says that kind of file goes to.",
        _memory_filing,
        difficulty=2,
    )
)
D.add_template(
    Template(
        "files.skill_trash_copies_then_restore",
        "files",
        "skills",
        "Load file_management, trash duplicates; a follow-up restores one.",
        _skill_cleanup,
        tags=("multi_turn",),
        difficulty=2,
    )
)
D.add_template(
    Template(
        "files.rename_with_fallback",
        "files",
        "tool_use",
        "Rename a file, using the user's fallback name when the first is taken (409).",
        _rename_conflict,
        tags=("error_recovery",),
        difficulty=1,
    )
)
D.add_template(
    Template(
        "files.gui_download_wifi_first",
        "files",
        "sub_agent",
        "Check Wi-Fi (turn it on if off), then a Browser GUI agent downloads two files.",
        _gui_download_offline,
        difficulty=2,
        domains=("files", "connectivity"),
    )
)
