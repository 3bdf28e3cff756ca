"""Assistant: the phrasebook, languages, dictionary, time zones, weather, search, and conflict arbitration."""

from __future__ import annotations

from devices.virtual.domains.assistant import shift_time
from devices.virtual.phone import VirtualPhone
from devices.virtual.registry import catalog
from harness.contract import PlannerTurn, ToolCall
from harness.episode import run_episode
from harness.planner import ScriptedPlanner
from harness.reference import ReferenceSolver


def _phone() -> VirtualPhone:
    phone = VirtualPhone(strict=True)
    phone.reset()
    return phone


def test_translation_both_ways_and_clear_errors():
    phone = _phone()
    r = phone.call(("translate_text", {"text": "Where is the train station?", "target_language": "de"}))
    assert r.data == {"translation": "wo ist der Bahnhof?", "source_language": "English", "target_language": "German"}
    r = phone.call(("translate_text", {"text": "¿Dónde está la estación de tren?", "target_language": "English"}))
    assert r.data["translation"] == "where is the train station" and r.data["source_language"] == "Spanish"
    r = phone.call(("translate_text", {"text": "thank you", "target_language": "Brazilian Portuguese"}))
    assert r.code == 400 and "Portuguese (pt)" in r.error
    assert (
        phone.call(("translate_text", {"text": "my hovercraft is full of eels", "target_language": "fr"})).code == 404
    )
    assert phone.call(("detect_language", {"text": "danke"})).data["language"] == "German"


def test_time_zones_shift_days():
    assert shift_time("23:30", 60) == ("00:30", 1)
    assert shift_time("01:00", -300) == ("20:00", -1)
    phone = _phone()
    r = phone.call(("convert_time_between_zones", {"time": "20:00", "from_city": "London", "to_city": "Tokyo"}))
    assert r.data["time"] == "05:00" and r.data["day_offset"] == 1
    r = phone.call(("convert_time_between_zones", {"time": "9:15", "from_city": "Mumbai", "to_city": "london"}))
    assert r.data["time"] == "03:45"
    assert phone.call(("get_world_time", {"city": "New York"})).data["time"] == "04:00"


def test_world_clock_and_units():
    phone = _phone()
    assert phone.call(("add_world_clock", {"city": "tokyo"})).data["cities"] == ["London", "New York", "Tokyo"]
    assert phone.call(("add_world_clock", {"city": "Tokyo"})).code == 409
    assert phone.call(("remove_world_clock", {"city": "Sydney"})).code == 404
    c = phone.call(("get_current_weather", {"city": "Tokyo"})).data["temperature"]
    phone.call(("set_temperature_unit", {"unit": "F"}))
    assert phone.call(("get_current_weather", {"city": "Tokyo"})).data["temperature"] == round(c * 9 / 5 + 32)


def test_dictionary_and_vocabulary():
    phone = _phone()
    assert "short time" in phone.call(("define_word", {"word": "Ephemeral"})).data["definition"]
    assert phone.call(("save_vocabulary_word", {"word": "ephemeral"})).success
    assert phone.call(("save_vocabulary_word", {"word": "ephemeral"})).code == 409
    assert phone.call(("get_synonyms", {"word": "zzz"})).code == 404


def test_conflict_arbitration_is_a_pure_procedure_skill():
    skill = catalog().skills["conflict_arbitration"]
    assert skill.tools == [] and any("latest" in r for r in skill.rules)
    users = [t for t in catalog().templates.values() if "conflict_arbitration" in t.draft(0).skills]
    assert any(t.category == "skills" for t in users)


def _say(text: str) -> PlannerTurn:
    return PlannerTurn(content=text)


def _calls(*calls: tuple[str, dict]) -> PlannerTurn:
    return PlannerTurn(tool_calls=[ToolCall(id=f"c{i}", name=n, arguments=a) for i, (n, a) in enumerate(calls)])


def test_applying_the_superseded_request_fails_even_when_corrected():
    tpl = catalog().templates["assistant.skill_conflicting_requests"]
    for seed in range(6):
        task = tpl.instantiate(seed)
        p, bad = task.params, task.params["superseded"]
        turns = [_calls(("skill__conflict_arbitration", {"reason": "x"}))]
        if bad["key"] == "language":
            turns.append(_calls(("set_assistant_language", {"language": bad["value"]})))
        turns.append(_calls(("set_assistant_language", {"language": p["language"]})))
        if bad["key"] == "city":
            turns.append(_calls(("add_world_clock", {"city": bad["value"]})))
            turns.append(_calls(("remove_world_clock", {"city": bad["value"]})))
        turns += [
            _calls(("add_world_clock", {"city": p["city"]})),
            _calls(("set_temperature_unit", {"unit": "F"})),
            _say("Done."),
        ]
        ep = run_episode(task, ScriptedPlanner(turns))
        assert not ep.verdict.success and "superseded" in ep.verdict.reason
        assert run_episode(task, ReferenceSolver()).verdict.success


def test_web_search_ranks_the_asked_city_first():
    task = catalog().templates["assistant.web_search_question"].instantiate(5)
    phone = VirtualPhone(strict=True)
    phone.reset(task)
    res = phone.call(("web_search", {"query": f"{task.params['city']} {task.params['event']} 2027"})).data["results"]
    assert task.params["city"] in res[0]["title"] and task.answer[0] in res[0]["snippet"]


def test_assistant_gui_removes_a_world_clock():
    phone = _phone()
    phone.open_app("Assistant")
    for action in catalog().apps["Assistant"].script("Remove New York from the world clock.")[:-1]:
        assert phone.tap(action[1]).success
    assert phone.state["assistant"]["world_clocks"] == ["London"]
