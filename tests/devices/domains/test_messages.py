"""Messages and contacts: recipient resolution, blocking, scheduling, the Messages app and its templates."""

from __future__ import annotations

import random

from devices.virtual.domains.messages import new_outgoing, normalise_number, sample_contacts
from devices.virtual.phone import VirtualPhone
from devices.virtual.registry import catalog
from harness.episode import run_episode
from harness.reference import ReferenceSolver


def _phone() -> VirtualPhone:
    phone = VirtualPhone(strict=True)
    phone.reset()
    return phone


def test_send_resolves_id_name_and_number_and_opens_one_thread_per_number():
    phone = _phone()
    before = phone.snapshot()
    assert phone.call(("send_sms", {"recipient": "c1", "body": "one"})).success
    assert phone.call(("send_sms", {"recipient": "alice chen", "body": "two"})).success
    r = phone.call(("send_sms", {"recipient": "+1 (415) 555-0101", "body": "three"}))
    assert r.success and r.data["to"] == "Alice Chen"
    assert new_outgoing(before, phone.snapshot()) == [("+14155550101", b) for b in ("one", "two", "three")]


def test_blocked_ambiguous_unknown_and_malformed_recipients_fail_clearly():
    phone = _phone()
    r = phone.call(("send_sms", {"recipient": "Dana Okafor", "body": "hi"}))
    assert r.code == 409 and "unblock" in r.error
    phone.call(("add_contact", {"name": "Alice Chen", "phone": "+12065550999"}))
    r = phone.call(("send_sms", {"recipient": "Alice Chen", "body": "hi"}))
    assert r.code == 409 and "contact_id" in r.error
    assert phone.call(("send_sms", {"recipient": "Zed Zed", "body": "hi"})).code == 404
    assert phone.call(("send_sms", {"recipient": "+12", "body": "hi"})).code == 400
    assert normalise_number("call me") is None and normalise_number("0044 20 7946 0018") == "00442079460018"


def test_new_ids_never_collide_with_seeded_ones():
    phone = _phone()  # seeded contacts c1..c4 and message m1 exist while the event counter is still 0
    r = phone.call(("add_contact", {"name": "Eva Stone", "phone": "+14155550999"}))
    assert r.data["contact_id"] not in {"c1", "c2", "c3", "c4"}
    assert len(phone.state["messages"]["contacts"]) == 5
    r = phone.call(("send_sms", {"recipient": "c2", "body": "Friday works"}))
    ids = [m["id"] for m in phone.state["messages"]["threads"]["+12125550102"]["messages"]]
    assert len(ids) == len(set(ids)) == 2


def test_mark_read_and_schedule_then_cancel():
    phone = _phone()
    assert phone.call(("list_message_threads", {"unread_only": True})).data["total"] == 1
    assert phone.call(("mark_thread_read", {"recipient": "Bruno Martin"})).data["marked"] == 1
    assert phone.call(("list_message_threads", {"unread_only": True})).data["total"] == 0
    r = phone.call(("schedule_sms", {"recipient": "c3", "body": "Happy birthday!", "send_at": "2026-12-20 09:00"}))
    sid = r.data["schedule_id"]
    assert phone.call(("list_scheduled_sms", {})).data["total"] == 1
    assert phone.call(("cancel_scheduled_sms", {"schedule_id": sid})).success
    assert phone.call(("cancel_scheduled_sms", {"schedule_id": sid})).code == 404


def test_sampled_contacts_vary_with_the_seed_and_are_distinct():
    a, b = sample_contacts(random.Random(1)), sample_contacts(random.Random(2))
    assert a != b
    for book in (a, b):
        assert len({c["name"] for c in book.values()}) == len({c["phone"] for c in book.values()}) == len(book)


def test_gui_script_sends_through_the_app_screens():
    phone = _phone()
    script = catalog().apps["Messages"].script('Send the message "See you at 7" to Carla Diaz.')
    assert script is not None and script[-2] == ("tap", "Send")
    phone.open_app("Messages")
    for action in script[:-1]:
        res = phone.tap(action[1]) if action[0] == "tap" else phone.type_text(action[1], action[2])
        assert res.success, (action, res.error)
    assert any(e.text == "You: See you at 7" for e in phone.screen().elements)
    assert phone.state["messages"]["threads"]["+13125550103"]["messages"][-1]["body"] == "See you at 7"
    assert catalog().apps["Messages"].script("make coffee") is None


def test_reference_send_retries_once_after_the_outage():
    task = catalog().templates["messages.send_sms_to_contact"].instantiate(4)
    ep = run_episode(task, ReferenceSolver())
    sends = [c.result for s in ep.steps for c in s.calls if c.call.name == "send_sms"]
    assert [r.code for r in sends] == [503, 0] and ep.verdict.success


def test_sending_to_the_same_first_name_neighbour_fails_the_task():
    task = catalog().templates["messages.send_sms_to_contact"].instantiate(7)
    phone = VirtualPhone(strict=True)
    phone.reset(task)
    initial = phone.snapshot()
    target = task.params["contact_id"]
    first = phone.state["messages"]["contacts"][target]["name"].split()[0]
    twin = next(
        c
        for c in phone.state["messages"]["contacts"].values()
        if c["id"] != target and c["name"].startswith(first + " ")
    )
    phone.call(("send_sms", {"recipient": twin["id"], "body": task.params["body"]}))  # the 503
    phone.call(("send_sms", {"recipient": twin["id"], "body": task.params["body"]}))
    final = phone.snapshot()
    final["memory"] = initial["memory"] = {"entries": {}}
    assert not task.template_obj.verify(task, initial, final, "Sent.").success
