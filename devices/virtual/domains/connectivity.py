"""Connectivity: Wi-Fi, Bluetooth, hotspot, screen casting and keyboard-and-mouse sharing."""

from __future__ import annotations

import random
from typing import Any

from devices.virtual.domains._shared import toggle
from devices.virtual.registry import Domain, Element, P, err, ok
from devices.virtual.tasks import Act, Call, Draft, Say, Template
from devices.virtual.wording import pick
from harness.contract import Code, ToolResult

CAST_TARGETS = ["Living Room TV", "Bedroom TV", "Office Monitor", "Meeting Room Display", "Kitchen Speaker Display"]
SHARE_PEERS = ["Work Laptop", "Home PC", "Studio iMac", "Travel Notebook"]
BT_DEVICES = ["Galaxy Buds", "Car Kit", "Desk Speaker", "Fitness Band", "Office Headset"]
NETWORKS = ["HomeNet-5G", "Office-Guest", "CafeFree", "Studio-Lab"]

DOMAIN = Domain(
    "connectivity",
    "Connectivity & casting",
    initial={
        "wifi": {"enabled": True, "connected": "HomeNet-5G", "known": ["HomeNet-5G", "Office-Guest"]},
        "bluetooth": {"enabled": False, "paired": ["Galaxy Buds", "Car Kit"], "connected": []},
        "hotspot": {"enabled": False, "name": "Pixel-Hotspot", "password": "flywheel123"},
        "airplane_mode": False,
        "nfc": False,
        "cast": {"active": False, "target": None, "mode": None},
        "sharing": {"enabled": False, "peer": None, "direction": None, "method": None},
    },
)
D = DOMAIN


def _wifi_on(s: dict[str, Any]) -> ToolResult | None:
    if s["airplane_mode"]:
        return ToolResult.fail(Code.PREREQUISITE, "airplane mode is on; turn it off first")
    if not s["wifi"]["enabled"]:
        return ToolResult.fail(Code.PREREQUISITE, "Wi-Fi is off; enable Wi-Fi first")
    return None


# -- Wi-Fi --------------------------------------------------------------------------------------


@D.tool("get_wifi_status", "Get Wi-Fi state, the connected network and known networks.", read_only=True, cases=[ok({})])
def get_wifi_status(phone, s, args):
    w = s["wifi"]
    return ToolResult.ok(
        "Wi-Fi status", {"enabled": w["enabled"], "connected": w["connected"], "known_networks": w["known"]}
    )


@D.tool(
    "set_wifi",
    "Turn Wi-Fi on or off.",
    {"enabled": P.boolean("true to turn Wi-Fi on")},
    ["enabled"],
    codes=(412,),
    cases=[
        ok({"enabled": False}),
        err(412, {"enabled": True}, {"connectivity.airplane_mode": True}),
        err(400, {"enabled": "yes"}),
    ],
    check=lambda ph, a: ph.state["connectivity"]["wifi"]["enabled"] == a["enabled"],
)
def set_wifi(phone, s, args):
    if args["enabled"] and s["airplane_mode"]:
        return ToolResult.fail(Code.PREREQUISITE, "airplane mode is on; turn it off before enabling Wi-Fi")
    w = s["wifi"]
    if w["enabled"] != args["enabled"]:
        w["enabled"] = args["enabled"]
        w["connected"] = (w["known"][0] if w["known"] else None) if args["enabled"] else None
        phone.log("connectivity.wifi", enabled=args["enabled"])
    return ToolResult.ok(f"Wi-Fi {'enabled' if args['enabled'] else 'disabled'}", {"enabled": w["enabled"]})


@D.tool(
    "connect_wifi_network",
    "Connect to a known Wi-Fi network by name.",
    {"ssid": P.string("network name")},
    ["ssid"],
    codes=(404, 412),
    cases=[
        ok({"ssid": "Office-Guest"}),
        err(404, {"ssid": "Nowhere"}),
        err(412, {"ssid": "Office-Guest"}, {"connectivity.wifi.enabled": False}),
    ],
    check=lambda ph, a: ph.state["connectivity"]["wifi"]["connected"] == a["ssid"],
)
def connect_wifi_network(phone, s, args):
    if (bad := _wifi_on(s)) is not None:
        return bad
    if args["ssid"] not in s["wifi"]["known"]:
        return ToolResult.fail(
            Code.NOT_FOUND, f"network '{args['ssid']}' is not a known network; known: {', '.join(s['wifi']['known'])}"
        )
    if s["wifi"]["connected"] != args["ssid"]:
        s["wifi"]["connected"] = args["ssid"]
        phone.log("connectivity.wifi_connect", ssid=args["ssid"])
    return ToolResult.ok(f"connected to {args['ssid']}", {"connected": args["ssid"]})


@D.tool(
    "set_airplane_mode",
    "Turn airplane mode on or off (on turns Wi-Fi and Bluetooth off).",
    {"enabled": P.boolean("true for airplane mode")},
    ["enabled"],
    cases=[ok({"enabled": True})],
    check=lambda ph, a: ph.state["connectivity"]["airplane_mode"] == a["enabled"],
)
def set_airplane_mode(phone, s, args):
    if s["airplane_mode"] != args["enabled"]:
        s["airplane_mode"] = args["enabled"]
        if args["enabled"]:
            s["wifi"]["enabled"], s["wifi"]["connected"] = False, None
            s["bluetooth"]["enabled"], s["bluetooth"]["connected"] = False, []
            s["cast"] = {"active": False, "target": None, "mode": None}
        phone.log("connectivity.airplane", enabled=args["enabled"])
    return ToolResult.ok(f"airplane mode {'on' if args['enabled'] else 'off'}", {"airplane_mode": args["enabled"]})


# -- Bluetooth ------------------------------------------------------------------------------------


@D.tool("get_bluetooth_status", "Get Bluetooth state, paired and connected devices.", read_only=True, cases=[ok({})])
def get_bluetooth_status(phone, s, args):
    b = s["bluetooth"]
    return ToolResult.ok(
        "Bluetooth status", {"enabled": b["enabled"], "paired": b["paired"], "connected": b["connected"]}
    )


@D.tool(
    "set_bluetooth",
    "Turn Bluetooth on or off.",
    {"enabled": P.boolean("true to turn Bluetooth on")},
    ["enabled"],
    codes=(412,),
    cases=[ok({"enabled": True}), err(412, {"enabled": True}, {"connectivity.airplane_mode": True})],
    check=lambda ph, a: ph.state["connectivity"]["bluetooth"]["enabled"] == a["enabled"],
)
def set_bluetooth(phone, s, args):
    if args["enabled"] and s["airplane_mode"]:
        return ToolResult.fail(Code.PREREQUISITE, "airplane mode is on; turn it off before enabling Bluetooth")
    b = s["bluetooth"]
    if b["enabled"] != args["enabled"]:
        b["enabled"] = args["enabled"]
        if not args["enabled"]:
            b["connected"] = []
        phone.log("connectivity.bluetooth", enabled=args["enabled"])
    return ToolResult.ok(f"Bluetooth {'enabled' if args['enabled'] else 'disabled'}", {"enabled": b["enabled"]})


@D.tool(
    "connect_bluetooth_device",
    "Connect a paired Bluetooth device.",
    {"device_name": P.string("paired device name")},
    ["device_name"],
    codes=(404, 412),
    cases=[
        ok({"device_name": "Car Kit"}, {"connectivity.bluetooth.enabled": True}),
        err(412, {"device_name": "Car Kit"}),
        err(404, {"device_name": "Toaster"}, {"connectivity.bluetooth.enabled": True}),
    ],
    check=lambda ph, a: a["device_name"] in ph.state["connectivity"]["bluetooth"]["connected"],
)
def connect_bluetooth_device(phone, s, args):
    b = s["bluetooth"]
    if not b["enabled"]:
        return ToolResult.fail(Code.PREREQUISITE, "Bluetooth is off; enable Bluetooth first")
    if args["device_name"] not in b["paired"]:
        return ToolResult.fail(
            Code.NOT_FOUND, f"'{args['device_name']}' is not paired; paired: {', '.join(b['paired'])}"
        )
    if args["device_name"] not in b["connected"]:
        b["connected"].append(args["device_name"])
        phone.log("connectivity.bt_connect", device=args["device_name"])
    return ToolResult.ok(f"connected {args['device_name']}", {"connected": list(b["connected"])})


@D.tool(
    "set_hotspot",
    "Turn the mobile hotspot on or off.",
    {"enabled": P.boolean("true to share the connection")},
    ["enabled"],
    cases=[ok({"enabled": True})],
    check=lambda ph, a: ph.state["connectivity"]["hotspot"]["enabled"] == a["enabled"],
)
def set_hotspot(phone, s, args):
    if s["hotspot"]["enabled"] != args["enabled"]:
        s["hotspot"]["enabled"] = args["enabled"]
        phone.log("connectivity.hotspot", enabled=args["enabled"])
    return ToolResult.ok(
        f"hotspot {'on' if args['enabled'] else 'off'}", {"enabled": args["enabled"], "name": s["hotspot"]["name"]}
    )


# -- Casting --------------------------------------------------------------------------------------


@D.tool(
    "list_cast_targets",
    "List nearby displays available for screen casting.",
    read_only=True,
    codes=(412,),
    cases=[ok({}), err(412, {}, {"connectivity.wifi.enabled": False})],
)
def list_cast_targets(phone, s, args):
    if (bad := _wifi_on(s)) is not None:
        return bad
    return ToolResult.ok(f"{len(CAST_TARGETS)} displays found", {"targets": CAST_TARGETS})


@D.tool(
    "get_cast_status", "Get whether the screen is being cast, and to which display.", read_only=True, cases=[ok({})]
)
def get_cast_status(phone, s, args):
    c = s["cast"]
    return ToolResult.ok("casting" if c["active"] else "not casting", dict(c))


@D.tool(
    "start_screen_cast",
    "Start casting the screen to a display. Fails with 409 while another cast is active.",
    {
        "target": P.string("display name from list_cast_targets"),
        "mode": P.enum(["mirror", "extend"], "mirror or extend the screen"),
    },
    ["target"],
    codes=(404, 409, 412),
    cases=[
        ok({"target": "Bedroom TV"}),
        ok({"target": "Office Monitor", "mode": "extend"}),
        err(
            409,
            {"target": "Bedroom TV"},
            {"connectivity.cast": {"active": True, "target": "Living Room TV", "mode": "mirror"}},
        ),
        err(404, {"target": "Moon Screen"}),
        err(412, {"target": "Bedroom TV"}, {"connectivity.wifi.enabled": False}),
        err(400, {"target": "Bedroom TV", "mode": "sideways"}),
    ],
    prerequisites=["Wi-Fi on", "no active cast"],
    check=lambda ph, a: ph.state["connectivity"]["cast"]["target"] == a["target"],
)
def start_screen_cast(phone, s, args):
    if (bad := _wifi_on(s)) is not None:
        return bad
    if args["target"] not in CAST_TARGETS:
        return ToolResult.fail(Code.NOT_FOUND, f"display '{args['target']}' not found nearby")
    c = s["cast"]
    if c["active"]:
        return ToolResult.fail(Code.CONFLICT, f"already casting to {c['target']}; stop the active cast first")
    s["cast"] = {"active": True, "target": args["target"], "mode": args.get("mode", "mirror")}
    phone.log("connectivity.cast_start", target=args["target"])
    return ToolResult.ok(f"casting to {args['target']}", dict(s["cast"]))


@D.tool(
    "stop_screen_cast",
    "Stop the active screen cast.",
    codes=(409,),
    cases=[ok({}, {"connectivity.cast": {"active": True, "target": "Bedroom TV", "mode": "mirror"}}), err(409, {})],
    check=lambda ph, a: not ph.state["connectivity"]["cast"]["active"],
)
def stop_screen_cast(phone, s, args):
    c = s["cast"]
    if not c["active"]:
        return ToolResult.fail(Code.CONFLICT, "no cast is active")
    stopped = c["target"]
    s["cast"] = {"active": False, "target": None, "mode": None}
    phone.log("connectivity.cast_stop", target=stopped)
    return ToolResult.ok(f"stopped casting to {stopped}", {"stopped": stopped})


# -- Keyboard-and-mouse sharing ------------------------------------------------------------------


@D.tool(
    "get_keyboard_mouse_sharing",
    "Get keyboard-and-mouse sharing state (peer, direction, method).",
    read_only=True,
    cases=[ok({})],
)
def get_keyboard_mouse_sharing(phone, s, args):
    return ToolResult.ok("keyboard and mouse sharing status", dict(s["sharing"]))


@D.tool(
    "set_keyboard_mouse_sharing",
    "Enable or disable sharing one keyboard and mouse between the phone and a computer.",
    {
        "enabled": P.boolean("true to enable"),
        "peer": P.enum(SHARE_PEERS, "the computer"),
        "direction": P.enum(
            ["laptop_to_phone", "phone_to_laptop"], "which device's keyboard and mouse control the other"
        ),
        "method": P.enum(["wifi", "bluetooth", "usb"], "connection method"),
    },
    ["enabled"],
    codes=(400, 412),
    cases=[
        ok({"enabled": True, "peer": "Work Laptop", "direction": "laptop_to_phone", "method": "wifi"}),
        ok({"enabled": False}),
        err(400, {"enabled": True}),
        err(412, {"enabled": True, "peer": "Work Laptop", "direction": "laptop_to_phone", "method": "bluetooth"}),
    ],
    check=lambda ph, a: ph.state["connectivity"]["sharing"]["enabled"] == a["enabled"],
)
def set_keyboard_mouse_sharing(phone, s, args):
    if not args["enabled"]:
        if s["sharing"]["enabled"]:
            s["sharing"] = {"enabled": False, "peer": None, "direction": None, "method": None}
            phone.log("connectivity.sharing", enabled=False)
        return ToolResult.ok("keyboard and mouse sharing disabled", dict(s["sharing"]))
    missing = [k for k in ("peer", "direction", "method") if k not in args]
    if missing:
        return ToolResult.fail(Code.BAD_ARGUMENT, f"enabling sharing needs {', '.join(missing)}")
    if args["method"] == "wifi" and (bad := _wifi_on(s)) is not None:
        return bad
    if args["method"] == "bluetooth" and not s["bluetooth"]["enabled"]:
        return ToolResult.fail(Code.PREREQUISITE, "Bluetooth is off; enable it to share over Bluetooth")
    s["sharing"] = {"enabled": True, "peer": args["peer"], "direction": args["direction"], "method": args["method"]}
    phone.log("connectivity.sharing", enabled=True, peer=args["peer"])
    return ToolResult.ok(f"sharing keyboard and mouse with {args['peer']}", dict(s["sharing"]))


D.skill(
    "screen_casting",
    "Screen casting",
    "Cast the phone screen to a display and manage an active cast.",
    ["list_cast_targets", "get_cast_status", "start_screen_cast", "stop_screen_cast"],
    [
        "Check the cast status before starting a new cast; only one cast can be active.",
        "If a cast is active to another display, stop it, wait for the result, then start the new one.",
        "Trust tool results over earlier claims in the conversation.",
    ],
)


# -- App screen -----------------------------------------------------------------------------------


@D.app("Connections", package="com.android.settings.connections")
def connections_screen(phone, route):
    s = phone.state["connectivity"]
    if route == "cast":
        els = [Element("hdr_cast", "Cast screen", kind="header")]
        for t in CAST_TARGETS:
            active = s["cast"]["active"] and s["cast"]["target"] == t
            els.append(
                Element(
                    f"cast:{t}",
                    f"{t}{' (casting)' if active else ''}",
                    kind="item",
                    clickable=not s["cast"]["active"],
                    tool=("start_screen_cast", {"target": t}),
                )
            )
        if s["cast"]["active"]:
            els.append(
                Element("cast_stop", "Stop casting", kind="button", clickable=True, tool=("stop_screen_cast", {}))
            )
        return "Cast", els
    return "Connections", [
        toggle("wifi", "Wi-Fi", s["wifi"]["enabled"], "set_wifi"),
        toggle("bluetooth", "Bluetooth", s["bluetooth"]["enabled"], "set_bluetooth"),
        toggle("hotspot", "Mobile hotspot", s["hotspot"]["enabled"], "set_hotspot"),
        toggle("airplane", "Airplane mode", s["airplane_mode"], "set_airplane_mode"),
        Element("cast", "Cast screen", kind="item", clickable=True, to="cast"),
    ]


# -- Task templates -------------------------------------------------------------------------------

_CAST_TOOLS = ["get_cast_status", "list_cast_targets", "start_screen_cast", "stop_screen_cast"]


def _cast_switch(rng: random.Random) -> Draft:
    """Showcase 2: an earlier reply claimed success though the tool returned 409; trust the evidence."""
    old, new, newer = rng.sample(CAST_TARGETS, 3)
    mode = rng.choice(["mirror", "extend"])
    history = [
        {"role": "user", "content": f"Cast my screen to the {newer}."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "h1",
                    "type": "function",
                    "function": {"name": "start_screen_cast", "arguments": f'{{"target": "{newer}"}}'},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "h1",
            "content": f'{{"success":false,"error":"already casting to {old}; stop the active cast first","code":409}}',
        },
        {"role": "assistant", "content": f"Done, your screen is now on the {newer}."},
    ]
    instr = pick(
        rng,
        [
            f"Actually, put it on the {new} instead, in {mode} mode.",
            f"Switch the cast over to the {new} ({mode} mode).",
            f"Cast to the {new} now, {mode} mode please.",
        ],
    )
    return Draft(
        instruction=instr,
        params={"old": old, "new": new, "mode": mode},
        setup={"connectivity.cast": {"active": True, "target": old, "mode": "mirror"}},
        tools=_CAST_TOOLS + ["set_wifi", "get_wifi_status"],
        history=history,
        goal={"connectivity.cast.active": True, "connectivity.cast.target": new, "connectivity.cast.mode": mode},
        order=["connectivity.cast_stop", "connectivity.cast_start"],
        plan=[
            Act("The earlier cast failed with 409; check what is actually casting.", [Call("get_cast_status")]),
            Act(f"A cast to {old} is still active; stop it first.", [Call("stop_screen_cast")]),
            Act(f"Now start the cast to {new}.", [Call("start_screen_cast", {"target": new, "mode": mode})]),
            Say(
                f"The earlier cast had actually failed. I stopped the cast to {old} and your screen "
                f"is now cast to the {new} ({mode})."
            ),
        ],
    )


def _start_cast(rng: random.Random) -> Draft:
    target = rng.choice(CAST_TARGETS)
    wifi_off = rng.random() < 0.4
    plan = []
    if wifi_off:
        plan.append(Act("Casting needs Wi-Fi, which is off; turn it on.", [Call("set_wifi", {"enabled": True})]))
    plan += [
        Act(f"Start casting to {target}.", [Call("start_screen_cast", {"target": target})]),
        Say(f"Your screen is now being cast to the {target}."),
    ]
    goal = {"connectivity.cast.active": True, "connectivity.cast.target": target}
    if wifi_off:
        goal["connectivity.wifi.enabled"] = True
    return Draft(
        instruction=pick(
            rng,
            [
                f"Cast my screen to the {target}.",
                f"Mirror my phone on the {target}.",
                f"Put my screen on the {target}, please.",
            ],
        ),
        params={"target": target, "wifi_off": wifi_off},
        setup={"connectivity.wifi.enabled": False, "connectivity.wifi.connected": None} if wifi_off else {},
        tools=_CAST_TOOLS + ["set_wifi", "get_wifi_status", "set_bluetooth"],
        goal=goal,
        allowed=["connectivity.wifi.connected", "connectivity.cast.mode"],
        plan=plan,
    )


def _bluetooth_connect(rng: random.Random) -> Draft:
    dev = rng.choice(["Galaxy Buds", "Car Kit"])
    return Draft(
        instruction=pick(
            rng, [f"Connect my {dev}.", f"Hook up the {dev} over Bluetooth.", f"Pair up with my {dev} please."]
        ),
        params={"device": dev},
        tools=["get_bluetooth_status", "set_bluetooth", "connect_bluetooth_device", "set_wifi"],
        goal={"connectivity.bluetooth.enabled": True, "connectivity.bluetooth.connected": [dev]},
        plan=[
            Act("Bluetooth is needed; turn it on.", [Call("set_bluetooth", {"enabled": True})]),
            Act(f"Connect {dev}.", [Call("connect_bluetooth_device", {"device_name": dev})]),
            Say(f"Bluetooth is on and your {dev} is connected."),
        ],
    )


def _sharing(rng: random.Random) -> Draft:
    peer = rng.choice(SHARE_PEERS)
    method = rng.choice(["wifi", "bluetooth"])
    plan = []
    goal = {
        "connectivity.sharing.enabled": True,
        "connectivity.sharing.peer": peer,
        "connectivity.sharing.direction": "laptop_to_phone",
        "connectivity.sharing.method": method,
    }
    if method == "bluetooth":
        plan.append(Act("Sharing over Bluetooth needs Bluetooth on.", [Call("set_bluetooth", {"enabled": True})]))
        goal["connectivity.bluetooth.enabled"] = True
    plan += [
        Act(
            "Enable sharing so the computer's keyboard and mouse control the phone.",
            [
                Call(
                    "set_keyboard_mouse_sharing",
                    {"enabled": True, "peer": peer, "direction": "laptop_to_phone", "method": method},
                )
            ],
        ),
        Say(f"Keyboard and mouse sharing is on: your {peer} now controls the phone over {method}."),
    ]
    return Draft(
        instruction=pick(
            rng,
            [
                f"Let me use my {peer}'s keyboard and mouse on the phone, over {method}.",
                f"Share keyboard and mouse from the {peer} to my phone using {method}.",
            ],
        ),
        params={"peer": peer, "method": method},
        tools=[
            "get_keyboard_mouse_sharing",
            "set_keyboard_mouse_sharing",
            "set_bluetooth",
            "get_bluetooth_status",
            "set_wifi",
        ],
        goal=goal,
        plan=plan,
    )


def _skill_cast(rng: random.Random) -> Draft:
    """Skills: the cast tools appear only after loading the screen_casting skill."""
    target = rng.choice(CAST_TARGETS)
    old = rng.choice([t for t in CAST_TARGETS if t != target])
    return Draft(
        instruction=pick(
            rng, [f"Move the screen cast to the {target}.", f"Cast to the {target} instead of the current display."]
        ),
        params={"target": target, "old": old},
        setup={"connectivity.cast": {"active": True, "target": old, "mode": "mirror"}},
        tools=["get_wifi_status"],
        skills=["screen_casting", "power_management"],
        goal={"connectivity.cast.active": True, "connectivity.cast.target": target},
        allowed=["connectivity.cast.mode"],
        order=["connectivity.cast_stop", "connectivity.cast_start"],
        plan=[
            Act(
                "Load the casting skill to get its tools and rules.",
                [Call("skill__screen_casting", {"reason": "switch the cast display"})],
            ),
            Act("Per the rules, check the current cast first.", [Call("get_cast_status")]),
            Act(f"Stop the cast to {old}.", [Call("stop_screen_cast")]),
            Act(f"Start the cast to {target}.", [Call("start_screen_cast", {"target": target})]),
            Say(f"Stopped casting to {old}; your screen is now on the {target}."),
        ],
    )


D.add_template(
    Template(
        "connectivity.cast_switch_after_false_claim",
        "connectivity",
        "tool_use",
        "Trust a 409 over an earlier wrong success claim; stop then start the cast.",
        _cast_switch,
        tags=("multi_turn", "error_recovery"),
        difficulty=3,
    )
)
D.add_template(
    Template(
        "connectivity.start_cast",
        "connectivity",
        "tool_use",
        "Cast to a display, enabling Wi-Fi if needed.",
        _start_cast,
        difficulty=1,
    )
)
D.add_template(
    Template(
        "connectivity.bluetooth_connect",
        "connectivity",
        "tool_use",
        "Enable Bluetooth and connect a device.",
        _bluetooth_connect,
        difficulty=1,
    )
)
D.add_template(
    Template(
        "connectivity.keyboard_mouse_sharing",
        "connectivity",
        "tool_use",
        "Enable keyboard-and-mouse sharing with the right peer, direction and method.",
        _sharing,
        difficulty=2,
    )
)
D.add_template(
    Template(
        "connectivity.skill_cast_switch",
        "connectivity",
        "skills",
        "Load the casting skill, then switch the active cast in order.",
        _skill_cast,
        difficulty=2,
    )
)
