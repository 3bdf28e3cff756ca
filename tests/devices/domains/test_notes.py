"""Notes domain: pending writes saved at the next step or by save_note, locks, folders, and the Notes GUI agent."""

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


def _events(phone: VirtualPhone) -> list[str]:
    return [e["event"] for e in phone.state["_meta"]["events"]]


def test_create_note_is_pending_until_the_next_step_saves_it():
    phone = _phone()
    r = phone.call(("create_note", {"title": "Locker", "body": "218 / 4471"}))
    assert r.success and r.data == {"note_id": "note_0007", "status": "pending", "folder": "Personal"}
    assert phone.call(("get_note", {"note_id": "note_0007"})).data["status"] == "pending"
    assert phone.call(("list_unsaved_notes", {})).data["total"] == 1
    phone.advance(1)
    got = phone.call(("get_note", {"note_id": "note_0007"})).data
    assert got["saved"] and got["status"] == "saved"
    assert _events(phone)[-2:] == ["notes.note_created", "notes.note_saved"]
    assert phone.state["notes"]["pending"] == []


def test_with_auto_save_off_writes_wait_for_save_note():
    phone = _phone(notes__auto_save=False)
    phone.call(("append_to_note", {"note_id": "note_0005", "text": "Chapter 4"}))
    phone.advance(3)
    assert phone.call(("get_note", {"note_id": "note_0005"})).data["status"] == "pending"
    r = phone.call(("save_note", {"note_id": "note_0005"}))
    assert r.success and r.data["status"] == "saved"
    assert phone.state["notes"]["notes"]["note_0005"]["body"].endswith("\nChapter 4")
    assert "already saved" in phone.call(("save_note", {"note_id": "note_0005"})).message


def test_locked_notes_refuse_edits_and_folders_must_exist_and_be_empty_to_delete():
    phone = _phone()
    assert phone.call(("update_note", {"note_id": "note_0004", "body": "x"})).code == 409
    assert phone.call(("move_note_to_folder", {"note_id": "note_0003", "folder": "Travel"})).code == 404
    assert phone.call(("create_note_folder", {"name": "travel"})).success
    assert phone.call(("create_note_folder", {"name": "Travel"})).code == 409
    assert phone.call(("delete_note_folder", {"name": "Work"})).code == 409
    assert phone.call(("add_checklist_item", {"note_id": "note_0001", "text": "milk"})).code == 409


def test_search_finds_checklist_items_and_list_puts_pinned_first():
    phone = _phone()
    hits = phone.call(("search_notes", {"query": "eggs"})).data["results"]
    assert [h["note_id"] for h in hits] == ["note_0001"]
    listed = phone.call(("list_notes", {})).data["notes"]
    assert listed[0]["note_id"] == "note_0002" and listed[0]["pinned"]


def test_writes_are_refused_while_the_phone_is_off():
    phone = _phone(power__device__state="off")
    assert phone.call(("create_note", {"title": "x"})).code == 412
    assert phone.call(("get_note", {"note_id": "note_0001"})).success  # reads still answer from storage


def test_gui_script_parses_quoted_and_bare_instructions():
    script = catalog().apps["Notes"].script
    acts = script('Create a note titled "Parking spot" with the text: Car is on level 3, bay C14')
    assert ("type", "Parking spot", "title") in acts and ("type", "Car is on level 3, bay C14", "body") in acts
    acts = script("Make a note called Garden saying Water the tomatoes")
    assert ("type", "Garden", "title") in acts and ("type", "Water the tomatoes", "body") in acts
    assert script("Play some music") is None


def test_gui_agent_creates_the_note_through_the_screens_and_confirms_it_saved():
    phone = _phone()
    run = ScriptedGuiExecutor().run(phone, "Notes", 'Create a note titled "Gate code" with the text: 1942#', 30)
    assert run.status == "completed", run.error
    assert run.artifacts == ["Gate code"]
    note = phone.state["notes"]["notes"]["note_0007"]
    assert (note["title"], note["body"], note["saved"]) == ("Gate code", "1942#", True)
    assert [s["action"] for s in run.steps][0] == "launch_app"


def test_gui_agent_cannot_confirm_a_note_that_never_saves():
    phone = _phone(notes__auto_save=False)
    run = ScriptedGuiExecutor().run(phone, "Notes", 'Create a note titled "Gate code" with the text: 1942#', 30)
    assert run.status == "failed"  # the list still shows it as unsaved, so the agent cannot open it by title


def test_gui_template_through_the_harness():
    tpl = catalog().templates["notes.gui_agent_create_note"]
    for seed in range(5):
        ep = run_episode(tpl.instantiate(seed), ReferenceSolver())
        assert ep.verdict.success, ep.verdict.reason
        assert ep.costs.tool_calls["subagent"] == 2
