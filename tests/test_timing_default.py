"""A run whose plan and trials say no --timing (runs from before the option) reads as the one
documented default, store/run_plan.py's DEFAULT_TIMING, wherever it is read: the run, its report's
notes, compare against a run that names that timing, and a trial record."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.analysis.compare import compare_runs
from harness.errors import UsageError
from harness.analysis.tables import build_tables
from harness.store.results import Trial
from harness.store.run_plan import DEFAULT_TIMING, TIMINGS
from harness.store.runs import load_run

REFERENCE = Path(__file__).resolve().parents[1] / "results" / "reference"


def copy_of_reference(folder: Path, timing: str | None) -> Path:
    """The reference run's manifest and tiny/small trials, every `timing` set to `timing` or removed."""
    folder.mkdir()
    manifest = json.loads((REFERENCE / "manifest.json").read_text())
    lines = [json.loads(line) for line in (REFERENCE / "trials.jsonl").read_text().splitlines() if line.strip()]
    lines = [t for t in lines if t["workload"] in ("tiny", "small")]
    for record in (manifest["plan"], *lines):
        record.pop("timing", None)
        if timing is not None:
            record["timing"] = timing
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / "trials.jsonl").write_text("".join(json.dumps(t) + "\n" for t in lines))
    return folder


def test_the_default_is_one_of_the_timings_and_a_trial_record_defaults_to_it():
    assert DEFAULT_TIMING in TIMINGS
    assert Trial(engine="e", framework="f", mode="m", language="l", device="cpu", workload="tiny", params={},
                 trial=1, status="ok").timing == DEFAULT_TIMING


def test_a_run_that_says_no_timing_reads_as_the_default_everywhere(tmp_path):
    silent = copy_of_reference(tmp_path / "silent", None)
    run = load_run(silent)
    assert run.timing == DEFAULT_TIMING
    notes = [n for t in build_tables(run) for n in t.notes if n.startswith("Timed per iteration")]
    assert notes and all(f"--timing {DEFAULT_TIMING};" in n for n in notes)
    named = copy_of_reference(tmp_path / "named", DEFAULT_TIMING)
    assert compare_runs(silent, named)["rows"]  # the same timing: compared, not refused
    other = next(t for t in TIMINGS if t != DEFAULT_TIMING)
    with pytest.raises(UsageError, match="--timing"):
        compare_runs(silent, copy_of_reference(tmp_path / "other", other))
