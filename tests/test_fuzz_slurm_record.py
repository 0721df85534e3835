"""A damaged slurm.json (harness/cluster/record.py), whatever field an editor or a disk spoiled: `slurm status`
and `slurm finish` exit 0, or say in one line which file and field is damaged and exit 2; never a traceback
(it was "unexpected KeyError")."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_fuzz_files import FUZZ, set_field
from tests_support import check_outcome

from harness.cluster import record as rec
from harness.cluster import slurm
from harness.commands.cli import main

# As `run --slurm` and the follow-up job write it: two shards, their array, the follow-up, the merge.
RECORD = {
    "run": "20260101-000000-quick", "submitted_at": 1767225600.0, "chdir": "/home/u", "sbatch": ["--partition=debug"],
    "report_dir": None,
    "shards": [{"index": 1, "points": 3, "trials": 12, "estimate_s": 40.5},
               {"index": 2, "points": 2, "trials": 8, "estimate_s": 38.0}],
    "jobs": [{"id": "101", "kind": "shards", "shards": [1, 2], "time_limit_min": {"1": 5, "2": 5}},
             {"id": "102", "kind": "finish", "after": "101"}],
    "outcome": {"status": "complete", "trials": 20, "merged": "/runs/x/merged/x", "failed": {}, "report": None},
}


@pytest.fixture
def slurm_run(tmp_path, monkeypatch) -> Path:
    monkeypatch.setattr(slurm, "states", lambda ids: {})  # no squeue here: every job has ended
    run = tmp_path / RECORD["run"]
    run.mkdir()
    return run


def status(run: Path, capfd) -> tuple[int, str]:
    capfd.readouterr()
    code = main(["slurm", "status", str(run)])
    return code, capfd.readouterr().err


def test_the_record_as_written_is_read(slurm_run, capfd):
    rec.write(slurm_run, RECORD)
    code, err = status(slurm_run, capfd)
    assert code == 0 and not err


@settings(FUZZ, max_examples=60)
@given(data=st.data())
def test_any_damaged_field_is_one_line_naming_the_file(slurm_run, capfd, data):
    text = json.dumps(RECORD)
    damaged = set_field(text, data) if data.draw(st.booleans()) else text[: data.draw(st.integers(0, len(text) - 1))]
    (slurm_run / rec.RECORD).write_text(damaged)
    code, err = status(slurm_run, capfd)
    check_outcome(code, err, ["slurm", "status", damaged])
    if code == 2:
        assert rec.RECORD in err


@pytest.mark.parametrize("field,value", [
    ("jobs", None), ("jobs", [{"id": "101"}]), ("jobs", [{"id": "101", "kind": "shards"}]), ("shards", []),
    ("shards", [{"index": 0, "points": 1, "trials": 1, "estimate_s": 1}]), ("submitted_at", "yesterday"),
    ("outcome", {"status": "complete"}), ("outcome", {"status": "not merged", "failed": {"1": 5}, "reason": "x"}),
    ("jobs", [{"id": "101", "kind": "shards", "shards": [7]}]),
])
def test_each_field_readers_use_is_checked(slurm_run, capfd, field, value):
    rec.write(slurm_run, {**RECORD, field: value})
    code, err = status(slurm_run, capfd)
    (line,) = err.strip().splitlines()
    assert code == 2 and line.startswith(f"burtbench: error: {slurm_run / rec.RECORD}: damaged ('{field}'")
    assert line.endswith("the SLURM run cannot be followed from it")


def test_a_record_whose_array_was_never_submitted_says_so(slurm_run, capfd):
    rec.write(slurm_run, {**RECORD, "jobs": [], "outcome": None})  # sbatch never answered
    capfd.readouterr()
    assert main(["slurm", "status", str(slurm_run)]) == 0
    assert "shard 1: ended, 0 of 12 trials, never submitted" in capfd.readouterr().out
