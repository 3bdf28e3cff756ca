"""Media: playback (songs, playlists, albums, podcasts), per-stream volume, audio output, equalizer, playlists."""

from __future__ import annotations

import random
import re
from typing import Any

from devices.virtual.domains._shared import changed_items
from devices.virtual.registry import Domain, Element, P, err, ok
from devices.virtual.tasks import Act, Call, Draft, R, Say, Task, Template, gui_agent
from devices.virtual.wording import pick
from harness.contract import Code, ToolResult

SONGS = [
    ("Harbour Lights", "The Tidewater", "Night Ferry", 214),
    ("Paper Planes at Dawn", "Mira Sol", "Skyline", 187),
    ("Copper Sun", "The Tidewater", "Night Ferry", 242),
    ("Slow River", "Anouk Berg", "Lowlands", 265),
    ("Neon Orchard", "Kite District", "Static Bloom", 198),
    ("Glass Elevator", "Kite District", "Static Bloom", 221),
    ("Northern Line", "Mira Sol", "Skyline", 176),
    ("Quiet Engines", "Anouk Berg", "Lowlands", 301),
    ("Velvet Static", "Juno Park", "Afterglow", 233),
    ("Run the Bridge", "Juno Park", "Afterglow", 189),
    ("Salt and Cedar", "The Tidewater", "Night Ferry", 256),
    ("Lantern Walk", "Anouk Berg", "Lowlands", 204),
    ("Midnight Parade", "Kite District", "Static Bloom", 212),
    ("Open Water", "Mira Sol", "Skyline", 247),
    ("Tin Roof Rain", "Juno Park", "Afterglow", 195),
    ("Golden Hour Drive", "Mira Sol", "Skyline", 228),
]
PODCASTS = [
    ("The Daily Byte", "Chips, clouds and the new phone season", 1860),
    ("Slow Science", "Why octopuses dream", 2520),
    ("Kitchen Table Money", "Budgeting for the holidays", 1980),
    ("History Footnotes", "The lighthouse keepers", 2760),
    ("Run Club Radio", "Easy miles, hard lessons", 2100),
    ("Deep Space Weekly", "Comets on the calendar", 2280),
]
STREAMS = ["media", "ring", "alarm", "notification"]
MAX_VOLUME = 15
PRESETS = ["flat", "bass_boost", "vocal", "rock", "jazz", "classical", "podcast"]
SPEAKER, WIFI_SPEAKER = "Phone speaker", "Living Room Speaker"

_SONG_IDS = {f"song{i + 1:02d}": t for i, t in enumerate(SONGS)}
_POD_IDS = {f"pod{i + 1}": t for i, t in enumerate(PODCASTS)}

DOMAIN = Domain(
    "media",
    "Media & volume",
    initial={
        "songs": {
            sid: {"id": sid, "title": t, "artist": a, "album": al, "duration_s": d}
            for sid, (t, a, al, d) in _SONG_IDS.items()
        },
        "podcasts": {pid: {"id": pid, "show": sh, "title": t, "duration_s": d} for pid, (sh, t, d) in _POD_IDS.items()},
        "playlists": {
            "pl1": {"id": "pl1", "name": "Morning Run", "tracks": ["song10", "song02", "song05"]},
            "pl2": {"id": "pl2", "name": "Sunday Chill", "tracks": ["song04", "song08", "song12"]},
            "pl3": {"id": "pl3", "name": "Focus", "tracks": ["song09", "song15"]},
            "pl4": {"id": "pl4", "name": "Rain Sounds", "tracks": ["song15", "song04"]},
        },
        "player": {
            "state": "stopped",
            "kind": None,
            "source": None,
            "queue": [],
            "index": 0,
            "item_id": None,
            "title": None,
        },
        "volume": {"media": 7, "ring": 5, "alarm": 6, "notification": 4},
        "output": SPEAKER,
        "equalizer": {"enabled": False, "preset": "flat"},
    },
)
D = DOMAIN


# -- helpers --------------------------------------------------------------------------------------


def _find(items: dict[str, dict[str, Any]], ref: str, key: str) -> dict[str, Any] | None:
    """An item by id or by exact (case-insensitive) ``key`` value."""
    if ref in items:
        return items[ref]
    low = ref.strip().lower()
    return next((x for x in items.values() if x[key].lower() == low), None)


def _label(s: dict[str, Any], kind: str, item_id: str) -> str:
    if kind == "podcast":
        p = s["podcasts"][item_id]
        return f"{p['show']}: {p['title']}"
    song = s["songs"][item_id]
    return f"{song['title']} by {song['artist']}"


def _now(s: dict[str, Any]) -> dict[str, Any]:
    p = s["player"]
    return {
        "state": p["state"],
        "kind": p["kind"],
        "title": p["title"],
        "source": p["source"],
        "track": p["index"] + 1 if p["queue"] else 0,
        "of": len(p["queue"]),
        "output": s["output"],
        "volume": s["volume"]["media"],
    }


def _jump(s: dict[str, Any], index: int, **changes: Any) -> dict[str, Any]:
    # Player updates build a new dict rather than mutating in place, so no caller's data is aliased.
    p = dict(s["player"], index=index, **changes)
    p["item_id"] = p["queue"][index]
    p["title"] = _label(s, p["kind"] if p["kind"] == "podcast" else "song", p["item_id"])
    s["player"] = p
    return p


def _outputs(phone) -> list[dict[str, Any]]:
    conn = phone.state.get("connectivity", {})
    bt = conn.get("bluetooth", {})
    rows = [{"name": SPEAKER, "type": "speaker", "available": True}]
    for name in bt.get("paired", []):
        rows.append(
            {
                "name": name,
                "type": "bluetooth",
                "available": bool(bt.get("enabled")) and name in bt.get("connected", []),
            }
        )
    rows.append({"name": WIFI_SPEAKER, "type": "wifi", "available": bool(conn.get("wifi", {}).get("enabled"))})
    return rows


# -- library and playback -------------------------------------------------------------------------------


@D.tool(
    "search_media_library",
    "Search songs, albums, artists, playlists and podcasts.",
    {
        "query": P.string("words to look for"),
        "kind": P.enum(["song", "playlist", "podcast", "album"], "only this kind"),
    },
    ["query"],
    read_only=True,
    cases=[
        ok({"query": "tidewater"}),
        ok({"query": "rain", "kind": "playlist"}),
        err(400, {"query": "x", "kind": "video"}),
    ],
)
def search_media_library(phone, s, args):
    q, kind = args["query"].strip().lower(), args.get("kind")
    out: dict[str, list[dict[str, Any]]] = {}
    if kind in (None, "song"):
        out["songs"] = [dict(x) for x in s["songs"].values() if q in x["title"].lower() or q in x["artist"].lower()]
    if kind in (None, "album"):
        out["albums"] = sorted(
            {x["album"] for x in s["songs"].values() if q in x["album"].lower() or q in x["artist"].lower()}
        )
    if kind in (None, "playlist"):
        out["playlists"] = [
            {"id": p["id"], "name": p["name"], "tracks": len(p["tracks"])}
            for p in s["playlists"].values()
            if q in p["name"].lower()
        ]
    if kind in (None, "podcast"):
        out["podcasts"] = [dict(x) for x in s["podcasts"].values() if q in x["show"].lower() or q in x["title"].lower()]
    n = sum(len(v) for v in out.values())
    return ToolResult.ok(f"{n} result(s) for '{args['query']}'", {**out, "total": n})


@D.tool(
    "play_media",
    "Play a song, album, playlist or podcast episode by title (or id).",
    {
        "kind": P.enum(["song", "album", "playlist", "podcast"], "what to play"),
        "title": P.string("song title, album name, playlist name, or podcast show/episode title"),
    },
    ["kind", "title"],
    codes=(404, 409),
    cases=[
        ok({"kind": "playlist", "title": "Focus"}),
        ok({"kind": "song", "title": "Slow River"}),
        ok({"kind": "podcast", "title": "Slow Science"}),
        ok({"kind": "album", "title": "Lowlands"}),
        err(404, {"kind": "song", "title": "Unknown Anthem"}),
        err(
            409,
            {"kind": "playlist", "title": "Empty"},
            {"media.playlists.pl9": {"id": "pl9", "name": "Empty", "tracks": []}},
        ),
    ],
    check=lambda ph, a: ph.state["media"]["player"]["state"] == "playing",
)
def play_media(phone, s, args):
    kind, title = args["kind"], args["title"]
    if kind == "song":
        song = _find(s["songs"], title, "title")
        queue, source = ([song["id"]], song["id"]) if song else ([], None)
    elif kind == "album":
        low = title.strip().lower()
        queue = [x["id"] for x in s["songs"].values() if x["album"].lower() == low]
        source = next((s["songs"][q]["album"] for q in queue), None)
    elif kind == "playlist":
        pl = _find(s["playlists"], title, "name")
        if pl is not None and not pl["tracks"]:
            return ToolResult.fail(Code.CONFLICT, f"playlist '{pl['name']}' is empty; add songs first")
        queue, source = (list(pl["tracks"]), pl["id"]) if pl else ([], None)
    else:
        low = title.strip().lower()
        pod = next((p for p in s["podcasts"].values() if low in (p["show"].lower(), p["title"].lower(), p["id"])), None)
        queue, source = ([pod["id"]], pod["show"]) if pod else ([], None)
    if not queue:
        return ToolResult.fail(Code.NOT_FOUND, f"no {kind} called '{title}' in the library; try search_media_library")
    s["player"] = {
        "state": "playing",
        "kind": kind,
        "source": source,
        "queue": queue,
        "index": 0,
        "item_id": None,
        "title": None,
    }
    _jump(s, 0)
    phone.log("media.play", kind=kind, source=source)
    return ToolResult.ok(f"playing {s['player']['title']} on {s['output']}", _now(s))


@D.tool(
    "pause_playback",
    "Pause what is playing.",
    codes=(409,),
    cases=[
        ok(
            {},
            {
                "media.player": {
                    "state": "playing",
                    "kind": "song",
                    "source": "song01",
                    "queue": ["song01"],
                    "index": 0,
                    "item_id": "song01",
                    "title": "Harbour Lights by The Tidewater",
                }
            },
        ),
        err(409, {}),
    ],
    check=lambda ph, a: ph.state["media"]["player"]["state"] == "paused",
)
def pause_playback(phone, s, args):
    if s["player"]["state"] != "playing":
        return ToolResult.fail(Code.CONFLICT, "nothing is playing")
    s["player"] = dict(s["player"], state="paused")
    phone.log("media.pause")
    return ToolResult.ok(f"paused {s['player']['title']}", _now(s))


_PAUSED = {
    "state": "paused",
    "kind": "playlist",
    "source": "pl1",
    "queue": ["song10", "song02", "song05"],
    "index": 0,
    "item_id": "song10",
    "title": "Run the Bridge by Juno Park",
}


@D.tool(
    "resume_playback",
    "Resume paused playback.",
    codes=(409,),
    cases=[ok({}, {"media.player": _PAUSED}), err(409, {})],
    check=lambda ph, a: ph.state["media"]["player"]["state"] == "playing",
)
def resume_playback(phone, s, args):
    if s["player"]["state"] != "paused":
        return ToolResult.fail(
            Code.CONFLICT, "nothing is paused" if s["player"]["state"] == "stopped" else "already playing"
        )
    s["player"] = dict(s["player"], state="playing")
    phone.log("media.resume")
    return ToolResult.ok(f"resumed {s['player']['title']}", _now(s))


@D.tool(
    "skip_to_next_track",
    "Skip to the next track in the queue.",
    codes=(409,),
    cases=[ok({}, {"media.player": _PAUSED}), err(409, {})],
)
def skip_to_next_track(phone, s, args):
    p = s["player"]
    if p["state"] == "stopped" or p["index"] + 1 >= len(p["queue"]):
        return ToolResult.fail(Code.CONFLICT, "there is no next track in the queue")
    p = _jump(s, p["index"] + 1)
    phone.log("media.next", index=p["index"])
    return ToolResult.ok(f"now playing {p['title']}", _now(s))


@D.tool(
    "skip_to_previous_track",
    "Go back to the previous track in the queue.",
    codes=(409,),
    cases=[ok({}, {"media.player": dict(_PAUSED, index=1, item_id="song02")}), err(409, {}, {"media.player": _PAUSED})],
)
def skip_to_previous_track(phone, s, args):
    p = s["player"]
    if p["state"] == "stopped" or p["index"] == 0:
        return ToolResult.fail(Code.CONFLICT, "already at the first track")
    p = _jump(s, p["index"] - 1)
    phone.log("media.previous", index=p["index"])
    return ToolResult.ok(f"now playing {p['title']}", _now(s))


@D.tool(
    "get_now_playing",
    "Get what is playing, the queue position, output device and media volume.",
    read_only=True,
    cases=[ok({}), ok({}, {"media.player": _PAUSED})],
)
def get_now_playing(phone, s, args):
    p = s["player"]
    msg = "nothing playing" if p["state"] == "stopped" else f"{p['state']}: {p['title']}"
    return ToolResult.ok(msg, _now(s))


# -- volume, output, equalizer ------------------------------------------------------------------------


@D.tool(
    "get_volume_levels",
    "Get the volume of each stream (media, ring, alarm, notification), 0 to 15.",
    read_only=True,
    cases=[ok({})],
)
def get_volume_levels(phone, s, args):
    return ToolResult.ok("volume levels", {**s["volume"], "max": MAX_VOLUME})


@D.tool(
    "set_stream_volume",
    "Set the volume of one audio stream (0 to 15). The alarm stream cannot be muted.",
    {"stream": P.enum(STREAMS, "which stream"), "level": P.integer("volume level", 0, MAX_VOLUME)},
    ["stream", "level"],
    codes=(400,),
    cases=[
        ok({"stream": "media", "level": 10}),
        ok({"stream": "ring", "level": 0}),
        err(400, {"stream": "alarm", "level": 0}, note="alarms must stay audible"),
        err(400, {"stream": "media", "level": 20}),
    ],
    check=lambda ph, a: ph.state["media"]["volume"][a["stream"]] == a["level"],
)
def set_stream_volume(phone, s, args):
    if args["stream"] == "alarm" and args["level"] == 0:
        return ToolResult.fail(
            Code.BAD_ARGUMENT, "the alarm volume cannot be 0 (alarms must stay audible); use 1 or more"
        )
    old = s["volume"][args["stream"]]
    if old != args["level"]:
        s["volume"][args["stream"]] = args["level"]
        phone.log("media.volume", stream=args["stream"], level=args["level"])
    return ToolResult.ok(
        f"{args['stream']} volume {args['level']}/{MAX_VOLUME}",
        {"stream": args["stream"], "level": args["level"], "previous": old},
    )


@D.tool(
    "list_audio_outputs", "List audio output devices and whether each is available now.", read_only=True, cases=[ok({})]
)
def list_audio_outputs(phone, s, args):
    return ToolResult.ok(f"output: {s['output']}", {"current": s["output"], "outputs": _outputs(phone)})


@D.tool(
    "set_audio_output",
    "Route audio to an output device (a Bluetooth device must be connected first).",
    {"device": P.string("output device name from list_audio_outputs")},
    ["device"],
    codes=(404, 412),
    cases=[
        ok({"device": "Phone speaker"}),
        ok(
            {"device": "Galaxy Buds"},
            {"connectivity.bluetooth.enabled": True, "connectivity.bluetooth.connected": ["Galaxy Buds"]},
        ),
        err(412, {"device": "Galaxy Buds"}),
        err(404, {"device": "Toaster"}),
        err(412, {"device": "Living Room Speaker"}, {"connectivity.wifi.enabled": False}),
    ],
    prerequisites=["Bluetooth devices connected", "Wi-Fi on for Wi-Fi speakers"],
    check=lambda ph, a: ph.state["media"]["output"] == a["device"],
)
def set_audio_output(phone, s, args):
    row = next((o for o in _outputs(phone) if o["name"].lower() == args["device"].strip().lower()), None)
    if row is None:
        names = ", ".join(o["name"] for o in _outputs(phone))
        return ToolResult.fail(Code.NOT_FOUND, f"no output device '{args['device']}'; outputs: {names}")
    if not row["available"]:
        if row["type"] == "wifi":
            return ToolResult.fail(Code.PREREQUISITE, f"{row['name']} needs Wi-Fi; turn Wi-Fi on first")
        bt_on = phone.state.get("connectivity", {}).get("bluetooth", {}).get("enabled")
        why = (
            "Bluetooth is off; turn Bluetooth on and connect it first"
            if not bt_on
            else "it is paired but not connected; connect it first"
        )
        return ToolResult.fail(Code.PREREQUISITE, f"{row['name']} is not available: {why}")
    if s["output"] != row["name"]:
        s["output"] = row["name"]
        phone.log("media.output", device=row["name"])
    return ToolResult.ok(f"audio now plays on {row['name']}", {"current": row["name"]})


@D.tool("get_equalizer", "Get the equalizer state and preset.", read_only=True, cases=[ok({})])
def get_equalizer(phone, s, args):
    return ToolResult.ok(
        f"equalizer {'on' if s['equalizer']['enabled'] else 'off'}", {**s["equalizer"], "presets": PRESETS}
    )


@D.tool(
    "set_equalizer",
    "Turn the equalizer on with a preset, or off.",
    {"enabled": P.boolean("true to turn the equalizer on"), "preset": P.enum(PRESETS, "sound preset (when enabling)")},
    ["enabled"],
    codes=(400,),
    cases=[
        ok({"enabled": True, "preset": "jazz"}),
        ok({"enabled": False}),
        err(400, {"enabled": True}),
        err(400, {"enabled": True, "preset": "loud"}),
    ],
    check=lambda ph, a: ph.state["media"]["equalizer"]["enabled"] == a["enabled"],
)
def set_equalizer(phone, s, args):
    eq = s["equalizer"]
    if args["enabled"] and "preset" not in args:
        return ToolResult.fail(Code.BAD_ARGUMENT, f"enabling the equalizer needs a preset: {', '.join(PRESETS)}")
    new = {"enabled": args["enabled"], "preset": args.get("preset", eq["preset"])}
    if new != eq:
        s["equalizer"] = new
        phone.log("media.equalizer", **new)
    return ToolResult.ok(f"equalizer {'on: ' + new['preset'] if new['enabled'] else 'off'}", dict(new))


# -- playlists ------------------------------------------------------------------------------------------


@D.tool("list_playlists", "List playlists with their songs.", read_only=True, cases=[ok({})])
def list_playlists(phone, s, args):
    rows = [
        {"id": p["id"], "name": p["name"], "tracks": [{"id": t, "title": s["songs"][t]["title"]} for t in p["tracks"]]}
        for p in s["playlists"].values()
    ]
    return ToolResult.ok(f"{len(rows)} playlist(s)", {"playlists": rows, "total": len(rows)})


@D.tool(
    "create_playlist",
    "Create an empty playlist.",
    {"name": P.string("playlist name")},
    ["name"],
    codes=(409,),
    cases=[ok({"name": "Road Trip"}), err(409, {"name": "focus"})],
    check=lambda ph, a: any(p["name"] == a["name"].strip() for p in ph.state["media"]["playlists"].values()),
)
def create_playlist(phone, s, args):
    name = args["name"].strip()
    if _find(s["playlists"], name, "name") is not None:
        return ToolResult.fail(Code.CONFLICT, f"a playlist called '{name}' already exists; add songs to it instead")
    n = phone.seq + 1
    while f"pl{n}" in s["playlists"]:
        n += 1
    pid = f"pl{n}"
    s["playlists"][pid] = {"id": pid, "name": name, "tracks": []}
    phone.log("media.playlist_create", playlist_id=pid)
    return ToolResult.ok(f"created playlist '{name}'", {"playlist_id": pid, "name": name})


def _playlist_and_song(s: dict[str, Any], args: dict[str, Any]) -> tuple[Any, Any, ToolResult | None]:
    pl = _find(s["playlists"], args["playlist"], "name")
    if pl is None:
        return None, None, ToolResult.fail(Code.NOT_FOUND, f"no playlist '{args['playlist']}'; use list_playlists")
    song = _find(s["songs"], args["song"], "title")
    if song is None:
        return (
            None,
            None,
            ToolResult.fail(Code.NOT_FOUND, f"no song '{args['song']}' in the library; use search_media_library"),
        )
    return pl, song, None


@D.tool(
    "add_song_to_playlist",
    "Add a song (title or id) to the end of a playlist (name or id).",
    {"playlist": P.string("playlist name or id"), "song": P.string("song title or id")},
    ["playlist", "song"],
    codes=(404, 409),
    cases=[
        ok({"playlist": "Focus", "song": "Slow River"}),
        err(404, {"playlist": "Nope", "song": "Slow River"}),
        err(404, {"playlist": "pl3", "song": "Nope"}),
        err(409, {"playlist": "Focus", "song": "Velvet Static"}),
    ],
    check=lambda ph, a: (
        _find(ph.state["media"]["songs"], a["song"], "title")["id"]
        in _find(ph.state["media"]["playlists"], a["playlist"], "name")["tracks"]
    ),
)
def add_song_to_playlist(phone, s, args):
    pl, song, bad = _playlist_and_song(s, args)
    if bad is not None:
        return bad
    if song["id"] in pl["tracks"]:
        return ToolResult.fail(Code.CONFLICT, f"'{song['title']}' is already in '{pl['name']}'")
    pl["tracks"].append(song["id"])
    phone.log("media.playlist_add", playlist_id=pl["id"], song_id=song["id"])
    return ToolResult.ok(
        f"added '{song['title']}' to '{pl['name']}'", {"playlist_id": pl["id"], "tracks": list(pl["tracks"])}
    )


@D.tool(
    "remove_song_from_playlist",
    "Remove a song from a playlist.",
    {"playlist": P.string("playlist name or id"), "song": P.string("song title or id")},
    ["playlist", "song"],
    codes=(404,),
    cases=[ok({"playlist": "Focus", "song": "Velvet Static"}), err(404, {"playlist": "Focus", "song": "Slow River"})],
    check=lambda ph, a: (
        _find(ph.state["media"]["songs"], a["song"], "title")["id"]
        not in _find(ph.state["media"]["playlists"], a["playlist"], "name")["tracks"]
    ),
)
def remove_song_from_playlist(phone, s, args):
    pl, song, bad = _playlist_and_song(s, args)
    if bad is not None:
        return bad
    if song["id"] not in pl["tracks"]:
        return ToolResult.fail(Code.NOT_FOUND, f"'{song['title']}' is not in '{pl['name']}'")
    pl["tracks"] = [t for t in pl["tracks"] if t != song["id"]]
    phone.log("media.playlist_remove", playlist_id=pl["id"], song_id=song["id"])
    return ToolResult.ok(
        f"removed '{song['title']}' from '{pl['name']}'", {"playlist_id": pl["id"], "tracks": list(pl["tracks"])}
    )


D.skill(
    "playlist_management",
    "Playlists",
    "Create playlists and add or remove songs.",
    ["list_playlists", "create_playlist", "add_song_to_playlist", "remove_song_from_playlist", "search_media_library"],
    [
        "List playlists first: if one with the requested name exists, add to it instead of creating a duplicate.",
        "Check song titles against the library with search_media_library before adding.",
        "Add songs one at a time in the order the user gave, skipping songs already in the playlist.",
        "Finish by reading the playlist back and report its songs in order.",
    ],
)


# -- app screen -----------------------------------------------------------------------------------------


@D.app("Music", package="com.google.android.apps.youtube.music")
def music_screen(phone, route):
    s = phone.state["media"]
    p = s["player"]
    if route == "playlists":
        els = [Element("hdr_playlists", "Playlists", kind="header")]
        for pl in s["playlists"].values():
            els.append(
                Element(f"playlist:{pl['id']}", pl["name"], kind="item", clickable=True, to=f"playlist:{pl['id']}")
            )
        return "Playlists", els
    if route.startswith("playlist:"):
        pl = s["playlists"].get(route[9:])
        if pl is None:
            return "Playlist", [Element("missing", "This playlist no longer exists")]
        els = [Element(f"track:{t}", s["songs"][t]["title"], kind="item") for t in pl["tracks"]]
        els += [
            Element(
                "play",
                "Play playlist",
                kind="button",
                clickable=bool(pl["tracks"]),
                tool=("play_media", {"kind": "playlist", "title": pl["id"]}),
            ),
            Element("add", "Add songs", kind="button", clickable=True, to=f"add:{pl['id']}"),
        ]
        return pl["name"], els
    if route.startswith("add:"):
        pl = s["playlists"].get(route[4:])
        if pl is None:
            return "Add songs", []
        return "Add songs", [
            Element(
                f"song:{x['id']}",
                x["title"],
                kind="item",
                clickable=True,
                tool=("add_song_to_playlist", {"playlist": pl["id"], "song": x["id"]}),
                to=f"playlist:{pl['id']}",
            )
            for x in s["songs"].values()
            if x["id"] not in pl["tracks"]
        ]
    if route == "equalizer":
        eq = s["equalizer"]
        els = [
            Element(
                "eq_on",
                "Equalizer",
                kind="toggle",
                clickable=True,
                checked=eq["enabled"],
                tool=("set_equalizer", {"enabled": not eq["enabled"], "preset": eq["preset"]}),
            )
        ]
        for pr in PRESETS:
            els.append(
                Element(
                    f"preset:{pr}",
                    pr.replace("_", " ").capitalize() + (" (on)" if eq["enabled"] and eq["preset"] == pr else ""),
                    kind="item",
                    clickable=True,
                    tool=("set_equalizer", {"enabled": True, "preset": pr}),
                )
            )
        return "Equalizer", els
    if p["state"] == "stopped":
        controls = [Element("now", "Nothing playing")]
    else:
        playing = p["state"] == "playing"
        controls = [
            Element("now", f"{'Playing' if playing else 'Paused'}: {p['title']}"),
            Element(
                "toggle_play",
                "Pause" if playing else "Resume",
                kind="button",
                clickable=True,
                tool=("pause_playback", {}) if playing else ("resume_playback", {}),
            ),
            Element("next", "Next", kind="button", clickable=True, tool=("skip_to_next_track", {})),
            Element("previous", "Previous", kind="button", clickable=True, tool=("skip_to_previous_track", {})),
        ]
    return "Music", controls + [
        Element("playlists", "Playlists", kind="item", clickable=True, to="playlists"),
        Element("equalizer", "Equalizer", kind="item", clickable=True, to="equalizer"),
        Element("volume", f"Media volume {s['volume']['media']}/{MAX_VOLUME}"),
        Element("output", f"Output: {s['output']}"),
    ]


_GUI_ADD = re.compile(
    r"""add (?:the song )?["“](?P<song>.+?)["”] to (?:the )?(?:playlist )?["“](?P<pl>.+?)["”]""", re.I
)
_GUI_EQ = re.compile(r"set the equalizer (?:preset )?to (?P<preset>[a-z ]+?)\.?$", re.I)


@D.gui_script("Music")
def music_gui_script(instruction: str) -> list[tuple[Any, ...]] | None:
    """'Add "SONG" to the playlist "NAME"' or 'Set the equalizer to PRESET'."""
    m = _GUI_ADD.search(instruction)
    if m is not None:
        song, pl = m.group("song"), m.group("pl")
        return [
            ("tap", "Playlists"),
            ("tap", pl),
            ("tap", "Add songs"),
            ("tap", song),
            ("confirm", song, f"{song} in {pl}"),
        ]
    m = _GUI_EQ.search(instruction.strip())
    if m is not None:
        label = m.group("preset").strip().capitalize()
        return [("tap", "Equalizer"), ("tap", label), ("confirm", f"{label} (on)", f"equalizer {label}")]
    return None


# -- task templates -------------------------------------------------------------------------------------


def sample_playlists(rng: random.Random) -> dict[str, dict[str, Any]]:
    """The four standard playlists with seeded contents (two to five songs each)."""
    return {
        pid: {"id": pid, "name": pl["name"], "tracks": rng.sample(list(_SONG_IDS), rng.randrange(2, 6))}
        for pid, pl in DOMAIN.initial["playlists"].items()
    }


def _play_playlist_volume(rng: random.Random) -> Draft:
    pl_id = rng.choice(["pl1", "pl2", "pl3", "pl4"])
    name = DOMAIN.initial["playlists"][pl_id]["name"]
    level = rng.randrange(2, 14)
    start = rng.choice([v for v in range(2, 14) if v != level])
    return Draft(
        instruction=pick(
            rng,
            [
                f"Play my {name} playlist at volume {level}.",
                f"Put on {name}, media volume {level}.",
                f"Start the {name} playlist and set the volume to {level}.",
            ],
        ),
        params={"playlist": pl_id, "level": level},
        setup={"media.volume.media": start, "media.playlists": sample_playlists(rng)},
        tools=[
            "play_media",
            "set_stream_volume",
            "get_volume_levels",
            "search_media_library",
            "set_equalizer",
            "list_playlists",
        ],
        goal={
            "media.player.state": "playing",
            "media.player.kind": "playlist",
            "media.player.source": pl_id,
            "media.volume.media": level,
        },
        allowed=["media.player"],
        plan=[
            Act(
                "Set the media volume and start the playlist in parallel.",
                [
                    Call("set_stream_volume", {"stream": "media", "level": level}),
                    Call("play_media", {"kind": "playlist", "title": name}),
                ],
            ),
            Say(f"Playing {name} at media volume {level}."),
        ],
    )


def _check_playlist(task: Task, initial: dict[str, Any], final: dict[str, Any], answer: str) -> tuple[bool, str]:
    p = task.params
    named = [pl for pl in final["media"]["playlists"].values() if pl["name"].lower() == p["name"].lower()]
    if len(named) != 1:
        return False, f"expected one playlist called {p['name']!r}, found {len(named)}"
    others = changed_items(initial["media"]["playlists"], final["media"]["playlists"], (named[0]["id"],))
    if others:
        return False, f"changed other playlists: {', '.join(others)}"
    return (named[0]["tracks"] == p["tracks"], f"{p['name']} has {named[0]['tracks']}, expected {p['tracks']}")


def _skill_playlist(rng: random.Random) -> Draft:
    """Skills: build a playlist in the requested order; when it already exists, add only what is missing."""
    name = rng.choice(["Road Trip", "Dinner Party", "Late Night Drive", "Study Mix", "Gym Power"])
    picks = rng.sample(list(_SONG_IDS), 3)
    titles = [_SONG_IDS[t][0] for t in picks]
    exists = rng.random() < 0.4
    setup: dict[str, Any] = {}
    target: Any
    plan: list[Any] = [
        Act("Load the playlist skill.", [Call("skill__playlist_management", {"reason": f"build the {name} playlist"})]),
        Act(
            "List playlists and check the songs in the library, in parallel.",
            [Call("list_playlists")] + [Call("search_media_library", {"query": t, "kind": "song"}) for t in titles],
        ),
    ]
    if exists:
        setup["media.playlists.pl7"] = {"id": "pl7", "name": name, "tracks": [picks[0]]}
        target = "pl7"
        plan.append(
            Act(
                f"'{name}' already exists with {titles[0]}; add the other two in order.",
                [Call("add_song_to_playlist", {"playlist": target, "song": titles[1]})],
            )
        )
    else:
        plan.append(Act(f"No '{name}' playlist yet; create it.", [Call("create_playlist", {"name": name}, name="pl")]))
        target = R("pl", "data.playlist_id")
        plan.append(
            Act(f"Add {titles[0]} first.", [Call("add_song_to_playlist", {"playlist": target, "song": titles[0]})])
        )
        plan.append(Act(f"Then {titles[1]}.", [Call("add_song_to_playlist", {"playlist": target, "song": titles[1]})]))
    plan.append(Act(f"Then {titles[2]}.", [Call("add_song_to_playlist", {"playlist": target, "song": titles[2]})]))
    plan.append(Act("Read the playlists back, as the rules ask.", [Call("list_playlists")]))
    plan.append(Say(f"'{name}' now plays {', '.join(titles)}, in that order."))
    return Draft(
        instruction=pick(
            rng,
            [
                f"Make a playlist called {name} with {titles[0]}, {titles[1]} and {titles[2]}, in that order.",
                f"I want a {name} playlist: {titles[0]}, then {titles[1]}, then {titles[2]}.",
            ],
        ),
        params={"name": name, "tracks": picks},
        setup=setup,
        tools=["play_media", "get_now_playing"],
        skills=["playlist_management", "health_privacy"],
        allowed=["media.playlists"],
        plan=plan,
    )


def _bedtime_memory(rng: random.Random) -> Draft:
    """Memory: the bedtime audio routine (volumes and a playlist) among other routines with other numbers."""
    routines = {}
    for label in ("bedtime", "morning", "workout"):
        routines[label] = {
            "media": rng.randrange(1, 15),
            "ring": rng.randrange(0, 8),
            "notification": rng.randrange(0, 6),
            "playlist": rng.choice(["pl1", "pl2", "pl3", "pl4"]),
        }
    gold = routines["bedtime"]
    gold["playlist"] = rng.choice(["pl2", "pl4"])
    names = {k: DOMAIN.initial["playlists"][v["playlist"]]["name"] for k, v in routines.items()}
    memory = [
        {
            "id": f"mem_{k}",
            "category": "routines_habits",
            "title": f"{k.capitalize()} audio routine",
            "content": f"{k.capitalize()}: media volume {v['media']}, ring volume {v['ring']}, notification volume "
            f"{v['notification']}, and play the {names[k]} playlist.",
            "tags": ["audio", k],
        }
        for k, v in routines.items()
    ]
    memory.append(
        {
            "id": "mem_quiet",
            "category": "preferences",
            "title": "Quiet at work",
            "content": "Keeps the ringer silent during meetings.",
            "tags": ["audio"],
        }
    )
    rng.shuffle(memory)
    start = {"media": 9, "ring": 9, "alarm": 6, "notification": 7}
    return Draft(
        instruction=pick(
            rng,
            [
                "Get the phone ready for bed, the usual audio settings.",
                "Bedtime. Set up my sound the way I like.",
                "Time for my bedtime audio routine.",
            ],
        ),
        params={"routine": gold},
        setup={"media.volume": start},
        tools=["set_stream_volume", "get_volume_levels", "play_media", "set_equalizer", "pause_playback"],
        memory=memory,
        goal={
            "media.volume.media": gold["media"],
            "media.volume.ring": gold["ring"],
            "media.volume.notification": gold["notification"],
            "media.volume.alarm": 6,
            "media.player.state": "playing",
            "media.player.source": gold["playlist"],
        },
        allowed=["media.player"],
        plan=[
            Act(
                "Find the bedtime routine in memory.",
                [Call("search_user_memory", {"query": "bedtime audio routine volume"})],
            ),
            Act(
                "Apply the three volumes and start the playlist, in parallel.",
                [
                    Call("set_stream_volume", {"stream": "media", "level": gold["media"]}),
                    Call("set_stream_volume", {"stream": "ring", "level": gold["ring"]}),
                    Call("set_stream_volume", {"stream": "notification", "level": gold["notification"]}),
                    Call("play_media", {"kind": "playlist", "title": names["bedtime"]}),
                ],
            ),
            Say(
                f"Bedtime audio set: media {gold['media']}, ring {gold['ring']}, notifications {gold['notification']}, "
                f"playing {names['bedtime']}."
            ),
        ],
    )


def _podcast_on_bluetooth(rng: random.Random) -> Draft:
    """Audio output needs a connected Bluetooth device: the first attempt fails 412, the fix follows the evidence."""
    device = rng.choice(["Galaxy Buds", "Car Kit"])
    pid = rng.choice(list(_POD_IDS))
    show = _POD_IDS[pid][0]
    bt_on = rng.random() < 0.5
    level = rng.randrange(4, 13)
    plan: list[Any] = [
        Act(f"Route audio to the {device}.", [Call("set_audio_output", {"device": device})], may_fail=True)
    ]
    if not bt_on:
        plan.append(Act("412: Bluetooth is off. Turn it on.", [Call("set_bluetooth", {"enabled": True})]))
    plan += [
        Act(f"Connect the {device}.", [Call("connect_bluetooth_device", {"device_name": device})]),
        Act("Now route audio there.", [Call("set_audio_output", {"device": device})]),
        Act(f"Play {show}.", [Call("play_media", {"kind": "podcast", "title": show})]),
        Say(f"Playing {show} on your {device}."),
        Act(f"Set media volume to {level}.", [Call("set_stream_volume", {"stream": "media", "level": level})]),
        Say(f"Volume is now {level}."),
    ]
    return Draft(
        instruction=pick(
            rng,
            [
                f"Play {show} on my {device}.",
                f"I want to listen to {show} through the {device}.",
                f"Put {show if show.startswith('The ') else 'the ' + show} podcast on, through my {device}.",
            ],
        ),
        params={"device": device, "podcast": pid, "level": level},
        setup={
            "connectivity.bluetooth.enabled": bt_on,
            "connectivity.bluetooth.connected": [],
            "media.volume.media": 3,
        },
        tools=[
            "set_audio_output",
            "list_audio_outputs",
            "play_media",
            "set_stream_volume",
            "set_bluetooth",
            "connect_bluetooth_device",
            "get_bluetooth_status",
            "set_wifi",
        ],
        followups=[pick(rng, [f"It's too quiet, make it {level}.", f"Turn it up to {level}, please."])],
        goal={
            "connectivity.bluetooth.enabled": True,
            "connectivity.bluetooth.connected": [device],
            "media.output": device,
            "media.player.state": "playing",
            "media.player.item_id": pid,
            "media.volume.media": level,
        },
        allowed=["media.player"],
        plan=plan,
    )


def _gui_add_song(rng: random.Random) -> Draft:
    """Sub-agent: the GUI agent adds a song to a playlist through the Music app."""
    pl_id = rng.choice(["pl1", "pl2", "pl3", "pl4"])
    playlists = sample_playlists(rng)
    pl = playlists[pl_id]
    song = rng.choice([sid for sid in _SONG_IDS if sid not in pl["tracks"]])
    title = _SONG_IDS[song][0]
    return Draft(
        instruction=pick(
            rng,
            [
                f"In the Music app, add {title} to my {pl['name']} playlist.",
                f"Use Music to put {title} on the {pl['name']} playlist.",
            ],
        ),
        params={"playlist": pl_id, "song": song},
        tools=["list_playlists", "get_now_playing"],
        setup={"media.playlists": playlists},
        subagent=True,
        goal={f"media.playlists.{pl_id}.tracks": pl["tracks"] + [song]},
        plan=[
            *gui_agent(
                "Music",
                f'Add "{title}" to the playlist "{pl["name"]}".',
                think="Delegate the app work to the GUI agent.",
            ),
            Say(f"{title} is now on your {pl['name']} playlist."),
        ],
    )


D.add_template(
    Template(
        "media.play_playlist_at_volume",
        "media",
        "tool_use",
        "Play a playlist and set the media volume (parallel calls).",
        _play_playlist_volume,
        difficulty=1,
    )
)
D.add_template(
    Template(
        "media.skill_build_playlist",
        "media",
        "skills",
        "Load playlist_management; create or complete a playlist in the requested order.",
        _skill_playlist,
        difficulty=2,
        check=_check_playlist,
    )
)
D.add_template(
    Template(
        "media.bedtime_routine_from_memory",
        "media",
        "memory",
        "Apply the bedtime audio routine from memory (volumes and playlist), ignoring other routines.",
        _bedtime_memory,
        difficulty=2,
    )
)
D.add_template(
    Template(
        "media.podcast_on_bluetooth",
        "media",
        "tool_use",
        "Route audio to a Bluetooth device after a 412, play a podcast; a follow-up changes the volume.",
        _podcast_on_bluetooth,
        tags=("multi_turn", "error_recovery"),
        difficulty=3,
        domains=("media", "connectivity"),
    )
)
D.add_template(
    Template(
        "media.gui_add_song",
        "media",
        "sub_agent",
        "A GUI agent adds a song to a playlist in the Music app.",
        _gui_add_song,
        difficulty=2,
    )
)
