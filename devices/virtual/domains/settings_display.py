"""System settings and display: brightness, dark mode, refresh rate, wallpaper, language, date and time, sound profile,
do not disturb, ringtone and keyboard."""

from __future__ import annotations

import random
import re
from typing import Any

from devices.virtual.domains._shared import match_name, switch, toggle
from devices.virtual.registry import Domain, Element, P, err, ok
from devices.virtual.tasks import Act, Call, Draft, Say, Template, gui_agent
from devices.virtual.wording import pick
from harness.contract import Code, ToolResult

WALLPAPERS = [
    "Default",
    "Aurora",
    "Mountain Lake",
    "City Lights",
    "Ocean Waves",
    "Desert Dunes",
    "Forest Path",
    "Minimal Gray",
]
LANGUAGES = [
    "English (US)",
    "English (UK)",
    "Spanish",
    "French",
    "German",
    "Italian",
    "Portuguese (Brazil)",
    "Japanese",
    "Hindi",
    "Dutch",
]
TIMEZONES = {  # city -> IANA zone
    "New York": "America/New_York",
    "Chicago": "America/Chicago",
    "Denver": "America/Denver",
    "Los Angeles": "America/Los_Angeles",
    "London": "Europe/London",
    "Paris": "Europe/Paris",
    "Berlin": "Europe/Berlin",
    "Tokyo": "Asia/Tokyo",
    "Sydney": "Australia/Sydney",
    "Mumbai": "Asia/Kolkata",
    "São Paulo": "America/Sao_Paulo",
    "Dubai": "Asia/Dubai",
}
ZONES = sorted(set(TIMEZONES.values()))
RINGTONES = ["Pixel Sounds", "Copycat", "Flutterby", "Crackle", "Spaceship", "Zen Garden", "Classic Bell", "Marimba"]
KEYBOARDS = ["Gboard", "SwiftKey", "Samsung Keyboard"]
DATE_FORMATS = ["MM/DD/YYYY", "DD/MM/YYYY", "YYYY-MM-DD"]
DND_ALLOW = ["none", "starred_contacts", "contacts", "everyone"]
_HHMM = re.compile(r"^([01]\d|2[0-3]):[0-5]\d$")

DOMAIN = Domain(
    "settings_display",
    "System settings & display",
    initial={
        "display": {
            "brightness": 60,
            "adaptive_brightness": True,
            "dark_mode": False,
            "night_light": False,
            "refresh_rate": "adaptive",
            "wallpaper": {"home": "Default", "lock": "Default"},
        },
        "system": {
            "language": "English (US)",
            "date_format": "MM/DD/YYYY",
            "time_format": "12h",
            "timezone": "America/New_York",
            "auto_timezone": True,
        },
        "sound": {
            "profile": "ring",
            "ringtone": "Pixel Sounds",
            "dnd": {"enabled": False, "allow_calls": "starred_contacts", "until": None},
        },
        "keyboard": {"default": "Gboard", "installed": list(KEYBOARDS)},
    },
)
D = DOMAIN


def _saver_on(phone: Any) -> bool:
    return bool(phone.state.get("power", {}).get("battery_saver", {}).get("enabled"))


# -- Display --------------------------------------------------------------------------------------


@D.tool(
    "get_display_settings",
    "Get brightness, adaptive brightness, dark mode, night light, refresh rate and wallpapers.",
    read_only=True,
    cases=[ok({})],
)
def get_display_settings(phone, s, args):
    d = s["display"]
    data = {**d, "wallpaper": dict(d["wallpaper"]), "available_wallpapers": WALLPAPERS}
    if _saver_on(phone):
        data["note"] = "battery saver is on: dark mode is forced on and the refresh rate is limited to 60 Hz"
    return ToolResult.ok("display settings", data)


@D.tool(
    "set_brightness",
    "Set a fixed screen brightness in percent. Fails with 409 while adaptive brightness is on.",
    {"level": P.integer("brightness percent, 0 to 100", 0, 100)},
    ["level"],
    codes=(409,),
    cases=[
        ok({"level": 35}, {"settings_display.display.adaptive_brightness": False}),
        err(409, {"level": 35}),
        err(400, {"level": 140}),
    ],
    prerequisites=["adaptive brightness off"],
    check=lambda ph, a: ph.state["settings_display"]["display"]["brightness"] == a["level"],
)
def set_brightness(phone, s, args):
    d = s["display"]
    if d["adaptive_brightness"]:
        return ToolResult.fail(
            Code.CONFLICT,
            "adaptive brightness is on and would override a fixed level; turn adaptive brightness off first",
        )
    if d["brightness"] != args["level"]:
        d["brightness"] = args["level"]
        phone.log("settings_display.brightness", level=args["level"])
    return ToolResult.ok(f"brightness {args['level']}%", {"brightness": args["level"]})


@D.tool(
    "set_adaptive_brightness",
    "Turn adaptive (automatic) brightness on or off.",
    {"enabled": P.boolean("true to let the phone adjust brightness")},
    ["enabled"],
    cases=[ok({"enabled": False})],
    check=lambda ph, a: ph.state["settings_display"]["display"]["adaptive_brightness"] == a["enabled"],
)
def set_adaptive_brightness(phone, s, args):
    return switch(
        phone,
        s["display"],
        "adaptive_brightness",
        args["enabled"],
        "adaptive brightness",
        "settings_display.adaptive_brightness",
    )


@D.tool(
    "set_dark_mode",
    "Turn dark theme on or off. Can't be turned off while battery saver is on (409).",
    {"enabled": P.boolean("true for dark theme")},
    ["enabled"],
    codes=(409,),
    cases=[
        ok({"enabled": True}),
        ok({"enabled": False}, {"settings_display.display.dark_mode": True}),
        err(409, {"enabled": False}, {"settings_display.display.dark_mode": True, "power.battery_saver.enabled": True}),
    ],
    prerequisites=["battery saver off (to turn dark mode off)"],
    check=lambda ph, a: ph.state["settings_display"]["display"]["dark_mode"] == a["enabled"],
)
def set_dark_mode(phone, s, args):
    if not args["enabled"] and _saver_on(phone):
        return ToolResult.fail(Code.CONFLICT, "battery saver forces dark theme; turn battery saver off first")
    return switch(phone, s["display"], "dark_mode", args["enabled"], "dark theme", "settings_display.dark_mode")


@D.tool(
    "set_night_light",
    "Tint the screen amber to reduce blue light.",
    {"enabled": P.boolean("true for night light")},
    ["enabled"],
    cases=[ok({"enabled": True})],
    check=lambda ph, a: ph.state["settings_display"]["display"]["night_light"] == a["enabled"],
)
def set_night_light(phone, s, args):
    return switch(phone, s["display"], "night_light", args["enabled"], "night light", "settings_display.night_light")


@D.tool(
    "set_refresh_rate",
    "Set the screen refresh rate. Above 60 Hz is unavailable while battery saver is on (409).",
    {"mode": P.enum(["60hz", "90hz", "120hz", "adaptive"], "fixed rate, or adaptive (smooth display)")},
    ["mode"],
    codes=(409,),
    cases=[
        ok({"mode": "120hz"}),
        ok({"mode": "60hz"}, {"power.battery_saver.enabled": True}),
        err(409, {"mode": "120hz"}, {"power.battery_saver.enabled": True}),
        err(400, {"mode": "240hz"}),
    ],
    check=lambda ph, a: ph.state["settings_display"]["display"]["refresh_rate"] == a["mode"],
)
def set_refresh_rate(phone, s, args):
    if args["mode"] != "60hz" and _saver_on(phone):
        return ToolResult.fail(Code.CONFLICT, "battery saver limits the display to 60 Hz; turn battery saver off first")
    d = s["display"]
    if d["refresh_rate"] != args["mode"]:
        d["refresh_rate"] = args["mode"]
        phone.log("settings_display.refresh_rate", mode=args["mode"])
    return ToolResult.ok(f"refresh rate {args['mode']}", {"refresh_rate": args["mode"]})


@D.tool(
    "set_wallpaper",
    "Set the wallpaper of the home screen, the lock screen, or both.",
    {
        "name": P.string("wallpaper name, see get_display_settings"),
        "target": P.enum(["home", "lock", "both"], "which screen (default both)"),
    },
    ["name"],
    codes=(404,),
    cases=[
        ok({"name": "Aurora"}),
        ok({"name": "ocean waves", "target": "lock"}),
        err(404, {"name": "Mona Lisa"}),
        err(400, {"name": "Aurora", "target": "ceiling"}),
    ],
    check=lambda ph, a: all(
        ph.state["settings_display"]["display"]["wallpaper"][t] == match_name(a["name"], WALLPAPERS)
        for t in (("home", "lock") if a.get("target", "both") == "both" else (a["target"],))
    ),
)
def set_wallpaper(phone, s, args):
    name = match_name(args["name"], WALLPAPERS)
    if name is None:
        return ToolResult.fail(
            Code.NOT_FOUND, f"no wallpaper named '{args['name']}'; available: {', '.join(WALLPAPERS)}"
        )
    target = args.get("target", "both")
    wp = s["display"]["wallpaper"]
    for t in ("home", "lock") if target == "both" else (target,):
        if wp[t] != name:
            wp[t] = name
            phone.log("settings_display.wallpaper", screen=t, name=name)
    return ToolResult.ok(f"wallpaper '{name}' set on {target}", {"wallpaper": dict(wp)})


# -- System: language, date and time, keyboard -------------------------------------------------------


@D.tool(
    "get_system_settings",
    "Get language, date and time formats, time zone (and whether it is automatic) and keyboards.",
    read_only=True,
    cases=[ok({})],
)
def get_system_settings(phone, s, args):
    return ToolResult.ok(
        "system settings",
        {**s["system"], "keyboard": s["keyboard"]["default"], "installed_keyboards": list(s["keyboard"]["installed"])},
    )


@D.tool(
    "set_system_language",
    "Set the phone's display language.",
    {"language": P.string("language, e.g. 'French'")},
    ["language"],
    codes=(404,),
    cases=[ok({"language": "French"}), err(404, {"language": "Elvish"})],
    check=lambda ph, a: ph.state["settings_display"]["system"]["language"] == match_name(a["language"], LANGUAGES),
)
def set_system_language(phone, s, args):
    lang = match_name(args["language"], LANGUAGES)
    if lang is None:
        return ToolResult.fail(
            Code.NOT_FOUND, f"language '{args['language']}' is not available; available: {', '.join(LANGUAGES)}"
        )
    if s["system"]["language"] != lang:
        s["system"]["language"] = lang
        phone.log("settings_display.language", language=lang)
    return ToolResult.ok(f"language set to {lang}", {"language": lang})


@D.tool(
    "set_date_time_format",
    "Set the date format and/or 12- or 24-hour time.",
    {"date_format": P.enum(DATE_FORMATS, "date format"), "time_format": P.enum(["12h", "24h"], "clock format")},
    codes=(400,),
    cases=[
        ok({"time_format": "24h"}),
        ok({"date_format": "YYYY-MM-DD", "time_format": "24h"}),
        err(400, {}, note="nothing to change"),
        err(400, {"time_format": "36h"}),
    ],
    check=lambda ph, a: all(ph.state["settings_display"]["system"][k] == v for k, v in a.items()),
)
def set_date_time_format(phone, s, args):
    if not args:
        return ToolResult.fail(Code.BAD_ARGUMENT, "give date_format, time_format or both")
    sysm = s["system"]
    for k, v in args.items():
        if sysm[k] != v:
            sysm[k] = v
            phone.log("settings_display.datetime_format", **{k: v})
    return ToolResult.ok(
        "date and time format updated", {"date_format": sysm["date_format"], "time_format": sysm["time_format"]}
    )


@D.tool(
    "set_auto_time_zone",
    "Use the network-provided time zone automatically, or not.",
    {"enabled": P.boolean("true for automatic time zone")},
    ["enabled"],
    cases=[ok({"enabled": False})],
    check=lambda ph, a: ph.state["settings_display"]["system"]["auto_timezone"] == a["enabled"],
)
def set_auto_time_zone(phone, s, args):
    return switch(
        phone, s["system"], "auto_timezone", args["enabled"], "automatic time zone", "settings_display.auto_timezone"
    )


@D.tool(
    "set_time_zone",
    "Set the time zone manually (IANA name such as 'Europe/Paris'). Fails with 409 while the time zone is automatic.",
    {"timezone": P.string("IANA time zone, e.g. Asia/Tokyo")},
    ["timezone"],
    codes=(404, 409),
    cases=[
        ok({"timezone": "Asia/Tokyo"}, {"settings_display.system.auto_timezone": False}),
        err(409, {"timezone": "Asia/Tokyo"}),
        err(404, {"timezone": "Mars/Olympus"}, {"settings_display.system.auto_timezone": False}),
    ],
    prerequisites=["automatic time zone off"],
    check=lambda ph, a: ph.state["settings_display"]["system"]["timezone"] == a["timezone"],
)
def set_time_zone(phone, s, args):
    sysm = s["system"]
    if sysm["auto_timezone"]:
        return ToolResult.fail(Code.CONFLICT, "the time zone is set automatically; turn automatic time zone off first")
    if args["timezone"] not in ZONES:
        return ToolResult.fail(
            Code.NOT_FOUND, f"unknown time zone '{args['timezone']}'; use an IANA name such as Europe/Paris"
        )
    if sysm["timezone"] != args["timezone"]:
        sysm["timezone"] = args["timezone"]
        phone.log("settings_display.timezone", timezone=args["timezone"])
    return ToolResult.ok(f"time zone {args['timezone']}", {"timezone": args["timezone"]})


@D.tool(
    "set_default_keyboard",
    "Choose the default on-screen keyboard among installed keyboards.",
    {"keyboard": P.string("keyboard name")},
    ["keyboard"],
    codes=(404,),
    cases=[ok({"keyboard": "SwiftKey"}), err(404, {"keyboard": "Fleksy"})],
    check=lambda ph, a: ph.state["settings_display"]["keyboard"]["default"] == match_name(a["keyboard"], KEYBOARDS),
)
def set_default_keyboard(phone, s, args):
    kb = s["keyboard"]
    name = match_name(args["keyboard"], kb["installed"])
    if name is None:
        return ToolResult.fail(
            Code.NOT_FOUND, f"keyboard '{args['keyboard']}' is not installed; installed: {', '.join(kb['installed'])}"
        )
    if kb["default"] != name:
        kb["default"] = name
        phone.log("settings_display.keyboard", keyboard=name)
    return ToolResult.ok(f"default keyboard: {name}", {"keyboard": name})


# -- Sound ----------------------------------------------------------------------------------------


@D.tool(
    "get_sound_settings",
    "Get the sound profile, ringtone, available ringtones and do-not-disturb state.",
    read_only=True,
    cases=[ok({})],
)
def get_sound_settings(phone, s, args):
    snd = s["sound"]
    return ToolResult.ok(
        "sound settings",
        {
            "profile": snd["profile"],
            "ringtone": snd["ringtone"],
            "available_ringtones": RINGTONES,
            "do_not_disturb": dict(snd["dnd"]),
        },
    )


@D.tool(
    "set_sound_profile",
    "Set the ringer mode: ring, vibrate or silent.",
    {"profile": P.enum(["ring", "vibrate", "silent"], "ringer mode")},
    ["profile"],
    cases=[ok({"profile": "vibrate"}), err(400, {"profile": "loud"})],
    check=lambda ph, a: ph.state["settings_display"]["sound"]["profile"] == a["profile"],
)
def set_sound_profile(phone, s, args):
    if s["sound"]["profile"] != args["profile"]:
        s["sound"]["profile"] = args["profile"]
        phone.log("settings_display.sound_profile", profile=args["profile"])
    return ToolResult.ok(f"sound profile: {args['profile']}", {"profile": args["profile"]})


@D.tool(
    "set_do_not_disturb",
    "Turn Do Not Disturb on or off; optionally which callers may ring and an end time (HH:MM).",
    {
        "enabled": P.boolean("true to turn Do Not Disturb on"),
        "allow_calls": P.enum(DND_ALLOW, "who may still call"),
        "until": P.string("end time HH:MM (24h), omit for until turned off"),
    },
    ["enabled"],
    codes=(400,),
    cases=[
        ok({"enabled": True}),
        ok({"enabled": True, "allow_calls": "contacts", "until": "07:00"}),
        ok({"enabled": False}),
        err(400, {"enabled": True, "until": "7am"}),
    ],
    check=lambda ph, a: ph.state["settings_display"]["sound"]["dnd"]["enabled"] == a["enabled"],
)
def set_do_not_disturb(phone, s, args):
    until = args.get("until")
    if until is not None and not _HHMM.match(until):
        return ToolResult.fail(Code.BAD_ARGUMENT, f"until must be a 24-hour time HH:MM (got {until!r})")
    dnd = s["sound"]["dnd"]
    new = {
        "enabled": args["enabled"],
        "allow_calls": args.get("allow_calls", dnd["allow_calls"]),
        "until": until if args["enabled"] else None,
    }
    if new != dnd:
        s["sound"]["dnd"] = new
        phone.log("settings_display.dnd", **new)
    return ToolResult.ok(f"Do Not Disturb {'on' if new['enabled'] else 'off'}", dict(new))


@D.tool(
    "set_ringtone",
    "Set the phone ringtone by name.",
    {"name": P.string("ringtone name")},
    ["name"],
    codes=(404,),
    cases=[ok({"name": "Zen Garden"}), err(404, {"name": "Never Gonna Give You Up"})],
    check=lambda ph, a: ph.state["settings_display"]["sound"]["ringtone"] == match_name(a["name"], RINGTONES),
)
def set_ringtone(phone, s, args):
    name = match_name(args["name"], RINGTONES)
    if name is None:
        return ToolResult.fail(Code.NOT_FOUND, f"no ringtone named '{args['name']}'; available: {', '.join(RINGTONES)}")
    old = s["sound"]["ringtone"]
    if old != name:
        s["sound"]["ringtone"] = name
        phone.log("settings_display.ringtone", name=name)
    return ToolResult.ok(f"ringtone: {name}", {"ringtone": name, "previous": old})


D.skill(
    "display_comfort",
    "Display comfort",
    "Brightness, dark theme and night light for comfortable viewing.",
    ["get_display_settings", "set_brightness", "set_adaptive_brightness", "set_dark_mode", "set_night_light"],
    [
        "Read the display settings first.",
        "A fixed brightness needs adaptive brightness off: turn it off, wait for the result, then set the level.",
        "Battery saver forces dark theme; never turn battery saver off unless the user asked.",
        "Change only what the user asked for.",
    ],
)

D.skill(
    "time_and_region",
    "Time and region",
    "Language, time zone and date/time formats.",
    ["get_system_settings", "set_system_language", "set_auto_time_zone", "set_time_zone", "set_date_time_format"],
    [
        "A manual time zone needs automatic time zone off first (409 otherwise).",
        "Use IANA zone names (Europe/Paris), not city names or UTC offsets.",
        "Do not change the language when only the time or date format was asked for.",
    ],
)


# -- App screen -----------------------------------------------------------------------------------


@D.app("Settings", package="com.android.settings")
def settings_screen(phone, route):
    s = phone.state["settings_display"]
    d, snd, sysm = s["display"], s["sound"], s["system"]
    if route == "display":
        return "Display", [
            Element("brightness", f"Brightness: {d['brightness']}%"),
            Element(
                "brightness_down",
                "Brightness -10",
                kind="button",
                clickable=not d["adaptive_brightness"],
                tool=("set_brightness", {"level": max(0, d["brightness"] - 10)}),
            ),
            Element(
                "brightness_up",
                "Brightness +10",
                kind="button",
                clickable=not d["adaptive_brightness"],
                tool=("set_brightness", {"level": min(100, d["brightness"] + 10)}),
            ),
            toggle("adaptive", "Adaptive brightness", d["adaptive_brightness"], "set_adaptive_brightness"),
            toggle("dark", "Dark theme", d["dark_mode"], "set_dark_mode"),
            toggle("night_light", "Night Light", d["night_light"], "set_night_light"),
            Element(
                "smooth",
                "Smooth display (adaptive refresh)",
                kind="toggle",
                clickable=True,
                checked=d["refresh_rate"] == "adaptive",
                tool=("set_refresh_rate", {"mode": "60hz" if d["refresh_rate"] == "adaptive" else "adaptive"}),
            ),
            Element("wallpaper", f"Wallpaper: {d['wallpaper']['home']}", kind="item", clickable=True, to="wallpaper"),
        ]
    if route == "wallpaper":
        return "Wallpaper", [Element("hdr_wp", "Set on home and lock screen", kind="header")] + [
            Element(
                f"wp:{w}",
                w + (" (current)" if w == d["wallpaper"]["home"] else ""),
                kind="item",
                clickable=True,
                tool=("set_wallpaper", {"name": w}),
            )
            for w in WALLPAPERS
        ]
    if route == "sound":
        els = [Element("hdr_profile", f"Sound profile: {snd['profile']}", kind="header")]
        for p in ("ring", "vibrate", "silent"):
            els.append(
                Element(
                    f"profile:{p}",
                    p.capitalize(),
                    kind="item",
                    clickable=True,
                    tool=("set_sound_profile", {"profile": p}),
                )
            )
        els.append(toggle("dnd", "Do Not Disturb", snd["dnd"]["enabled"], "set_do_not_disturb"))
        els.append(Element("ringtone", f"Ringtone: {snd['ringtone']}", kind="item", clickable=True, to="ringtone"))
        return "Sound", els
    if route == "ringtone":
        return "Ringtone", [
            Element(
                f"rt:{r}",
                r + (" (current)" if r == snd["ringtone"] else ""),
                kind="item",
                clickable=True,
                tool=("set_ringtone", {"name": r}),
            )
            for r in RINGTONES
        ]
    if route == "system":
        return "System", [
            Element("language", f"Language: {sysm['language']}"),
            toggle("auto_tz", "Set time zone automatically", sysm["auto_timezone"], "set_auto_time_zone"),
            Element("tz", f"Time zone: {sysm['timezone']}"),
            Element(
                "24h",
                "Use 24-hour format",
                kind="toggle",
                clickable=True,
                checked=sysm["time_format"] == "24h",
                tool=("set_date_time_format", {"time_format": "12h" if sysm["time_format"] == "24h" else "24h"}),
            ),
            Element("keyboard", f"Keyboard: {s['keyboard']['default']}"),
        ]
    return "Settings", [
        Element("display", "Display", kind="item", clickable=True, to="display"),
        Element("sound", "Sound & vibration", kind="item", clickable=True, to="sound"),
        Element("system", "System", kind="item", clickable=True, to="system"),
    ]


@D.gui_script("Settings")
def settings_gui(instruction: str) -> list[tuple[Any, ...]] | None:
    """Scripted GUI agent: wallpaper, ringtone or sound profile by name, or one display switch."""
    low = instruction.lower()
    for w in WALLPAPERS:
        if w.lower() in low and "wallpaper" in low:
            return [
                ("tap", "Display"),
                ("tap", "wallpaper"),
                ("tap", f"wp:{w}"),
                ("confirm", f"{w} (current)", f"wallpaper {w}"),
            ]
    for r in RINGTONES:
        if r.lower() in low and "ringtone" in low:
            return [
                ("tap", "sound"),
                ("tap", "ringtone"),
                ("tap", f"rt:{r}"),
                ("confirm", f"{r} (current)", f"ringtone {r}"),
            ]
    for p in ("vibrate", "silent", "ring"):
        if p in low.split() or f"{p} mode" in low:
            return [("tap", "sound"), ("tap", f"profile:{p}"), ("confirm", f"Sound profile: {p}", f"profile {p}")]
    for key, words in (("dark", ("dark",)), ("night_light", ("night light",)), ("adaptive", ("adaptive",))):
        if any(w in low for w in words):
            return [("tap", "Display"), ("tap", key), ("confirm", "Brightness", f"{key} toggled")]
    return None


# -- Task templates -------------------------------------------------------------------------------

_DISPLAY_TOOLS = [
    "get_display_settings",
    "set_brightness",
    "set_adaptive_brightness",
    "set_dark_mode",
    "set_night_light",
]


def _brightness_conflict(rng: random.Random) -> Draft:
    """Error recovery: a fixed brightness is refused (409) while adaptive brightness is on."""
    level = rng.choice([10, 20, 25, 30, 40, 50, 70, 80, 90, 100])
    start = rng.choice([x for x in (35, 45, 55, 60, 65) if x != level])
    return Draft(
        instruction=pick(
            rng,
            [
                f"Set my screen brightness to {level}%.",
                f"Brightness {level} percent please, and keep it there.",
                f"Lock the brightness at {level}%.",
            ],
        ),
        params={"level": level},
        setup={"settings_display.display.brightness": start},
        tools=_DISPLAY_TOOLS + ["set_refresh_rate"],
        goal={"settings_display.display.brightness": level, "settings_display.display.adaptive_brightness": False},
        plan=[
            Act(f"Set brightness to {level}%.", [Call("set_brightness", {"level": level})], may_fail=True),
            Act(
                "409: adaptive brightness would override it; turn adaptive brightness off.",
                [Call("set_adaptive_brightness", {"enabled": False})],
            ),
            Act("Retry the fixed level.", [Call("set_brightness", {"level": level})]),
            Say(f"Brightness is fixed at {level}%; I turned adaptive brightness off so it stays there."),
        ],
    )


def _travel_timezone(rng: random.Random) -> Draft:
    city = rng.choice([c for c in TIMEZONES if TIMEZONES[c] != "America/New_York"])
    zone = TIMEZONES[city]
    auto = rng.random() < 0.7
    fmt24 = rng.random() < 0.4
    setup = {"settings_display.system.auto_timezone": auto}
    goal: dict[str, Any] = {"settings_display.system.timezone": zone}
    plan: list[Any] = [Act("Check the time settings.", [Call("get_system_settings")])]
    if auto:
        plan.append(
            Act(
                "The time zone is automatic; turn that off to set it manually.",
                [Call("set_auto_time_zone", {"enabled": False})],
            )
        )
        goal["settings_display.system.auto_timezone"] = False
    plan.append(Act(f"{city} is {zone}.", [Call("set_time_zone", {"timezone": zone})]))
    extra = ""
    if fmt24:
        plan.append(Act("Switch to 24-hour time.", [Call("set_date_time_format", {"time_format": "24h"})]))
        goal["settings_display.system.time_format"] = "24h"
        extra = " and use 24-hour time"
    plan.append(Say(f"The phone is on {city} time ({zone}){' with 24-hour time' if fmt24 else ''}."))
    return Draft(
        instruction=pick(
            rng,
            [
                f"I'm in {city} now; set the phone's time zone to {city}{extra}.",
                f"Put my clock on {city} time{extra}.",
                f"Change the time zone to {city}'s{extra}, please.",
            ],
        ),
        params={"city": city, "zone": zone, "auto": auto, "fmt24": fmt24},
        setup=setup,
        tools=[
            "get_system_settings",
            "set_auto_time_zone",
            "set_time_zone",
            "set_date_time_format",
            "set_system_language",
        ],
        goal=goal,
        plan=plan,
    )


def _bedtime_memory(rng: random.Random) -> Draft:
    """Memory: the bedtime routine (sampled values) is planted among a morning routine and a partner's routine."""
    allow = rng.choice(["none", "starred_contacts", "contacts"])
    until = rng.choice(["06:30", "07:00", "07:30"])
    profile = rng.choice(["vibrate", "silent"])
    night = rng.random() < 0.5
    allow_txt = {
        "none": "no calls",
        "starred_contacts": "calls from starred contacts",
        "contacts": "calls from contacts",
    }[allow]
    memory = [
        {
            "id": "m-bedtime",
            "category": "routines_habits",
            "title": "My bedtime routine",
            "content": f"At bedtime: Do Not Disturb on until {until} allowing {allow_txt}, phone on {profile}, "
            "dark theme on" + (", night light on." if night else "."),
            "tags": ["bedtime", "night"],
        },
        {
            "id": "m-morning",
            "category": "routines_habits",
            "title": "Morning routine",
            "content": "In the morning: ring mode, brightness 80%, Do Not Disturb off.",
            "tags": ["morning"],
        },
        {
            "id": "m-partner-bed",
            "category": "important_info",
            "title": "Alex's bedtime",
            "content": "Alex sets his phone to silent and Do Not Disturb until 08:00 allowing everyone.",
            "tags": ["family", "bedtime"],
        },
        {
            "id": "m-alarm",
            "category": "preferences",
            "title": "Alarm tone",
            "content": "I like the Marimba tone for alarms.",
            "tags": ["sound"],
        },
        {
            "id": "m-flight",
            "category": "important_event",
            "title": "Flight",
            "content": "Flight to Lisbon on Friday at 06:10.",
            "tags": ["travel"],
        },
    ]
    rng.shuffle(memory)
    goal: dict[str, Any] = {
        "settings_display.sound.dnd": {"enabled": True, "allow_calls": allow, "until": until},
        "settings_display.sound.profile": profile,
        "settings_display.display.dark_mode": True,
    }
    calls = [
        Call("set_do_not_disturb", {"enabled": True, "allow_calls": allow, "until": until}),
        Call("set_sound_profile", {"profile": profile}),
        Call("set_dark_mode", {"enabled": True}),
    ]
    if night:
        goal["settings_display.display.night_light"] = True
        calls.append(Call("set_night_light", {"enabled": True}))
    return Draft(
        instruction=pick(
            rng,
            [
                "Going to bed. Set the phone up like I usually do.",
                "Bedtime mode please, my usual routine.",
                "Get my phone ready for the night the way I always have it.",
            ],
        ),
        params={"allow": allow, "until": until, "profile": profile, "night": night},
        memory=memory,
        tools=[
            "set_do_not_disturb",
            "set_sound_profile",
            "set_dark_mode",
            "set_night_light",
            "set_brightness",
            "get_sound_settings",
            "set_ringtone",
        ],
        goal=goal,
        plan=[
            Act(
                "Find the user's own bedtime routine in memory.",
                [Call("search_user_memory", {"query": "my bedtime routine", "maxResults": 5})],
            ),
            Act("Apply each step of the routine; they are independent, so in one turn.", calls),
            Say(
                f"Bedtime set: Do Not Disturb until {until} ({allow_txt} allowed), {profile} mode, dark theme"
                + (" and night light on." if night else " on.")
            ),
        ],
    )


def _skill_comfort(rng: random.Random) -> Draft:
    """Skills: load display_comfort; its rules say adaptive brightness must go off before a fixed level."""
    level = rng.choice([15, 20, 25, 30])
    night = rng.random() < 0.5
    adaptive = rng.random() < 0.7
    goal: dict[str, Any] = {"settings_display.display.dark_mode": True, "settings_display.display.brightness": level}
    plan: list[Any] = [
        Act(
            "Load the display comfort skill.", [Call("skill__display_comfort", {"reason": "dim and darken the screen"})]
        ),
        Act("Rules: read the display settings first.", [Call("get_display_settings")]),
    ]
    if adaptive:
        plan.append(
            Act(
                "Adaptive brightness is on; turn it off before a fixed level.",
                [Call("set_adaptive_brightness", {"enabled": False})],
            )
        )
        goal["settings_display.display.adaptive_brightness"] = False
    calls = [Call("set_dark_mode", {"enabled": True}), Call("set_brightness", {"level": level})]
    if night:
        calls.append(Call("set_night_light", {"enabled": True}))
        goal["settings_display.display.night_light"] = True
    plan += [
        Act("Now the independent changes together.", calls),
        Say(f"Dark theme on, brightness {level}%" + (", night light on." if night else ".")),
    ]
    what = f"dark theme and brightness at {level}%" + (" with night light" if night else "")
    return Draft(
        instruction=pick(
            rng,
            [
                f"My eyes hurt. Make the screen easier on them: {what}.",
                f"Set up the screen for reading in bed: {what}.",
                f"Screen comfort please: {what}.",
            ],
        ),
        params={"level": level, "night": night, "adaptive": adaptive},
        setup={"settings_display.display.adaptive_brightness": adaptive, "settings_display.display.brightness": 70},
        tools=["get_system_settings", "set_refresh_rate"],
        skills=["display_comfort", "time_and_region", "power_management"],
        goal=goal,
        plan=plan,
    )


def _language_then_format(rng: random.Random) -> Draft:
    """Multi-turn: switch the language; the follow-up asks for date and time formats."""
    lang = rng.choice(LANGUAGES[1:])
    date = rng.choice(["DD/MM/YYYY", "YYYY-MM-DD"])
    return Draft(
        instruction=pick(
            rng,
            [f"Change the phone language to {lang}.", f"Switch my phone to {lang}.", f"I want the system in {lang}."],
        ),
        params={"lang": lang, "date": date},
        tools=[
            "get_system_settings",
            "set_system_language",
            "set_date_time_format",
            "set_time_zone",
            "set_default_keyboard",
        ],
        followups=[
            pick(rng, [f"Also use 24-hour time and dates like {date}.", f"And dates as {date}, with a 24-hour clock."])
        ],
        goal={
            "settings_display.system.language": lang,
            "settings_display.system.date_format": date,
            "settings_display.system.time_format": "24h",
        },
        plan=[
            Act(f"Set the language to {lang}.", [Call("set_system_language", {"language": lang})]),
            Say(f"Your phone is now in {lang}."),
            Act(
                "Set both formats in one call.",
                [Call("set_date_time_format", {"date_format": date, "time_format": "24h"})],
            ),
            Say(f"Dates now show as {date} and the clock uses 24-hour time."),
        ],
    )


def _dark_off_saver(rng: random.Random) -> Draft:
    """Error recovery across domains: dark theme can't go off under battery saver (409); the user allowed turning
    battery saver off. Sometimes the user also wants the smooth refresh rate back, which the saver blocked too."""
    rate = rng.choice([None, None, "90hz", "120hz", "adaptive"])
    night = rng.random() < 0.5
    ask = {
        None: "",
        "90hz": " and put the screen back to 90 Hz",
        "120hz": " and set the refresh rate back to 120 Hz",
        "adaptive": " and turn smooth display (adaptive refresh) back on",
    }[rate]
    goal: dict[str, Any] = {"settings_display.display.dark_mode": False, "power.battery_saver.enabled": False}
    retry = [Call("set_dark_mode", {"enabled": False})]
    if rate is not None:
        goal["settings_display.display.refresh_rate"] = rate
        retry.append(Call("set_refresh_rate", {"mode": rate}))
    return Draft(
        instruction=pick(
            rng,
            [
                f"Turn dark mode off{ask}. If battery saver is in the way, switch that off too.",
                f"I want the light theme back{ask}; you can turn battery saver off if you need to.",
                f"Disable dark theme{ask} (it's fine to disable battery saver for it).",
            ],
        ),
        params={"rate": rate, "night": night},
        setup={
            "settings_display.display.dark_mode": True,
            "settings_display.display.refresh_rate": "60hz",
            "settings_display.display.night_light": night,
            "power.battery_saver.enabled": True,
        },
        tools=[
            "set_dark_mode",
            "get_display_settings",
            "set_battery_saver",
            "set_refresh_rate",
            "set_night_light",
            "get_battery_status",
        ],
        goal=goal,
        plan=[
            Act("Turn dark theme off.", [Call("set_dark_mode", {"enabled": False})], may_fail=True),
            Act(
                "409: battery saver forces dark theme; the user allowed turning it off.",
                [Call("set_battery_saver", {"enabled": False})],
            ),
            Act(
                "Retry now that battery saver is off."
                + (" The refresh rate is no longer capped either." if rate else ""),
                retry,
            ),
            Say(
                "Battery saver was forcing dark theme, so I turned battery saver off; the light theme is back"
                + (f" and the refresh rate is {rate}." if rate else ".")
            ),
        ],
    )


def _ringtone_outage(rng: random.Random) -> Draft:
    """Error recovery with a question: the sound service fails once (503); report the old ringtone, set the new one."""
    old, new = rng.sample(RINGTONES, 2)
    return Draft(
        instruction=pick(
            rng,
            [
                f"What's my ringtone right now? Change it to {new}.",
                f"Tell me my current ringtone, then switch it to {new}.",
                f"Switch my ringtone to {new}, and remind me what it was before.",
            ],
        ),
        params={"old": old, "new": new},
        setup={"settings_display.sound.ringtone": old},
        faults=[
            {
                "tool": "get_sound_settings",
                "kind": "outage",
                "times": 1,
                "code": 503,
                "error": "sound settings service unavailable (503); try again",
            }
        ],
        tools=["get_sound_settings", "set_ringtone", "set_sound_profile", "set_do_not_disturb"],
        goal={"settings_display.sound.ringtone": new},
        answer=[old, new],
        plan=[
            Act("Read the current ringtone.", [Call("get_sound_settings")], may_fail=True),
            Act("503, a temporary outage; retry once.", [Call("get_sound_settings")]),
            Act(f"It is {old}; set {new}.", [Call("set_ringtone", {"name": new})]),
            Say(f"Your ringtone was {old}; it is now {new}."),
        ],
    )


def _wallpaper(rng: random.Random) -> Draft:
    name = rng.choice(WALLPAPERS[1:])
    target = rng.choice(["home", "lock", "both"])
    before = rng.choice([w for w in WALLPAPERS if w != name])
    where = {"home": "home screen", "lock": "lock screen", "both": "home and lock screens"}[target]
    goal = {
        f"settings_display.display.wallpaper.{t}": name for t in (("home", "lock") if target == "both" else (target,))
    }
    return Draft(
        instruction=pick(
            rng,
            [
                f"Use {name} as the wallpaper on my {where}.",
                f"Set the {where} wallpaper to {name}.",
                f"Change my {where} background to {name}.",
            ],
        ),
        params={"name": name, "target": target, "before": before},
        setup={"settings_display.display.wallpaper": {"home": before, "lock": before}},
        tools=["get_display_settings", "set_wallpaper", "set_dark_mode", "set_brightness"],
        goal=goal,
        plan=[
            Act(f"Set {name} on the {where}.", [Call("set_wallpaper", {"name": name, "target": target})]),
            Say(f"{name} is now the wallpaper on your {where}."),
        ],
    )


D.add_template(
    Template(
        "settings_display.brightness_conflict",
        "settings_display",
        "tool_use",
        "Fixed brightness 409 under adaptive brightness; turn adaptive off and retry.",
        _brightness_conflict,
        tags=("error_recovery",),
        difficulty=2,
    )
)
D.add_template(
    Template(
        "settings_display.travel_timezone",
        "settings_display",
        "tool_use",
        "Set a city's time zone (automatic zone off first when needed), maybe 24-hour time.",
        _travel_timezone,
        difficulty=2,
    )
)
D.add_template(
    Template(
        "settings_display.bedtime_from_memory",
        "settings_display",
        "memory",
        "Apply the user's bedtime routine from memory (not the partner's).",
        _bedtime_memory,
        difficulty=2,
    )
)
D.add_template(
    Template(
        "settings_display.skill_display_comfort",
        "settings_display",
        "skills",
        "Load display_comfort; adaptive brightness off before a fixed level; dark theme.",
        _skill_comfort,
        difficulty=2,
    )
)
D.add_template(
    Template(
        "settings_display.language_then_formats",
        "settings_display",
        "tool_use",
        "Change the language, then date/time formats on the follow-up.",
        _language_then_format,
        tags=("multi_turn",),
        difficulty=1,
    )
)
D.add_template(
    Template(
        "settings_display.dark_mode_battery_saver",
        "settings_display",
        "tool_use",
        "Dark theme off is 409 under battery saver; turn saver off (allowed) and retry.",
        _dark_off_saver,
        tags=("error_recovery",),
        difficulty=2,
        domains=("settings_display", "power"),
    )
)
D.add_template(
    Template(
        "settings_display.ringtone_after_outage",
        "settings_display",
        "tool_use",
        "Sound settings 503 then retry; answer the old ringtone and set the new one.",
        _ringtone_outage,
        tags=("error_recovery",),
        difficulty=2,
    )
)
D.add_template(
    Template(
        "settings_display.wallpaper",
        "settings_display",
        "tool_use",
        "Set a named wallpaper on the home, lock or both screens.",
        _wallpaper,
        difficulty=1,
    )
)


def _gui_sound(rng: random.Random) -> Draft:
    """Sub-agent: a GUI agent picks a ringtone or a wallpaper on the Settings screens; the planner reports it."""
    if rng.random() < 0.5:
        name = rng.choice(RINGTONES[1:])
        gui = f"Set the ringtone to {name}"
        goal: dict[str, Any] = {"settings_display.sound.ringtone": name}
        user = pick(
            rng,
            [
                f"Use the Settings app to change my ringtone to {name}.",
                f"Open Settings and pick {name} as my ringtone.",
            ],
        )
        done = f"The GUI agent set your ringtone to {name} in Settings."
    else:
        name = rng.choice(WALLPAPERS[1:])
        gui = f"Set the wallpaper to {name}"
        goal = {"settings_display.display.wallpaper": {"home": name, "lock": name}}
        user = pick(
            rng,
            [
                f"In Settings, make {name} my wallpaper on both screens.",
                f"Go into Settings and set the {name} wallpaper for home and lock screens.",
            ],
        )
        done = f"The GUI agent set {name} as your home and lock screen wallpaper."
    return Draft(
        instruction=user,
        params={"gui": gui, "name": name},
        tools=["get_sound_settings", "get_display_settings"],
        subagent=True,
        goal=goal,
        plan=[
            *gui_agent(
                "Settings",
                gui,
                think="This is app work in Settings; hand it to the GUI agent.",
                run="Run the session and wait for its result.",
            ),
            Say(done),
        ],
    )


D.add_template(
    Template(
        "settings_display.gui_ringtone_or_wallpaper",
        "settings_display",
        "sub_agent",
        "A GUI agent sets a ringtone or wallpaper through the Settings screens.",
        _gui_sound,
        difficulty=1,
    )
)
