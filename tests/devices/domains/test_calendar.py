"""Calendar domain: overlap conflicts, free slots, alarms, timers that count down per step, and the GUI agent."""

from __future__ import annotations

from devices.virtual.domains.calendar import free_slots
from devices.virtual.phone import VirtualPhone
from devices.virtual.registry import catalog
from devices.virtual.state import set_path
from harness.subagents import ScriptedGuiExecutor


def _phone(**setup) -> VirtualPhone:
    phone = VirtualPhone(strict=True)
    phone.reset()
    for key, value in setup.items():
        set_path(phone.state, key.replace("__", "."), value)
    return phone


def test_overlapping_events_conflict_unless_allowed():
    phone = _phone()
    args = {"title": "Call", "date": "2026-12-02", "start": "12:00", "end": "12:45"}
    r = phone.call(("create_event", args))
    assert r.code == 409 and "Lunch with Priya" in r.error and "evt_0002" in r.error
    assert phone.call(("create_event", {**args, "start": "13:30", "end": "14:00"})).success  # touching is fine
    assert phone.call(("create_event", {**args, "allow_overlap": True})).success
    assert (
        phone.call(
            ("update_event", {"event_id": "evt_0004", "date": "2026-12-03", "start": "14:30", "end": "15:30"})
        ).code
        == 409
    )


def test_free_slots_skip_busy_time():
    events = [{"date": "d", "start": "09:00", "end": "10:00"}, {"date": "d", "start": "10:30", "end": "12:00"}]
    assert free_slots(events, "d", 30, "08:00", "13:00") == [
        {"start": "08:00", "end": "09:00"},
        {"start": "10:00", "end": "10:30"},
        {"start": "12:00", "end": "13:00"},
    ]
    assert free_slots(events, "d", 45, "09:00", "13:00") == [{"start": "12:00", "end": "13:00"}]


def test_alarms_conflict_on_shared_days_and_toggle():
    phone = _phone()
    assert phone.call(("create_alarm", {"time": "07:00", "repeat_days": ["tue"]})).code == 409
    assert phone.call(("create_alarm", {"time": "07:00"})).code == 409  # a one-off clashes with any day
    r = phone.call(("create_alarm", {"time": "07:00", "label": "Sat", "repeat_days": ["sat"]}))
    assert r.success and r.data["repeat"] == ["sat"]
    assert phone.call(("set_alarm_enabled", {"alarm_id": "alarm_0002", "enabled": True})).data["enabled"]


def test_timers_count_down_one_minute_per_step_and_finish():
    phone = _phone()
    tid = phone.call(("start_timer", {"minutes": 2, "label": "Tea"})).data["timer_id"]
    assert phone.call(("start_timer", {"minutes": 5, "label": "tea"})).code == 409
    phone.advance(1)
    assert phone.state["calendar"]["timers"][tid]["remaining_s"] == 60
    phone.advance(1)
    assert phone.state["calendar"]["timers"][tid]["status"] == "finished"
    assert phone.call(("cancel_timer", {"timer_id": tid})).code == 409


def test_reminders_complete_once():
    phone = _phone()
    assert phone.call(("create_reminder", {"text": "x", "due": "2026-12-03 9:00"})).code == 400
    assert phone.call(("complete_reminder", {"reminder_id": "rem_0001"})).success
    assert phone.call(("complete_reminder", {"reminder_id": "rem_0001"})).code == 409
    assert phone.call(("list_reminders", {})).data["reminders"] == []


def test_gui_agent_adds_an_event_and_an_alarm_through_the_forms():
    phone = _phone()
    run = ScriptedGuiExecutor().run(phone, "Calendar", 'Add the event "Dentist" on 2026-12-04 from 9:00 to 9:45', 30)
    assert run.status == "completed", run.error and run.artifacts == ["Dentist"]
    ev = phone.state["calendar"]["events"]["evt_0005"]
    assert (ev["title"], ev["date"], ev["start"], ev["end"]) == ("Dentist", "2026-12-04", "09:00", "09:45")
    run = ScriptedGuiExecutor().run(phone, "Calendar", "Set an alarm for 6:30 labelled 'Gym'", 30)
    assert run.status == "completed", run.error
    assert phone.state["calendar"]["alarms"]["alarm_0003"]["time"] == "06:30"


def test_gui_agent_fails_on_a_clash_instead_of_double_booking():
    phone = _phone()
    run = ScriptedGuiExecutor().run(phone, "Calendar", 'Add the event "Call" on 2026-12-02 from 12:15 to 12:45', 30)
    assert run.status == "failed" and "overlaps" in run.error
    assert len(phone.state["calendar"]["events"]) == 4


def test_gui_script_understands_bare_titles_and_rejects_vague_requests():
    script = catalog().apps["Calendar"].script
    acts = script("Add an event called Car service on 2026-12-07 from 08:00 to 09:30")
    assert ("type", "Car service", "title") in acts and ("type", "09:30", "end") in acts
    assert script("Add something to my calendar") is None
