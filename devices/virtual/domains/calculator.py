"""Calculator: safe arithmetic, unit and currency conversion (fixed seeded rates), and the calculation history.

Expressions are parsed by a small recursive-descent parser instead of ``eval`` (which would run
arbitrary code from a model's output) or a parsing library (the grammar is twelve lines and must
cost microseconds per call).
"""

from __future__ import annotations

import math
import random
import re
from typing import Any

from devices.virtual.domains._shared import new_id
from devices.virtual.domains.messages import new_outgoing, sample_contacts
from devices.virtual.registry import Domain, Element, P, err, ok
from devices.virtual.tasks import Act, Call, Draft, Say, Task, Template, gui_agent
from devices.virtual.wording import pick
from harness.contract import Code, ToolResult

RATES = {
    "USD": 1.0,
    "EUR": 0.92,
    "GBP": 0.79,
    "JPY": 151.2,
    "CHF": 0.88,
    "CAD": 1.36,
    "AUD": 1.52,
    "INR": 83.1,
    "CNY": 7.21,
    "SEK": 10.42,
    "MXN": 17.05,
    "BRL": 4.93,
}

DOMAIN = Domain(
    "calculator",
    "Calculator & conversion",
    initial={
        "history": [],
        "settings": {"precision": 4, "angle_unit": "deg"},
        "currency": {"base": "USD", "rates": dict(RATES), "updated": "2026-12-02 06:00"},
    },
)
D = DOMAIN
HISTORY_MAX = 50


# -- the arithmetic parser ----------------------------------------------------------------------


class CalcError(ValueError):
    """An expression the calculator cannot evaluate; the message says what to fix."""


_FUNCS1 = {
    "sqrt": math.sqrt,
    "abs": abs,
    "ln": math.log,
    "log": math.log10,
    "exp": math.exp,
    "floor": math.floor,
    "ceil": math.ceil,
}
_TRIG = {"sin": math.sin, "cos": math.cos, "tan": math.tan}
_CONSTS = {"pi": math.pi, "e": math.e}
_OPS = {"+", "-", "*", "/", "^", "(", ")", ",", "%"}


def _tokens(expr: str) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    s = expr.replace("×", "*").replace("÷", "/").replace("**", "^").replace("−", "-")
    i, n = 0, len(s)
    while i < n:
        ch = s[i]
        if ch.isspace():
            i += 1
        elif ch.isdigit() or ch == ".":
            j = i
            while j < n and (s[j].isdigit() or s[j] in ".,_"):
                # A comma followed by three digits is a thousands separator ("1,250"); otherwise an argument separator.
                if s[j] == "," and not (s[j + 1 : j + 4].isdigit() and (j + 4 == n or not s[j + 4].isdigit())):
                    break
                j += 1
            if j < n and s[j] in "eE" and j + 1 < n and (s[j + 1].isdigit() or s[j + 1] in "+-"):
                j += 2
                while j < n and s[j].isdigit():
                    j += 1
            text = s[i:j].replace(",", "").replace("_", "")
            try:
                out.append(("num", float(text)))
            except ValueError:
                raise CalcError(f"'{s[i:j]}' is not a number") from None
            i = j
        elif ch.isalpha():
            j = i
            while j < n and s[j].isalpha():
                j += 1
            out.append(("name", s[i:j].lower()))
            i = j
        elif ch in _OPS:
            out.append(("op", ch))
            i += 1
        else:
            raise CalcError(f"unexpected character '{ch}' at position {i + 1}")
    return out


class _Parser:
    def __init__(self, tokens: list[tuple[str, Any]], radians: bool):
        self.t = tokens
        self.i = 0
        self.radians = radians

    def peek(self) -> tuple[str, Any] | None:
        return self.t[self.i] if self.i < len(self.t) else None

    def take(self, op: str) -> bool:
        tok = self.peek()
        if tok is not None and tok == ("op", op):
            self.i += 1
            return True
        return False

    def expr(self) -> float:
        v = self.term()
        while True:
            if self.take("+"):
                v += self.term()
            elif self.take("-"):
                v -= self.term()
            else:
                return v

    def term(self) -> float:
        v = self.unary()
        while True:
            if self.take("*"):
                v *= self.unary()
            elif self.take("/"):
                d = self.unary()
                if d == 0:
                    raise CalcError("division by zero")
                v /= d
            else:
                return v

    def unary(self) -> float:
        if self.take("-"):
            return -self.unary()
        if self.take("+"):
            return self.unary()
        return self.power()

    def power(self) -> float:
        base = self.postfix()
        if self.take("^"):
            exp = self.unary()  # right-associative: 2^3^2 = 2^9
            try:
                return math.pow(base, exp)
            except (OverflowError, ValueError):
                raise CalcError("the power is out of range") from None
        return base

    def postfix(self) -> float:
        v = self.primary()
        while self.take("%"):
            v /= 100.0  # "15%" reads as 0.15, as on a phone calculator
        return v

    def primary(self) -> float:
        tok = self.peek()
        if tok is None:
            raise CalcError("the expression ends too early")
        kind, val = tok
        self.i += 1
        if kind == "num":
            return val
        if kind == "op" and val == "(":
            v = self.expr()
            if not self.take(")"):
                raise CalcError("missing ')'")
            return v
        if kind == "name":
            if val in _CONSTS:
                return _CONSTS[val]
            if val in _FUNCS1 or val in _TRIG or val == "round":
                if not self.take("("):
                    raise CalcError(f"{val} needs parentheses, e.g. {val}(2)")
                arg = self.expr()
                digits = 0.0
                if val == "round" and self.take(","):
                    digits = self.expr()
                if not self.take(")"):
                    raise CalcError("missing ')'")
                return self.call(val, arg, digits)
            raise CalcError(f"unknown name '{val}'; functions: {', '.join(sorted([*_FUNCS1, *_TRIG, 'round']))}")
        raise CalcError(f"unexpected '{val}'")

    def call(self, name: str, arg: float, digits: float) -> float:
        if name == "round":
            return round(arg, int(digits))
        if name in _TRIG:
            return _TRIG[name](arg if self.radians else math.radians(arg))
        if name == "sqrt" and arg < 0:
            raise CalcError("square root of a negative number")
        if name in ("ln", "log") and arg <= 0:
            raise CalcError(f"{name} needs a positive number")
        try:
            return float(_FUNCS1[name](arg))
        except OverflowError:
            raise CalcError(f"{name}({arg}) is out of range") from None


def evaluate(expression: str, *, radians: bool = False) -> float:
    """The value of an arithmetic expression (+ - * / ^ %, parentheses, sqrt/sin/log/..., pi, e)."""
    if len(expression) > 200:
        raise CalcError("the expression is too long (200 characters at most)")
    p = _Parser(_tokens(expression), radians)
    if not p.t:
        raise CalcError("the expression is empty")
    v = p.expr()
    if p.peek() is not None:
        raise CalcError(f"unexpected '{p.peek()[1]}' after a complete expression")
    if math.isnan(v) or math.isinf(v):
        raise CalcError("the result is not a finite number")
    return v


def display(x: float, precision: int) -> str:
    """A number as the calculator shows it: rounded to ``precision`` decimals, no trailing zeros."""
    r = round(x, precision)
    if r == int(r) and abs(r) < 1e15:
        return str(int(r))
    return f"{r:.{precision}f}".rstrip("0").rstrip(".")


def _number(x: float, precision: int) -> float | int:
    r = round(x, precision)
    return int(r) if r == int(r) and abs(r) < 1e15 else r


# -- units ------------------------------------------------------------------------------------------

# Factor to the category's base unit (m, g, l, m/s); temperature converts through formulas.
UNITS: dict[str, dict[str, float]] = {
    "length": {
        "mm": 0.001,
        "cm": 0.01,
        "m": 1.0,
        "km": 1000.0,
        "in": 0.0254,
        "ft": 0.3048,
        "yd": 0.9144,
        "mi": 1609.344,
        "nmi": 1852.0,
    },
    "mass": {"mg": 0.001, "g": 1.0, "kg": 1000.0, "t": 1e6, "oz": 28.349523125, "lb": 453.59237, "st": 6350.29318},
    "volume": {
        "ml": 0.001,
        "l": 1.0,
        "tsp": 0.00492892159375,
        "tbsp": 0.01478676478125,
        "floz": 0.0295735295625,
        "cup": 0.2365882365,
        "pt": 0.473176473,
        "qt": 0.946352946,
        "gal": 3.785411784,
    },
    "speed": {"m/s": 1.0, "km/h": 1 / 3.6, "mph": 0.44704, "kn": 1852 / 3600},
    "temperature": {"c": 0.0, "f": 0.0, "k": 0.0},
}
_ALIASES = {
    "millimeter": "mm",
    "centimeter": "cm",
    "meter": "m",
    "kilometer": "km",
    "inch": "in",
    "inches": "in",
    "foot": "ft",
    "feet": "ft",
    "yard": "yd",
    "mile": "mi",
    "nautical mile": "nmi",
    "milligram": "mg",
    "gram": "g",
    "kilogram": "kg",
    "tonne": "t",
    "ounce": "oz",
    "pound": "lb",
    "lbs": "lb",
    "stone": "st",
    "milliliter": "ml",
    "liter": "l",
    "teaspoon": "tsp",
    "tablespoon": "tbsp",
    "fluid ounce": "floz",
    "fl oz": "floz",
    "pint": "pt",
    "quart": "qt",
    "gallon": "gal",
    "kph": "km/h",
    "kmh": "km/h",
    "miles per hour": "mph",
    "knot": "kn",
    "celsius": "c",
    "fahrenheit": "f",
    "kelvin": "k",
    "°c": "c",
    "°f": "f",
}
_CATEGORY = {u: cat for cat, units in UNITS.items() for u in units}


def canonical_unit(raw: str) -> str | None:
    u = raw.strip().lower().replace("metre", "meter").replace("litre", "liter")
    if u in _CATEGORY:
        return u
    if u in _ALIASES:
        return _ALIASES[u]
    if u.endswith("s") and u[:-1] in _ALIASES:
        return _ALIASES[u[:-1]]
    return None


def convert(value: float, src: str, dst: str) -> float:
    """``value`` in canonical unit ``src`` expressed in ``dst`` (same category)."""
    if _CATEGORY[src] == "temperature":
        c = value if src == "c" else (value - 32) * 5 / 9 if src == "f" else value - 273.15
        return c if dst == "c" else c * 9 / 5 + 32 if dst == "f" else c + 273.15
    return value * UNITS[_CATEGORY[src]][src] / UNITS[_CATEGORY[dst]][dst]


def _record(phone, s: dict[str, Any], kind: str, text: str, result: str) -> str:
    hid = new_id(phone, "h", {h["id"] for h in s["history"]})
    s["history"].append({"id": hid, "kind": kind, "input": text, "result": result})
    if len(s["history"]) > HISTORY_MAX:
        del s["history"][0]
    phone.log(f"calculator.{kind}", entry_id=hid)
    return hid


def _last_is(ph, kind: str) -> bool:
    h = ph.state["calculator"]["history"]
    return bool(h) and h[-1]["kind"] == kind


# -- tools --------------------------------------------------------------------------------------------


@D.tool(
    "calculate",
    "Evaluate an arithmetic expression: + - * / ^, %, parentheses, sqrt, sin, cos, tan, log, ln, "
    "abs, round, pi, e. Saved to the calculation history.",
    {"expression": P.string("the expression, e.g. '(12.5 + 3) * 4' or 'sqrt(2)'")},
    ["expression"],
    codes=(400,),
    cases=[
        ok({"expression": "(12.5 + 3) * 4"}),
        ok({"expression": "2^10 - sqrt(16)"}),
        ok({"expression": "1,250 * 15%"}),
        err(400, {"expression": "5 / (3 - 3)"}),
        err(400, {"expression": "__import__('os')"}),
        err(400, {"expression": "2 +"}),
    ],
    check=lambda ph, a: _last_is(ph, "calc"),
)
def calculate(phone, s, args):
    try:
        v = evaluate(args["expression"], radians=s["settings"]["angle_unit"] == "rad")
    except CalcError as exc:
        return ToolResult.fail(Code.BAD_ARGUMENT, f"cannot evaluate '{args['expression']}': {exc}")
    prec = s["settings"]["precision"]
    shown = display(v, prec)
    hid = _record(phone, s, "calc", args["expression"], shown)
    return ToolResult.ok(
        f"{args['expression']} = {shown}",
        {"expression": args["expression"], "result": _number(v, prec), "display": shown, "entry_id": hid},
    )


@D.tool(
    "convert_units",
    "Convert a value between units of length, mass, volume, speed or temperature.",
    {
        "value": P.number("the amount to convert"),
        "from_unit": P.string("unit symbol, e.g. mi, kg, F, km/h"),
        "to_unit": P.string("unit symbol of the same kind"),
    },
    ["value", "from_unit", "to_unit"],
    codes=(400,),
    cases=[
        ok({"value": 10, "from_unit": "mi", "to_unit": "km"}),
        ok({"value": 72, "from_unit": "F", "to_unit": "C"}),
        ok({"value": 3, "from_unit": "gallons", "to_unit": "liters"}),
        err(400, {"value": 1, "from_unit": "kg", "to_unit": "km"}, note="different kinds"),
        err(400, {"value": 1, "from_unit": "furlongs", "to_unit": "m"}),
    ],
    check=lambda ph, a: _last_is(ph, "unit"),
)
def convert_units(phone, s, args):
    src, dst = canonical_unit(args["from_unit"]), canonical_unit(args["to_unit"])
    for raw, u in ((args["from_unit"], src), (args["to_unit"], dst)):
        if u is None:
            return ToolResult.fail(Code.BAD_ARGUMENT, f"unknown unit '{raw}'; see list_supported_units")
    if _CATEGORY[src] != _CATEGORY[dst]:
        return ToolResult.fail(
            Code.BAD_ARGUMENT, f"cannot convert {_CATEGORY[src]} ({src}) to {_CATEGORY[dst]} ({dst})"
        )
    prec = s["settings"]["precision"]
    v = convert(float(args["value"]), src, dst)
    shown = display(v, prec)
    hid = _record(phone, s, "unit", f"{args['value']} {src} -> {dst}", f"{shown} {dst}")
    return ToolResult.ok(
        f"{args['value']} {src} = {shown} {dst}",
        {
            "value": args["value"],
            "from_unit": src,
            "to_unit": dst,
            "result": _number(v, prec),
            "display": shown,
            "entry_id": hid,
        },
    )


@D.tool(
    "list_supported_units",
    "List the unit symbols convert_units accepts, by kind.",
    {"category": P.enum(list(UNITS), "only this kind of unit")},
    read_only=True,
    cases=[ok({}), ok({"category": "speed"}), err(400, {"category": "time"})],
)
def list_supported_units(phone, s, args):
    cats = [args["category"]] if "category" in args else list(UNITS)
    return ToolResult.ok(f"units for {', '.join(cats)}", {"units": {c: list(UNITS[c]) for c in cats}})


def _rate(s: dict[str, Any], src: str, dst: str) -> tuple[float | None, ToolResult | None]:
    rates = s["currency"]["rates"]
    for code in (src, dst):
        if code.upper() not in rates:
            return None, ToolResult.fail(
                Code.NOT_FOUND, f"no exchange rate for '{code}'; currencies: {', '.join(sorted(rates))}"
            )
    return rates[dst.upper()] / rates[src.upper()], None


@D.tool(
    "convert_currency",
    "Convert an amount between currencies at the stored exchange rates.",
    {
        "amount": P.number("amount of money", 0),
        "from_currency": P.string("ISO code, e.g. EUR"),
        "to_currency": P.string("ISO code, e.g. JPY"),
    },
    ["amount", "from_currency", "to_currency"],
    codes=(404,),
    cases=[
        ok({"amount": 250, "from_currency": "EUR", "to_currency": "JPY"}),
        err(404, {"amount": 5, "from_currency": "XYZ", "to_currency": "USD"}),
        err(400, {"amount": -5, "from_currency": "EUR", "to_currency": "USD"}),
    ],
    check=lambda ph, a: _last_is(ph, "currency"),
)
def convert_currency(phone, s, args):
    rate, bad = _rate(s, args["from_currency"], args["to_currency"])
    if bad is not None:
        return bad
    src, dst = args["from_currency"].upper(), args["to_currency"].upper()
    result = round(args["amount"] * rate, 2)
    hid = _record(phone, s, "currency", f"{args['amount']} {src} -> {dst}", f"{result:.2f} {dst}")
    return ToolResult.ok(
        f"{args['amount']} {src} = {result:.2f} {dst}",
        {
            "amount": args["amount"],
            "from_currency": src,
            "to_currency": dst,
            "rate": round(rate, 6),
            "result": result,
            "rates_updated": s["currency"]["updated"],
            "entry_id": hid,
        },
    )


@D.tool(
    "get_exchange_rate",
    "Get the stored exchange rate between two currencies.",
    {"from_currency": P.string("ISO code"), "to_currency": P.string("ISO code")},
    ["from_currency", "to_currency"],
    read_only=True,
    codes=(404,),
    cases=[
        ok({"from_currency": "GBP", "to_currency": "EUR"}),
        err(404, {"from_currency": "GBP", "to_currency": "DOGE"}),
    ],
)
def get_exchange_rate(phone, s, args):
    rate, bad = _rate(s, args["from_currency"], args["to_currency"])
    if bad is not None:
        return bad
    src, dst = args["from_currency"].upper(), args["to_currency"].upper()
    return ToolResult.ok(
        f"1 {src} = {rate:.6f} {dst}",
        {"from_currency": src, "to_currency": dst, "rate": round(rate, 6), "updated": s["currency"]["updated"]},
    )


@D.tool("list_currencies", "List the currencies with stored exchange rates.", read_only=True, cases=[ok({})])
def list_currencies(phone, s, args):
    rates = s["currency"]["rates"]
    return ToolResult.ok(f"{len(rates)} currencies", {"currencies": sorted(rates), "updated": s["currency"]["updated"]})


@D.tool(
    "get_calculation_history",
    "List recent calculations and conversions, newest first.",
    {"limit": P.integer("how many entries (default 10)", 1, 50)},
    read_only=True,
    cases=[ok({}), ok({"limit": 3})],
)
def get_calculation_history(phone, s, args):
    rows = [dict(h) for h in reversed(s["history"][-args.get("limit", 10) :])]
    return ToolResult.ok(
        f"{len(rows)} entr{'y' if len(rows) == 1 else 'ies'}", {"history": rows, "total": len(s["history"])}
    )


_H1 = [{"id": "h1", "kind": "calc", "input": "2+2", "result": "4"}]


@D.tool(
    "clear_calculation_history",
    "Delete the whole calculation history.",
    codes=(409,),
    cases=[ok({}, {"calculator.history": _H1}), err(409, {})],
    check=lambda ph, a: not ph.state["calculator"]["history"],
)
def clear_calculation_history(phone, s, args):
    if not s["history"]:
        return ToolResult.fail(Code.CONFLICT, "the history is already empty")
    n = len(s["history"])
    s["history"] = []  # a new list, so a case's setup data is never mutated
    phone.log("calculator.history_clear", count=n)
    return ToolResult.ok(f"deleted {n} entr{'y' if n == 1 else 'ies'}", {"deleted": n})


@D.tool(
    "delete_history_entry",
    "Delete one calculation history entry.",
    {"entry_id": P.string("id from the history")},
    ["entry_id"],
    codes=(404,),
    cases=[ok({"entry_id": "h1"}, {"calculator.history": _H1}), err(404, {"entry_id": "h9"})],
    check=lambda ph, a: all(h["id"] != a["entry_id"] for h in ph.state["calculator"]["history"]),
)
def delete_history_entry(phone, s, args):
    for h in s["history"]:
        if h["id"] == args["entry_id"]:
            s["history"] = [x for x in s["history"] if x is not h]
            phone.log("calculator.history_delete", entry_id=h["id"])
            return ToolResult.ok("entry deleted", {"entry_id": h["id"]})
    return ToolResult.fail(Code.NOT_FOUND, f"no history entry '{args['entry_id']}'")


@D.tool(
    "set_calculator_precision",
    "Set how many decimals results are rounded to.",
    {"decimals": P.integer("decimal places", 0, 10)},
    ["decimals"],
    cases=[ok({"decimals": 2}), err(400, {"decimals": 12})],
    check=lambda ph, a: ph.state["calculator"]["settings"]["precision"] == a["decimals"],
)
def set_calculator_precision(phone, s, args):
    if s["settings"]["precision"] != args["decimals"]:
        s["settings"]["precision"] = args["decimals"]
        phone.log("calculator.precision", decimals=args["decimals"])
    return ToolResult.ok(f"results now show {args['decimals']} decimals", {"precision": args["decimals"]})


@D.tool(
    "set_angle_unit",
    "Choose degrees or radians for sin, cos and tan.",
    {"unit": P.enum(["deg", "rad"], "angle unit")},
    ["unit"],
    cases=[ok({"unit": "rad"}), err(400, {"unit": "grad"})],
    check=lambda ph, a: ph.state["calculator"]["settings"]["angle_unit"] == a["unit"],
)
def set_angle_unit(phone, s, args):
    if s["settings"]["angle_unit"] != args["unit"]:
        s["settings"]["angle_unit"] = args["unit"]
        phone.log("calculator.angle_unit", unit=args["unit"])
    return ToolResult.ok(f"angles in {'degrees' if args['unit'] == 'deg' else 'radians'}", {"angle_unit": args["unit"]})


@D.tool(
    "calculate_percentage",
    "Percentages: 'of' (p% of value), 'increase' or 'decrease' (value ± p%), 'ratio' (value as a percentage of p).",
    {
        "value": P.number("the base value"),
        "percent": P.number("the percentage (or, for ratio, the whole)"),
        "operation": P.enum(["of", "increase", "decrease", "ratio"], "what to compute"),
    },
    ["value", "percent", "operation"],
    codes=(400,),
    cases=[
        ok({"value": 80, "percent": 15, "operation": "of"}),
        ok({"value": 40, "percent": 25, "operation": "decrease"}),
        err(400, {"value": 3, "percent": 0, "operation": "ratio"}),
    ],
    check=lambda ph, a: _last_is(ph, "calc"),
)
def calculate_percentage(phone, s, args):
    v, p, op = args["value"], args["percent"], args["operation"]
    if op == "ratio" and p == 0:
        return ToolResult.fail(Code.BAD_ARGUMENT, "the whole must not be 0 for a ratio")
    r = {
        "of": v * p / 100,
        "increase": v * (1 + p / 100),
        "decrease": v * (1 - p / 100),
        "ratio": v / p * 100 if p else 0.0,
    }[op]
    prec = s["settings"]["precision"]
    shown = display(r, prec)
    text = {"of": f"{p}% of {v}", "increase": f"{v} + {p}%", "decrease": f"{v} - {p}%", "ratio": f"{v} / {p} as %"}[op]
    hid = _record(phone, s, "calc", text, shown)
    return ToolResult.ok(f"{text} = {shown}", {"result": _number(r, prec), "display": shown, "entry_id": hid})


@D.tool(
    "split_bill",
    "Split a bill between people, with an optional tip percentage.",
    {
        "total": P.number("bill total", 0),
        "people": P.integer("number of people", 1, 50),
        "tip_percent": P.number("tip in percent (default 0)", 0, 100),
    },
    ["total", "people"],
    cases=[ok({"total": 120, "people": 4, "tip_percent": 15}), err(400, {"total": 50, "people": 0})],
    check=lambda ph, a: _last_is(ph, "calc"),
)
def split_bill(phone, s, args):
    tip = args.get("tip_percent", 0)
    with_tip = round(args["total"] * (1 + tip / 100), 2)
    each = round(with_tip / args["people"], 2)
    hid = _record(phone, s, "calc", f"{args['total']} + {tip}% tip / {args['people']}", f"{each:.2f}")
    return ToolResult.ok(
        f"{each:.2f} each ({with_tip:.2f} with a {tip}% tip)",
        {"total_with_tip": with_tip, "per_person": each, "people": args["people"], "tip_percent": tip, "entry_id": hid},
    )


D.skill(
    "unit_conversion",
    "Unit and currency conversion",
    "Convert units and currencies, with a calculator fallback.",
    ["list_supported_units", "convert_units", "convert_currency", "get_exchange_rate", "list_currencies"],
    [
        "Pass unit symbols exactly as list_supported_units lists them (mi, km, lb, kg, F, C, km/h).",
        "After a conversion fails, make at most one correction supported by the error or the unit list; if it fails "
        "again, compute the value with calculate using the standard factor instead of guessing variations.",
        "Report a converted value with its unit and the rounding the user asked for.",
        "Currency amounts use the stored rates; say when the rates were last updated if the user asks.",
    ],
)


# -- app screen -----------------------------------------------------------------------------------


@D.app("Calculator", package="com.google.android.calculator")
def calculator_screen(phone, route):
    s = phone.state["calculator"]
    if route == "history":
        els = [Element("hdr_history", "History", kind="header")]
        for h in reversed(s["history"][-10:]):
            els.append(Element(f"history:{h['id']}", f"{h['input']} = {h['result']}", kind="item"))
        if s["history"]:
            els.append(
                Element("clear", "Clear history", kind="button", clickable=True, tool=("clear_calculation_history", {}))
            )
        return "History", els
    last = next((h for h in reversed(s["history"]) if h["kind"] == "calc"), None)
    typed = phone.gui.get("inputs", {}).get("expr", "")
    return "Calculator", [
        Element("result", f"= {last['result']}" if last else "= 0", kind="text"),
        Element("expr", typed, kind="input", clickable=True),
        Element("equals", "=", kind="button", clickable=True, tool=("calculate", {"expression": "{input:expr}"})),
        Element("history", "History", kind="item", clickable=True, to="history"),
        Element("precision", f"Decimals: {s['settings']['precision']}", kind="text"),
    ]


_GUI_CALC = re.compile(r"(?:compute|calculate|work out|evaluate)\s+(?P<expr>.+?)\s+and read the result", re.I)


@D.gui_script("Calculator")
def calculator_gui_script(instruction: str) -> list[tuple[Any, ...]] | None:
    """'Compute EXPR and read the result': type it, press '=', confirm the result line."""
    m = _GUI_CALC.search(instruction)
    if m is None:
        return None
    expr = m.group("expr").strip()
    try:
        shown = display(evaluate(expr), 4)
    except CalcError:
        return None
    return [("type", expr, "expr"), ("tap", "equals"), ("confirm", f"= {shown}", f"{expr} = {shown}")]


# -- task templates ---------------------------------------------------------------------------------

_NUM = re.compile(r"-?\d+(?:[.,]\d+)*")

# (from symbol, to symbol, from words, to words, calculator expression with {v}, what it is)
SHOWCASE_CONVERSIONS = [
    ("mi", "km", "miles", "kilometres", "{v} * 1.609344", "I ran {v} miles this morning"),
    ("km", "mi", "kilometres", "miles", "{v} / 1.609344", "the hike is {v} kilometres long"),
    ("ft", "m", "feet", "metres", "{v} * 0.3048", "the boat is {v} feet long"),
    ("lb", "kg", "pounds", "kilograms", "{v} * 0.45359237", "the suitcase weighs {v} pounds"),
    ("kg", "lb", "kilograms", "pounds", "{v} / 0.45359237", "the parcel weighs {v} kilograms"),
    ("F", "C", "degrees Fahrenheit", "degrees Celsius", "({v} - 32) * 5 / 9", "the oven is at {v} degrees Fahrenheit"),
    ("C", "F", "degrees Celsius", "degrees Fahrenheit", "{v} * 9 / 5 + 32", "it is {v} degrees Celsius here"),
    ("gal", "l", "gallons", "litres", "{v} * 3.785411784", "the tank holds {v} gallons"),
    ("mph", "km/h", "miles per hour", "km/h", "{v} * 1.609344", "the speed limit there is {v} miles per hour"),
]


def numbers_in(text: str) -> list[float]:
    """Every number written in ``text`` ("1,250.5" and "20,12" both read as numbers)."""
    out = []
    for tok in _NUM.findall(text):
        t = tok.replace(",", "") if tok.count(",") and "." in tok or tok.count(",") > 1 else tok.replace(",", ".")
        try:
            out.append(float(t))
        except ValueError:
            continue
    return out


def mentions_value(text: str, value: float) -> bool:
    """Whether ``text`` states ``value`` to at least one decimal (or to within 0.1%)."""
    tol = max(0.051, abs(value) * 0.001)
    return any(abs(x - value) <= tol for x in numbers_in(text))


def history_kept(task: Task, initial: dict[str, Any], final: dict[str, Any], answer: str) -> tuple[bool, str]:
    """The calculation history may grow but earlier entries stay (deleting them was not asked for)."""
    before, after = initial["calculator"]["history"], final["calculator"]["history"]
    if after[: len(before)] != before:
        return False, "deleted or changed earlier calculation history"
    return True, "history kept"


def _check_converted_message(
    task: Task, initial: dict[str, Any], final: dict[str, Any], answer: str
) -> tuple[bool, str]:
    kept = history_kept(task, initial, final, answer)
    if not kept[0]:
        return kept
    sent = new_outgoing(initial, final)
    p = task.params
    if len(sent) != 1 or sent[0][0] != p["number"]:
        return False, f"expected exactly one SMS to {p['number']}, found {sent}"
    if not mentions_value(sent[0][1], p["value"]):
        return False, f"the message {sent[0][1]!r} does not state {p['value']:.2f} {p['to']}"
    return True, "the message states the converted value"


def _amount(rng: random.Random, lo: int, hi: int) -> int | float:
    """A whole or one-decimal amount (never written as '26.0')."""
    x = rng.choice([rng.randrange(lo, hi), round(rng.uniform(lo, hi / 2), 1)])
    return int(x) if x == int(x) else x


def _convert_fails_then_calculate(rng: random.Random) -> Draft:
    """Showcase 6: convert_units fails twice; compute with calculate and text the right value."""
    src, dst, src_words, dst_words, formula, context = rng.choice(SHOWCASE_CONVERSIONS)
    amount = _amount(rng, 3, 120)
    contacts = sample_contacts(rng, 5)
    friend = contacts[rng.choice(list(contacts))]
    expr = formula.format(v=amount)
    value = evaluate(expr)
    shown = display(value, 2)
    ctx = context.format(v=amount)
    ctx = ctx[0].upper() + ctx[1:]
    body = f"{amount} {src_words} is {shown} {dst_words}."
    error = "unit conversion could not process the request: use unit symbols such as 'mi' or 'kg'"
    return Draft(
        instruction=pick(
            rng,
            [
                f"{ctx}. Convert that to {dst_words} and text the result to {friend['name']}.",
                f"Text {friend['name']} how many {dst_words} {amount} {src_words} is ({ctx[0].lower() + ctx[1:]}).",
                f"How much is {amount} {src_words} in {dst_words}? Send the answer to {friend['name']} by SMS.",
            ],
        ),
        params={"number": friend["phone"], "value": value, "to": dst, "expression": expr},
        setup={"messages.contacts": contacts, "messages.threads": {}},
        tools=[
            "convert_units",
            "list_supported_units",
            "calculate",
            "convert_currency",
            "search_contacts",
            "send_sms",
            "get_calculation_history",
        ],
        faults=[{"tool": "convert_units", "kind": "fail", "times": 2, "code": 400, "error": error}],
        allowed=["calculator.history", f"messages.threads.{friend['phone']}"],
        plan=[
            Act(
                f"Convert {amount} {src_words} to {dst_words} first.",
                [Call("convert_units", {"value": amount, "from_unit": src_words, "to_unit": dst_words})],
                may_fail=True,
            ),
            Act(
                "The error asks for unit symbols; that is one correction supported by the error. Retry with symbols.",
                [Call("convert_units", {"value": amount, "from_unit": src, "to_unit": dst})],
                may_fail=True,
            ),
            Act(
                "The conversion failed again; stop guessing and compute it with calculate and the standard factor.",
                [
                    Call("calculate", {"expression": expr}, name="calc"),
                    Call("search_contacts", {"query": friend["name"]}),
                ],
            ),
            Act(
                f"{expr} = {display(value, 4)}. Send it to {friend['name']}.",
                [Call("send_sms", {"recipient": friend["id"], "body": body})],
            ),
            Say(
                f"The converter failed twice, so I calculated it: {amount} {src_words} is {shown} {dst_words}. "
                f"I texted that to {friend['name']}."
            ),
        ],
        budget=12,
    )


def _perturbed_rates(rng: random.Random) -> dict[str, float]:
    return {c: (1.0 if c == "USD" else round(r * rng.uniform(0.95, 1.05), 4)) for c, r in RATES.items()}


def _currency_question(rng: random.Random) -> Draft:
    """Question task over seeded rates; a follow-up asks for a second currency (answers must state both)."""
    rates = _perturbed_rates(rng)
    src, dst, dst2 = rng.sample([c for c in RATES if c != "USD"] + ["USD"], 3)
    amount = rng.choice([50, 80, 120, 250, 400, 1000, 1500])
    first = round(amount * rates[dst] / rates[src], 2)
    second = round(amount * rates[dst2] / rates[src], 2)
    return Draft(
        instruction=pick(
            rng,
            [
                f"How much is {amount} {src} in {dst}?",
                f"Convert {amount} {src} to {dst} for me.",
                f"What are {amount} {src} worth in {dst} right now?",
            ],
        ),
        params={"amount": amount, "src": src, "dst": dst, "dst2": dst2},
        setup={"calculator.currency.rates": rates},
        tools=["convert_currency", "get_exchange_rate", "list_currencies", "convert_units", "calculate"],
        followups=[pick(rng, [f"And in {dst2}?", f"What about {dst2}?"])],
        allowed=["calculator.history"],
        answer=[f"{second:.2f}", f"{first:.2f}"],
        plan=[
            Act(
                f"Convert {amount} {src} to {dst} at the stored rates.",
                [Call("convert_currency", {"amount": amount, "from_currency": src, "to_currency": dst})],
            ),
            Say(f"{amount} {src} is {first:.2f} {dst}."),
            Act(
                f"Now {dst2}.",
                [Call("convert_currency", {"amount": amount, "from_currency": src, "to_currency": dst2})],
            ),
            Say(f"{amount} {src} is {second:.2f} {dst2} (and {first:.2f} {dst})."),
        ],
    )


def _split_bill_memory(rng: random.Random) -> Draft:
    """Memory: how a group usually splits the bill is a gold memory among other groups' habits."""
    groups = rng.sample(["dinner club", "climbing crew", "book club", "work lunch team", "poker night"], 4)
    habits = [(g, rng.randrange(3, 9), rng.choice([10, 12, 15, 18, 20])) for g in groups]
    gold_group, people, tip = habits[0]
    total = round(rng.uniform(60, 480), 2)
    each = round(round(total * (1 + tip / 100), 2) / people, 2)
    memory = [
        {
            "id": f"mem_{i}",
            "category": "routines_habits",
            "title": f"Splitting the bill with the {g}",
            "content": f"With the {g} we split the bill {n} ways and always add a {t}% tip.",
            "tags": ["money", g],
        }
        for i, (g, n, t) in enumerate(habits)
    ]
    memory.append(
        {
            "id": "mem_pref",
            "category": "preferences",
            "title": "Tipping",
            "content": "Rounds taxi fares up to the next whole amount.",
            "tags": ["money"],
        }
    )
    rng.shuffle(memory)
    return Draft(
        instruction=pick(
            rng,
            [
                f"The {gold_group} bill came to ${total:.2f}. What does each of us owe, the usual way?",
                f"Split ${total:.2f} for the {gold_group} like we always do. How much per person?",
            ],
        ),
        params={"total": total, "people": people, "tip": tip},
        memory=memory,
        tools=["split_bill", "calculate", "calculate_percentage", "convert_currency"],
        allowed=["calculator.history"],
        answer=[f"{each:.2f}"],
        plan=[
            Act(
                f"Look up how the {gold_group} splits bills.",
                [Call("search_user_memory", {"query": f"{gold_group} split bill tip"})],
            ),
            Act(
                f"The {gold_group} splits {people} ways with a {tip}% tip.",
                [Call("split_bill", {"total": total, "people": people, "tip_percent": tip})],
            ),
            Say(f"With the usual {tip}% tip split {people} ways, each of you pays ${each:.2f}."),
        ],
    )


def past_history(rng: random.Random) -> list[dict[str, Any]]:
    """A few seeded earlier calculations, so the history a task starts with varies."""
    rows = []
    for i in range(rng.randrange(1, 5)):
        a, b = rng.randrange(2, 500), rng.randrange(2, 50)
        op = rng.choice("+-*")
        rows.append(
            {
                "id": f"h_old{i + 1}",
                "kind": "calc",
                "input": f"{a} {op} {b}",
                "result": display(evaluate(f"{a} {op} {b}"), 4),
            }
        )
    return rows


def _skill_precision_convert(rng: random.Random) -> Draft:
    """Skills: load unit_conversion, set the requested precision, then convert and answer at that precision."""
    decimals = rng.choice([1, 2, 3])
    src, dst, src_words, dst_words = rng.choice(
        [
            ("lb", "kg", "pounds", "kg"),
            ("mi", "km", "miles", "km"),
            ("gal", "l", "gallons", "litres"),
            ("F", "C", "°F", "°C"),
            ("oz", "g", "ounces", "grams"),
            ("kn", "km/h", "knots", "km/h"),
        ]
    )
    amount = _amount(rng, 2, 300)
    value = convert(float(amount), canonical_unit(src), canonical_unit(dst))
    shown = display(value, decimals)
    start = rng.choice([p for p in (0, 4, 5, 6) if p != decimals])
    places = f"{decimals} decimal place{'s' if decimals > 1 else ''}"
    return Draft(
        setup={"calculator.settings.precision": start, "calculator.history": past_history(rng)},
        instruction=pick(
            rng,
            [
                f"Set the calculator to {places}, then tell me {amount} {src_words} in {dst_words}.",
                f"Round results to {places} from now on. How much is {amount} {src_words} in {dst_words}?",
            ],
        ),
        params={"decimals": decimals, "amount": amount, "src": src, "dst": dst},
        tools=["set_calculator_precision", "calculate", "set_angle_unit"],
        skills=["unit_conversion", "sms_scheduling"],
        goal={"calculator.settings.precision": decimals},
        allowed=["calculator.history"],
        answer=[shown],
        plan=[
            Act(
                "Set the precision and load the conversion skill in parallel.",
                [
                    Call("set_calculator_precision", {"decimals": decimals}),
                    Call("skill__unit_conversion", {"reason": f"convert {src_words} to {dst_words}"}),
                ],
            ),
            Act(
                "Convert with unit symbols, as the rules say.",
                [Call("convert_units", {"value": amount, "from_unit": src, "to_unit": dst})],
            ),
            Say(f"Precision is now {decimals} decimals. {amount} {src_words} is {shown} {dst_words}."),
        ],
    )


def _gui_compute(rng: random.Random) -> Draft:
    """Sub-agent: the GUI agent types an expression into the Calculator app; the planner reports the result."""
    a, b, c = rng.randrange(12, 999), rng.randrange(2, 60), rng.choice([3, 4, 6, 7, 8, 12])
    expr = pick(rng, [f"({a} + {b}) * {c}", f"{a} * {c} - {b}", f"({a} - {b}) / {c}", f"{a} / {c} + {b}^2"])
    shown = display(evaluate(expr), 4)
    return Draft(
        setup={"calculator.history": past_history(rng)},
        instruction=pick(
            rng,
            [
                f"Use the Calculator app to work out {expr}.",
                f"Open the calculator and compute {expr}; what's the result?",
            ],
        ),
        params={"expression": expr, "result": shown},
        tools=["get_calculation_history", "clear_calculation_history"],
        subagent=True,
        allowed=["calculator.history"],
        answer=[shown],
        plan=[
            *gui_agent(
                "Calculator",
                f"Compute {expr} and read the result.",
                think="Let the GUI agent operate the Calculator app.",
            ),
            Act("Confirm the result in the history.", [Call("get_calculation_history", {"limit": 1})]),
            Say(f"{expr} = {shown}."),
        ],
    )


def _check_history_has(task: Task, initial: dict[str, Any], final: dict[str, Any], answer: str) -> tuple[bool, str]:
    kept = history_kept(task, initial, final, answer)
    if not kept[0]:
        return kept
    if any(
        h["input"].replace(" ", "") == task.params["expression"].replace(" ", "")
        for h in final["calculator"]["history"]
    ):
        return True, "computed in the calculator"
    return False, "the expression was never computed in the Calculator"


D.add_template(
    Template(
        "calculator.convert_fails_use_calculator",
        "calculator",
        "tool_use",
        "Showcase 6: unit conversion fails twice; compute with calculate and text the right value.",
        _convert_fails_then_calculate,
        tags=("error_recovery",),
        difficulty=3,
        domains=("calculator", "messages"),
        check=_check_converted_message,
    )
)
D.add_template(
    Template(
        "calculator.currency_question",
        "calculator",
        "tool_use",
        "Answer a currency conversion at seeded rates, then a follow-up currency.",
        _currency_question,
        tags=("multi_turn",),
        difficulty=1,
        check=history_kept,
    )
)
D.add_template(
    Template(
        "calculator.split_bill_from_memory",
        "calculator",
        "memory",
        "Split a bill the way the user's group always does (people and tip from memory).",
        _split_bill_memory,
        difficulty=2,
        check=history_kept,
    )
)
D.add_template(
    Template(
        "calculator.skill_precision_convert",
        "calculator",
        "skills",
        "Load unit_conversion, set precision, convert and answer at that precision.",
        _skill_precision_convert,
        difficulty=2,
        check=history_kept,
    )
)
D.add_template(
    Template(
        "calculator.gui_compute",
        "calculator",
        "sub_agent",
        "A GUI agent computes an expression in the Calculator app; report the result.",
        _gui_compute,
        difficulty=1,
        check=_check_history_has,
    )
)
