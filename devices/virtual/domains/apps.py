"""Apps: installed apps and their lifecycle (launch, close, install), defaults, notifications, permissions, storage."""

from __future__ import annotations

import random
from typing import Any

from devices.virtual.domains._shared import match_name, toggle
from devices.virtual.registry import Domain, Element, P, err, ok
from devices.virtual.tasks import Act, Call, Draft, Say, Template, gui_agent
from devices.virtual.wording import pick
from harness.contract import Code, ToolResult

PERMISSIONS = [
    "camera",
    "microphone",
    "location",
    "contacts",
    "storage",
    "notifications_access",
    "phone",
    "sms",
    "calendar",
    "body_sensors",
]
ROLES = ["browser", "sms", "phone", "email", "home"]


def _app(
    package: str,
    version: str,
    *,
    system: bool = False,
    perms: dict[str, bool] | None = None,
    app_mb: int = 80,
    data_mb: int = 40,
    cache_mb: int = 20,
    roles: tuple[str, ...] = (),
    category: str = "other",
) -> dict[str, Any]:
    return {
        "package": package,
        "version": version,
        "system": system,
        "enabled": True,
        "running": False,
        "notifications": True,
        "permissions": dict(perms or {}),
        "storage": {"app_mb": app_mb, "data_mb": data_mb, "cache_mb": cache_mb},
        "roles": list(roles),
        "category": category,
    }


INSTALLED: dict[str, dict[str, Any]] = {
    "Chrome": _app(
        "com.android.chrome",
        "131.0",
        system=True,
        perms={"location": True, "camera": False, "microphone": False},
        app_mb=310,
        data_mb=220,
        cache_mb=140,
        roles=("browser",),
        category="browser",
    ),
    "Gmail": _app(
        "com.google.android.gm",
        "2024.11",
        system=True,
        perms={"contacts": True, "storage": True},
        app_mb=190,
        data_mb=160,
        cache_mb=60,
        roles=("email",),
        category="email",
    ),
    "Messages": _app(
        "com.google.android.apps.messaging",
        "20241120",
        system=True,
        perms={"sms": True, "contacts": True, "phone": True},
        app_mb=95,
        data_mb=70,
        cache_mb=12,
        roles=("sms",),
        category="messaging",
    ),
    "Phone": _app(
        "com.google.android.dialer",
        "151.0",
        system=True,
        perms={"phone": True, "contacts": True},
        app_mb=60,
        data_mb=20,
        cache_mb=5,
        roles=("phone",),
        category="phone",
    ),
    "Pixel Launcher": _app(
        "com.google.android.apps.nexuslauncher",
        "15",
        system=True,
        app_mb=40,
        data_mb=12,
        cache_mb=4,
        roles=("home",),
        category="launcher",
    ),
    "Camera": _app(
        "com.google.android.GoogleCamera",
        "9.6",
        system=True,
        perms={"camera": True, "microphone": True, "location": True, "storage": True},
        app_mb=150,
        data_mb=30,
        cache_mb=25,
        category="photo",
    ),
    "Maps": _app(
        "com.google.android.apps.maps",
        "11.150",
        system=True,
        perms={"location": True, "microphone": False},
        app_mb=260,
        data_mb=340,
        cache_mb=180,
        category="navigation",
    ),
    "YouTube": _app(
        "com.google.android.youtube",
        "19.47",
        system=True,
        perms={"camera": False, "microphone": False, "storage": True},
        app_mb=210,
        data_mb=90,
        cache_mb=260,
        category="video",
    ),
    "Firefox": _app(
        "org.mozilla.firefox",
        "133.0",
        perms={"location": False, "camera": False, "microphone": False, "storage": True},
        app_mb=240,
        data_mb=130,
        cache_mb=90,
        roles=("browser",),
        category="browser",
    ),
    "Slack": _app(
        "com.Slack",
        "24.11",
        perms={"camera": True, "microphone": True, "contacts": False, "storage": True, "notifications_access": True},
        app_mb=180,
        data_mb=240,
        cache_mb=120,
        category="work",
    ),
    "Instagram": _app(
        "com.instagram.android",
        "356.0",
        perms={"camera": True, "microphone": True, "location": True, "contacts": False, "storage": True},
        app_mb=290,
        data_mb=410,
        cache_mb=520,
        category="social",
    ),
    "Spotify": _app(
        "com.spotify.music",
        "8.9.96",
        perms={"microphone": False, "storage": True},
        app_mb=150,
        data_mb=1900,
        cache_mb=310,
        category="music",
    ),
    "WhatsApp": _app(
        "com.whatsapp",
        "2.24.24",
        perms={"camera": True, "microphone": True, "contacts": True, "location": False, "storage": True},
        app_mb=120,
        data_mb=1300,
        cache_mb=85,
        category="messaging",
    ),
    "Strava": _app(
        "com.strava",
        "370.8",
        perms={"location": True, "body_sensors": True, "storage": False},
        app_mb=110,
        data_mb=60,
        cache_mb=45,
        category="fitness",
    ),
    "Acode": _app(
        "com.foxdebug.acode", "1.10.5", perms={"storage": True}, app_mb=45, data_mb=35, cache_mb=8, category="editor"
    ),
    "Spck Editor": _app(
        "io.spck", "2.10", perms={"storage": True}, app_mb=60, data_mb=50, cache_mb=14, category="editor"
    ),
    "Termux": _app(
        "com.termux", "0.118", perms={"storage": False}, app_mb=90, data_mb=420, cache_mb=6, category="developer"
    ),
    "Fake GPS Go": _app(
        "com.fakegps.go", "4.2", perms={"location": True}, app_mb=18, data_mb=4, cache_mb=2, category="developer"
    ),
    "GPS Joystick": _app(
        "com.theappninjas.gpsjoystick",
        "4.3",
        perms={"location": False},
        app_mb=22,
        data_mb=6,
        cache_mb=3,
        category="developer",
    ),
}

STORE: dict[str, dict[str, Any]] = {
    "Brave": _app(
        "com.brave.browser",
        "1.73",
        perms={"location": False, "camera": False, "microphone": False},
        app_mb=260,
        data_mb=0,
        cache_mb=0,
        roles=("browser",),
        category="browser",
    ),
    "DuckDuckGo": _app(
        "com.duckduckgo.mobile.android",
        "5.220",
        perms={"location": False},
        app_mb=120,
        data_mb=0,
        cache_mb=0,
        roles=("browser",),
        category="browser",
    ),
    "Proton Mail": _app(
        "ch.protonmail.android",
        "4.6",
        perms={"contacts": False, "notifications_access": False},
        app_mb=110,
        data_mb=0,
        cache_mb=0,
        roles=("email",),
        category="email",
    ),
    "Signal": _app(
        "org.thoughtcrime.securesms",
        "7.26",
        perms={"sms": False, "contacts": False, "camera": False, "microphone": False},
        app_mb=140,
        data_mb=0,
        cache_mb=0,
        roles=("sms",),
        category="messaging",
    ),
    "Discord": _app(
        "com.discord",
        "258.0",
        perms={"microphone": False, "camera": False},
        app_mb=200,
        data_mb=0,
        cache_mb=0,
        category="social",
    ),
    "Notion": _app("notion.id", "0.6.2", perms={"storage": False}, app_mb=130, data_mb=0, cache_mb=0, category="work"),
    "Duolingo": _app(
        "com.duolingo", "6.10", perms={"microphone": False}, app_mb=170, data_mb=0, cache_mb=0, category="education"
    ),
    "QuickEdit": _app(
        "com.rhmsoft.edit", "1.11", perms={"storage": False}, app_mb=25, data_mb=0, cache_mb=0, category="editor"
    ),
    "Nova Launcher": _app(
        "com.teslacoilsw.launcher", "8.0", app_mb=30, data_mb=0, cache_mb=0, roles=("home",), category="launcher"
    ),
}

EDITORS = ["Acode", "Spck Editor"]
USER_APPS = [n for n, a in INSTALLED.items() if not a["system"]]
NOISY_APPS = ["Slack", "Instagram", "WhatsApp", "Spotify", "Strava", "YouTube", "Gmail", "Maps"]

DOMAIN = Domain(
    "apps",
    "Apps",
    initial={
        "installed": INSTALLED,
        "foreground": None,
        "defaults": {
            "browser": "Chrome",
            "sms": "Messages",
            "phone": "Phone",
            "email": "Gmail",
            "home": "Pixel Launcher",
        },
    },
)
D = DOMAIN


def _find(s: dict[str, Any], name: str) -> str | None:
    """The installed app's canonical name for ``name`` (case-insensitive), or None."""
    if name in s["installed"]:
        return name
    return match_name(name, s["installed"])


def _need(s: dict[str, Any], name: str) -> tuple[str | None, ToolResult | None]:
    app = _find(s, name)
    if app is None:
        hint = " (it is in the app store; install it first)" if match_name(name, STORE) else ""
        return None, ToolResult.fail(Code.NOT_FOUND, f"no installed app named '{name}'{hint}")
    return app, None


def _total(a: dict[str, Any]) -> int:
    st = a["storage"]
    return st["app_mb"] + st["data_mb"] + st["cache_mb"]


def _summary(name: str, a: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "package": a["package"],
        "version": a["version"],
        "system": a["system"],
        "enabled": a["enabled"],
        "running": a["running"],
        "notifications": a["notifications"],
    }


def _stop(phone: Any, s: dict[str, Any], app: str, event: str) -> None:
    s["installed"][app]["running"] = False
    if s["foreground"] == app:
        s["foreground"] = None
    phone.log(event, app=app)


# -- Listing and info -----------------------------------------------------------------------------


@D.tool(
    "list_installed_apps",
    "List installed apps with their state (running, enabled, notifications).",
    {
        "include_system": P.boolean("also list pre-installed system apps (default true)"),
        "running_only": P.boolean("only apps that are running now"),
    },
    read_only=True,
    cases=[ok({}), ok({"include_system": False}), ok({"running_only": True}), err(400, {"running_only": "yes"})],
)
def list_installed_apps(phone, s, args):
    sys_ok = args.get("include_system", True)
    run_only = args.get("running_only", False)
    apps = [
        _summary(n, a)
        for n, a in s["installed"].items()
        if (sys_ok or not a["system"]) and (a["running"] or not run_only)
    ]
    return ToolResult.ok(f"{len(apps)} apps", {"apps": apps, "foreground": s["foreground"]})


@D.tool(
    "get_app_info",
    "Get details of one installed app: version, state, permissions, storage and default roles.",
    {"app": P.string("app name, e.g. 'Slack'")},
    ["app"],
    read_only=True,
    codes=(404,),
    cases=[ok({"app": "Slack"}), ok({"app": "chrome"}), err(404, {"app": "Brave"}), err(400, {})],
)
def get_app_info(phone, s, args):
    app, bad = _need(s, args["app"])
    if bad:
        return bad
    a = s["installed"][app]
    roles = [r for r, n in s["defaults"].items() if n == app]
    return ToolResult.ok(
        f"{app} {a['version']}",
        {
            **_summary(app, a),
            "permissions": dict(a["permissions"]),
            "storage_mb": dict(a["storage"], total_mb=_total(a)),
            "default_for": roles,
            "can_be_default_for": list(a["roles"]),
        },
    )


# -- Lifecycle ------------------------------------------------------------------------------------


@D.tool(
    "launch_app",
    "Open (launch) an installed app and bring it to the foreground.",
    {"app": P.string("app name")},
    ["app"],
    codes=(404, 409, 412),
    cases=[
        ok({"app": "Acode"}),
        ok({"app": "maps"}),
        err(404, {"app": "Teleporter"}),
        err(412, {"app": "Notion"}, note="in the store, not installed"),
        err(409, {"app": "YouTube"}, {"apps.installed.YouTube.enabled": False}),
    ],
    prerequisites=["app installed", "app enabled"],
    check=lambda ph, a: ph.state["apps"]["foreground"] == _find(ph.state["apps"], a["app"]),
)
def launch_app(phone, s, args):
    app = _find(s, args["app"])
    if app is None:
        if (store := match_name(args["app"], STORE)) is not None:
            return ToolResult.fail(Code.PREREQUISITE, f"{store} is not installed; install it first")
        return ToolResult.fail(Code.NOT_FOUND, f"no app named '{args['app']}'")
    a = s["installed"][app]
    if not a["enabled"]:
        return ToolResult.fail(Code.CONFLICT, f"{app} is disabled; enable it before opening it")
    a["running"] = True
    s["foreground"] = app
    phone.log("apps.open", app=app)
    return ToolResult.ok(f"opened {app}", {"app": app, "foreground": True, "package": a["package"]})


@D.tool(
    "close_app",
    "Close a running app (leaves it installed).",
    {"app": P.string("app name")},
    ["app"],
    codes=(404, 409),
    cases=[
        ok({"app": "Slack"}, {"apps.installed.Slack.running": True}),
        err(409, {"app": "Slack"}),
        err(404, {"app": "Nothing"}),
    ],
    check=lambda ph, a: not ph.state["apps"]["installed"][_find(ph.state["apps"], a["app"])]["running"],
)
def close_app(phone, s, args):
    app, bad = _need(s, args["app"])
    if bad:
        return bad
    if not s["installed"][app]["running"]:
        return ToolResult.fail(Code.CONFLICT, f"{app} is not running")
    _stop(phone, s, app, "apps.close")
    return ToolResult.ok(f"closed {app}", {"app": app, "running": False})


@D.tool(
    "force_stop_app",
    "Force stop an app, ending all its processes (it may misbehave until reopened).",
    {"app": P.string("app name")},
    ["app"],
    codes=(404,),
    cases=[
        ok({"app": "Instagram"}, {"apps.installed.Instagram.running": True}),
        ok({"app": "Strava"}),
        err(404, {"app": "Nothing"}),
    ],
    check=lambda ph, a: not ph.state["apps"]["installed"][_find(ph.state["apps"], a["app"])]["running"],
)
def force_stop_app(phone, s, args):
    app, bad = _need(s, args["app"])
    if bad:
        return bad
    if not s["installed"][app]["running"]:
        return ToolResult.ok(f"{app} was not running", {"app": app, "running": False})
    _stop(phone, s, app, "apps.force_stop")
    return ToolResult.ok(f"force stopped {app}", {"app": app, "running": False})


@D.tool(
    "install_app",
    "Install an app from the app store.",
    {"app": P.string("app name as listed in the store")},
    ["app"],
    codes=(404, 409),
    cases=[ok({"app": "Brave"}), err(409, {"app": "Slack"}), err(404, {"app": "Flappy Unicorn"})],
    check=lambda ph, a: _find(ph.state["apps"], a["app"]) is not None,
)
def install_app(phone, s, args):
    if (have := _find(s, args["app"])) is not None:
        return ToolResult.fail(Code.CONFLICT, f"{have} is already installed")
    name = match_name(args["app"], STORE)
    if name is None:
        return ToolResult.fail(
            Code.NOT_FOUND, f"'{args['app']}' is not in the app store; available: {', '.join(STORE)}"
        )
    rec = STORE[name]
    s["installed"][name] = {
        **rec,
        "permissions": dict(rec["permissions"]),
        "storage": dict(rec["storage"]),
        "roles": list(rec["roles"]),
    }
    phone.log("apps.install", app=name)
    return ToolResult.ok(
        f"installed {name} {rec['version']}",
        {"app": name, "package": rec["package"], "size_mb": rec["storage"]["app_mb"]},
    )


@D.tool(
    "uninstall_app",
    "Uninstall a user-installed app and its data. Pre-installed system apps can only be disabled.",
    {"app": P.string("app name")},
    ["app"],
    codes=(404, 409),
    cases=[
        ok({"app": "Strava"}),
        err(409, {"app": "Maps"}, note="system app"),
        err(409, {"app": "Firefox"}, {"apps.defaults.browser": "Firefox"}, note="current default browser"),
        err(404, {"app": "Brave"}),
    ],
    check=lambda ph, a: _find(ph.state["apps"], a["app"]) is None,
)
def uninstall_app(phone, s, args):
    app, bad = _need(s, args["app"])
    if bad:
        return bad
    if s["installed"][app]["system"]:
        return ToolResult.fail(Code.CONFLICT, f"{app} is a system app and can't be uninstalled; disable it instead")
    roles = [r for r, n in s["defaults"].items() if n == app]
    if roles:
        return ToolResult.fail(Code.CONFLICT, f"{app} is the default {roles[0]} app; choose another default first")
    del s["installed"][app]
    if s["foreground"] == app:
        s["foreground"] = None
    phone.log("apps.uninstall", app=app)
    return ToolResult.ok(f"uninstalled {app}", {"app": app})


@D.tool(
    "set_app_enabled",
    "Disable or re-enable a pre-installed system app (disabling hides and stops it).",
    {"app": P.string("app name"), "enabled": P.boolean("false to disable")},
    ["app", "enabled"],
    codes=(404, 409),
    cases=[
        ok({"app": "YouTube", "enabled": False}),
        ok({"app": "Maps", "enabled": True}),
        err(409, {"app": "Slack", "enabled": False}, note="user apps are uninstalled, not disabled"),
        err(409, {"app": "Chrome", "enabled": False}, note="default browser"),
        err(404, {"app": "Nope", "enabled": False}),
    ],
    check=lambda ph, a: ph.state["apps"]["installed"][_find(ph.state["apps"], a["app"])]["enabled"] == a["enabled"],
)
def set_app_enabled(phone, s, args):
    app, bad = _need(s, args["app"])
    if bad:
        return bad
    a = s["installed"][app]
    if not a["system"]:
        return ToolResult.fail(Code.CONFLICT, f"{app} is a user app; uninstall it instead of disabling it")
    roles = [r for r, n in s["defaults"].items() if n == app]
    if not args["enabled"] and roles:
        return ToolResult.fail(Code.CONFLICT, f"{app} is the default {roles[0]} app; choose another default first")
    if a["enabled"] != args["enabled"]:
        a["enabled"] = args["enabled"]
        if not args["enabled"] and a["running"]:
            _stop(phone, s, app, "apps.force_stop")
        phone.log("apps.enabled", app=app, enabled=args["enabled"])
    return ToolResult.ok(f"{app} {'enabled' if args['enabled'] else 'disabled'}", {"app": app, "enabled": a["enabled"]})


# -- Defaults -------------------------------------------------------------------------------------


@D.tool(
    "get_default_apps",
    "Get the default app for each role (browser, sms, phone, email, home).",
    read_only=True,
    cases=[ok({})],
)
def get_default_apps(phone, s, args):
    return ToolResult.ok("default apps", {"defaults": dict(s["defaults"])})


@D.tool(
    "set_default_app",
    "Make an installed app the default for a role.",
    {"role": P.enum(ROLES, "the role"), "app": P.string("installed app name")},
    ["role", "app"],
    codes=(404, 409),
    cases=[
        ok({"role": "browser", "app": "Firefox"}),
        err(409, {"role": "browser", "app": "Slack"}),
        err(404, {"role": "browser", "app": "Brave"}),
        err(400, {"role": "calculator", "app": "Chrome"}),
    ],
    check=lambda ph, a: ph.state["apps"]["defaults"][a["role"]] == _find(ph.state["apps"], a["app"]),
)
def set_default_app(phone, s, args):
    app, bad = _need(s, args["app"])
    if bad:
        return bad
    role = args["role"]
    if role not in s["installed"][app]["roles"]:
        able = [n for n, a in s["installed"].items() if role in a["roles"]]
        return ToolResult.fail(
            Code.CONFLICT, f"{app} can't be the default {role} app; installed apps that can: {', '.join(able)}"
        )
    if s["defaults"][role] != app:
        s["defaults"][role] = app
        phone.log("apps.default", role=role, app=app)
    return ToolResult.ok(f"{app} is now the default {role} app", {"role": role, "app": app})


# -- Notifications and permissions ----------------------------------------------------------------


@D.tool(
    "set_app_notifications",
    "Allow or block notifications from one app.",
    {"app": P.string("app name"), "enabled": P.boolean("false to block its notifications")},
    ["app", "enabled"],
    codes=(404,),
    cases=[
        ok({"app": "Instagram", "enabled": False}),
        err(404, {"app": "Nope", "enabled": False}),
        err(400, {"app": "Slack"}),
    ],
    check=lambda ph, a: (
        ph.state["apps"]["installed"][_find(ph.state["apps"], a["app"])]["notifications"] == a["enabled"]
    ),
)
def set_app_notifications(phone, s, args):
    app, bad = _need(s, args["app"])
    if bad:
        return bad
    a = s["installed"][app]
    if a["notifications"] != args["enabled"]:
        a["notifications"] = args["enabled"]
        phone.log("apps.notifications", app=app, enabled=args["enabled"])
    return ToolResult.ok(
        f"notifications from {app} {'allowed' if args['enabled'] else 'blocked'}",
        {"app": app, "notifications": a["notifications"]},
    )


@D.tool(
    "get_app_permissions",
    "List the permissions an app requests and whether each is granted.",
    {"app": P.string("app name")},
    ["app"],
    read_only=True,
    codes=(404,),
    cases=[ok({"app": "Instagram"}), err(404, {"app": "Nope"})],
)
def get_app_permissions(phone, s, args):
    app, bad = _need(s, args["app"])
    if bad:
        return bad
    perms = s["installed"][app]["permissions"]
    return ToolResult.ok(f"{len(perms)} permissions requested by {app}", {"app": app, "permissions": dict(perms)})


@D.tool(
    "set_app_permission",
    "Grant or revoke one permission the app requests.",
    {
        "app": P.string("app name"),
        "permission": P.enum(PERMISSIONS, "the permission"),
        "granted": P.boolean("true to grant, false to revoke"),
    },
    ["app", "permission", "granted"],
    codes=(404,),
    cases=[
        ok({"app": "Instagram", "permission": "location", "granted": False}),
        err(404, {"app": "Acode", "permission": "camera", "granted": True}, note="not requested by the app"),
        err(404, {"app": "Nope", "permission": "camera", "granted": True}),
        err(400, {"app": "Slack", "permission": "teleport", "granted": True}),
    ],
    check=lambda ph, a: (
        ph.state["apps"]["installed"][_find(ph.state["apps"], a["app"])]["permissions"][a["permission"]] == a["granted"]
    ),
)
def set_app_permission(phone, s, args):
    app, bad = _need(s, args["app"])
    if bad:
        return bad
    perms = s["installed"][app]["permissions"]
    p = args["permission"]
    if p not in perms:
        return ToolResult.fail(
            Code.NOT_FOUND, f"{app} does not request the {p} permission; it requests: {', '.join(perms) or 'none'}"
        )
    if perms[p] != args["granted"]:
        perms[p] = args["granted"]
        phone.log("apps.permission", app=app, permission=p, granted=args["granted"])
    return ToolResult.ok(
        f"{p} {'granted to' if args['granted'] else 'revoked from'} {app}",
        {"app": app, "permission": p, "granted": perms[p]},
    )


# -- Storage --------------------------------------------------------------------------------------


@D.tool(
    "get_app_storage",
    "Storage used by apps (app, data and cache, in MB), largest first, or by one app.",
    {"app": P.string("only this app"), "limit": P.integer("how many apps to list", 1, 50)},
    read_only=True,
    codes=(404,),
    cases=[ok({}), ok({"app": "Spotify"}), ok({"limit": 3}), err(404, {"app": "Nope"})],
)
def get_app_storage(phone, s, args):
    if "app" in args:
        app, bad = _need(s, args["app"])
        if bad:
            return bad
        names = [app]
    else:
        names = sorted(s["installed"], key=lambda n: -_total(s["installed"][n]))[: args.get("limit", 50)]
    rows = [{"app": n, **s["installed"][n]["storage"], "total_mb": _total(s["installed"][n])} for n in names]
    return ToolResult.ok(f"storage of {len(rows)} app(s)", {"apps": rows})


@D.tool(
    "clear_app_cache",
    "Delete an app's cached files (keeps its data and settings).",
    {"app": P.string("app name")},
    ["app"],
    codes=(404,),
    cases=[ok({"app": "Instagram"}), err(404, {"app": "Nope"})],
    check=lambda ph, a: ph.state["apps"]["installed"][_find(ph.state["apps"], a["app"])]["storage"]["cache_mb"] == 0,
)
def clear_app_cache(phone, s, args):
    app, bad = _need(s, args["app"])
    if bad:
        return bad
    st = s["installed"][app]["storage"]
    freed = st["cache_mb"]
    if freed:
        st["cache_mb"] = 0
        phone.log("apps.clear_cache", app=app, freed_mb=freed)
    return ToolResult.ok(f"cleared {freed} MB of cache from {app}", {"app": app, "freed_mb": freed})


@D.tool(
    "clear_app_data",
    "Erase all of an app's data (accounts, settings, files) and cache. The app must not be running.",
    {"app": P.string("app name")},
    ["app"],
    codes=(404, 409),
    cases=[
        ok({"app": "Strava"}),
        err(409, {"app": "Strava"}, {"apps.installed.Strava.running": True}),
        err(404, {"app": "Nope"}),
    ],
    prerequisites=["app not running"],
    check=lambda ph, a: ph.state["apps"]["installed"][_find(ph.state["apps"], a["app"])]["storage"]["data_mb"] == 0,
)
def clear_app_data(phone, s, args):
    app, bad = _need(s, args["app"])
    if bad:
        return bad
    a = s["installed"][app]
    if a["running"]:
        return ToolResult.fail(Code.CONFLICT, f"{app} is running; force stop it before clearing its data")
    st = a["storage"]
    freed = st["data_mb"] + st["cache_mb"]
    st["data_mb"] = st["cache_mb"] = 0
    phone.log("apps.clear_data", app=app, freed_mb=freed)
    return ToolResult.ok(f"erased {freed} MB of data from {app}", {"app": app, "freed_mb": freed})


D.skill(
    "app_permissions",
    "App permissions",
    "Review and change which permissions an app holds.",
    ["get_app_permissions", "set_app_permission"],
    [
        "Read the app's permissions first; only requested permissions can be granted or revoked.",
        "Change only the permissions the user named; leave the others as they are.",
        "Never uninstall, disable or clear an app to remove a permission.",
    ],
)

D.skill(
    "app_troubleshooting",
    "App troubleshooting",
    "Fix a misbehaving app: stop it, clear cache, and only if asked, clear its data.",
    ["list_installed_apps", "force_stop_app", "clear_app_cache", "clear_app_data", "launch_app"],
    [
        "Try the least destructive fix first: force stop, then clear cache.",
        "Clear data only when the user asked to reset the app; it erases accounts and settings.",
        "An app must be stopped before its data is cleared; force stop it and wait for the result.",
    ],
)


# -- App screen -----------------------------------------------------------------------------------


@D.app("Apps", package="com.android.settings.apps")
def apps_screen(phone, route):
    s = phone.state["apps"]
    if route.startswith("perm:"):
        app = route[5:]
        a = s["installed"].get(app)
        if a is None:
            return "Permissions", [Element("gone", "App not installed")]
        els = [Element("hdr_perm", f"{app} permissions", kind="header")]
        for p, g in a["permissions"].items():
            els.append(
                toggle(
                    f"perm:{p}",
                    p.replace("_", " ").capitalize(),
                    g,
                    "set_app_permission",
                    {"app": app, "permission": p},
                    key="granted",
                )
            )
        return "Permissions", els
    if route.startswith("app:"):
        app = route[4:]
        a = s["installed"].get(app)
        if a is None:
            return "App info", [Element("gone", "App not installed")]
        st = a["storage"]
        els = [
            Element("hdr_app", f"{app} {a['version']}", kind="header"),
            Element("state", "Running" if a["running"] else ("Disabled" if not a["enabled"] else "Not running")),
            Element("open", "Open", kind="button", clickable=a["enabled"], tool=("launch_app", {"app": app})),
            Element("force_stop", "Force stop", kind="button", clickable=True, tool=("force_stop_app", {"app": app})),
            toggle("notifications", "Notifications", a["notifications"], "set_app_notifications", {"app": app}),
            Element("permissions", "Permissions", kind="item", clickable=True, to=f"perm:{app}"),
            Element("storage", f"Storage: {_total(a)} MB (cache {st['cache_mb']} MB, data {st['data_mb']} MB)"),
            Element(
                "clear_cache", "Clear cache", kind="button", clickable=True, tool=("clear_app_cache", {"app": app})
            ),
            Element(
                "clear_data", "Clear storage", kind="button", clickable=True, tool=("clear_app_data", {"app": app})
            ),
        ]
        if a["system"]:
            els.append(
                Element(
                    "disable",
                    "Disable" if a["enabled"] else "Enable",
                    kind="button",
                    clickable=True,
                    tool=("set_app_enabled", {"app": app, "enabled": not a["enabled"]}),
                )
            )
        else:
            els.append(
                Element("uninstall", "Uninstall", kind="button", clickable=True, tool=("uninstall_app", {"app": app}))
            )
        return "App info", els
    els = [Element("hdr_apps", f"{len(s['installed'])} apps", kind="header")]
    for n in sorted(s["installed"]):
        els.append(Element(f"app:{n}", n, kind="item", clickable=True, to=f"app:{n}"))
    return "Apps", els


_GUI_ACTIONS = [
    # (words in the instruction, button on the app-info screen, text confirming it worked); first match wins
    (("cache",), "Clear cache", "cache 0 MB"),
    (
        ("clear storage", "clear data", "clear its data", "clear all", "erase", "reset", "wipe"),
        "Clear storage",
        "data 0 MB",
    ),
    (("force stop", "force-stop", "stop", "kill"), "Force stop", "Not running"),
    (("open", "launch", "start"), "Open", "Running"),
]


@D.gui_script("Apps")
def apps_gui(instruction: str) -> list[tuple[Any, ...]] | None:
    """Scripted GUI agent: '<action> <app>' for the actions above, or notifications on/off."""
    low = instruction.lower()
    app = next((n for n in sorted(INSTALLED, key=len, reverse=True) if n.lower() in low), None)
    if app is None:
        return None
    steps: list[tuple[Any, ...]] = [("tap", app)]
    if "notification" in low:
        return steps + [("tap", "notifications")]
    for words, button, proof in _GUI_ACTIONS:
        if any(w in low for w in words):
            return steps + [("tap", button), ("confirm", proof, f"{app}: {button.lower()}")]
    return None


# -- Task templates -------------------------------------------------------------------------------


def _reset_running_app(rng: random.Random) -> Draft:
    """Error recovery: clearing a running app's data is a 409; force stop it, then clear."""
    app = rng.choice(USER_APPS)
    running_fg = rng.random() < 0.5
    setup: dict[str, Any] = {f"apps.installed.{app}.running": True}
    if running_fg:
        setup["apps.foreground"] = app
    instr = pick(
        rng,
        [
            f"{app} keeps crashing. Reset it completely, clear all its data.",
            f"Wipe {app}'s data so it starts fresh.",
            f"Please clear the storage of {app}; it's acting up.",
        ],
    )
    return Draft(
        instruction=instr,
        params={"app": app, "foreground": running_fg},
        setup=setup,
        tools=["clear_app_data", "force_stop_app", "clear_app_cache", "uninstall_app", "get_app_info"],
        goal={
            f"apps.installed.{app}.storage.data_mb": 0,
            f"apps.installed.{app}.storage.cache_mb": 0,
            f"apps.installed.{app}.running": False,
        },
        allowed=["apps.foreground"],
        order=["apps.force_stop", "apps.clear_data"],
        plan=[
            Act(f"Clear {app}'s data.", [Call("clear_app_data", {"app": app})], may_fail=True),
            Act(f"409: {app} is running. Force stop it first.", [Call("force_stop_app", {"app": app})]),
            Act("Now clear its data again.", [Call("clear_app_data", {"app": app})]),
            Say(
                f"{app} was running, so I force stopped it and then cleared all its data; "
                "it will start fresh next time."
            ),
        ],
    )


def _default_browser(rng: random.Random) -> Draft:
    """Set a default browser, installing it first when it is only in the store."""
    installed = ["Firefox", "Chrome"]
    store = ["Brave", "DuckDuckGo"]
    current = rng.choice(installed)
    target = rng.choice([b for b in installed + store if b != current])
    setup = {"apps.defaults.browser": current}
    need_install = target in store
    plan: list[Any] = [Act("Check the current defaults.", [Call("get_default_apps")])]
    goal: dict[str, Any] = {"apps.defaults.browser": target}
    allowed: list[str] = []
    if need_install:
        plan.append(Act(f"{target} is not installed; install it.", [Call("install_app", {"app": target})]))
        allowed.append(f"apps.installed.{target}")
    plan += [
        Act(f"Make {target} the default browser.", [Call("set_default_app", {"role": "browser", "app": target})]),
        Say(f"{target} is now your default browser{' (I installed it first)' if need_install else ''}."),
    ]
    return Draft(
        instruction=pick(
            rng,
            [
                f"Make {target} my default browser.",
                f"I want links to open in {target} from now on.",
                f"Switch my default browser to {target}.",
            ],
        ),
        params={"target": target, "current": current, "install": need_install},
        setup=setup,
        tools=["get_default_apps", "set_default_app", "install_app", "list_installed_apps", "uninstall_app"],
        goal=goal,
        allowed=allowed,
        plan=plan,
    )


def _mute_from_memory(rng: random.Random) -> Draft:
    """Memory: which apps to mute for focus time is in the user's notes, among neighbour memories."""
    muted = sorted(rng.sample(NOISY_APPS, rng.choice([2, 3])))
    others = [a for a in NOISY_APPS if a not in muted]
    decoy = sorted(rng.sample(others, 2))
    lst = " and ".join([", ".join(muted[:-1]), muted[-1]]) if len(muted) > 1 else muted[0]
    memory = [
        {
            "id": "m-focus",
            "category": "routines_habits",
            "title": "Focus time",
            "content": f"During focus time I silence notifications from {lst}. Everything else stays on.",
            "tags": ["focus", "notifications"],
        },
        {
            "id": "m-weekend",
            "category": "routines_habits",
            "title": "Weekend mode",
            "content": f"On weekends I like notifications from {decoy[0]} and {decoy[1]} muted.",
            "tags": ["weekend", "notifications"],
        },
        {
            "id": "m-storage",
            "category": "preferences",
            "title": "Phone storage",
            "content": "Clear app caches when storage gets below 5 GB.",
            "tags": ["storage"],
        },
        {
            "id": "m-gym",
            "category": "routines_habits",
            "title": "Gym",
            "content": "I go to the gym Mon/Wed/Fri at 7am and track runs in Strava.",
            "tags": ["fitness"],
        },
        {
            "id": "m-boss",
            "category": "important_info",
            "title": "Manager",
            "content": "My manager is Dana Ruiz; her messages come through Slack and Gmail.",
            "tags": ["work"],
        },
    ]
    rng.shuffle(memory)
    return Draft(
        instruction=pick(
            rng,
            [
                "Time to focus. Mute the apps I usually silence.",
                "Start my focus time: turn off notifications for my usual distracting apps.",
                "Silence the apps I normally mute when I'm focusing.",
            ],
        ),
        params={"muted": muted, "decoy": decoy},
        memory=memory,
        tools=["set_app_notifications", "list_installed_apps", "force_stop_app", "get_app_info"],
        goal={f"apps.installed.{a}.notifications": False for a in muted},
        plan=[
            Act(
                "Which apps does the user silence for focus time? Check memory.",
                [Call("search_user_memory", {"query": "focus time silence notifications apps", "maxResults": 5})],
            ),
            Act(
                f"The focus routine mutes {lst}; block their notifications (independent calls, in parallel).",
                [Call("set_app_notifications", {"app": a, "enabled": False}) for a in muted],
            ),
            Say(f"Focus time is on: notifications from {lst} are blocked; everything else stays on."),
        ],
    )


def _skill_revoke(rng: random.Random) -> Draft:
    """Skills: the permission tools appear only after loading app_permissions; revoke just the named ones."""
    cands = [(n, p) for n, a in INSTALLED.items() if not a["system"] for p, g in a["permissions"].items() if g]
    app = rng.choice(sorted({n for n, _ in cands}))
    granted = [p for n, p in cands if n == app]
    revoke = sorted(rng.sample(granted, min(len(granted), rng.choice([1, 2]))))
    names = " and ".join(p.replace("_", " ") for p in revoke)
    return Draft(
        instruction=pick(
            rng,
            [
                f"Take away {app}'s {names} access.",
                f"Revoke the {names} permission from {app}.",
                f"I don't want {app} to have {names} permission anymore.",
            ],
        ),
        params={"app": app, "revoke": revoke},
        tools=["list_installed_apps", "get_app_info"],
        skills=["app_permissions", "app_troubleshooting", "screen_casting"],
        goal={f"apps.installed.{app}.permissions.{p}": False for p in revoke},
        plan=[
            Act(
                "Load the permissions skill for its tools and rules.",
                [Call("skill__app_permissions", {"reason": f"revoke {names} from {app}"})],
            ),
            Act(f"Read {app}'s permissions first.", [Call("get_app_permissions", {"app": app})]),
            Act(
                f"Revoke only {names}.",
                [Call("set_app_permission", {"app": app, "permission": p, "granted": False}) for p in revoke],
            ),
            Say(f"{app} no longer has {names} permission; its other permissions are unchanged."),
        ],
    )


def _install_outage(rng: random.Random) -> Draft:
    """Error recovery: the store is briefly down (503); retry once and open the app."""
    app = rng.choice(sorted(a for a in STORE if a not in ("Nova Launcher",)))
    busy = rng.choice([None, "Spotify", "Maps", "WhatsApp", "Chrome"])
    setup: dict[str, Any] = {}
    if busy is not None:
        # Another app is on screen; it keeps running in the background after the launch.
        setup = {"apps.foreground": busy, f"apps.installed.{busy}.running": True}
    return Draft(
        instruction=pick(
            rng,
            [
                f"Install {app} and open it.",
                f"Get {app} on my phone and launch it.",
                f"Download {app} from the store, then open it for me.",
            ],
        ),
        params={"app": app, "busy": busy},
        setup=setup,
        tools=["install_app", "launch_app", "list_installed_apps", "uninstall_app"],
        faults=[
            {
                "tool": "install_app",
                "kind": "outage",
                "times": 1,
                "code": 503,
                "error": "app store unavailable (503); try again shortly",
            }
        ],
        goal={f"apps.installed.{app}.running": True, "apps.foreground": app},
        allowed=[f"apps.installed.{app}"],
        order=["apps.install", "apps.open"],
        plan=[
            Act(f"Install {app}.", [Call("install_app", {"app": app})], may_fail=True),
            Act("The store returned 503, a temporary outage; retry once.", [Call("install_app", {"app": app})]),
            Act(f"Installed; open {app}.", [Call("launch_app", {"app": app})]),
            Say(f"The app store was briefly unavailable, but the retry worked: {app} is installed and open."),
        ],
    )


def _storage_then_clear(rng: random.Random) -> Draft:
    """Multi-turn: answer which app uses the most storage, then clear that app's cache on the follow-up."""
    apps = rng.sample(USER_APPS, 4)
    # Sampled sizes are spaced 97 MB apart and far above every other app's total, so the answer is unambiguous.
    sizes = rng.sample(range(1500, 4500, 97), 4)
    setup = {f"apps.installed.{a}.storage.data_mb": sz for a, sz in zip(apps, sizes, strict=True)}
    for a in USER_APPS:
        if a not in apps:
            setup[f"apps.installed.{a}.storage.data_mb"] = 10
    for a in INSTALLED:
        if INSTALLED[a]["system"]:
            setup[f"apps.installed.{a}.storage.data_mb"] = 5
    top = max(
        apps,
        key=lambda a: (
            setup[f"apps.installed.{a}.storage.data_mb"]
            + INSTALLED[a]["storage"]["app_mb"]
            + INSTALLED[a]["storage"]["cache_mb"]
        ),
    )
    cache = INSTALLED[top]["storage"]["cache_mb"]
    return Draft(
        instruction=pick(
            rng,
            [
                "Which app is using the most storage?",
                "What's eating my storage? Which app is biggest?",
                "Tell me which app takes up the most space.",
            ],
        ),
        params={"top": top},
        setup=setup,
        tools=["get_app_storage", "clear_app_cache", "clear_app_data", "list_installed_apps"],
        followups=[
            pick(rng, ["OK, clear its cache, but keep its data.", "Clear that one's cache please (not the data)."])
        ],
        answer=[top],
        goal={f"apps.installed.{top}.storage.cache_mb": 0},
        plan=[
            Act("Get storage per app, largest first.", [Call("get_app_storage", {"limit": 5})]),
            Say(f"{top} uses the most storage."),
            Act(f"Clear {top}'s cache only.", [Call("clear_app_cache", {"app": top})]),
            Say(f"Cleared {cache} MB of cache from {top}; its data is untouched."),
        ],
    )


D.add_template(
    Template(
        "apps.reset_running_app",
        "apps",
        "tool_use",
        "Clear a running app's data: 409, force stop, then clear.",
        _reset_running_app,
        tags=("error_recovery",),
        difficulty=2,
    )
)
D.add_template(
    Template(
        "apps.default_browser",
        "apps",
        "tool_use",
        "Set the default browser, installing it if needed.",
        _default_browser,
        difficulty=2,
    )
)
D.add_template(
    Template(
        "apps.focus_mute_from_memory",
        "apps",
        "memory",
        "Mute the apps the user's focus routine lists (gold memory among neighbours).",
        _mute_from_memory,
        difficulty=2,
    )
)
D.add_template(
    Template(
        "apps.skill_revoke_permissions",
        "apps",
        "skills",
        "Load app_permissions and revoke only the named permissions.",
        _skill_revoke,
        difficulty=2,
    )
)
D.add_template(
    Template(
        "apps.install_after_outage",
        "apps",
        "tool_use",
        "Install an app through a 503 store outage, then open it.",
        _install_outage,
        tags=("error_recovery",),
        difficulty=2,
    )
)
D.add_template(
    Template(
        "apps.storage_question_then_clear",
        "apps",
        "tool_use",
        "Answer which app uses most storage, then clear its cache on the follow-up.",
        _storage_then_clear,
        tags=("multi_turn",),
        difficulty=2,
    )
)


def _gui_app_action(rng: random.Random) -> Draft:
    """Sub-agent: a GUI agent clears an app's cache or force stops it on the Apps screens."""
    app = rng.choice(USER_APPS)
    if rng.random() < 0.5:
        gui = f"Clear the cache of {app}"
        goal: dict[str, Any] = {f"apps.installed.{app}.storage.cache_mb": 0}
        setup: dict[str, Any] = {f"apps.installed.{app}.storage.cache_mb": rng.randrange(20, 900)}
        user = pick(
            rng,
            [f"Open the Apps settings and clear {app}'s cache.", f"Use the Apps screen to clear the cache of {app}."],
        )
        done = f"The GUI agent cleared {app}'s cache."
    else:
        gui = f"Force stop {app}"
        goal = {f"apps.installed.{app}.running": False}
        setup = {f"apps.installed.{app}.running": True, "apps.foreground": app}
        user = pick(
            rng, [f"{app} is frozen. Force stop it from the Apps settings.", f"Go to Apps and force stop {app}."]
        )
        done = f"The GUI agent force stopped {app}."
    return Draft(
        instruction=user,
        params={"app": app, "gui": gui},
        setup=setup,
        tools=["list_installed_apps", "get_app_info"],
        subagent=True,
        goal=goal,
        allowed=["apps.foreground"],
        plan=[
            *gui_agent(
                "Apps",
                gui,
                think="The user wants this done in the Apps screens; delegate to the GUI agent.",
                run="Run the session and wait for its result.",
            ),
            Say(done),
        ],
    )


D.add_template(
    Template(
        "apps.gui_clear_cache_or_stop",
        "apps",
        "sub_agent",
        "A GUI agent clears an app's cache or force stops it on the Apps screens.",
        _gui_app_action,
        difficulty=1,
    )
)
