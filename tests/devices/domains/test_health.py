"""Health: dates, workouts, water, goals, medication reminders, sharing, the Health app and question tasks."""

from __future__ import annotations

from devices.virtual.domains.health import DATES, resolve_date
from devices.virtual.phone import VirtualPhone
from devices.virtual.registry import catalog
from harness.episode import run_episode
from harness.reference import ReferenceSolver


def _phone() -> VirtualPhone:
    phone = VirtualPhone(strict=True)
    phone.reset()
    return phone


def test_dates_resolve_weekdays_within_the_past_week():
    assert resolve_date("today")[0] == DATES[-1] == "2026-12-02"  # a Wednesday
    assert resolve_date("yesterday")[0] == DATES[-2]
    assert resolve_date("Wednesday")[0] == DATES[-1]
    assert resolve_date("thursday")[0] == DATES[0]
    assert resolve_date("next week")[1].code == 400
    assert _phone().call(("get_daily_activity", {"date": "2025-01-01"})).code == 404


def test_workout_rules_distance_and_duplicates():
    phone = _phone()
    assert phone.call(("log_workout", {"type": "yoga", "duration_min": 30, "distance_km": 1.0})).code == 400
    r = phone.call(("log_workout", {"type": "running", "duration_min": 40, "distance_km": 7.5}))
    assert r.success and r.data["workout_id"] not in {"w1", "w2"} and r.data["calories"] == 400
    assert phone.call(("log_workout", {"type": "running", "duration_min": 40})).code == 409
    assert phone.call(("list_workouts", {"type": "running"})).data["total"] == 2


def test_water_goal_and_weight():
    phone = _phone()
    before = phone.state["health"]["days"][DATES[-1]]["water_ml"]
    assert phone.call(("log_water_intake", {"amount_ml": 330})).data["today_ml"] == before + 330
    assert phone.call(("set_health_goal", {"metric": "steps", "target": 200})).code == 400
    assert phone.call(("set_health_goal", {"metric": "steps", "target": 11000})).data["previous"] == 8000
    phone.call(("log_weight", {"kg": 70.2}))
    phone.call(("log_weight", {"kg": 70.0}))
    assert phone.call(("get_weight_history", {"limit": 1})).data["entries"] == [{"date": DATES[-1], "kg": 70.0}]


def test_medication_reminders_validate_time_and_duplicates():
    phone = _phone()
    assert phone.call(("add_medication_reminder", {"name": "Metformin", "dose": "500 mg", "time": "8pm"})).code == 400
    r = phone.call(("add_medication_reminder", {"name": "Metformin", "dose": "500 mg", "time": "20:00"}))
    assert r.success
    assert phone.call(("add_medication_reminder", {"name": "metformin", "dose": "500 mg", "time": "20:00"})).code == 409
    assert phone.call(
        ("set_medication_reminder_enabled", {"reminder_id": r.data["reminder_id"], "enabled": False})
    ).success


def test_sharing_changes_only_the_named_type():
    phone = _phone()
    before = dict(phone.state["health"]["sharing"]["FitTrack"])
    phone.call(("set_health_sharing", {"app": "FitTrack", "data_type": "heart_rate", "allowed": False}))
    after = phone.state["health"]["sharing"]["FitTrack"]
    assert {k for k in before if before[k] != after[k]} == {"heart_rate"}
    assert catalog().skills["health_privacy"].tools == ["get_health_sharing", "set_health_sharing"]


def test_question_answers_state_the_value_from_state():
    tpl = catalog().templates["health.stat_question"]
    for seed in range(20):
        task = tpl.instantiate(seed)
        ep = run_episode(task, ReferenceSolver())
        assert ep.verdict.success and task.answer[0] in ep.final_answer
        day = task.setup["health.days"][task.params["date"]]
        values = {"steps": str(day["steps"]), "resting_hr": f"{day['resting_hr']} bpm"}
        assert task.answer[0] == values.get(task.params["metric"], task.answer[0])
        # An answer without the value (or with another day's) does not pass.
        other = next(d for d in DATES[:-1] if d != task.params["date"])
        wrong = str(task.setup["health.days"][other]["steps"])
        assert not tpl.verify(task, {}, {}, f"I don't know, maybe {wrong}?").success


def test_health_gui_logs_water_by_tapping():
    script = catalog().apps["Health"].script("Add 250 ml of water 3 times.")
    assert script.count(("tap", "+250 ml")) == 3
    task = catalog().templates["health.gui_log_water"].instantiate(2)
    ep = run_episode(task, ReferenceSolver())
    assert ep.verdict.success, ep.verdict.reason
