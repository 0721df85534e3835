"""`burtbench calibrate`: what a machine makes of the stated 95%, on synthetic A/A trials whose truth is
known (seeded, no timing), its files read back by doctor, and the command end to end on a fake engine."""
import json
import math

import numpy as np
import pytest

from harness.analysis import calibration
from harness.commands.cli import main
from harness.machine import calibrations, doctor, host
from harness.running.calibrate import write
from harness.store.results import is_run_dir, read_trials

SPREAD = 0.05  # a trial's log noise
DRIFT = 0.1  # a round's shift, both sides of the round alike


def synthetic_run(rng, rounds: int, points: int = 8, shift: float = 0.0) -> list[dict]:
    """Trials of engines e0..eN-1 beside their copies, log-normal noise, drift between rounds; every true
    factor ×1 within the run, and every trial of the run moved by exp(shift)."""
    trials = []
    for point in range(points):
        for round_index in range(rounds):
            drift = DRIFT * rng.standard_normal()
            for engine in (f"e{point}", f"e{point}@#copy"):
                time = 1e-6 * (point + 1) * math.exp(shift + drift + SPREAD * rng.standard_normal())
                trials.append({"engine": engine, "workload": "tiny", "params": {"a": 1.0}, "trial": round_index,
                               "per_iter_s": {"median": time}})
    return trials


@pytest.fixture(scope="module")
def honest():
    rng = np.random.default_rng(47)
    return calibration.calibrate([synthetic_run(rng, 64), synthetic_run(rng, 64)], 0.05)


def test_honest_aa_intervals_hold_about_95_percent(honest):
    shares = honest["shares"]
    for name in ("holds_paired", "holds_rerun"):
        assert shares[name]["cases"] >= 250
        assert 0.92 <= shares[name]["share"] <= 0.98, name
        assert not shares[name]["short"]
    assert shares["answered_without_floor"]["share"] <= 0.08
    assert shares["answered_with_floor"]["share"] <= shares["answered_without_floor"]["share"]
    # Reruns of an honest machine move a factor by the noise of its trials alone.
    assert 1 < honest["rerun_spread"]["median"] < honest["rerun_spread"]["largest"] < 1.15


def test_a_shift_between_runs_is_seen_as_reruns_that_do_not_hold():
    rng = np.random.default_rng(3)
    found = calibration.calibrate([synthetic_run(rng, 16), synthetic_run(rng, 16, shift=math.log(1.3))], 0.05)
    assert found["shares"]["holds_rerun"]["short"] and found["shares"]["holds_rerun"]["share"] < 0.5
    assert found["rerun_spread"]["median"] == pytest.approx(1.3, rel=0.05)
    assert not found["shares"]["holds_paired"]["short"]  # within each run, copy and original still agree


def test_planted_boundary_cases_are_decided_at_most_5_5_percent_of_the_time():
    rng = np.random.default_rng(11)
    cases = calibration.Cases()
    trials = synthetic_run(rng, calibration.DESIGN_ROUNDS * 20, points=100)
    for key, (a, b) in calibration.pairs(trials).items():
        calibration.planted(cases, key, a, b)
    decided = cases.share("planted_decided")
    assert decided["cases"] >= 2000
    assert decided["share"] <= 0.055


def test_pairs_are_an_engine_and_its_copy_at_one_point():
    trials = [{"engine": engine, "workload": "tiny", "params": {}, "trial": 0, "per_iter_s": {"median": 1.0}}
              for engine in ("x", "x@#copy", "y@v1", "y@v1#copy", "z")]
    assert [key.engine for key in calibration.pairs(trials)] == ["x", "y@v1"]


def test_the_machine_key_is_one_safe_folder_name():
    key = calibrations.machine_key({"cpu_model": "Intel(R) Core(TM) i7-8650U CPU @ 1.90GHz", "os": "Linux"})
    assert key == "Intel-R-Core-TM-i7-8650U-CPU-1.90GHz-Linux"
    assert calibrations.machine_key({}) == "unknown-CPU-unknown-OS"


def record_of(found: dict, facts: dict) -> dict:
    return {"machine": {"key": calibrations.machine_key(facts), "cpu_model": facts.get("cpu_model"),
                        "os": facts.get("os")}, "created_at": "2026-11-27T10:00:00+00:00", "minutes": 5,
            "runs": ["results/calibration/x/runs/a", "results/calibration/x/runs/b"], **found}


def test_the_files_are_written_and_read_back(honest, tmp_path):
    facts = {"cpu_model": "Test CPU 9000", "os": "Linux"}
    where = calibrations.folder(tmp_path, facts)
    write(where, record_of(honest, facts))
    assert json.loads((where / calibrations.RECORD).read_text())["shares"] == honest["shares"]
    page = (where / calibrations.PAGE).read_text()
    paired = honest["shares"]["holds_paired"]
    assert f"| {paired['share']:.1%} | {paired['cases']} | ≥ 95% |" in page
    assert "×/÷" in page and "results/calibration/x/runs/b" in page
    found = calibrations.latest(tmp_path, facts)
    assert found.page == where / calibrations.PAGE and found.made.startswith("2026-11-27")
    assert f"{paired['share']:.1%} paired" in found.line
    assert calibrations.latest(tmp_path, {"cpu_model": "Another CPU", "os": "Linux"}) is None


def test_doctor_shows_the_latest_calibration_or_how_to_make_one(honest, tmp_path):
    facts = host.describe()
    lines = doctor.format_findings([doctor.calibration_finding(facts, tmp_path)])
    assert "no calibration of this machine" in lines and "burtbench calibrate" in lines
    write(calibrations.folder(tmp_path, facts), record_of(honest, facts))
    (found,) = [f for f in doctor.diagnose(watch_s=0.01, results=tmp_path) if f.topic == "calibration"]
    assert found.message.startswith("2026-11-27") and "A/A intervals held ×1 in" in found.message
    assert str(calibrations.folder(tmp_path, facts) / calibrations.PAGE) in found.message


def test_a_damaged_calibration_reads_as_none(tmp_path):
    facts = {"cpu_model": "Test CPU", "os": "Linux"}
    calibrations.folder(tmp_path, facts).mkdir(parents=True)
    (calibrations.folder(tmp_path, facts) / calibrations.RECORD).write_text("{not json")
    assert calibrations.latest(tmp_path, facts) is None


@pytest.mark.parametrize("argv,message", [
    (["calibrate", "--minutes", "0"], "a number > 0"),
    (["calibrate", "--engine", "nosuch"], "nosuch"),
])
def test_bad_input_is_one_line_before_any_work(argv, message, tmp_path, capsys):
    assert main([*argv, "--out", str(tmp_path / "results")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert not (tmp_path / "results").exists()


def test_calibrate_end_to_end_on_a_fake_engine(fake_engines, tmp_path, capsys):
    assert main(["calibrate", "--minutes", "0.01", "--engine", "fake/ok", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "run 1 of 2" in out and "run 2 of 2" in out and "A/A intervals held ×1 in" in out
    where = calibrations.folder(tmp_path, host.describe())
    record = json.loads((where / calibrations.RECORD).read_text())
    assert len(record["runs"]) == 2
    for run in record["runs"]:
        assert is_run_dir(run)
        trials = read_trials(run)
        copies = {t["engine"] for t in trials if t["engine"].endswith("#copy")}
        assert copies == {"fake/ok/python/cpu@#copy"}
        assert len({t["trial"] for t in trials}) >= calibration.MIN_ROUNDS
    assert record["shares"]["holds_paired"]["cases"] > 0 and record["shares"]["planted_decided"]["cases"] > 0
    assert record["rerun_spread"]["cases"] == 4  # two points, the original and its copy
    assert sorted((row["engine"], row["workload"]) for row in record["points"]) == [
        ("fake/ok/python/cpu", "small"), ("fake/ok/python/cpu", "tiny")]
    assert calibrations.latest(tmp_path, host.describe()).page == where / calibrations.PAGE


def test_each_point_counts_its_own_cases(honest):
    row = honest["points"][0]
    assert row["engine"] == "e0" and row["step_s"] == pytest.approx(1e-6, rel=0.05)
    assert row["holds_paired"][1] == 2 * 64 // calibration.WINDOW  # two runs' windows
