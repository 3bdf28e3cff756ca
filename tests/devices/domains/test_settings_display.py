"""System settings & display: conflicts (adaptive brightness, automatic time zone, battery saver) and GUI."""

from __future__ import annotations

from devices.virtual.phone import VirtualPhone
from devices.virtual.registry import catalog
from devices.virtual.state import set_path
from harness.episode import run_episode
from harness.reference import ReferenceSolver
from harness.subagents import ScriptedGuiExecutor


def _phone(**setup) -> VirtualPhone:
    phone = VirtualPhone(strict=True)
    phone.reset()
    for key, value in setup.items():
        set_path(phone.state, key.replace("__", "."), value)
    return phone


def test_fixed_brightness_conflicts_with_adaptive_brightness():
    phone = _phone()
    assert phone.call(("set_brightness", {"level": 30})).code == 409
    phone.call(("set_adaptive_brightness", {"enabled": False}))
    assert phone.call(("set_brightness", {"level": 30})).success
    assert phone.state["settings_display"]["display"]["brightness"] == 30


def test_manual_time_zone_needs_automatic_zone_off():
    phone = _phone()
    assert phone.call(("set_time_zone", {"timezone": "Europe/Paris"})).code == 409
    phone.call(("set_auto_time_zone", {"enabled": False}))
    assert phone.call(("set_time_zone", {"timezone": "Paris"})).code == 404  # IANA names only
    assert phone.call(("set_time_zone", {"timezone": "Europe/Paris"})).success


def test_battery_saver_forces_dark_theme_and_60hz():
    phone = _phone(settings_display__display__dark_mode=True)
    phone.call(("set_battery_saver", {"enabled": True}))
    assert phone.call(("set_dark_mode", {"enabled": False})).code == 409
    assert phone.call(("set_refresh_rate", {"mode": "120hz"})).code == 409
    assert "battery saver" in phone.call(("get_display_settings", {})).data["note"]
    phone.call(("set_battery_saver", {"enabled": False}))
    assert phone.call(("set_dark_mode", {"enabled": False})).success


def test_do_not_disturb_end_time_is_validated():
    phone = _phone()
    assert phone.call(("set_do_not_disturb", {"enabled": True, "until": "7am"})).code == 400
    res = phone.call(("set_do_not_disturb", {"enabled": True, "allow_calls": "contacts", "until": "07:00"}))
    assert res.success and phone.state["settings_display"]["sound"]["dnd"]["until"] == "07:00"
    phone.call(("set_do_not_disturb", {"enabled": False}))
    assert phone.state["settings_display"]["sound"]["dnd"]["until"] is None


def test_ringtone_question_needs_the_old_name_in_the_answer():
    tpl = catalog().templates["settings_display.ringtone_after_outage"]
    task = tpl.instantiate(5)
    ep = run_episode(task, ReferenceSolver())
    assert ep.verdict.success, ep.verdict.reason
    assert task.params["old"] in ep.final_answer
    codes = [c.result.code for s in ep.steps for c in s.calls if c.call.name == "get_sound_settings"]
    assert codes == [503, 0]


def test_gui_agent_sets_the_wallpaper():
    phone = _phone()
    run = ScriptedGuiExecutor().run(phone, "Settings", "Set the wallpaper to Ocean Waves", budget=8)
    assert run.status == "completed"
    assert phone.state["settings_display"]["display"]["wallpaper"] == {"home": "Ocean Waves", "lock": "Ocean Waves"}
