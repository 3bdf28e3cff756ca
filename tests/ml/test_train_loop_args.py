"""``bench/train_loop.py --style-weights``: the positional shares keep their meaning; label:share pairs name any
reference style; bad mixes, bad RL flags and arms that cannot be reused are refused with a reason."""

from __future__ import annotations

import json

import pytest

from harness.reference import ReferenceStyle
from tests.ml.bench_scripts import load_bench


def _parse():
    return load_bench("train_loop").parse_style_weights


def test_positional_shares_are_concise_verbose_checks_mistake_then_none():
    mix = _parse()("0.3,0.1,0.2,0.15,0.25")
    assert [s.label for s, _ in mix] == ["", "verbose", "checks", "mistake", "none"]
    assert [w for _, w in mix] == [0.3, 0.1, 0.2, 0.15, 0.25]
    assert len(_parse()("0.55,0.1,0.2,0.15")) == 4


def test_label_pairs_name_combined_styles():
    mix = _parse()("checks+verify:0.5, verbose+checks+verify:0.1,concise:0.15,none:0.25")
    assert mix[0] == (ReferenceStyle(redundant_checks=True, verify=True), 0.5)
    assert mix[1][0] == ReferenceStyle("verbose", redundant_checks=True, verify=True)
    assert [w for _, w in mix] == [0.5, 0.1, 0.15, 0.25]


@pytest.mark.parametrize("text, why", [
    ("0.5,0.5", "four or five shares"),
    ("concise:1,verify", "label:share"),
    ("concise:1,concise:2", "named twice"),
    ("concise:0,none:0", "not all zero"),
    ("loud:1", "parts are one of"),
])
def test_bad_mixes_are_refused(text, why):
    with pytest.raises(ValueError, match=why):
        _parse()(text)


@pytest.mark.parametrize("flags, why", [
    (["--rl-group", "1"], "group_size: must be an integer >= 2"),
    (["--rl-tasks", "0"], "tasks_per_iter: must be a positive integer"),
])
def test_bad_rl_flags_are_refused_before_any_training(flags, why, monkeypatch, capsys):
    monkeypatch.setattr("sys.argv", ["train_loop.py", *flags])
    with pytest.raises(SystemExit) as exc:
        load_bench("train_loop").main()
    assert exc.value.code == 2
    assert why in capsys.readouterr().err


def _run(flags, monkeypatch, capsys) -> str:
    monkeypatch.setattr("sys.argv", ["train_loop.py", *flags])
    with pytest.raises(SystemExit):
        load_bench("train_loop").main()
    return capsys.readouterr().err


def test_one_arm_trains_alone_without_reuse_and_a_reused_arm_must_exist(tmp_path, monkeypatch, capsys):
    # --arms grpo alone gets past the arm checks (to the RL flags' check), so a long pair can be split.
    assert "tasks_per_iter" in _run(["--arms", "grpo", "--rl-tasks", "0"], monkeypatch, capsys)
    # With --reuse, the arm not named must be in it.
    err = _run(["--arms", "care", "--reuse", str(tmp_path), "--sft-checkpoint", str(tmp_path)], monkeypatch, capsys)
    assert "grpo is not trained: --reuse must name" in err


def test_a_reused_arm_may_start_from_a_copy_of_the_sft_checkpoint_but_not_from_other_weights(tmp_path, monkeypatch,
                                                                                              capsys):
    sft, copy, other = (tmp_path / n for n in ("sft", "copy", "other"))
    for d, weights in ((sft, b"same"), (copy, b"same"), (other, b"else")):
        d.mkdir()
        (d / "model.safetensors").write_bytes(weights)
    reuse = tmp_path / "run"
    (reuse / "grpo" / "last").mkdir(parents=True)
    card = reuse / "grpo" / "last" / "flywheel_model.json"
    flags = ["--arms", "care", "--reuse", str(reuse), "--rl-tasks", "0"]
    card.write_text(json.dumps({"init_from": str(copy)}))  # trained by another run, from its own copy
    assert "tasks_per_iter" in _run([*flags, "--sft-checkpoint", str(sft)], monkeypatch, capsys)
    card.write_text(json.dumps({"init_from": str(other)}))
    err = _run([*flags, "--sft-checkpoint", str(sft)], monkeypatch, capsys)
    assert "the reused grpo started from" in err and "neither the same folder nor the same weights" in err


def test_a_reused_arm_brings_its_snapshots_at_the_asked_counts(tmp_path):
    reuse, out = tmp_path / "run", tmp_path / "out"
    for name, seconds in (("grpo", 50.0), ("grpo@60", 25.0), ("grpo@90", 40.0)):
        (reuse / name / "last").mkdir(parents=True)
        (reuse / name / "last" / "flywheel_model.json").write_text(json.dumps({"seconds": seconds}))
    taken = load_bench("train_loop").take_reused(reuse, out, "grpo", [30, 60])
    assert taken == {"grpo": 50.0, "grpo@60": 25.0}  # no snapshot at 30; 90 was not asked for
    assert (out / "grpo@60" / "last" / "flywheel_model.json").is_file() and not (out / "grpo@90").exists()


def test_split_calls_reads_the_solved_and_the_failed_tasks_apart():
    from ml.evaluate import EvalReport

    rows = [{"solved": True, "tool_calls": 3}, {"solved": False, "tool_calls": 6}, {"solved": False, "tool_calls": 4}]
    line = load_bench("train_loop").split_calls(EvalReport("care", [], {}, {}, 0.0, tasks=rows))
    assert line == "calls_success=3.00 calls_failure=5.00 failures=2/3"
    none_failed = load_bench("train_loop").split_calls(EvalReport("ref", [], {}, {}, 0.0, tasks=rows[:1]))
    assert none_failed == "calls_success=3.00 calls_failure=nan failures=0/1"
