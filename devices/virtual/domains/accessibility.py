"""Accessibility: screen readers (TalkBack, Select to Speak), text and display size, magnification, colour,
captions and audio."""

from __future__ import annotations

import random
from typing import Any

from devices.virtual.domains._shared import match_name, switch, switch_check, toggle
from devices.virtual.registry import Domain, Element, P, err, ok
from devices.virtual.tasks import Act, Call, Draft, Say, Template, gui_agent
from devices.virtual.wording import pick
from harness.contract import Code, ToolResult

FONT_SCALES = [0.85, 1.0, 1.15, 1.3, 1.5, 1.8, 2.0]
DISPLAY_SIZES = ["small", "default", "large", "larger", "largest"]
CC_MODES = ["deuteranomaly", "protanomaly", "tritanomaly", "grayscale"]
CC_LABELS = {
    "deuteranomaly": "red-green (deuteranomaly)",
    "protanomaly": "red-green (protanomaly)",
    "tritanomaly": "blue-yellow (tritanomaly)",
    "grayscale": "grayscale",
}
CAPTION_LANGUAGES = ["English", "Spanish", "French", "German", "Portuguese", "Japanese", "Hindi"]
AIDS = {"talkback": "TalkBack", "select_to_speak": "Select to Speak"}

DOMAIN = Domain(
    "accessibility",
    "Accessibility",
    initial={
        "talkback": {"enabled": False, "speech_rate": 1.0},
        "select_to_speak": {"enabled": False},
        "font_scale": 1.0,
        "bold_text": False,
        "display_size": "default",
        "magnification": {"enabled": False, "shortcut": "triple_tap", "zoom": 2.0},
        "high_contrast_text": False,
        "color_correction": {"enabled": False, "mode": "deuteranomaly"},
        "color_inversion": False,
        "captions": {"enabled": False, "language": "English", "text_size": "medium"},
        "mono_audio": False,
        "audio_balance": 0,
        "remove_animations": False,
    },
)
D = DOMAIN


# -- Overview -------------------------------------------------------------------------------------


@D.tool(
    "get_accessibility_settings",
    "Get every accessibility setting: screen readers, text, display, colour, captions, audio.",
    read_only=True,
    cases=[ok({})],
)
def get_accessibility_settings(phone, s, args):
    data = {k: (dict(v) if isinstance(v, dict) else v) for k, v in s.items()}
    return ToolResult.ok("accessibility settings", data)


# -- Screen readers -------------------------------------------------------------------------------


@D.tool(
    "get_talkback_status",
    "Get whether the TalkBack screen reader is on, and its speech rate.",
    read_only=True,
    cases=[ok({})],
)
def get_talkback_status(phone, s, args):
    return ToolResult.ok("TalkBack " + ("on" if s["talkback"]["enabled"] else "off"), dict(s["talkback"]))


@D.tool(
    "get_select_to_speak_status",
    "Get whether Select to Speak (read selected text aloud) is on.",
    read_only=True,
    cases=[ok({})],
)
def get_select_to_speak_status(phone, s, args):
    return ToolResult.ok(
        "Select to Speak " + ("on" if s["select_to_speak"]["enabled"] else "off"), dict(s["select_to_speak"])
    )


@D.tool(
    "set_talkback",
    "Turn the TalkBack screen reader on or off, optionally with a speech rate. "
    "Only one screen reader can run: fails with 409 while Select to Speak is on.",
    {"enabled": P.boolean("true to turn TalkBack on"), "speech_rate": P.number("speech rate, 0.5 to 3.0", 0.5, 3.0)},
    ["enabled"],
    codes=(409,),
    cases=[
        ok({"enabled": True}),
        ok({"enabled": True, "speech_rate": 1.5}),
        ok({"enabled": False}),
        err(409, {"enabled": True}, {"accessibility.select_to_speak.enabled": True}),
        err(400, {"enabled": True, "speech_rate": 9}),
    ],
    prerequisites=["Select to Speak off"],
    check=lambda ph, a: ph.state["accessibility"]["talkback"]["enabled"] == a["enabled"],
)
def set_talkback(phone, s, args):
    tb = s["talkback"]
    if args["enabled"] and s["select_to_speak"]["enabled"]:
        return ToolResult.fail(
            Code.CONFLICT,
            "Select to Speak is on; turn it off before starting TalkBack (only one screen reader at a time)",
        )
    rate = float(args.get("speech_rate", tb["speech_rate"]))
    if tb["enabled"] != args["enabled"] or tb["speech_rate"] != rate:
        tb["enabled"], tb["speech_rate"] = args["enabled"], rate
        phone.log("accessibility.talkback", enabled=args["enabled"], speech_rate=rate)
    return ToolResult.ok(f"TalkBack {'on' if tb['enabled'] else 'off'}", dict(tb))


@D.tool(
    "set_select_to_speak",
    "Turn Select to Speak on or off. Fails with 409 while TalkBack is on.",
    {"enabled": P.boolean("true to turn Select to Speak on")},
    ["enabled"],
    codes=(409,),
    cases=[
        ok({"enabled": True}),
        ok({"enabled": False}, {"accessibility.select_to_speak.enabled": True}),
        err(409, {"enabled": True}, {"accessibility.talkback.enabled": True}),
    ],
    prerequisites=["TalkBack off"],
    check=lambda ph, a: ph.state["accessibility"]["select_to_speak"]["enabled"] == a["enabled"],
)
def set_select_to_speak(phone, s, args):
    if args["enabled"] and s["talkback"]["enabled"]:
        return ToolResult.fail(
            Code.CONFLICT,
            "TalkBack is on; turn it off before starting Select to Speak (only one screen reader at a time)",
        )
    sts = s["select_to_speak"]
    if sts["enabled"] != args["enabled"]:
        sts["enabled"] = args["enabled"]
        phone.log("accessibility.select_to_speak", enabled=args["enabled"])
    return ToolResult.ok(f"Select to Speak {'on' if sts['enabled'] else 'off'}", dict(sts))


# -- Text and display -----------------------------------------------------------------------------


@D.tool(
    "set_font_size",
    "Set the system font scale: one of 0.85, 1.0 (default), 1.15, 1.3, 1.5, 1.8, 2.0.",
    {"scale": P.number("font scale", 0.85, 2.0)},
    ["scale"],
    codes=(400,),
    cases=[
        ok({"scale": 1.3}),
        ok({"scale": 1}),
        err(400, {"scale": 1.4}, note="not an offered step"),
        err(400, {"scale": 3}),
    ],
    check=lambda ph, a: ph.state["accessibility"]["font_scale"] == a["scale"],
)
def set_font_size(phone, s, args):
    scale = float(args["scale"])
    if scale not in FONT_SCALES:
        return ToolResult.fail(
            Code.BAD_ARGUMENT,
            f"font scale {args['scale']} is not offered; choose one of " + ", ".join(f"{x:g}" for x in FONT_SCALES),
        )
    if s["font_scale"] != scale:
        s["font_scale"] = scale
        phone.log("accessibility.font_scale", scale=scale)
    return ToolResult.ok(f"font size {scale:g}x", {"font_scale": scale})


@D.tool(
    "set_bold_text",
    "Make all system text bold.",
    {"enabled": P.boolean("true for bold text")},
    ["enabled"],
    cases=[ok({"enabled": True})],
    check=switch_check("accessibility", "bold_text"),
)
def set_bold_text(phone, s, args):
    return switch(phone, s, "bold_text", args["enabled"], "bold text", "accessibility.bold_text")


@D.tool(
    "set_display_size",
    "Set the display size (how big icons and everything on screen are).",
    {"size": P.enum(DISPLAY_SIZES, "display size")},
    ["size"],
    cases=[ok({"size": "large"}), err(400, {"size": "huge"})],
    check=lambda ph, a: ph.state["accessibility"]["display_size"] == a["size"],
)
def set_display_size(phone, s, args):
    if s["display_size"] != args["size"]:
        s["display_size"] = args["size"]
        phone.log("accessibility.display_size", size=args["size"])
    return ToolResult.ok(f"display size {args['size']}", {"display_size": args["size"]})


@D.tool(
    "set_high_contrast_text",
    "Draw text with a high-contrast outline.",
    {"enabled": P.boolean("true to turn on")},
    ["enabled"],
    cases=[ok({"enabled": True})],
    check=switch_check("accessibility", "high_contrast_text"),
)
def set_high_contrast_text(phone, s, args):
    return switch(
        phone, s, "high_contrast_text", args["enabled"], "high-contrast text", "accessibility.high_contrast_text"
    )


@D.tool(
    "set_magnification",
    "Turn screen magnification on or off, with its shortcut and zoom level.",
    {
        "enabled": P.boolean("true to turn magnification on"),
        "shortcut": P.enum(["triple_tap", "accessibility_button", "volume_keys"], "how magnification is started"),
        "zoom": P.number("zoom factor, 1.5 to 8", 1.5, 8.0),
    },
    ["enabled"],
    cases=[
        ok({"enabled": True}),
        ok({"enabled": True, "shortcut": "accessibility_button", "zoom": 3}),
        err(400, {"enabled": True, "zoom": 12}),
        err(400, {"enabled": True, "shortcut": "shake"}),
    ],
    check=lambda ph, a: ph.state["accessibility"]["magnification"]["enabled"] == a["enabled"],
)
def set_magnification(phone, s, args):
    m = s["magnification"]
    new = {
        "enabled": args["enabled"],
        "shortcut": args.get("shortcut", m["shortcut"]),
        "zoom": float(args.get("zoom", m["zoom"])),
    }
    if new != m:
        s["magnification"] = new
        phone.log("accessibility.magnification", **new)
    return ToolResult.ok(f"magnification {'on' if new['enabled'] else 'off'}", dict(new))


# -- Colour -----------------------------------------------------------------------------------------


@D.tool(
    "set_color_correction",
    "Turn colour correction on (with a mode) or off. Fails with 409 while colour inversion is on.",
    {"enabled": P.boolean("true to turn colour correction on"), "mode": P.enum(CC_MODES, "correction mode")},
    ["enabled"],
    codes=(409,),
    cases=[
        ok({"enabled": True, "mode": "protanomaly"}),
        ok({"enabled": False}),
        err(409, {"enabled": True, "mode": "grayscale"}, {"accessibility.color_inversion": True}),
        err(400, {"enabled": True, "mode": "sepia"}),
    ],
    prerequisites=["colour inversion off"],
    check=lambda ph, a: (
        ph.state["accessibility"]["color_correction"]["enabled"] == a["enabled"]
        and ph.state["accessibility"]["color_correction"]["mode"]
        == a.get("mode", ph.state["accessibility"]["color_correction"]["mode"])
    ),
)
def set_color_correction(phone, s, args):
    if args["enabled"] and s["color_inversion"]:
        return ToolResult.fail(Code.CONFLICT, "colour inversion is on; turn it off before using colour correction")
    cc = s["color_correction"]
    new = {"enabled": args["enabled"], "mode": args.get("mode", cc["mode"])}
    if new != cc:
        s["color_correction"] = new
        phone.log("accessibility.color_correction", **new)
    return ToolResult.ok(f"colour correction {'on (' + new['mode'] + ')' if new['enabled'] else 'off'}", dict(new))


@D.tool(
    "set_color_inversion",
    "Invert screen colours. Fails with 409 while colour correction is on.",
    {"enabled": P.boolean("true to invert colours")},
    ["enabled"],
    codes=(409,),
    cases=[ok({"enabled": True}), err(409, {"enabled": True}, {"accessibility.color_correction.enabled": True})],
    prerequisites=["colour correction off"],
    check=switch_check("accessibility", "color_inversion"),
)
def set_color_inversion(phone, s, args):
    if args["enabled"] and s["color_correction"]["enabled"]:
        return ToolResult.fail(Code.CONFLICT, "colour correction is on; turn it off before inverting colours")
    return switch(phone, s, "color_inversion", args["enabled"], "colour inversion", "accessibility.color_inversion")


# -- Hearing --------------------------------------------------------------------------------------


@D.tool(
    "set_captions",
    "Turn live captions on or off, with caption language and text size.",
    {
        "enabled": P.boolean("true to show captions"),
        "language": P.string("caption language, e.g. Spanish"),
        "text_size": P.enum(["small", "medium", "large", "very_large"], "caption text size"),
    },
    ["enabled"],
    codes=(404,),
    cases=[
        ok({"enabled": True}),
        ok({"enabled": True, "language": "Spanish", "text_size": "large"}),
        err(404, {"enabled": True, "language": "Klingon"}),
        err(400, {"enabled": True, "text_size": "giant"}),
    ],
    check=lambda ph, a: ph.state["accessibility"]["captions"]["enabled"] == a["enabled"],
)
def set_captions(phone, s, args):
    c = s["captions"]
    lang = args.get("language", c["language"])
    match = match_name(lang, CAPTION_LANGUAGES)
    if match is None:
        return ToolResult.fail(
            Code.NOT_FOUND, f"captions are not available in {lang}; available: {', '.join(CAPTION_LANGUAGES)}"
        )
    new = {"enabled": args["enabled"], "language": match, "text_size": args.get("text_size", c["text_size"])}
    if new != c:
        s["captions"] = new
        phone.log("accessibility.captions", **new)
    return ToolResult.ok(f"captions {'on' if new['enabled'] else 'off'}", dict(new))


@D.tool(
    "set_mono_audio",
    "Combine left and right channels into mono (useful with one earbud or hearing loss in one ear).",
    {"enabled": P.boolean("true for mono audio")},
    ["enabled"],
    cases=[ok({"enabled": True})],
    check=switch_check("accessibility", "mono_audio"),
)
def set_mono_audio(phone, s, args):
    return switch(phone, s, "mono_audio", args["enabled"], "mono audio", "accessibility.mono_audio")


@D.tool(
    "set_audio_balance",
    "Shift audio balance between left (-100) and right (100); 0 is centred.",
    {"balance": P.integer("balance from -100 (left) to 100 (right)", -100, 100)},
    ["balance"],
    cases=[ok({"balance": 40}), err(400, {"balance": 150}), err(400, {"balance": "left"})],
    check=lambda ph, a: ph.state["accessibility"]["audio_balance"] == a["balance"],
)
def set_audio_balance(phone, s, args):
    if s["audio_balance"] != args["balance"]:
        s["audio_balance"] = args["balance"]
        phone.log("accessibility.audio_balance", balance=args["balance"])
    return ToolResult.ok(f"audio balance {args['balance']}", {"audio_balance": args["balance"]})


@D.tool(
    "set_remove_animations",
    "Remove animations system-wide (reduces motion).",
    {"enabled": P.boolean("true to remove")},
    ["enabled"],
    cases=[ok({"enabled": True})],
    check=switch_check("accessibility", "remove_animations"),
)
def set_remove_animations(phone, s, args):
    return switch(
        phone, s, "remove_animations", args["enabled"], "remove animations", "accessibility.remove_animations"
    )


D.skill(
    "screen_reader",
    "Screen readers",
    "Switch between TalkBack and Select to Speak, and tune the speech rate.",
    ["get_talkback_status", "get_select_to_speak_status", "set_talkback", "set_select_to_speak"],
    [
        "Query both readers first; the two queries are independent, so issue them in one turn.",
        "Only one screen reader can run: turn the other one off and wait for the result before turning one on.",
        "Do not change font size, display size or magnification unless the user asked for it.",
    ],
)

D.skill(
    "vision_adjustments",
    "Vision adjustments",
    "Make the screen easier to see: font and display size, bold and high-contrast text, magnification.",
    [
        "get_accessibility_settings",
        "set_font_size",
        "set_display_size",
        "set_bold_text",
        "set_high_contrast_text",
        "set_magnification",
    ],
    [
        "Font scale takes only the offered steps: 0.85, 1.0, 1.15, 1.3, 1.5, 1.8, 2.0.",
        "'One size bigger' means the next offered step above the current scale; read the current value first.",
        "Change only the settings the user named.",
    ],
)


# -- App screen -----------------------------------------------------------------------------------

_TOGGLES = [
    ("talkback", "TalkBack", lambda s: s["talkback"]["enabled"], "set_talkback"),
    ("select_to_speak", "Select to Speak", lambda s: s["select_to_speak"]["enabled"], "set_select_to_speak"),
    ("magnification", "Magnification", lambda s: s["magnification"]["enabled"], "set_magnification"),
    ("high_contrast_text", "High-contrast text", lambda s: s["high_contrast_text"], "set_high_contrast_text"),
    ("bold_text", "Bold text", lambda s: s["bold_text"], "set_bold_text"),
    ("color_correction", "Color correction", lambda s: s["color_correction"]["enabled"], "set_color_correction"),
    ("color_inversion", "Color inversion", lambda s: s["color_inversion"], "set_color_inversion"),
    ("captions", "Live captions", lambda s: s["captions"]["enabled"], "set_captions"),
    ("mono_audio", "Mono audio", lambda s: s["mono_audio"], "set_mono_audio"),
    ("remove_animations", "Remove animations", lambda s: s["remove_animations"], "set_remove_animations"),
]


@D.app("Accessibility", package="com.android.settings.accessibility")
def accessibility_screen(phone, route):
    s = phone.state["accessibility"]
    if route == "font":
        els = [Element("hdr_font", f"Font size (now {s['font_scale']:g}x)", kind="header")]
        for sc in FONT_SCALES:
            els.append(
                Element(
                    f"font:{sc:g}",
                    f"{sc:g}x" + (" (current)" if sc == s["font_scale"] else ""),
                    kind="item",
                    clickable=True,
                    tool=("set_font_size", {"scale": sc}),
                )
            )
        return "Font size", els
    if route == "display":
        els = [Element("hdr_display", f"Display size (now {s['display_size']})", kind="header")]
        for size in DISPLAY_SIZES:
            els.append(
                Element(
                    f"display:{size}",
                    size.capitalize(),
                    kind="item",
                    clickable=True,
                    tool=("set_display_size", {"size": size}),
                )
            )
        return "Display size", els
    els = [Element("hdr_readers", "Screen readers", kind="header")]
    for key, label, get, tool in _TOGGLES:
        if key == "magnification":
            els.append(Element("hdr_display_text", "Display & text", kind="header"))
            els.append(Element("font", f"Font size: {s['font_scale']:g}x", kind="item", clickable=True, to="font"))
            els.append(
                Element("display", f"Display size: {s['display_size']}", kind="item", clickable=True, to="display")
            )
        if key == "captions":
            els.append(Element("hdr_audio", "Audio & captions", kind="header"))
        on = get(s)
        els.append(toggle(key, label, on, tool))
    return "Accessibility", els


@D.gui_script("Accessibility")
def accessibility_gui(instruction: str) -> list[tuple[Any, ...]] | None:
    """Scripted GUI agent: flip a named switch, or pick a font scale ('font size 1.3')."""
    low = instruction.lower()
    if "font" in low:
        for sc in sorted(FONT_SCALES, key=lambda x: -len(f"{x:g}")):
            if f"{sc:g}" in low:
                return [
                    ("tap", "font"),
                    ("tap", f"font:{sc:g}"),
                    ("confirm", f"Font size (now {sc:g}x)", f"font {sc:g}x"),
                ]
        return None
    for key, label, _get, _tool in _TOGGLES:
        if label.lower() in low or key.replace("_", " ") in low:
            return [("tap", key), ("confirm", label, f"{label} toggled")]
    return None


# -- Task templates -------------------------------------------------------------------------------


def _reading_aid(rng: random.Random) -> Draft:
    """Showcase 4: memory names the routine's reading aid; query both aids in parallel, enable it, disable the
    other, and leave the font size alone."""
    gold = rng.choice(list(AIDS))
    other = "select_to_speak" if gold == "talkback" else "talkback"
    gname, oname = AIDS[gold], AIDS[other]
    font = rng.choice([1.15, 1.3, 1.5, 1.8])
    relative = rng.choice(["my dad", "my grandmother", "my aunt"])
    memory = [
        {
            "id": "m-reading-routine",
            "category": "routines_habits",
            "title": "Evening reading routine",
            "content": f"When I read articles in the evening I use {gname} as my reading aid, never {oname}.",
            "tags": ["reading", "accessibility"],
        },
        {
            "id": "m-relative-phone",
            "category": "important_info",
            "title": f"Setting up {relative}'s phone",
            "content": f"{relative.capitalize()} reads with {oname} as the reading aid and a huge font (2.0).",
            "tags": ["family", "accessibility"],
        },
        {
            "id": "m-eye-exam",
            "category": "important_event",
            "title": "Eye exam",
            "content": "Eye exam with Dr. Osei on the 14th; she suggested bigger text for reading.",
            "tags": ["health"],
        },
        {
            "id": "m-podcasts",
            "category": "preferences",
            "title": "Podcasts",
            "content": "Morning routine: I listen to podcasts at 1.5x speed.",
            "tags": ["audio"],
        },
        {
            "id": "m-night",
            "category": "routines_habits",
            "title": "Night screen",
            "content": "After 10pm I prefer dark mode and low brightness.",
            "tags": ["display"],
        },
    ]
    rng.shuffle(memory)
    setter = {"talkback": "set_talkback", "select_to_speak": "set_select_to_speak"}
    return Draft(
        instruction=pick(
            rng,
            [
                "The wrong reading aid is on. Put it back the way my reading routine has it.",
                "My phone's reading helper isn't the one I normally use. Fix it to match my routine.",
                "Set up my reading aid the way I usually have it for reading.",
            ],
        ),
        params={"gold": gold, "other": other, "font": font},
        setup={f"accessibility.{other}.enabled": True, "accessibility.font_scale": font},
        memory=memory,
        tools=[
            "get_talkback_status",
            "get_select_to_speak_status",
            "set_talkback",
            "set_select_to_speak",
            "set_font_size",
            "set_magnification",
            "get_accessibility_settings",
        ],
        goal={f"accessibility.{gold}.enabled": True, f"accessibility.{other}.enabled": False},
        plan=[
            Act(
                "Which reading aid does the routine use? Search memory.",
                [Call("search_user_memory", {"query": "reading aid routine", "maxResults": 5})],
            ),
            Act(
                f"The routine uses {gname}. Check both aids; the queries are independent, so issue them together.",
                [Call("get_talkback_status"), Call("get_select_to_speak_status")],
            ),
            Act(
                f"{oname} is on and only one reader can run; turn it off first.",
                [Call(setter[other], {"enabled": False})],
            ),
            Act(f"Now turn {gname} on.", [Call(setter[gold], {"enabled": True})]),
            Say(
                f"Your reading routine uses {gname}: it is on now and {oname} is off. "
                f"I left your font size at {font:g}x."
            ),
        ],
    )


_VISION_CHANGES = [
    ("font", "set_font_size"),
    ("bold", "set_bold_text"),
    ("contrast", "set_high_contrast_text"),
    ("display", "set_display_size"),
    ("magnify", "set_magnification"),
]


def _low_vision(rng: random.Random) -> Draft:
    """Several independent vision settings in one request; parallel calls, nothing else touched."""
    chosen = rng.sample([c for c, _ in _VISION_CHANGES], rng.choice([2, 3]))
    goal: dict[str, Any] = {}
    calls: list[Call] = []
    parts: list[str] = []
    setup: dict[str, Any] = {}
    for c in chosen:
        if c == "font":
            cur, want = rng.sample([1.0, 1.15, 1.3, 1.5, 1.8], 2)
            setup["accessibility.font_scale"] = cur
            goal["accessibility.font_scale"] = want
            calls.append(Call("set_font_size", {"scale": want}))
            parts.append(f"font size {want:g}")
        elif c == "bold":
            goal["accessibility.bold_text"] = True
            calls.append(Call("set_bold_text", {"enabled": True}))
            parts.append("bold text")
        elif c == "contrast":
            goal["accessibility.high_contrast_text"] = True
            calls.append(Call("set_high_contrast_text", {"enabled": True}))
            parts.append("high-contrast text")
        elif c == "display":
            want = rng.choice(["large", "larger", "largest"])
            goal["accessibility.display_size"] = want
            calls.append(Call("set_display_size", {"size": want}))
            parts.append(f"display size {want}")
        else:
            zoom = rng.choice([2.0, 3.0, 4.0])
            goal["accessibility.magnification.enabled"] = True
            goal["accessibility.magnification.zoom"] = zoom
            calls.append(Call("set_magnification", {"enabled": True, "zoom": zoom}))
            parts.append(f"magnification at {zoom:g}x")
    listed = ", ".join(parts[:-1]) + " and " + parts[-1]
    return Draft(
        instruction=pick(
            rng,
            [
                f"I'm struggling to read the screen. Turn on {listed}.",
                f"Please set {listed}.",
                f"Accessibility: {listed}, nothing else.",
            ],
        ),
        params={"chosen": chosen},
        setup=setup,
        # The setters needed, plus three plausible distractors (unrequested vision setters and neighbours).
        tools=[t for c, t in _VISION_CHANGES if c in chosen]
        + rng.sample([t for c, t in _VISION_CHANGES if c not in chosen] + ["set_talkback", "set_color_inversion"], 3)
        + ["get_accessibility_settings"],
        goal=goal,
        plan=[Act("These settings are independent; set them in one turn.", calls), Say(f"Done: {listed}.")],
    )


def _color_conflict(rng: random.Random) -> Draft:
    """Error recovery: colour correction is refused (409) while inversion is on; turn inversion off, retry."""
    mode = rng.choice(CC_MODES)
    label = CC_LABELS[mode]
    # Unrelated settings the user already has vary per seed; they must survive the recovery untouched.
    setup: dict[str, Any] = {
        "accessibility.color_inversion": True,
        "accessibility.high_contrast_text": rng.random() < 0.5,
        "accessibility.font_scale": rng.choice([1.0, 1.15, 1.3]),
        "accessibility.color_correction.mode": rng.choice(CC_MODES),
    }
    return Draft(
        instruction=pick(
            rng,
            [
                f"Turn on color correction for {label}.",
                f"I'm colour blind ({label}); correct the screen colours.",
                f"Enable colour correction, {label} mode.",
            ],
        ),
        params={"mode": mode},
        setup=setup,
        tools=["set_color_correction", "set_color_inversion", "get_accessibility_settings", "set_high_contrast_text"],
        goal={"accessibility.color_correction.enabled": True, "accessibility.color_correction.mode": mode},
        allowed=["accessibility.color_inversion"],
        plan=[
            Act(
                f"Turn on colour correction ({mode}).",
                [Call("set_color_correction", {"enabled": True, "mode": mode})],
                may_fail=True,
            ),
            Act(
                "409: colour inversion is on and the two can't be combined; turn inversion off.",
                [Call("set_color_inversion", {"enabled": False})],
            ),
            Act("Retry colour correction.", [Call("set_color_correction", {"enabled": True, "mode": mode})]),
            Say(
                f"Colour correction is on ({label}). Colour inversion was on and blocked it, so I turned inversion off."
            ),
        ],
    )


def _skill_talkback(rng: random.Random) -> Draft:
    """Skills: load screen_reader; query both readers, stop Select to Speak if it runs, start TalkBack at a rate."""
    rate = rng.choice([0.8, 1.25, 1.5, 2.0])
    sts_on = rng.random() < 0.6
    setup = {"accessibility.select_to_speak.enabled": True} if sts_on else {}
    goal: dict[str, Any] = {"accessibility.talkback.enabled": True, "accessibility.talkback.speech_rate": rate}
    plan: list[Any] = [
        Act("Load the screen reader skill.", [Call("skill__screen_reader", {"reason": "turn on TalkBack"})]),
        Act("Rule: query both readers in one turn.", [Call("get_talkback_status"), Call("get_select_to_speak_status")]),
    ]
    if sts_on:
        plan.append(
            Act("Select to Speak is running; turn it off first.", [Call("set_select_to_speak", {"enabled": False})])
        )
        goal["accessibility.select_to_speak.enabled"] = False
    plan += [
        Act(f"Start TalkBack at {rate:g}x.", [Call("set_talkback", {"enabled": True, "speech_rate": rate})]),
        Say(
            f"TalkBack is on at {rate:g}x speech rate"
            + (" (Select to Speak was on, so I turned it off)." if sts_on else ".")
        ),
    ]
    return Draft(
        instruction=pick(
            rng,
            [
                f"Turn on TalkBack, speech rate {rate:g}.",
                f"Start the TalkBack screen reader at {rate:g}x speed.",
                f"I need TalkBack on, reading at {rate:g}x.",
            ],
        ),
        params={"rate": rate, "sts_on": sts_on},
        setup=setup,
        tools=["get_accessibility_settings", "set_font_size"],
        skills=["screen_reader", "vision_adjustments", "developer_tools"],
        goal=goal,
        plan=plan,
    )


def _captions(rng: random.Random) -> Draft:
    """Multi-turn: captions in a language, then a follow-up hearing adjustment."""
    lang = rng.choice(CAPTION_LANGUAGES[1:])
    size = rng.choice(["large", "very_large"])
    follow = rng.choice(["mono", "balance"])
    bal = rng.choice([-40, -25, 25, 40])
    side = "right" if bal > 0 else "left"
    goal: dict[str, Any] = {
        "accessibility.captions.enabled": True,
        "accessibility.captions.language": lang,
        "accessibility.captions.text_size": size,
    }
    if follow == "mono":
        goal["accessibility.mono_audio"] = True
        fu = "Also, I only have one earbud in. Make sure I hear both channels in it."
        act = Act("One earbud: combine channels with mono audio.", [Call("set_mono_audio", {"enabled": True})])
        done = "Mono audio is on, so one earbud plays both channels."
    else:
        goal["accessibility.audio_balance"] = bal
        fu = f"And my {side} ear is better; shift the audio balance {abs(bal)} toward the {side}."
        act = Act(f"Shift balance to {bal}.", [Call("set_audio_balance", {"balance": bal})])
        done = f"Audio balance is now {bal} ({abs(bal)} toward the {side})."
    return Draft(
        instruction=pick(
            rng,
            [
                f"Turn on live captions in {lang}, {size.replace('_', ' ')} text.",
                f"I want captions for videos, in {lang}, with {size.replace('_', ' ')} text.",
            ],
        ),
        params={"lang": lang, "size": size, "follow": follow, "balance": bal},
        tools=["set_captions", "set_mono_audio", "set_audio_balance", "get_accessibility_settings", "set_font_size"],
        followups=[fu],
        goal=goal,
        plan=[
            Act(
                "Enable captions with language and size.",
                [Call("set_captions", {"enabled": True, "language": lang, "text_size": size})],
            ),
            Say(f"Live captions are on in {lang} with {size.replace('_', ' ')} text."),
            act,
            Say(done),
        ],
    )


def _font_step_outage(rng: random.Random) -> Draft:
    """Error recovery: the settings query hits a 503 once; retry, then set the next font step up."""
    cur = rng.choice(FONT_SCALES[:-1])
    nxt = FONT_SCALES[FONT_SCALES.index(cur) + 1]
    return Draft(
        instruction=pick(
            rng,
            [
                "Make the text one size bigger than it is now.",
                "Bump the font size up one step.",
                "Font is a bit small; go one notch larger.",
            ],
        ),
        params={"current": cur, "next": nxt},
        setup={"accessibility.font_scale": cur},
        faults=[
            {
                "tool": "get_accessibility_settings",
                "kind": "outage",
                "times": 1,
                "code": 503,
                "error": "settings service unavailable (503); retry",
            }
        ],
        tools=["get_accessibility_settings", "set_font_size", "set_display_size", "set_bold_text"],
        goal={"accessibility.font_scale": nxt},
        plan=[
            Act("Read the current font scale.", [Call("get_accessibility_settings")], may_fail=True),
            Act("503 is a temporary outage; retry once.", [Call("get_accessibility_settings")]),
            Act(f"The font is {cur:g}x; the next offered step is {nxt:g}x.", [Call("set_font_size", {"scale": nxt})]),
            Say(f"Font size went from {cur:g}x to {nxt:g}x."),
        ],
    )


def _hearing_memory(rng: random.Random) -> Draft:
    """Memory: the user's hearing set-up (balance side and amount, mono) is planted among neighbours."""
    bal = rng.choice([-60, -30, 30, 60])
    side = "right" if bal > 0 else "left"
    mono = rng.random() < 0.5
    memory = [
        {
            "id": "m-hearing",
            "category": "important_info",
            "title": "Hearing set-up",
            "content": f"Audiologist's advice: audio balance {bal:+d} (toward my {side} ear)"
            + (", with mono audio on." if mono else "; keep stereo (mono off)."),
            "tags": ["hearing", "audio"],
        },
        {
            "id": "m-partner-hearing",
            "category": "important_info",
            "title": "Sam's hearing aid",
            "content": f"Sam's hearing aid works best with balance {-bal:+d} and mono on.",
            "tags": ["family", "audio"],
        },
        {
            "id": "m-audiologist",
            "category": "important_event",
            "title": "Audiologist appointment",
            "content": "Follow-up with the audiologist on March 3.",
            "tags": ["health"],
        },
        {
            "id": "m-music",
            "category": "preferences",
            "title": "Music",
            "content": "I like bass boost on when listening to music.",
            "tags": ["audio"],
        },
    ]
    rng.shuffle(memory)
    goal: dict[str, Any] = {"accessibility.audio_balance": bal}
    calls = [Call("set_audio_balance", {"balance": bal})]
    setup: dict[str, Any] = {}
    if mono:
        goal["accessibility.mono_audio"] = True
        calls.append(Call("set_mono_audio", {"enabled": True}))
    else:
        setup["accessibility.mono_audio"] = rng.random() < 0.5
        if setup["accessibility.mono_audio"]:
            goal["accessibility.mono_audio"] = False
            calls.append(Call("set_mono_audio", {"enabled": False}))
    return Draft(
        instruction=pick(
            rng,
            [
                "Set up the audio the way my audiologist recommended for me.",
                "Apply my hearing settings from my notes.",
                "Configure the sound for my hearing, like I saved.",
            ],
        ),
        params={"balance": bal, "mono": mono},
        setup=setup,
        memory=memory,
        tools=["set_audio_balance", "set_mono_audio", "set_captions", "get_accessibility_settings"],
        goal=goal,
        plan=[
            Act(
                "Find the user's own hearing advice in memory.",
                [Call("search_user_memory", {"query": "my hearing audio balance audiologist", "maxResults": 5})],
            ),
            Act("The user's entry (not Sam's) gives the balance and mono setting; apply them together.", calls),
            Say(
                f"Audio balance is {bal:+d} toward your {side} ear and mono audio is {'on' if mono else 'off'}, "
                "as your audiologist advised."
            ),
        ],
    )


D.add_template(
    Template(
        "accessibility.reading_aid_from_memory",
        "accessibility",
        "memory",
        "Memory picks the reading aid; query both in parallel, enable it, disable the other, keep the font.",
        _reading_aid,
        difficulty=3,
    )
)
D.add_template(
    Template(
        "accessibility.low_vision_setup",
        "accessibility",
        "tool_use",
        "Apply 2-3 named vision settings in one turn without touching others.",
        _low_vision,
        difficulty=1,
    )
)
D.add_template(
    Template(
        "accessibility.color_correction_conflict",
        "accessibility",
        "tool_use",
        "Colour correction 409 while inversion is on; turn inversion off and retry.",
        _color_conflict,
        tags=("error_recovery",),
        difficulty=2,
    )
)
D.add_template(
    Template(
        "accessibility.skill_talkback",
        "accessibility",
        "skills",
        "Load screen_reader, stop Select to Speak if running, start TalkBack at a speech rate.",
        _skill_talkback,
        difficulty=2,
    )
)
D.add_template(
    Template(
        "accessibility.captions_then_audio",
        "accessibility",
        "tool_use",
        "Captions in a language and size, then a follow-up audio adjustment.",
        _captions,
        tags=("multi_turn",),
        difficulty=2,
    )
)
D.add_template(
    Template(
        "accessibility.font_step_after_outage",
        "accessibility",
        "tool_use",
        "Settings query 503 then retry; set the next font step.",
        _font_step_outage,
        tags=("error_recovery",),
        difficulty=2,
    )
)
D.add_template(
    Template(
        "accessibility.hearing_from_memory",
        "accessibility",
        "memory",
        "Apply the user's own hearing set-up from memory, not a relative's.",
        _hearing_memory,
        difficulty=2,
    )
)


def _gui_toggle(rng: random.Random) -> Draft:
    """Sub-agent: a GUI agent flips one accessibility switch (or picks a font step) on the Accessibility screens."""
    if rng.random() < 0.4:
        scale = rng.choice([1.15, 1.3, 1.5, 1.8])
        gui = f"Set the font size to {scale:g}"
        goal: dict[str, Any] = {"accessibility.font_scale": scale}
        user = pick(
            rng,
            [
                f"Open Accessibility and set the font size to {scale:g}.",
                f"Use the Accessibility screen to make the font {scale:g}x.",
            ],
        )
        done = f"The GUI agent set the font size to {scale:g}x."
    else:
        key, label = rng.choice(
            [
                ("high_contrast_text", "High-contrast text"),
                ("bold_text", "Bold text"),
                ("mono_audio", "Mono audio"),
                ("remove_animations", "Remove animations"),
            ]
        )
        gui = f"Turn on {label}"
        goal = {f"accessibility.{key}": True}
        user = pick(
            rng,
            [
                f"Go into the Accessibility settings and turn on {label.lower()}.",
                f"Use the Accessibility app to enable {label.lower()}.",
            ],
        )
        done = f"The GUI agent turned on {label.lower()}."
    return Draft(
        instruction=user,
        params={"gui": gui},
        tools=["get_accessibility_settings", "set_font_size"],
        subagent=True,
        goal=goal,
        plan=[
            *gui_agent(
                "Accessibility",
                gui,
                think="The user wants it done in the Accessibility app; hand it to the GUI agent.",
                run="Run the session and wait for its result.",
            ),
            Say(done),
        ],
    )


D.add_template(
    Template(
        "accessibility.gui_setting",
        "accessibility",
        "sub_agent",
        "A GUI agent flips an accessibility switch or picks a font step.",
        _gui_toggle,
        difficulty=1,
    )
)


def _false_claim(rng: random.Random) -> Draft:
    """Multi-turn: an earlier reply claimed TalkBack was on although the tool had answered 409; trust the evidence."""
    rate = rng.choice([1.0, 1.25, 1.5])
    font = rng.choice([1.0, 1.15, 1.3])
    history = [
        {"role": "user", "content": f"Turn on TalkBack at {rate:g}x speed."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "h1",
                    "type": "function",
                    "function": {"name": "set_talkback", "arguments": f'{{"enabled": true, "speech_rate": {rate}}}'},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "h1",
            "content": '{"success":false,"error":"Select to Speak is on; turn it off before starting TalkBack '
            '(only one screen reader at a time)","code":409}',
        },
        {"role": "assistant", "content": f"TalkBack is on now at {rate:g}x."},
    ]
    return Draft(
        instruction=pick(
            rng,
            [
                "TalkBack isn't saying anything. Is it actually on?",
                "Hm, the screen reader is silent. Did TalkBack really start?",
                "I don't hear TalkBack. Please check and fix it.",
            ],
        ),
        params={"rate": rate, "font": font},
        setup={"accessibility.select_to_speak.enabled": True, "accessibility.font_scale": font},
        history=history,
        tools=[
            "get_talkback_status",
            "get_select_to_speak_status",
            "set_talkback",
            "set_select_to_speak",
            "set_font_size",
            "get_accessibility_settings",
        ],
        goal={
            "accessibility.talkback.enabled": True,
            "accessibility.talkback.speech_rate": rate,
            "accessibility.select_to_speak.enabled": False,
        },
        plan=[
            Act(
                "The earlier call actually failed with 409; check both readers now.",
                [Call("get_talkback_status"), Call("get_select_to_speak_status")],
            ),
            Act(
                "Select to Speak is still on and blocks TalkBack; turn it off first.",
                [Call("set_select_to_speak", {"enabled": False})],
            ),
            Act(f"Now start TalkBack at {rate:g}x.", [Call("set_talkback", {"enabled": True, "speech_rate": rate})]),
            Say(
                f"Sorry, it wasn't on: Select to Speak was blocking it. I turned Select to Speak off and TalkBack is "
                f"now running at {rate:g}x."
            ),
        ],
    )


D.add_template(
    Template(
        "accessibility.talkback_after_false_claim",
        "accessibility",
        "tool_use",
        "Trust the 409 over an earlier wrong claim: stop Select to Speak, then start TalkBack.",
        _false_claim,
        tags=("multi_turn", "error_recovery"),
        difficulty=3,
    )
)
