"""Calculator: the safe expression parser, unit and currency conversion, history, and showcase 6."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from devices.virtual.domains.calculator import CalcError, convert, display, evaluate, mentions_value
from devices.virtual.phone import VirtualPhone
from devices.virtual.registry import catalog
from harness.episode import run_episode
from harness.reference import ReferenceSolver


@pytest.mark.parametrize(
    ("expr", "value"),
    [
        ("(12.5 + 3) * 4", 62),
        ("2^3^2", 512),  # right-associative
        ("-2^2", -4),  # unary minus binds looser than ^, as on paper
        ("2 * -3", -6),
        ("1,250 * 15%", 187.5),
        ("10 / 4", 2.5),
        ("round(3.14159, 2)", 3.14),
        ("sqrt(16) + abs(-3)", 7),
        ("sin(30)", 0.5),
        ("2 × 3 ÷ 4", 1.5),
        ("1e3 + 1", 1001),
        ("2 ** 10", 1024),
    ],
)
def test_evaluate_follows_arithmetic_rules(expr, value):
    assert evaluate(expr) == pytest.approx(value)


@pytest.mark.parametrize(
    ("expr", "why"),
    [
        ("5 / (3 - 3)", "division by zero"),
        ("__import__('os').system('ls')", "unexpected character"),
        ("exec(1)", "unknown name"),
        ("2 +", "ends too early"),
        ("(1 + 2", "missing ')'"),
        ("3 3", "unexpected"),
        ("sqrt(-1)", "negative"),
        ("9^9^9", "out of range"),
        ("", "empty"),
        ("1" * 201, "too long"),
    ],
)
def test_evaluate_rejects_bad_input_with_a_reason(expr, why):
    with pytest.raises(CalcError, match=why.replace("(", r"\(").replace(")", r"\)")):
        evaluate(expr)


def _expressions():
    """(text, value) pairs built together, so the oracle needs no eval."""
    leaf = st.integers(0, 999).map(lambda n: (str(n), float(n)))

    def extend(children):
        def combine(a, op, b):
            if op == "/" and b[1] == 0:
                return (f"({a[0]} + {b[0]})", a[1] + b[1])
            val = {"+": a[1] + b[1], "-": a[1] - b[1], "*": a[1] * b[1], "/": a[1] / b[1] if b[1] else 0}[op]
            return (f"({a[0]} {op} {b[0]})", val)

        return st.builds(combine, children, st.sampled_from("+-*/"), children)

    return st.recursive(leaf, extend, max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(_expressions())
def test_evaluate_matches_exact_arithmetic(pair):
    text, value = pair
    assert math.isclose(evaluate(text), value, rel_tol=1e-9, abs_tol=1e-9)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_calculate_never_raises_on_arbitrary_text(text):
    phone = VirtualPhone(strict=True)
    phone.reset()
    if text.strip():
        res = phone.call(("calculate", {"expression": text}))
        assert res.success or res.code == 400


def test_conversions_use_exact_factors():
    assert convert(10, "mi", "km") == pytest.approx(16.09344)
    assert convert(212, "f", "c") == pytest.approx(100)
    assert convert(0, "c", "k") == pytest.approx(273.15)
    assert convert(1, "gal", "l") == pytest.approx(3.785411784)
    assert convert(100, "km/h", "mph") == pytest.approx(62.1371, rel=1e-5)
    phone = VirtualPhone(strict=True)
    phone.reset()
    r = phone.call(("convert_units", {"value": 5, "from_unit": "pounds", "to_unit": "kilograms"}))
    assert r.success and r.data["result"] == 2.268 and r.data["from_unit"] == "lb"
    assert phone.call(("convert_units", {"value": 1, "from_unit": "kg", "to_unit": "km"})).code == 400


def test_precision_changes_what_results_show_and_history_records_everything():
    phone = VirtualPhone(strict=True)
    phone.reset()
    assert phone.call(("calculate", {"expression": "2/3"})).data["display"] == "0.6667"
    phone.call(("set_calculator_precision", {"decimals": 2}))
    assert phone.call(("calculate", {"expression": "2/3"})).data["display"] == "0.67"
    phone.call(("convert_currency", {"amount": 100, "from_currency": "usd", "to_currency": "eur"}))
    hist = phone.call(("get_calculation_history", {})).data["history"]
    assert [h["kind"] for h in hist] == ["currency", "calc", "calc"]
    assert display(2.0, 4) == "2" and display(1 / 3, 3) == "0.333"


def test_currency_uses_the_seeded_rates():
    phone = VirtualPhone(strict=True)
    phone.reset()
    phone.state["calculator"]["currency"]["rates"].update({"EUR": 0.5, "JPY": 150.0})
    r = phone.call(("convert_currency", {"amount": 10, "from_currency": "EUR", "to_currency": "JPY"}))
    assert r.data["result"] == 3000.0 and r.data["rate"] == 300.0


def test_mentions_value_accepts_rounding_and_rejects_wrong_numbers():
    assert mentions_value("that's 20.12 km", 20.1168)
    assert mentions_value("about 20.1 km", 20.1168)
    assert mentions_value("c'est 20,12 km", 20.1168)
    assert not mentions_value("that's 12.5 miles", 20.1168)
    assert not mentions_value("that's 21 km", 20.1168)


def _calls(ep):
    return [(c.call.name, c.result) for s in ep.steps for c in s.calls]


def test_showcase_6_conversion_fails_twice_then_calculator_and_message():
    tpl = catalog().templates["calculator.convert_fails_use_calculator"]
    assert "error_recovery" in tpl.tags and set(tpl.domains) == {"calculator", "messages"}
    for seed in range(10):
        task = tpl.instantiate(seed)
        assert task.faults == [
            {"tool": "convert_units", "kind": "fail", "times": 2, "code": 400, "error": task.faults[0]["error"]}
        ]
        ep = run_episode(task, ReferenceSolver())
        calls = _calls(ep)
        converts = [r for n, r in calls if n == "convert_units"]
        assert [r.code for r in converts] == [400, 400], "one try plus at most one correction"
        names = [n for n, _ in calls]
        assert names.index("calculate") > names.index("convert_units") and names[-1] == "send_sms"
        assert ep.verdict.success, ep.verdict.reason


def test_showcase_6_rejects_a_wrong_value_or_an_extra_message():
    task = catalog().templates["calculator.convert_fails_use_calculator"].instantiate(3)
    phone = VirtualPhone(strict=True)
    phone.reset(task)
    initial = phone.snapshot()
    number = task.params["number"]
    wrong = task.params["value"] * 1.1 + 1
    phone.call(("send_sms", {"recipient": number, "body": f"It's {wrong:.2f}."}))
    verdict = task.template_obj.verify(task, initial, phone.snapshot(), "Sent.")
    assert not verdict.success and "does not state" in verdict.reason
    phone.reset(task)
    phone.call(("send_sms", {"recipient": number, "body": f"It's {task.params['value']:.2f}."}))
    assert task.template_obj.verify(task, initial, phone.snapshot(), "Sent.").success
    phone.call(("send_sms", {"recipient": number, "body": "and again"}))
    assert not task.template_obj.verify(task, initial, phone.snapshot(), "Sent.").success


def test_calculator_gui_script_types_and_confirms_the_result():
    script = catalog().apps["Calculator"].script("Compute (3 + 4) * 6 and read the result.")
    assert script == [("type", "(3 + 4) * 6", "expr"), ("tap", "equals"), ("confirm", "= 42", "(3 + 4) * 6 = 42")]
    phone = VirtualPhone(strict=True)
    phone.reset()
    phone.open_app("Calculator")
    phone.type_text("(3 + 4) * 6", "expr")
    assert phone.tap("equals").data["result"] == 42
    assert any(e.text == "= 42" for e in phone.screen().elements)


def test_clearing_the_history_is_collateral_damage():
    tpl = catalog().templates["calculator.split_bill_from_memory"]
    task = tpl.instantiate(0)
    phone = VirtualPhone(strict=True)
    phone.reset(task)
    phone.call(("calculate", {"expression": "1 + 1"}))
    initial = phone.snapshot()
    p = task.params
    phone.call(("split_bill", {"total": p["total"], "people": p["people"], "tip_percent": p["tip"]}))
    answer = f"Each pays {task.answer[0]}."
    assert tpl.verify(task, initial, phone.snapshot(), answer).success
    phone.call(("clear_calculation_history", {}))
    verdict = tpl.verify(task, initial, phone.snapshot(), answer)
    assert not verdict.success and "history" in verdict.reason
