"""Assistant: offline phrase translation, dictionary, seeded weather, world clocks and time zones, a web search stub."""

from __future__ import annotations

import random
import re
from typing import Any

from devices.virtual.domains._shared import clock_label, match_name
from devices.virtual.registry import Domain, Element, P, err, ok
from devices.virtual.tasks import Act, Call, Draft, Say, Task, Template, gui_agent
from devices.virtual.wording import pick
from harness.contract import Code, ToolResult

# UTC offsets in minutes (December: no daylight saving in the north, summer time in the south).
CITIES = {
    "London": 0,
    "Paris": 60,
    "Berlin": 60,
    "Rome": 60,
    "Madrid": 60,
    "Lisbon": 0,
    "Cape Town": 120,
    "Dubai": 240,
    "Mumbai": 330,
    "Singapore": 480,
    "Tokyo": 540,
    "Sydney": 660,
    "Auckland": 780,
    "New York": -300,
    "Toronto": -300,
    "Chicago": -360,
    "Mexico City": -360,
    "Los Angeles": -480,
    "São Paulo": -180,
    "Reykjavik": 0,
}
CONDITIONS = ["sunny", "partly cloudy", "cloudy", "light rain", "heavy rain", "showers", "snow", "fog", "windy"]
DAY0 = ("2026-12-02", "Wednesday")
_WEEK = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

LANGUAGES = {
    "es": "Spanish",
    "fr": "French",
    "de": "German",
    "it": "Italian",
    "pt": "Portuguese",
    "ja": "Japanese",
    "en": "English",
}
# A small offline phrasebook: English phrase -> translation per language code.
PHRASES: dict[str, dict[str, str]] = {
    "hello": {"es": "hola", "fr": "salut", "de": "hallo", "it": "ciao", "pt": "olá", "ja": "こんにちは"},
    "thank you": {"es": "gracias", "fr": "merci", "de": "danke", "it": "grazie", "pt": "obrigado", "ja": "ありがとう"},
    "good morning": {
        "es": "buenos días",
        "fr": "bonjour",
        "de": "guten Morgen",
        "it": "buongiorno",
        "pt": "bom dia",
        "ja": "おはようございます",
    },
    "good night": {
        "es": "buenas noches",
        "fr": "bonne nuit",
        "de": "gute Nacht",
        "it": "buona notte",
        "pt": "boa noite",
        "ja": "おやすみなさい",
    },
    "excuse me": {
        "es": "disculpe",
        "fr": "excusez-moi",
        "de": "Entschuldigung",
        "it": "mi scusi",
        "pt": "com licença",
        "ja": "すみません",
    },
    "where is the train station": {
        "es": "¿dónde está la estación de tren?",
        "fr": "où est la gare ?",
        "de": "wo ist der Bahnhof?",
        "it": "dov'è la stazione?",
        "pt": "onde fica a estação de trem?",
        "ja": "駅はどこですか？",
    },
    "how much does this cost": {
        "es": "¿cuánto cuesta esto?",
        "fr": "combien ça coûte ?",
        "de": "wie viel kostet das?",
        "it": "quanto costa questo?",
        "pt": "quanto custa isso?",
        "ja": "これはいくらですか？",
    },
    "the bill please": {
        "es": "la cuenta, por favor",
        "fr": "l'addition, s'il vous plaît",
        "de": "die Rechnung, bitte",
        "it": "il conto, per favore",
        "pt": "a conta, por favor",
        "ja": "お会計をお願いします",
    },
    "i am allergic to peanuts": {
        "es": "soy alérgico a los cacahuetes",
        "fr": "je suis allergique aux arachides",
        "de": "ich bin allergisch gegen Erdnüsse",
        "it": "sono allergico alle arachidi",
        "pt": "sou alérgico a amendoim",
        "ja": "ピーナッツアレルギーがあります",
    },
    "do you speak english": {
        "es": "¿habla inglés?",
        "fr": "parlez-vous anglais ?",
        "de": "sprechen Sie Englisch?",
        "it": "parla inglese?",
        "pt": "você fala inglês?",
        "ja": "英語を話せますか？",
    },
    "i need a doctor": {
        "es": "necesito un médico",
        "fr": "j'ai besoin d'un médecin",
        "de": "ich brauche einen Arzt",
        "it": "ho bisogno di un medico",
        "pt": "preciso de um médico",
        "ja": "医者が必要です",
    },
    "a table for two please": {
        "es": "una mesa para dos, por favor",
        "fr": "une table pour deux, s'il vous plaît",
        "de": "einen Tisch für zwei, bitte",
        "it": "un tavolo per due, per favore",
        "pt": "uma mesa para dois, por favor",
        "ja": "二人用のテーブルをお願いします",
    },
}
WORDS: dict[str, dict[str, Any]] = {
    "ephemeral": {
        "key": "short time",
        "pos": "adjective",
        "definition": "lasting for a very short time",
        "synonyms": ["fleeting", "transient", "brief"],
    },
    "serendipity": {
        "key": "without looking",
        "pos": "noun",
        "definition": "finding something good without looking for it",
        "synonyms": ["luck", "chance", "fortune"],
    },
    "ubiquitous": {
        "key": "everywhere",
        "pos": "adjective",
        "definition": "present or found everywhere",
        "synonyms": ["omnipresent", "pervasive", "universal"],
    },
    "meticulous": {
        "key": "detail",
        "pos": "adjective",
        "definition": "showing great attention to detail",
        "synonyms": ["careful", "thorough", "precise"],
    },
    "candid": {
        "key": "truthful",
        "pos": "adjective",
        "definition": "truthful and straightforward",
        "synonyms": ["frank", "open", "honest"],
    },
    "resilient": {
        "key": "recover",
        "pos": "adjective",
        "definition": "able to recover quickly from difficulties",
        "synonyms": ["tough", "hardy", "adaptable"],
    },
    "gregarious": {
        "key": "sociable",
        "pos": "adjective",
        "definition": "fond of company; sociable",
        "synonyms": ["sociable", "outgoing", "convivial"],
    },
    "lucid": {
        "key": "clearly",
        "pos": "adjective",
        "definition": "expressed clearly and easy to understand",
        "synonyms": ["clear", "coherent", "articulate"],
    },
    "pragmatic": {
        "key": "realistic",
        "pos": "adjective",
        "definition": "dealing with things sensibly and realistically",
        "synonyms": ["practical", "realistic", "sensible"],
    },
    "tenacious": {
        "key": "persistent",
        "pos": "adjective",
        "definition": "not giving up easily; persistent",
        "synonyms": ["persistent", "determined", "dogged"],
    },
    "eloquent": {
        "key": "persuasive",
        "pos": "adjective",
        "definition": "fluent and persuasive in speaking or writing",
        "synonyms": ["articulate", "expressive", "fluent"],
    },
    "frugal": {
        "key": "money",
        "pos": "adjective",
        "definition": "careful not to spend much money",
        "synonyms": ["thrifty", "economical", "sparing"],
    },
}


# Typical December daytime temperature (°C), so seeded weather stays plausible for each city.
CLIMATE = {
    "London": 8,
    "Paris": 7,
    "Berlin": 3,
    "Rome": 13,
    "Madrid": 11,
    "Lisbon": 15,
    "Cape Town": 25,
    "Dubai": 25,
    "Mumbai": 31,
    "Singapore": 30,
    "Tokyo": 11,
    "Sydney": 25,
    "Auckland": 21,
    "New York": 5,
    "Toronto": 0,
    "Chicago": 1,
    "Mexico City": 22,
    "Los Angeles": 19,
    "São Paulo": 27,
    "Reykjavik": 2,
}


def _condition(rng: random.Random, temp: int) -> str:
    return rng.choice([c for c in CONDITIONS if c != "snow" or temp <= 2])


def sample_weather(rng: random.Random, city: str) -> dict[str, Any]:
    """One city's seeded weather: now plus a five-day forecast (°C) around its December climate."""
    base = CLIMATE[city] + rng.randrange(-4, 5)
    days = []
    for k in range(1, 6):
        high = base + rng.randrange(-3, 5)
        days.append(
            {
                "date": f"2026-12-{2 + k:02d}",
                "day": _WEEK[(2 + k) % 7],
                "high_c": high,
                "low_c": high - rng.randrange(3, 10),
                "condition": _condition(rng, high),
                "rain_chance": rng.randrange(0, 101, 5),
            }
        )
    return {
        "now": {
            "temp_c": base,
            "condition": _condition(rng, base),
            "humidity": rng.randrange(30, 95),
            "wind_kph": rng.randrange(0, 45),
        },
        "forecast": days,
    }


_W = random.Random(2026)
DOMAIN = Domain(
    "assistant",
    "Assistant tools",
    initial={
        "settings": {"language": "en", "temperature_unit": "C", "timezone_city": "London"},
        "weather": {c: sample_weather(_W, c) for c in CITIES},
        "world_clocks": ["London", "New York"],
        "saved_words": [],
        "web": [],  # seeded search results for the current task: [{title, url, snippet}]
    },
)
D = DOMAIN
_STRIP = str.maketrans("", "", "?!.¿¡,;:\"'")
_HHMM = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")


# -- helpers --------------------------------------------------------------------------------------


def _norm(text: str) -> str:
    return " ".join(text.lower().translate(_STRIP).split())


def language_code(raw: str) -> str | None:
    low = raw.strip().lower()
    if low in LANGUAGES:
        return low
    return next((c for c, n in LANGUAGES.items() if n.lower() == low), None)


def _bad_language(raw: str) -> ToolResult:
    names = ", ".join(f"{n} ({c})" for c, n in LANGUAGES.items())
    return ToolResult.fail(Code.BAD_ARGUMENT, f"language '{raw}' is not supported; supported: {names}")


def translate(text: str, src: str | None, dst: str) -> tuple[str | None, str | None]:
    """(translation, detected source code) from the phrasebook, or (None, None)."""
    key = _norm(text)
    for eng, row in PHRASES.items():
        forms = {"en": eng, **{c: _norm(v) for c, v in row.items()}}
        for code, form in forms.items():
            if (src is None or src == code) and form == key:
                return (eng if dst == "en" else row[dst]), code
    return None, None


def _city(raw: str) -> str | None:
    return match_name(raw, CITIES)


def _unknown_city(raw: str) -> ToolResult:
    return ToolResult.fail(Code.NOT_FOUND, f"no data for city '{raw}'; cities: {', '.join(CITIES)}")


def _temp(s: dict[str, Any], c: int) -> int:
    return c if s["settings"]["temperature_unit"] == "C" else round(c * 9 / 5 + 32)


def shift_time(hhmm: str, minutes: int) -> tuple[str, int]:
    """``hhmm`` moved by ``minutes``: (new HH:MM, day shift)."""
    h, m = (int(x) for x in hhmm.split(":"))
    total = h * 60 + m + minutes
    return f"{total % 1440 // 60:02d}:{total % 60:02d}", total // 1440


# -- translation and dictionary ---------------------------------------------------------------------


@D.tool(
    "translate_text",
    "Translate a common travel phrase with the offline phrasebook.",
    {
        "text": P.string("the phrase to translate"),
        "target_language": P.string("language name or code, e.g. French or fr"),
        "source_language": P.string("language of the text (detected when left out)"),
    },
    ["text", "target_language"],
    read_only=True,
    codes=(400, 404),
    cases=[
        ok({"text": "Where is the train station?", "target_language": "French"}),
        ok({"text": "gracias", "target_language": "en"}),
        err(400, {"text": "hello", "target_language": "Klingon"}),
        err(404, {"text": "the quantum flux is unstable", "target_language": "de"}),
    ],
)
def translate_text(phone, s, args):
    dst = language_code(args["target_language"])
    if dst is None:
        return _bad_language(args["target_language"])
    src = None
    if "source_language" in args:
        src = language_code(args["source_language"])
        if src is None:
            return _bad_language(args["source_language"])
    out, found = translate(args["text"], src, dst)
    if out is None:
        return ToolResult.fail(
            Code.NOT_FOUND,
            "no offline translation for this phrase; the phrasebook covers common travel "
            "phrases such as 'where is the train station?' or 'thank you'",
        )
    return ToolResult.ok(
        f"{LANGUAGES[dst]}: {out}",
        {"translation": out, "source_language": LANGUAGES[found], "target_language": LANGUAGES[dst]},
    )


@D.tool(
    "detect_language",
    "Detect the language of a phrase.",
    {"text": P.string("the phrase")},
    ["text"],
    read_only=True,
    codes=(404,),
    cases=[ok({"text": "merci"}), err(404, {"text": "zzzz qqq"})],
)
def detect_language(phone, s, args):
    _, found = translate(args["text"], None, "en")
    if found is None:
        return ToolResult.fail(Code.NOT_FOUND, "could not detect the language of this text")
    return ToolResult.ok(LANGUAGES[found], {"language": LANGUAGES[found], "code": found})


@D.tool("list_translation_languages", "List the languages the translator supports.", read_only=True, cases=[ok({})])
def list_translation_languages(phone, s, args):
    return ToolResult.ok(
        f"{len(LANGUAGES)} languages", {"languages": [{"code": c, "name": n} for c, n in LANGUAGES.items()]}
    )


def _word(raw: str) -> tuple[str, dict[str, Any] | None]:
    w = raw.strip().lower()
    return w, WORDS.get(w)


@D.tool(
    "define_word",
    "Look up the definition of an English word.",
    {"word": P.string("the word")},
    ["word"],
    read_only=True,
    codes=(404,),
    cases=[ok({"word": "ephemeral"}), err(404, {"word": "flibbertigibbetish"})],
)
def define_word(phone, s, args):
    w, entry = _word(args["word"])
    if entry is None:
        return ToolResult.fail(Code.NOT_FOUND, f"no dictionary entry for '{args['word']}'")
    return ToolResult.ok(
        f"{w} ({entry['pos']}): {entry['definition']}",
        {"word": w, "part_of_speech": entry["pos"], "definition": entry["definition"]},
    )


@D.tool(
    "get_synonyms",
    "List synonyms of an English word.",
    {"word": P.string("the word")},
    ["word"],
    read_only=True,
    codes=(404,),
    cases=[ok({"word": "candid"}), err(404, {"word": "blorb"})],
)
def get_synonyms(phone, s, args):
    w, entry = _word(args["word"])
    if entry is None:
        return ToolResult.fail(Code.NOT_FOUND, f"no dictionary entry for '{args['word']}'")
    return ToolResult.ok(
        f"synonyms of {w}: {', '.join(entry['synonyms'])}", {"word": w, "synonyms": list(entry["synonyms"])}
    )


@D.tool(
    "save_vocabulary_word",
    "Save a word to the vocabulary list for later review.",
    {"word": P.string("the word")},
    ["word"],
    codes=(404, 409),
    cases=[
        ok({"word": "lucid"}),
        err(404, {"word": "blorb"}),
        err(409, {"word": "lucid"}, {"assistant.saved_words": ["lucid"]}),
    ],
    check=lambda ph, a: a["word"].strip().lower() in ph.state["assistant"]["saved_words"],
)
def save_vocabulary_word(phone, s, args):
    w, entry = _word(args["word"])
    if entry is None:
        return ToolResult.fail(
            Code.NOT_FOUND, f"no dictionary entry for '{args['word']}'; only dictionary words can be saved"
        )
    if w in s["saved_words"]:
        return ToolResult.fail(Code.CONFLICT, f"'{w}' is already in the vocabulary list")
    s["saved_words"] = s["saved_words"] + [w]
    phone.log("assistant.word_save", word=w)
    return ToolResult.ok(f"saved '{w}'", {"saved_words": list(s["saved_words"])})


# -- weather --------------------------------------------------------------------------------------------


@D.tool(
    "get_current_weather",
    "Get the current weather in a city.",
    {"city": P.string("city name")},
    ["city"],
    read_only=True,
    codes=(404,),
    cases=[ok({"city": "Tokyo"}), err(404, {"city": "Atlantis"})],
)
def get_current_weather(phone, s, args):
    city = _city(args["city"])
    if city is None:
        return _unknown_city(args["city"])
    now = s["weather"][city]["now"]
    unit = s["settings"]["temperature_unit"]
    return ToolResult.ok(
        f"{city}: {_temp(s, now['temp_c'])}°{unit}, {now['condition']}",
        {
            "city": city,
            "temperature": _temp(s, now["temp_c"]),
            "unit": unit,
            "condition": now["condition"],
            "humidity": now["humidity"],
            "wind_kph": now["wind_kph"],
        },
    )


@D.tool(
    "get_weather_forecast",
    "Get the daily forecast for a city (day 1 is tomorrow).",
    {"city": P.string("city name"), "days": P.integer("how many days (default 3)", 1, 5)},
    ["city"],
    read_only=True,
    codes=(404,),
    cases=[ok({"city": "Paris", "days": 2}), err(404, {"city": "Gotham"}), err(400, {"city": "Paris", "days": 9})],
)
def get_weather_forecast(phone, s, args):
    city = _city(args["city"])
    if city is None:
        return _unknown_city(args["city"])
    unit = s["settings"]["temperature_unit"]
    rows = [
        {
            "date": d["date"],
            "day": d["day"],
            "high": _temp(s, d["high_c"]),
            "low": _temp(s, d["low_c"]),
            "condition": d["condition"],
            "rain_chance": d["rain_chance"],
        }
        for d in s["weather"][city]["forecast"][: args.get("days", 3)]
    ]
    return ToolResult.ok(f"{len(rows)}-day forecast for {city}", {"city": city, "unit": unit, "forecast": rows})


@D.tool(
    "set_temperature_unit",
    "Show temperatures in Celsius or Fahrenheit.",
    {"unit": P.enum(["C", "F"], "C or F")},
    ["unit"],
    cases=[ok({"unit": "F"}), err(400, {"unit": "K"})],
    check=lambda ph, a: ph.state["assistant"]["settings"]["temperature_unit"] == a["unit"],
)
def set_temperature_unit(phone, s, args):
    if s["settings"]["temperature_unit"] != args["unit"]:
        s["settings"]["temperature_unit"] = args["unit"]
        phone.log("assistant.temperature_unit", unit=args["unit"])
    return ToolResult.ok(f"temperatures in °{args['unit']}", {"temperature_unit": args["unit"]})


# -- clocks and time zones ------------------------------------------------------------------------------


@D.tool(
    "get_world_time",
    "Get the current local time in a city.",
    {"city": P.string("city name")},
    ["city"],
    read_only=True,
    codes=(404,),
    cases=[ok({"city": "Sydney"}), err(404, {"city": "Narnia"})],
)
def get_world_time(phone, s, args):
    city = _city(args["city"])
    if city is None:
        return _unknown_city(args["city"])
    home = s["settings"]["timezone_city"]
    t, day = shift_time(clock_label(phone), CITIES[city] - CITIES[home])
    off = CITIES[city]
    return ToolResult.ok(
        f"{city}: {t}{' (+1 day)' if day > 0 else ' (-1 day)' if day < 0 else ''}",
        {
            "city": city,
            "time": t,
            "day_offset": day,
            "utc_offset": f"UTC{'+' if off >= 0 else '-'}{abs(off) // 60:02d}:{abs(off) % 60:02d}",
        },
    )


@D.tool("list_world_clocks", "List the cities on the world clock.", read_only=True, cases=[ok({})])
def list_world_clocks(phone, s, args):
    return ToolResult.ok(f"{len(s['world_clocks'])} clocks", {"cities": list(s["world_clocks"])})


@D.tool(
    "add_world_clock",
    "Add a city to the world clock.",
    {"city": P.string("city name")},
    ["city"],
    codes=(404, 409),
    cases=[ok({"city": "Tokyo"}), err(404, {"city": "Atlantis"}), err(409, {"city": "london"})],
    check=lambda ph, a: _city(a["city"]) in ph.state["assistant"]["world_clocks"],
)
def add_world_clock(phone, s, args):
    city = _city(args["city"])
    if city is None:
        return _unknown_city(args["city"])
    if city in s["world_clocks"]:
        return ToolResult.fail(Code.CONFLICT, f"{city} is already on the world clock")
    s["world_clocks"] = s["world_clocks"] + [city]
    phone.log("assistant.world_clock_add", city=city)
    return ToolResult.ok(f"added {city}", {"cities": list(s["world_clocks"])})


@D.tool(
    "remove_world_clock",
    "Remove a city from the world clock.",
    {"city": P.string("city name")},
    ["city"],
    codes=(404,),
    cases=[ok({"city": "New York"}), err(404, {"city": "Tokyo"})],
    check=lambda ph, a: _city(a["city"]) not in ph.state["assistant"]["world_clocks"],
)
def remove_world_clock(phone, s, args):
    city = _city(args["city"])
    if city is None or city not in s["world_clocks"]:
        return ToolResult.fail(
            Code.NOT_FOUND, f"'{args['city']}' is not on the world clock; clocks: {', '.join(s['world_clocks'])}"
        )
    s["world_clocks"] = [c for c in s["world_clocks"] if c != city]
    phone.log("assistant.world_clock_remove", city=city)
    return ToolResult.ok(f"removed {city}", {"cities": list(s["world_clocks"])})


@D.tool(
    "convert_time_between_zones",
    "Convert a clock time in one city to the local time in another.",
    {
        "time": P.string("HH:MM, 24-hour"),
        "from_city": P.string("city the time is in"),
        "to_city": P.string("target city"),
    },
    ["time", "from_city", "to_city"],
    read_only=True,
    codes=(400, 404),
    cases=[
        ok({"time": "15:00", "from_city": "London", "to_city": "Tokyo"}),
        err(400, {"time": "3pm", "from_city": "London", "to_city": "Tokyo"}),
        err(404, {"time": "15:00", "from_city": "London", "to_city": "Mordor"}),
    ],
)
def convert_time_between_zones(phone, s, args):
    m = _HHMM.match(args["time"].strip())
    if m is None:
        return ToolResult.fail(Code.BAD_ARGUMENT, f"time must be HH:MM on a 24-hour clock (got {args['time']!r})")
    src, dst = _city(args["from_city"]), _city(args["to_city"])
    for raw, c in ((args["from_city"], src), (args["to_city"], dst)):
        if c is None:
            return _unknown_city(raw)
    t, day = shift_time(f"{int(m.group(1)):02d}:{m.group(2)}", CITIES[dst] - CITIES[src])
    note = " the next day" if day > 0 else " the previous day" if day < 0 else ""
    return ToolResult.ok(
        f"{args['time']} in {src} is {t}{note} in {dst}",
        {"time": t, "day_offset": day, "from_city": src, "to_city": dst},
    )


# -- settings and web search ------------------------------------------------------------------------------


@D.tool(
    "set_assistant_language",
    "Set the language the assistant speaks.",
    {"language": P.string("language name or code")},
    ["language"],
    codes=(400,),
    cases=[ok({"language": "Spanish"}), err(400, {"language": "Elvish"})],
    check=lambda ph, a: ph.state["assistant"]["settings"]["language"] == language_code(a["language"]),
)
def set_assistant_language(phone, s, args):
    code = language_code(args["language"])
    if code is None:
        return _bad_language(args["language"])
    if s["settings"]["language"] != code:
        s["settings"]["language"] = code
        phone.log("assistant.language", language=code)
    return ToolResult.ok(f"assistant language: {LANGUAGES[code]}", {"language": LANGUAGES[code], "code": code})


@D.tool(
    "web_search",
    "Search the web; returns titles, URLs and snippets.",
    {"query": P.string("search terms"), "max_results": P.integer("at most this many results (default 5)", 1, 10)},
    ["query"],
    read_only=True,
    cases=[
        ok(
            {"query": "marathon"},
            {
                "assistant.web": [
                    {
                        "title": "Berlin Marathon 2027",
                        "url": "https://example.org/b",
                        "snippet": "Race day is 26 September 2027.",
                    }
                ]
            },
        ),
        ok({"query": "nothing matches"}),
    ],
)
def web_search(phone, s, args):
    words = [w for w in _norm(args["query"]).split() if len(w) > 2]
    scored = []
    for i, page in enumerate(s["web"]):
        text = _norm(f"{page['title']} {page['snippet']}")
        score = sum(text.count(w) for w in words)
        if score:
            scored.append((-score, i, page))
    scored.sort()
    rows = [dict(p, rank=k + 1) for k, (_, _, p) in enumerate(scored[: args.get("max_results", 5)])]
    return ToolResult.ok(f"{len(rows)} result(s)", {"query": args["query"], "results": rows})


D.skill(
    "conflict_arbitration",
    "Ordering and conflicting requests",
    "Rules for requests that change their mind, conflict with each other, or depend on one another.",
    [],
    [
        "When the user changes their mind within a request ('actually', 'no wait', 'I meant'), only the latest "
        "instruction for that setting counts: never apply the superseded value, not even briefly.",
        "Carry out requests about different things in the order the user gave them, one at a time.",
        "When a request depends on another's result, wait for that result before issuing it.",
        "When a request in this conversation conflicts with a saved preference or routine, the explicit request wins; "
        "mention the conflict in the answer.",
        "If two requests cannot both hold, do the later one and say why the earlier one was dropped.",
    ],
)
D.skill(
    "travel_assistant",
    "Travel helper",
    "Weather, local times and phrases for a trip.",
    [
        "get_weather_forecast",
        "get_current_weather",
        "get_world_time",
        "add_world_clock",
        "convert_time_between_zones",
        "translate_text",
    ],
    [
        "Use convert_time_between_zones for a given clock time; get_world_time only tells the time now.",
        "Forecast day 1 is tomorrow.",
        "Add a world clock only when the user asks for one, and only once.",
    ],
)


# -- app screen -----------------------------------------------------------------------------------------


@D.app("Assistant", package="com.google.android.apps.googleassistant")
def assistant_screen(phone, route):
    s = phone.state["assistant"]
    unit = s["settings"]["temperature_unit"]
    if route == "clocks":
        els = [Element("hdr_clocks", "World clock", kind="header")]
        home = s["settings"]["timezone_city"]
        for c in s["world_clocks"]:
            t, _ = shift_time(clock_label(phone), CITIES[c] - CITIES[home])
            els.append(Element(f"clock:{c}", f"{c}  {t}", kind="item"))
            els.append(
                Element(
                    f"remove:{c}",
                    f"Remove {c}",
                    kind="button",
                    clickable=True,
                    tool=("remove_world_clock", {"city": c}),
                )
            )
        return "World clock", els
    if route == "weather":
        els = [Element("hdr_weather", f"Weather (°{unit})", kind="header")]
        for c in s["world_clocks"]:
            now = s["weather"][c]["now"]
            els.append(
                Element(f"weather:{c}", f"{c}: {_temp(s, now['temp_c'])}°{unit}, {now['condition']}", kind="item")
            )
        els.append(
            Element(
                "unit",
                "Fahrenheit",
                kind="toggle",
                clickable=True,
                checked=unit == "F",
                tool=("set_temperature_unit", {"unit": "C" if unit == "F" else "F"}),
            )
        )
        return "Weather", els
    if route == "words":
        els = [Element("hdr_words", "Vocabulary", kind="header")]
        els += [Element(f"word:{w}", f"{w}: {WORDS[w]['definition']}", kind="item") for w in s["saved_words"]]
        return "Vocabulary", els
    return "Assistant", [
        Element("language", f"Language: {LANGUAGES[s['settings']['language']]}"),
        Element("clocks", "World clock", kind="item", clickable=True, to="clocks"),
        Element("weather", "Weather", kind="item", clickable=True, to="weather"),
        Element("words", "Vocabulary", kind="item", clickable=True, to="words"),
    ]


_GUI_REMOVE = re.compile(r"remove (?P<city>[A-Za-zÀ-ÿ ]+?) from the world clock", re.I)


@D.gui_script("Assistant")
def assistant_gui_script(instruction: str) -> list[tuple[Any, ...]] | None:
    """'Remove CITY from the world clock': open the clock list and tap its Remove button."""
    m = _GUI_REMOVE.search(instruction)
    if m is None:
        return None
    city = m.group("city").strip()
    return [("tap", "World clock"), ("tap", f"Remove {city}"), ("confirm", "World clock", f"removed {city}")]


# -- task templates -------------------------------------------------------------------------------------


def _weather_question(rng: random.Random) -> Draft:
    """Question task: tomorrow's high and conditions in a city, in the unit the phone is set to."""
    city = rng.choice(list(CITIES))
    w = sample_weather(rng, city)
    unit = rng.choice(["C", "C", "F"])
    tomorrow = w["forecast"][0]
    high = tomorrow["high_c"] if unit == "C" else round(tomorrow["high_c"] * 9 / 5 + 32)
    cond = tomorrow["condition"]
    return Draft(
        instruction=pick(
            rng,
            [
                f"What's the weather going to be like in {city} tomorrow?",
                f"Forecast for {city} tomorrow?",
                f"How warm will it get in {city} tomorrow, and will it be nice?",
            ],
        ),
        params={"city": city, "high": high, "unit": unit},
        setup={f"assistant.weather.{city}": w, "assistant.settings.temperature_unit": unit},
        tools=["get_weather_forecast", "get_current_weather", "get_world_time", "set_temperature_unit", "web_search"],
        answer=[f"{high}°", cond],
        plan=[
            Act(f"Get tomorrow's forecast for {city}.", [Call("get_weather_forecast", {"city": city, "days": 1})]),
            Say(f"Tomorrow in {city}: {cond}, with a high of {high}°{unit}."),
        ],
    )


_VARIANTS = [
    ("Brazilian Portuguese", "Portuguese"),
    ("European Portuguese", "Portuguese"),
    ("Castilian", "Spanish"),
    ("Mexican Spanish", "Spanish"),
    ("Swiss German", "German"),
    ("Canadian French", "French"),
    ("Parisian French", "French"),
    ("Tuscan Italian", "Italian"),
]


def _translate_variant(rng: random.Random) -> Draft:
    """A regional variant gets 400 with the supported list; retry once with the listed language."""
    variant, lang = rng.choice(_VARIANTS)
    phrase = rng.choice([p for p in PHRASES if len(p.split()) >= 2])
    out = PHRASES[phrase][language_code(lang)]
    shown = phrase[0].upper() + phrase[1:]
    return Draft(
        instruction=pick(
            rng,
            [
                f'How do I say "{shown}" in {variant}?',
                f'Translate "{shown}" into {variant} for me.',
                f'What is "{shown}" in {variant}?',
            ],
        ),
        params={"phrase": phrase, "language": lang},
        tools=["translate_text", "detect_language", "list_translation_languages", "define_word"],
        answer=[out.strip("¿?？ ")],
        plan=[
            Act(
                f"Translate into {variant}.",
                [Call("translate_text", {"text": shown, "target_language": variant})],
                may_fail=True,
            ),
            Act(
                f"400: {variant} is not supported, but the list includes {lang}; one correction backed by the error.",
                [Call("translate_text", {"text": shown, "target_language": lang})],
            ),
            Say(f'In {lang} (the translator has no separate {variant}), "{shown}" is: {out}'),
        ],
    )


def _travel_skill(rng: random.Random) -> Draft:
    """Skills, multi-turn: add the destination's clock and convert a meeting time; a follow-up asks the forecast."""
    home, dest = rng.sample(list(CITIES), 2)
    while CITIES[home] == CITIES[dest]:
        dest = rng.choice([c for c in CITIES if c != home])
    clocks = rng.sample([c for c in CITIES if c not in (home, dest)], 2)
    hh = rng.randrange(7, 20)
    t0 = f"{hh:02d}:{rng.choice(['00', '30'])}"
    t1, day = shift_time(t0, CITIES[dest] - CITIES[home])
    w = sample_weather(rng, dest)
    f1 = w["forecast"][0]
    note = " the next day" if day > 0 else " the previous day" if day < 0 else ""
    return Draft(
        instruction=pick(
            rng,
            [
                f"I'm flying to {dest}. Add it to my world clock, and tell me what {t0} {home} time is there.",
                f"Put {dest} on the world clock. My call is at {t0} {home} time: what time is that in {dest}?",
            ],
        ),
        params={"home": home, "dest": dest, "time": t1},
        setup={"assistant.world_clocks": clocks, f"assistant.weather.{dest}": w},
        tools=["list_world_clocks"],
        skills=["travel_assistant", "conflict_arbitration"],
        followups=[
            pick(rng, [f"And what's the weather in {dest} tomorrow?", f"Will I need a jacket in {dest} tomorrow?"])
        ],
        goal={"assistant.world_clocks": clocks + [dest]},
        answer=[t1, f1["condition"]],
        plan=[
            Act("Load the travel skill.", [Call("skill__travel_assistant", {"reason": f"trip to {dest}"})]),
            Act(
                "Add the clock and convert the time in parallel; they are independent.",
                [
                    Call("add_world_clock", {"city": dest}),
                    Call("convert_time_between_zones", {"time": t0, "from_city": home, "to_city": dest}),
                ],
            ),
            Say(f"{dest} is on your world clock. {t0} in {home} is {t1}{note} in {dest}."),
            Act(f"Tomorrow's forecast for {dest}.", [Call("get_weather_forecast", {"city": dest, "days": 1})]),
            Say(
                f"Tomorrow in {dest}: {f1['condition']}, {f1['low_c']} to {f1['high_c']}°C. "
                f"(Your call is at {t1}{note} local time.)"
            ),
        ],
    )


def _check_no_superseded(
    task: Task, initial: dict[str, Any], final: dict[str, Any], answer: str
) -> tuple[bool, str] | None:
    bad = task.params["superseded"]
    for ev in final.get("_meta", {}).get("events", []):
        if ev["event"] == bad["event"] and ev.get(bad["key"]) == bad["value"]:
            return False, f"applied the superseded request ({bad['key']}={bad['value']})"
    return True, "the superseded request was never applied"


def _conflicting_requests(rng: random.Random) -> Draft:
    """Skills (pure procedure): one request changes its mind; apply only the latest value, others in the order given."""
    lang_a, lang_b = rng.sample(["es", "fr", "de", "it", "pt", "ja"], 2)
    city_a, city_b, *clocks = rng.sample(list(CITIES), rng.randrange(3, 6))
    unit = "F"
    changed = rng.choice(["language", "city"])
    if changed == "language":
        first = f"Switch the assistant to {LANGUAGES[lang_a]}, no wait, make it {LANGUAGES[lang_b]}."
        superseded = {"event": "assistant.language", "key": "language", "value": lang_a}
        city = city_a
        lang = lang_b
        second = f"Add {city} to my world clock"
    else:
        first = f"Switch the assistant to {LANGUAGES[lang_a]}."
        superseded = {"event": "assistant.world_clock_add", "key": "city", "value": city_a}
        city = city_b
        lang = lang_a
        second = f"Add {city_a} to my world clock, sorry, I meant {city_b}"
    third = pick(rng, ["and show temperatures in Fahrenheit.", "and switch the weather to Fahrenheit."])
    return Draft(
        instruction=f"{first} {second}, {third}",
        params={"language": lang, "city": city, "superseded": superseded},
        setup={"assistant.world_clocks": clocks},
        tools=[
            "set_assistant_language",
            "add_world_clock",
            "remove_world_clock",
            "list_world_clocks",
            "set_temperature_unit",
            "translate_text",
        ],
        skills=["conflict_arbitration", "travel_assistant"],
        goal={
            "assistant.settings.language": lang,
            "assistant.world_clocks": clocks + [city],
            "assistant.settings.temperature_unit": unit,
        },
        order=["assistant.language", "assistant.world_clock_add", "assistant.temperature_unit"],
        plan=[
            Act(
                "The request changes its mind; load the arbitration rules first.",
                [Call("skill__conflict_arbitration", {"reason": "a request was corrected mid-sentence"})],
            ),
            Act(
                f"Latest value wins: {LANGUAGES[lang]}. Requests run in the order given, so the language first.",
                [Call("set_assistant_language", {"language": LANGUAGES[lang]})],
            ),
            Act(f"Then the world clock for {city}.", [Call("add_world_clock", {"city": city})]),
            Act("Then Fahrenheit.", [Call("set_temperature_unit", {"unit": unit})]),
            Say(
                f"Done, in your order: the assistant speaks {LANGUAGES[lang]}, {city} is on your world clock "
                f"(I ignored the superseded request), and temperatures are in Fahrenheit."
            ),
        ],
    )


def _home_weather_memory(rng: random.Random) -> Draft:
    """Memory: where the user lives is the gold fact; family, office and holiday cities are neighbours."""
    pool = [c for c in CITIES if c != "London"]
    home, sister, office, holiday = rng.sample(pool, 4)
    setup = {}
    for c in (home, sister, office, holiday):
        setup[f"assistant.weather.{c}"] = sample_weather(rng, c)
    now = setup[f"assistant.weather.{home}"]["now"]
    memory = [
        {
            "id": "mem_home",
            "category": "important_info",
            "title": "Home",
            "content": f"Lives in {home}.",
            "tags": ["home", "city"],
        },
        {
            "id": "mem_sis",
            "category": "important_info",
            "title": "Sister",
            "content": f"Sister Ana lives in {sister}.",
            "tags": ["family", "city"],
        },
        {
            "id": "mem_office",
            "category": "important_info",
            "title": "Office",
            "content": f"Works at the {office} office on Tuesdays.",
            "tags": ["work", "city"],
        },
        {
            "id": "mem_trip",
            "category": "important_event",
            "title": "Holiday",
            "content": f"Holiday in {holiday} next spring.",
            "tags": ["travel", "city"],
        },
    ]
    rng.shuffle(memory)
    return Draft(
        instruction=pick(
            rng,
            [
                "What's the weather like at home right now?",
                "How's the weather back home at the moment?",
                "Is it cold at home right now?",
            ],
        ),
        params={"home": home},
        setup=setup,
        tools=["get_current_weather", "get_weather_forecast", "get_world_time", "web_search"],
        memory=memory,
        answer=[f"{now['temp_c']}°", now["condition"]],
        plan=[
            Act("Where is home? Check memory.", [Call("search_user_memory", {"query": "home lives in city"})]),
            Act(f"Home is {home}; get its current weather.", [Call("get_current_weather", {"city": home})]),
            Say(f"In {home} right now it's {now['temp_c']}°C and {now['condition']}."),
        ],
    )


_EVENTS = ["marathon", "book fair", "jazz festival", "Christmas market", "film festival"]
_MONTHS = ["March", "April", "May", "June", "September", "October"]


def _web_search_question(rng: random.Random) -> Draft:
    """Question task over a seeded web-search stub: the right city's page holds the date; others are distractors."""
    event = rng.choice(_EVENTS)
    cities = rng.sample(list(CITIES), 4)
    dates = [f"{rng.randrange(1, 29)} {rng.choice(_MONTHS)} 2027" for _ in cities]
    pages = [
        {
            "title": f"{c} {event.title()} 2027",
            "url": f"https://{c.lower().replace(' ', '')}.example.org/{event.replace(' ', '-')}",
            "snippet": f"The {c} {event} 2027 takes place on {d}. Tickets and programme online.",
        }
        for c, d in zip(cities, dates, strict=True)
    ]
    pages.append(
        {
            "title": f"How to prepare for a {event}",
            "url": "https://blog.example.org/prepare",
            "snippet": f"Ten tips for your first {event}, whatever the date.",
        }
    )
    rng.shuffle(pages)
    return Draft(
        instruction=pick(
            rng,
            [
                f"When is the {cities[0]} {event} next year?",
                f"Look up the date of the {cities[0]} {event} 2027.",
                f"Search the web: what day is the {cities[0]} {event} in 2027?",
            ],
        ),
        params={"city": cities[0], "event": event},
        setup={"assistant.web": pages},
        tools=["web_search", "get_weather_forecast", "translate_text", "define_word"],
        answer=[dates[0]],
        plan=[
            Act("Search the web.", [Call("web_search", {"query": f"{cities[0]} {event} 2027"})]),
            Say(f"The {cities[0]} {event} 2027 takes place on {dates[0]}."),
        ],
    )


def _define_and_save(rng: random.Random) -> Draft:
    """Look a word up, answer with its meaning, then (follow-up) save it to the vocabulary list."""
    word = rng.choice(list(WORDS))
    saved = rng.sample([w for w in WORDS if w != word], 2)
    entry = WORDS[word]
    return Draft(
        instruction=pick(
            rng, [f"What does '{word}' mean?", f"Define {word} for me.", f"What's the meaning of the word {word}?"]
        ),
        params={"word": word},
        setup={"assistant.saved_words": saved},
        tools=["define_word", "get_synonyms", "save_vocabulary_word", "translate_text"],
        followups=[pick(rng, ["Save that word to my vocabulary list.", "Nice, add it to my saved words."])],
        goal={"assistant.saved_words": saved + [word]},
        answer=[entry["key"]],  # the gist a correct paraphrase keeps
        plan=[
            Act(f"Look up {word}.", [Call("define_word", {"word": word})]),
            Say(f"'{word}' ({entry['pos']}) means {entry['definition']}."),
            Act("Save it.", [Call("save_vocabulary_word", {"word": word})]),
            Say(f"Saved '{word}' to your vocabulary list ({entry['definition']})."),
        ],
    )


def _gui_remove_clock(rng: random.Random) -> Draft:
    """Sub-agent: the GUI agent removes a city from the world clock in the Assistant app."""
    clocks = rng.sample(list(CITIES), rng.randrange(3, 6))
    city = rng.choice(clocks)
    return Draft(
        instruction=pick(
            rng,
            [
                f"Use the Assistant app to take {city} off my world clock.",
                f"In the Assistant app, remove {city} from the world clock.",
            ],
        ),
        params={"city": city},
        setup={"assistant.world_clocks": clocks},
        tools=["list_world_clocks", "get_world_time", "add_world_clock"],
        subagent=True,
        goal={"assistant.world_clocks": [c for c in clocks if c != city]},
        plan=[
            *gui_agent(
                "Assistant", f"Remove {city} from the world clock.", think="Delegate the app work to the GUI agent."
            ),
            Act("Check the clocks it left.", [Call("list_world_clocks")]),
            Say(f"{city} is off your world clock."),
        ],
    )


D.add_template(
    Template(
        "assistant.weather_question",
        "assistant",
        "tool_use",
        "Answer tomorrow's high and conditions for a city, in the phone's unit.",
        _weather_question,
        difficulty=1,
    )
)
D.add_template(
    Template(
        "assistant.translate_regional_variant",
        "assistant",
        "tool_use",
        "A regional variant gets 400; one evidence-backed correction to the supported language.",
        _translate_variant,
        tags=("error_recovery",),
        difficulty=2,
    )
)
D.add_template(
    Template(
        "assistant.skill_travel_clock_and_forecast",
        "assistant",
        "skills",
        "Load travel_assistant: add a world clock, convert a time; a follow-up asks the forecast.",
        _travel_skill,
        tags=("multi_turn",),
        difficulty=2,
    )
)
D.add_template(
    Template(
        "assistant.skill_conflicting_requests",
        "assistant",
        "skills",
        "Pure-procedure conflict_arbitration: latest value wins, requests run in the order given.",
        _conflicting_requests,
        difficulty=3,
        check=_check_no_superseded,
    )
)
D.add_template(
    Template(
        "assistant.home_weather_from_memory",
        "assistant",
        "memory",
        "Find the home city in memory among neighbour cities; answer its current weather.",
        _home_weather_memory,
        difficulty=2,
    )
)
D.add_template(
    Template(
        "assistant.web_search_question",
        "assistant",
        "tool_use",
        "Answer a date from seeded web results, ignoring other cities' pages.",
        _web_search_question,
        difficulty=1,
    )
)
D.add_template(
    Template(
        "assistant.define_and_save_word",
        "assistant",
        "tool_use",
        "Define a word, then save it on a follow-up.",
        _define_and_save,
        tags=("multi_turn",),
        difficulty=1,
    )
)
D.add_template(
    Template(
        "assistant.gui_remove_world_clock",
        "assistant",
        "sub_agent",
        "A GUI agent removes a city from the world clock in the Assistant app.",
        _gui_remove_clock,
        difficulty=1,
    )
)
