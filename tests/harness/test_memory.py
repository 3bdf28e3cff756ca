"""The memory store: BM25 ranking among distractors, superseding, removal, categories and tool errors."""

from __future__ import annotations

from harness.memory import MEMORY_TOOLS, MemoryStore, stem, tokens

ENTRIES = [
    {"id": "m_frag", "category": "routines_habits", "title": "Work mode",
     "content": "When I start work I open the code editor.", "tags": ["work"]},
    {"id": "m_gold", "category": "routines_habits", "title": "Laptop work routine",
     "content": "Open the code editor, share keyboard and mouse from the laptop to the phone over Wi-Fi, "
                "then enable USB debugging last.", "tags": ["laptop", "usb", "keyboard"]},
    {"id": "m_d1", "category": "preferences", "title": "Laptop wallpaper",
     "content": "Prefers a dark wallpaper on the laptop.", "tags": ["laptop"]},
    {"id": "m_d2", "category": "important_info", "title": "USB cable",
     "content": "The blue USB cable is in the desk drawer.", "tags": ["usb"]},
    {"id": "m_d3", "category": "routines_habits", "title": "Evening routine",
     "content": "Turn on the night light and silence notifications at 10pm.", "tags": ["night"]},
    {"id": "m_d4", "category": "important_event", "title": "Laptop repair",
     "content": "The old laptop went to repair on 3 March.", "tags": ["laptop"]},
]


def store() -> MemoryStore:
    return MemoryStore(ENTRIES)


def ids(result) -> list[str]:
    return [r["memory_id"] for r in result.data["results"]]


def test_bm25_ranks_the_gold_entry_first_for_a_focused_query():
    s = store()
    for query in ("laptop work routine keyboard usb debugging", "routine with USB debugging and keyboard sharing"):
        res = s.call("search_user_memory", {"query": query})
        assert res.success and ids(res)[0] == "m_gold", (query, ids(res))
        scores = [r["relevance_score"] for r in res.data["results"]]
        assert scores == sorted(scores, reverse=True) and all(0 < x < 1 for x in scores)
    # A vague first query may surface only the fragment; the gold entry is still among the results.
    vague = s.call("search_user_memory", {"query": "work", "maxResults": 3})
    assert "m_frag" in ids(vague)


def test_title_counts_more_than_content():
    s = MemoryStore([
        {"id": "t", "category": "preferences", "title": "Font size", "content": "Large."},
        {"id": "c", "category": "preferences", "title": "Reading", "content": "Uses a font size that is large."},
    ])
    assert ids(s.call("search_user_memory", {"query": "font size"}))[0] == "t"


def test_category_filter_max_results_and_no_match():
    s = store()
    res = s.call("search_user_memory", {"query": "laptop", "memoryCategory": "preferences"})
    assert ids(res) == ["m_d1"]
    assert len(ids(s.call("search_user_memory", {"query": "laptop", "maxResults": 2}))) == 2
    none = s.call("search_user_memory", {"query": "zebra"})
    assert none.success and none.data == {"results": [], "total": 0}


def test_semantic_mode_matches_stems_and_synonyms_keyword_does_not():
    s = MemoryStore([
        {"id": "tv", "category": "preferences", "title": "Living room TV", "content": "Casts shows in mirror mode."},
        {"id": "x", "category": "preferences", "title": "Alarm", "content": "Wakes at 7."},
    ])
    assert ids(s.call("search_user_memory", {"query": "television", "searchMode": "keyword"})) == []
    assert ids(s.call("search_user_memory", {"query": "television", "searchMode": "semantic"})) == ["tv"]
    assert ids(s.call("search_user_memory", {"query": "casting television", "searchMode": "hybrid"}))[0] == "tv"
    assert stem("routines") == stem("routine") and "the" not in tokens("The routine")


def test_replace_keeps_the_old_entry_linked_and_search_returns_the_new_one():
    s = store()
    res = s.call("replace_user_memory", {"memory_id": "m_d2", "content": "The USB cable is in the car."})
    assert res.success
    new = res.data["memory_id"]
    snap = s.snapshot()["entries"]
    assert snap["m_d2"]["superseded_by"] == new and snap[new]["supersedes"] == "m_d2"
    assert snap[new]["title"] == "USB cable" and snap["m_d2"]["content"].startswith("The blue")
    found = ids(s.call("search_user_memory", {"query": "usb cable"}))
    assert new in found and "m_d2" not in found
    again = s.call("replace_user_memory", {"memory_id": "m_d2", "content": "x"})
    assert not again.success and again.code == 409 and new in again.error


def test_add_and_remove():
    s = store()
    s.clock = 4
    res = s.call("add_user_memory", {"category": "important_info", "title": "Gate code", "content": "4411",
                                     "tags": ["home"]})
    mid = res.data["memory_id"]
    assert res.success and mid == "mem_1"
    assert s.entries[mid].created_at == 4 and s.entries[mid].provenance == "assistant"
    assert s.verify("add_user_memory", {}, res) is True
    gone = s.call("remove_user_memory", {"memory_id": "m_d3"})
    assert gone.success and "m_d3" not in s.snapshot()["entries"]
    assert "m_d3" not in ids(s.call("search_user_memory", {"query": "evening night light"}))
    assert s.call("remove_user_memory", {"memory_id": "m_d3"}).code == 404


def test_tool_errors_are_400_and_404():
    s = store()
    assert s.call("search_user_memory", {}).code == 400
    assert s.call("search_user_memory", {"query": "x", "memoryCategory": "hobbies"}).code == 400
    assert s.call("search_user_memory", {"query": "x", "limit": 3}).code == 400
    assert s.call("add_user_memory", {"category": "preferences", "title": "t"}).code == 400
    assert s.call("replace_user_memory", {"memory_id": "nope", "content": "x"}).code == 404
    assert s.call("remove_user_memory", {"memory_id": "nope"}).code == 404
    assert set(MEMORY_TOOLS) == {"search_user_memory", "add_user_memory", "replace_user_memory", "remove_user_memory"}
    assert all(spec.kind == "memory" for spec in MEMORY_TOOLS.values())


def test_snapshot_is_deterministic_and_reset_restores():
    a, b = store(), store()
    assert a.snapshot() == b.snapshot()
    a.call("add_user_memory", {"category": "preferences", "title": "t", "content": "c"})
    assert a.snapshot() != b.snapshot()
    a.reset(ENTRIES)
    assert a.snapshot() == b.snapshot()
    assert list(a.snapshot()["entries"]) == sorted(a.snapshot()["entries"])
