"""Curation: dedupe, balance within tolerance, split by instance without leaks, error marks, reproducible export."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from django.http import Http404

from console.models import (
    AppendOnlyError,
    DatasetVersion,
    TaskSpec,
    TaskStatus,
    Trajectory,
    TrajectoryStatus,
    TrajectoryStep,
)
from console.selectors.datasets import dataset_file, dataset_get
from console.services.collection import collection_run
from console.services.curation import CurationError, dataset_curate, turn_marks
from console.services.rounds import param_hash, round_create, state_hash, task_generate
from harness.bench import held_out_ids, suite_tasks
from harness.contract import Episode, Step, ToolCall

pytestmark = [pytest.mark.django_db]

MIX = {"category": {"tool_use": 0.5, "memory": 0.25, "skills": 0.25}}


@pytest.fixture
def accepted_round(data_dir):
    """A round whose successful trajectories (reference solver with a recoverable slip) are accepted,
    plus one trajectory of a held-out benchmark instance slipped in by hand."""
    rnd = round_create(user=None)
    task_generate(round=rnd, n_tasks=40, seed=61)
    TaskSpec.objects.filter(round=rnd, status=TaskStatus.PENDING).update(status=TaskStatus.APPROVED)
    held = suite_tasks("pa-sim", "test", per_category=1)[0].to_dict()
    leak = TaskSpec.objects.create(
        round=rnd, template=held["template"], category=held["category"], domains=held["domains"],
        difficulty=held["difficulty"], seed=held["seed"], instruction=held["instruction"], spec=held,
        param_hash=param_hash(held), state_hash=state_hash(held), status=TaskStatus.APPROVED,
    )
    collection_run(round=rnd, planner={"kind": "reference", "style": {"mistake": True}}, attempts=2, parallel=16)
    Trajectory.objects.filter(round=rnd, success=True).update(status=TrajectoryStatus.ACCEPTED)
    assert Trajectory.objects.filter(task=leak, status=TrajectoryStatus.ACCEPTED).exists()
    return rnd


def _files(version: DatasetVersion, root: Path) -> dict[str, bytes]:
    base = root / version.export_dir
    return {str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_export_is_byte_identical_across_two_runs_and_checksummed(accepted_round, data_dir):
    a = dataset_curate(rounds=[accepted_round], name="demo", target_mix=MIX, user=None)
    b = dataset_curate(rounds=[accepted_round.id], name="demo", target_mix=MIX, user=None)
    assert (a.version, b.version) == (1, 2) and a.export_dir != b.export_dir
    fa, fb = _files(a, data_dir), _files(b, data_dir)
    assert set(fa) == {"train.jsonl", "test.jsonl", "manifest.json", "SHA256SUMS", "hf/README.md",
                       "hf/data/train.jsonl", "hf/data/test.jsonl"}
    assert fa == fb
    sums = dict(reversed(line.split("  ")) for line in fa["SHA256SUMS"].decode().splitlines())
    assert sums == {p: hashlib.sha256(blob).hexdigest() for p, blob in fa.items() if p != "SHA256SUMS"}
    assert a.files == sums
    for line in fa["train.jsonl"].decode().splitlines():
        record = json.loads(line)
        assert line == json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        assert set(record) == {"messages", "tools", "metadata"}
    card = fa["hf/README.md"].decode()
    assert card.startswith("---\nconfigs:\n- config_name: default\n  data_files:\n")
    assert "path: data/train.jsonl" in card and "path: data/test.jsonl" in card
    hf_row = json.loads(fa["hf/data/train.jsonl"].decode().splitlines()[0])
    assert isinstance(hf_row["tools"], str) and isinstance(json.loads(hf_row["metadata"]), dict)
    with pytest.raises(AppendOnlyError):
        a.save()
    assert dataset_file(version=a, path="train.jsonl").read_bytes() == fa["train.jsonl"]
    for bad in ("../../secret", "nope.txt"):
        with pytest.raises(Http404):
            dataset_file(version=a, path=bad)
    assert dataset_get(dataset_id=a.id) == a
    with pytest.raises(Http404):
        dataset_get(dataset_id="not-a-uuid")


def _without_nulls(value: Any) -> Any:
    """``value`` without null-valued keys: Arrow gives every message every key any message has (null where
    absent), so a loaded message equals its JSONL line once nulls are dropped from both."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def test_hugging_face_folder_loads_with_the_datasets_library(accepted_round, data_dir, tmp_path):
    import datasets  # imported here: it pulls in pandas and pyarrow, which no other test needs

    version = dataset_curate(rounds=[accepted_round], name="hf", target_mix=MIX, user=None)
    folder = data_dir / version.export_dir / "hf"
    loaded = datasets.load_dataset(str(folder), cache_dir=str(tmp_path / "hf-cache"))
    assert set(loaded) == {"train", "test"}
    for split in ("train", "test"):
        exported = _lines(folder / "data" / f"{split}.jsonl")
        assert loaded[split].num_rows == len(exported) == version.stats[split] > 0
        first = loaded[split][0]
        assert _without_nulls(first["messages"]) == _without_nulls(exported[0]["messages"])
        assert json.loads(first["metadata"]) == json.loads(exported[0]["metadata"])


def test_balance_is_within_tolerance_of_the_target_mix(accepted_round, data_dir):
    version = dataset_curate(rounds=[accepted_round], name="mix", target_mix=MIX, tolerance=0.05, user=None)
    stats = version.stats
    records = _lines(data_dir / version.export_dir / "train.jsonl") + _lines(
        data_dir / version.export_dir / "test.jsonl")
    n = len(records)
    assert n == stats["kept"] > 10 and stats["within_tolerance"] is True, (stats["deviation"], stats["achieved"])
    for category, share in MIX["category"].items():
        achieved = sum(r["metadata"]["category"] == category for r in records) / n
        assert abs(achieved - share) <= 0.05, (category, achieved)
        assert stats["achieved"]["category"][category] == pytest.approx(achieved, abs=1e-6)
    assert not any(r["metadata"]["category"] == "sub_agent" for r in records)  # target 0
    assert stats["dropped_for_balance"] > 0


def test_no_held_out_instance_in_train_and_instances_never_straddle(accepted_round, data_dir):
    version = dataset_curate(rounds=[accepted_round], name="split", target_mix={}, heldout_fraction=0.2, user=None)
    base = data_dir / version.export_dir
    train, test = _lines(base / "train.jsonl"), _lines(base / "test.jsonl")
    train_inst = {r["metadata"]["instance"] for r in train}
    test_inst = {r["metadata"]["instance"] for r in test}
    assert train and test and not (train_inst & test_inst)
    assert not (train_inst & held_out_ids())
    assert test_inst & held_out_ids()  # the planted benchmark instance went to test
    manifest = json.loads((base / "manifest.json").read_text())
    assert manifest["instances"] == {"test": sorted(test_inst), "train": sorted(train_inst)}
    assert len(test_inst) == round(0.2 * (len(train_inst) + len(test_inst)))


def test_jsonl_reimports_to_the_same_trajectories(accepted_round, data_dir):
    version = dataset_curate(rounds=[accepted_round], name="reimport", target_mix={}, user=None)
    base = data_dir / version.export_dir
    records = _lines(base / "train.jsonl") + _lines(base / "test.jsonl")
    assert len(records) == version.stats["kept"]
    for record in records:
        traj = Trajectory.objects.get(id=record["metadata"]["trajectory_id"])
        steps = [Step.from_dict(s.data) for s in traj.steps.order_by("index")]
        messages = [{k: v for k, v in m.items() if k != "weight"} for m in record["messages"]]
        episode = Episode.from_dict({**traj.episode, "messages": messages, "tools": record["tools"], "steps": []})
        assert episode.to_chat() == {"messages": traj.episode["messages"], "tools": traj.episode["tools"]}
        calls = [ToolCall.from_dict({"id": c["id"], "name": c["function"]["name"],
                                     "arguments": c["function"]["arguments"]})
                 for m in messages if m["role"] == "assistant" for c in m.get("tool_calls", [])]
        stored = [rec.call for s in steps for rec in s.calls]
        assert stored and calls[len(calls) - len(stored):] == stored
        assert record["metadata"]["success"] == traj.success and traj.status == TrajectoryStatus.ACCEPTED


def test_duplicates_are_dropped(accepted_round, data_dir):
    # The reference solver is deterministic: attempt 1 repeats attempt 0 call for call.
    version = dataset_curate(rounds=[accepted_round], name="dedupe", target_mix={}, user=None)
    accepted = Trajectory.objects.filter(round=accepted_round, status=TrajectoryStatus.ACCEPTED).count()
    assert version.stats["duplicates"] == accepted - version.stats["kept"] > 0
    instances = version.manifest["instances"]["train"] + version.manifest["instances"]["test"]
    assert len(instances) == version.stats["kept"]


def test_erroneous_turns_are_masked_and_recoveries_kept(accepted_round, data_dir):
    traj = Trajectory.objects.filter(round=accepted_round, status=TrajectoryStatus.ACCEPTED, n_steps__gte=3,
                                     attempt=0).order_by("task__template").first()
    TrajectoryStep.objects.filter(trajectory=traj, index=0).update(label="erroneous")
    TrajectoryStep.objects.filter(trajectory=traj, index=1).update(label="recovery")
    version = dataset_curate(rounds=[accepted_round], name="marks", target_mix={}, user=None)
    base = data_dir / version.export_dir
    records = {r["metadata"]["trajectory_id"]: r for r in _lines(base / "train.jsonl") + _lines(base / "test.jsonl")}
    record = records[str(traj.id)]
    turns = {t["step"]: t for t in record["metadata"]["turns"]}
    assert turns[0] == {"step": 0, "label": "erroneous", "mask": True, "auto": False}
    assert turns[1]["label"] == "recovery" and turns[1]["mask"] is False
    assistant = [m for m in record["messages"] if m["role"] == "assistant"][-traj.n_steps:]
    assert assistant[0]["weight"] == 0 and "weight" not in assistant[1]
    assert 0 in version.manifest["masked"][str(traj.id)]
    # unlabelled slips of the 'mistake' style (400, then the same tool succeeds) are marked automatically
    auto = [t for r in records.values() for t in r["metadata"]["turns"] if t["auto"]]
    assert any(t["label"] == "erroneous" and t["mask"] for t in auto)
    assert any(t["label"] == "recovery" and not t["mask"] for t in auto)
    assert version.stats["masked_turns"] == sum(len(v) for v in version.manifest["masked"].values())


def test_turn_marks_ignore_injected_faults():
    failed = {"index": 0, "calls": [{"call": {"name": "set_x"}, "result": {"success": False, "code": 400}}]}
    fixed = {"index": 1, "calls": [{"call": {"name": "set_x"}, "result": {"success": True}}]}
    marks = turn_marks(steps=[failed, fixed])
    assert [m["label"] for m in marks] == ["erroneous", "recovery"] and marks[0]["mask"]
    marks = turn_marks(steps=[failed, fixed], faults=[{"tool": "set_x", "kind": "fail"}])
    assert [m["label"] for m in marks] == ["", ""]


def test_bad_curation_input_is_refused(accepted_round, data_dir):
    for kwargs, message in [
        ({"name": "Not A Slug"}, "slug"), ({"rounds": []}, "at least one round"),
        ({"target_mix": {"colour": {"red": 1}}}, "Unknown mix axis"),
        ({"target_mix": {"category": {"memory": -1}}}, "at least 0"), ({"tolerance": 2}, "tolerance"),
        ({"rounds": ["00000000-0000-0000-0000-000000000000"]}, "Unknown round"),
    ]:
        args = {"rounds": [accepted_round], "name": "ok", "target_mix": {}, "user": None, **kwargs}
        with pytest.raises(CurationError, match=message):
            dataset_curate(**args)
    empty = round_create(user=None)
    with pytest.raises(CurationError, match="no accepted trajectories"):
        dataset_curate(rounds=[empty], name="ok", target_mix={}, user=None)
    assert not DatasetVersion.objects.exists()
