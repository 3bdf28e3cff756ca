"""Media: the player's state machine, volume rules, Bluetooth output prerequisites, playlists and the Music app."""

from __future__ import annotations

from devices.virtual.phone import VirtualPhone
from devices.virtual.registry import catalog
from harness.episode import run_episode
from harness.reference import ReferenceSolver


def _phone() -> VirtualPhone:
    phone = VirtualPhone(strict=True)
    phone.reset()
    return phone


def test_playback_state_machine():
    phone = _phone()
    assert phone.call(("pause_playback", {})).code == 409
    r = phone.call(("play_media", {"kind": "playlist", "title": "morning run"}))
    assert r.data["state"] == "playing" and r.data["track"] == 1 and r.data["of"] == 3
    assert phone.call(("skip_to_previous_track", {})).code == 409
    assert phone.call(("skip_to_next_track", {})).data["title"].startswith("Paper Planes at Dawn")
    assert phone.call(("pause_playback", {})).data["state"] == "paused"
    assert phone.call(("pause_playback", {})).code == 409
    assert phone.call(("resume_playback", {})).data["state"] == "playing"
    phone.call(("skip_to_next_track", {}))
    assert phone.call(("skip_to_next_track", {})).code == 409
    assert phone.call(("play_media", {"kind": "album", "title": "Lowlands"})).data["of"] == 3
    assert phone.call(("play_media", {"kind": "song", "title": "Nope"})).code == 404


def test_volume_rules():
    phone = _phone()
    assert phone.call(("set_stream_volume", {"stream": "alarm", "level": 0})).code == 400
    assert phone.call(("set_stream_volume", {"stream": "ring", "level": 0})).success
    assert phone.call(("set_stream_volume", {"stream": "media", "level": 16})).code == 400
    assert phone.call(("get_volume_levels", {})).data["ring"] == 0


def test_bluetooth_output_needs_bluetooth_on_and_the_device_connected():
    phone = _phone()
    r = phone.call(("set_audio_output", {"device": "Galaxy Buds"}))
    assert r.code == 412 and "Bluetooth is off" in r.error
    phone.call(("set_bluetooth", {"enabled": True}))
    r = phone.call(("set_audio_output", {"device": "Galaxy Buds"}))
    assert r.code == 412 and "not connected" in r.error
    phone.call(("connect_bluetooth_device", {"device_name": "Galaxy Buds"}))
    assert phone.call(("set_audio_output", {"device": "galaxy buds"})).data["current"] == "Galaxy Buds"
    phone.call(("set_wifi", {"enabled": False}))
    assert phone.call(("set_audio_output", {"device": "Living Room Speaker"})).code == 412


def test_playlists_refuse_duplicates():
    phone = _phone()
    assert phone.call(("create_playlist", {"name": "Focus"})).code == 409
    pid = phone.call(("create_playlist", {"name": "Road Trip"})).data["playlist_id"]
    assert pid not in {"pl1", "pl2", "pl3", "pl4"}
    assert phone.call(("add_song_to_playlist", {"playlist": "Road Trip", "song": "Copper Sun"})).success
    assert phone.call(("add_song_to_playlist", {"playlist": pid, "song": "copper sun"})).code == 409
    assert phone.call(("play_media", {"kind": "playlist", "title": "Road Trip"})).success
    assert phone.call(("remove_song_from_playlist", {"playlist": pid, "song": "Copper Sun"})).success
    assert phone.call(("play_media", {"kind": "playlist", "title": "Road Trip"})).code == 409


def test_podcast_template_recovers_from_the_412_by_evidence():
    tpl = catalog().templates["media.podcast_on_bluetooth"]
    for seed in range(10):
        ep = run_episode(tpl.instantiate(seed), ReferenceSolver())
        outputs = [c.result for s in ep.steps for c in s.calls if c.call.name == "set_audio_output"]
        assert [r.code for r in outputs] == [412, 0]
        assert ep.verdict.success, ep.verdict.reason


def test_playlist_skill_template_accepts_only_the_requested_order():
    tpl = catalog().templates["media.skill_build_playlist"]
    task = tpl.instantiate(0)
    phone = VirtualPhone(strict=True)
    phone.reset(task)
    initial = phone.snapshot()
    name, tracks = task.params["name"], task.params["tracks"]
    if not any(p["name"] == name for p in phone.state["media"]["playlists"].values()):
        phone.call(("create_playlist", {"name": name}))
    for t in reversed(tracks):
        phone.call(("add_song_to_playlist", {"playlist": name, "song": t}))
    assert not tpl.verify(task, initial, phone.snapshot(), "Done.").success


def test_music_gui_adds_a_song_and_the_equalizer_script():
    app = catalog().apps["Music"]
    assert app.script('Add "Copper Sun" to the playlist "Focus".')[0] == ("tap", "Playlists")
    phone = _phone()
    phone.open_app("Music")
    for action in app.script("Set the equalizer to jazz.")[:-1]:
        assert phone.tap(action[1]).success
    assert phone.state["media"]["equalizer"] == {"enabled": True, "preset": "jazz"}
    assert any(e.text == "Jazz (on)" for e in phone.screen().elements)


def test_playlist_skill_template_catches_changes_to_other_playlists():
    tpl = catalog().templates["media.skill_build_playlist"]
    task = tpl.instantiate(1)
    phone = VirtualPhone(strict=True)
    phone.reset(task)
    initial = phone.snapshot()
    ep = run_episode(task, ReferenceSolver(), env=phone)
    assert ep.verdict.success
    phone.call(
        (
            "remove_song_from_playlist",
            {"playlist": "pl1", "song": phone.state["media"]["playlists"]["pl1"]["tracks"][0]},
        )
    )
    verdict = tpl.verify(task, initial, phone.snapshot(), ep.final_answer)
    assert not verdict.success and "other playlists" in verdict.reason
