"""The per-user memory store and its four tools (search, add, replace, remove) with BM25 ranked search.

Search modes: ``keyword`` is Okapi BM25 over lowercase words; ``semantic`` is BM25 over crude stems
plus a small hand-written synonym table (a cheap stand-in, not embeddings); ``hybrid`` adds both.

BM25 is written here rather than taken from a library (rank_bm25, tantivy) because a store holds a
few dozen entries, search runs inside the episode hot loop, and the whole thing is ~60 lines of
dict arithmetic with no index to build or keep in sync.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from harness.contract import Code, ToolResult, ToolSpec

CATEGORIES: tuple[str, ...] = ("routines_habits", "important_info", "important_event", "preferences")
SEARCH_MODES: tuple[str, ...] = ("keyword", "semantic", "hybrid")

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "by", "do", "does", "for", "from", "has", "have", "i", "if",
    "in", "is", "it", "its", "me", "my", "of", "on", "or", "our", "please", "so", "that", "the", "their",
    "them", "then", "there", "these", "this", "to", "up", "was", "we", "what", "when", "where", "which",
    "who", "will", "with", "you", "your",
))
# A small hand-written synonym table for the "semantic" mode: phone vocabulary users paraphrase.
_SYNONYMS: dict[str, tuple[str, ...]] = {
    "tv": ("television", "display", "screen"),
    "television": ("tv", "display"),
    "display": ("screen", "monitor", "tv"),
    "screen": ("display",),
    "monitor": ("display", "screen"),
    "cast": ("mirror", "project"),
    "mirror": ("cast",),
    "laptop": ("computer", "pc", "notebook"),
    "computer": ("laptop", "pc"),
    "pc": ("computer", "laptop"),
    "routin": ("habit", "usual", "always"),
    "habit": ("routin", "usual"),
    "usual": ("routin", "habit"),
    "morn": ("wake", "am"),
    "night": ("bedtim", "even", "sleep"),
    "bedtim": ("night", "sleep"),
    "sleep": ("bedtim", "night"),
    "font": ("text", "size"),
    "read": ("text", "aid"),
    "doctor": ("appoint", "clinic"),
    "birthday": ("anniversari", "bday"),
    "phone": ("mobil", "devic"),
    "music": ("song", "playlist", "audio"),
    "song": ("music",),
    "volum": ("loud", "sound"),
    "messag": ("text", "sms", "chat"),
    "mom": ("mother", "mum"),
    "mother": ("mom", "mum"),
    "dad": ("father",),
    "father": ("dad",),
    "work": ("offic", "job"),
    "offic": ("work",),
    "home": ("hous",),
    "car": ("drive", "vehicl"),
    "code": ("develop", "program", "editor"),
    "develop": ("code", "program"),
}
_SUFFIXES = ("ations", "ation", "ings", "ing", "ness", "ies", "ied", "ers", "er", "ed", "es", "ly", "s", "e", "y")


def tokens(text: str) -> list[str]:
    """Lowercase word tokens without stopwords (what keyword BM25 indexes)."""
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP]


def stem(word: str) -> str:
    """A crude suffix stripper (not Porter): enough to match routine/routines, casting/cast."""
    if len(word) <= 3:
        return word
    for suf in _SUFFIXES:
        if word.endswith(suf) and len(word) - len(suf) >= 3:
            return word[: -len(suf)]
    return word


# Keys and expansions are compared as stems, so stem the table once.
_STEMMED_SYNONYMS: dict[str, tuple[str, ...]] = {}


def _stemmed_synonyms() -> dict[str, tuple[str, ...]]:
    if not _STEMMED_SYNONYMS:
        for k, vs in _SYNONYMS.items():
            key = stem(k)
            _STEMMED_SYNONYMS[key] = tuple(dict.fromkeys(_STEMMED_SYNONYMS.get(key, ()) + tuple(stem(v) for v in vs)))
    return _STEMMED_SYNONYMS


def semantic_terms(text: str) -> list[str]:
    """Stems plus hand-written synonym expansion: a cheap stand-in for embeddings, not real semantics."""
    syn = _stemmed_synonyms()
    out: list[str] = []
    for w in tokens(text):
        s = stem(w)
        out.append(s)
        out.extend(syn.get(s, ()))
    return out


def _bm25(query: list[str], docs: dict[str, list[str]], k1: float = 1.2, b: float = 0.75) -> dict[str, float]:
    """Okapi BM25 of every doc for the query terms (idf with the +1 that keeps it positive)."""
    if not docs or not query:
        return {}
    n = len(docs)
    avg = sum(len(d) for d in docs.values()) / n or 1.0
    df: dict[str, int] = {}
    tfs: dict[str, dict[str, int]] = {}
    for key, doc in docs.items():
        tf: dict[str, int] = {}
        for t in doc:
            tf[t] = tf.get(t, 0) + 1
        tfs[key] = tf
        for t in tf:
            df[t] = df.get(t, 0) + 1
    qset = set(query)
    scores: dict[str, float] = {}
    for key, tf in tfs.items():
        norm = k1 * (1 - b + b * len(docs[key]) / avg)
        s = 0.0
        for t in qset:
            f = tf.get(t)
            if f:
                idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                s += idf * f * (k1 + 1) / (f + norm)
        if s > 0:
            scores[key] = s
    return scores


@dataclass
class MemoryEntry:
    memory_id: str
    category: str
    title: str
    content: str
    tags: list[str] = field(default_factory=list)
    provenance: str = "planted"  # planted (task), assistant (added in an episode), user
    created_at: int = 0  # logical step clock
    updated_at: int = 0
    supersedes: str | None = None
    superseded_by: str | None = None
    removed: bool = False

    @property
    def live(self) -> bool:
        return not self.removed and self.superseded_by is None

    def to_dict(self) -> dict[str, Any]:
        # Hand-written rather than dataclasses.asdict: snapshots run twice per episode on the hot path.
        return {
            "memory_id": self.memory_id,
            "category": self.category,
            "title": self.title,
            "content": self.content,
            "tags": list(self.tags),
            "provenance": self.provenance,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "supersedes": self.supersedes,
            "superseded_by": self.superseded_by,
            "removed": self.removed,
        }

    def public(self, score: float | None = None) -> dict[str, Any]:
        """What search returns to the planner."""
        d = {
            "memory_id": self.memory_id,
            "category": self.category,
            "title": self.title,
            "content": self.content,
            "tags": list(self.tags),
            "updated_at": self.updated_at,
        }
        if score is not None:
            d["relevance_score"] = score
        if self.supersedes:
            d["supersedes"] = self.supersedes
        return d


MEMORY_TOOLS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        ToolSpec(
            name="search_user_memory",
            description=(
                "Search the user's saved memories (routines, preferences, important facts and events). "
                "Returns ranked matches with relevance_score; refine the query if only a fragment matches."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "what to look for, in a few focused words"},
                    "maxResults": {"type": "integer", "minimum": 1, "maximum": 20, "description": "default 5"},
                    "searchMode": {"type": "string", "enum": list(SEARCH_MODES), "description": "default keyword"},
                    "memoryCategory": {"type": "string", "enum": list(CATEGORIES), "description": "only this category"},
                },
                "required": ["query"],
                "additionalProperties": False,
            },
            domain="memory",
            kind="memory",
            read_only=True,
        ),
        ToolSpec(
            name="add_user_memory",
            description="Save a new memory about the user (a routine, preference, fact or event).",
            parameters={
                "type": "object",
                "properties": {
                    "category": {"type": "string", "enum": list(CATEGORIES), "description": "memory category"},
                    "title": {"type": "string", "description": "short title"},
                    "content": {"type": "string", "description": "the fact, in one or two sentences"},
                    "tags": {"type": "array", "items": {"type": "string"}, "description": "keywords"},
                },
                "required": ["category", "title", "content"],
                "additionalProperties": False,
            },
            domain="memory",
            kind="memory",
        ),
        ToolSpec(
            name="replace_user_memory",
            description="Replace an outdated memory with corrected content; the old entry stays linked as superseded.",
            parameters={
                "type": "object",
                "properties": {
                    "memory_id": {"type": "string", "description": "id from search_user_memory"},
                    "content": {"type": "string", "description": "the corrected fact"},
                    "title": {"type": "string", "description": "new title (default: keep the old one)"},
                },
                "required": ["memory_id", "content"],
                "additionalProperties": False,
            },
            domain="memory",
            kind="memory",
        ),
        ToolSpec(
            name="remove_user_memory",
            description="Remove a memory the user no longer wants kept.",
            parameters={
                "type": "object",
                "properties": {"memory_id": {"type": "string", "description": "id from search_user_memory"}},
                "required": ["memory_id"],
                "additionalProperties": False,
            },
            domain="memory",
            kind="memory",
        ),
    )
}


class MemoryStore:
    """One user's memories. Ids of planted entries come from the task; new ones are ``mem_<n>``."""

    def __init__(self, entries: list[dict[str, Any]] | None = None):
        self.clock = 0
        self.entries: dict[str, MemoryEntry] = {}
        self._next = 1
        self._kw: dict[str, list[str]] = {}
        self._sem: dict[str, list[str]] = {}
        if entries:
            self.reset(entries)

    def reset(self, entries: list[dict[str, Any]]) -> None:
        """Load the task's planted entries (gold plus distractors); the clock restarts at 0."""
        self.clock = 0
        self.entries = {}
        self._kw, self._sem = {}, {}
        self._next = 1
        for i, e in enumerate(entries):
            mid = str(e.get("id") or e.get("memory_id") or f"planted_{i + 1}")
            self._put(
                MemoryEntry(
                    memory_id=mid,
                    category=e.get("category", "important_info"),
                    title=e.get("title", ""),
                    content=e.get("content", ""),
                    tags=list(e.get("tags", [])),
                    provenance=e.get("provenance", "planted"),
                    created_at=int(e.get("created_at", 0)),
                    updated_at=int(e.get("updated_at", e.get("created_at", 0))),
                )
            )

    def _put(self, entry: MemoryEntry) -> None:
        self.entries[entry.memory_id] = entry
        # The title counts twice: it is the user's own summary of what the memory is about.
        text = f"{entry.title} {entry.title} {entry.content} {' '.join(entry.tags)}"
        self._kw[entry.memory_id] = tokens(text)
        self._sem[entry.memory_id] = [stem(w) for w in tokens(text)]

    def _new_id(self) -> str:
        while f"mem_{self._next}" in self.entries:
            self._next += 1
        mid = f"mem_{self._next}"
        self._next += 1
        return mid

    # -- operations -----------------------------------------------------------------------------

    def search(
        self, query: str, max_results: int = 5, mode: str = "keyword", category: str | None = None
    ) -> list[tuple[MemoryEntry, float]]:
        """Live entries ranked by BM25 (relevance squashed to (0, 1): s / (s + 2)); zero scores dropped."""
        live = [m for m, e in self.entries.items() if e.live and (category is None or e.category == category)]
        scores: dict[str, float] = {}
        if mode in ("keyword", "hybrid"):
            for m, s in _bm25(tokens(query), {m: self._kw[m] for m in live}).items():
                scores[m] = scores.get(m, 0.0) + s
        if mode in ("semantic", "hybrid"):
            weight = 0.5 if mode == "hybrid" else 1.0
            for m, s in _bm25(semantic_terms(query), {m: self._sem[m] for m in live}).items():
                scores[m] = scores.get(m, 0.0) + weight * s
        ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:max_results]
        return [(self.entries[m], round(s / (s + 2.0), 4)) for m, s in ranked]

    def add(self, category: str, title: str, content: str, tags: list[str] | None = None,
            provenance: str = "assistant") -> MemoryEntry:
        entry = MemoryEntry(
            memory_id=self._new_id(), category=category, title=title, content=content, tags=list(tags or []),
            provenance=provenance, created_at=self.clock, updated_at=self.clock,
        )
        self._put(entry)
        return entry

    def replace(self, memory_id: str, content: str, title: str | None = None) -> MemoryEntry:
        old = self.entries[memory_id]
        new = MemoryEntry(
            memory_id=self._new_id(), category=old.category, title=title or old.title, content=content,
            tags=list(old.tags), provenance="assistant", created_at=self.clock, updated_at=self.clock,
            supersedes=old.memory_id,
        )
        old.superseded_by = new.memory_id
        old.updated_at = self.clock
        self._put(new)
        return new

    def remove(self, memory_id: str) -> MemoryEntry:
        e = self.entries[memory_id]
        e.removed = True
        e.updated_at = self.clock
        return e

    def snapshot(self) -> dict[str, Any]:
        """``{"entries": {id: entry}}`` of live and superseded entries (removed ones are gone), sorted by id."""
        return {"entries": {m: self.entries[m].to_dict() for m in sorted(self.entries) if not self.entries[m].removed}}

    # -- the tools ------------------------------------------------------------------------------

    def call(self, name: str, args: dict[str, Any]) -> ToolResult:
        """Run one memory tool (arguments already schema-checked by the caller or not: both fine)."""
        from devices.virtual.registry import check_arguments  # the same fast checker the phone uses

        spec = MEMORY_TOOLS.get(name)
        if spec is None:
            return ToolResult.fail(Code.NOT_FOUND, f"unknown memory tool '{name}'")
        problem = check_arguments(spec, args)
        if problem:
            return ToolResult.fail(Code.BAD_ARGUMENT, problem)
        if name == "search_user_memory":
            hits = self.search(
                args["query"], int(args.get("maxResults", 5)), args.get("searchMode", "keyword"),
                args.get("memoryCategory"),
            )
            results = [e.public(score) for e, score in hits]
            msg = f"{len(results)} memories found" if results else "no memories matched; try other words"
            return ToolResult.ok(msg, {"results": results, "total": len(results)})
        if name == "add_user_memory":
            if not args["title"].strip() or not args["content"].strip():
                return ToolResult.fail(Code.BAD_ARGUMENT, "title and content must not be empty")
            e = self.add(args["category"], args["title"], args["content"], args.get("tags"))
            return ToolResult.ok(f"memory saved as {e.memory_id}", {"memory_id": e.memory_id, "category": e.category})
        mid = args["memory_id"]
        e = self.entries.get(mid)
        if e is None or e.removed:
            return ToolResult.fail(Code.NOT_FOUND, f"no memory with id '{mid}'; search first to get its id")
        if e.superseded_by is not None:
            return ToolResult.fail(
                Code.CONFLICT, f"memory '{mid}' was already replaced by '{e.superseded_by}'; use that id"
            )
        if name == "replace_user_memory":
            new = self.replace(mid, args["content"], args.get("title"))
            return ToolResult.ok(
                f"memory {mid} replaced by {new.memory_id}", {"memory_id": new.memory_id, "supersedes": mid}
            )
        self.remove(mid)
        return ToolResult.ok(f"memory {mid} removed", {"memory_id": mid, "removed": True})

    def verify(self, name: str, args: dict[str, Any], result: ToolResult) -> bool | None:
        """Per-call verification of a memory write from the store itself (None for searches and failures)."""
        if not result.success or name == "search_user_memory":
            return None
        mid = result.data.get("memory_id")
        e = self.entries.get(mid) if mid else None
        if name == "remove_user_memory":
            return bool(e and e.removed)
        return bool(e and e.live)
