"""`burtbench calibrate`: what a machine adds beyond one run's rounds and how often the claims' rule holds
there, on synthetic runs whose truth is known (seeded, no timing): its shares clustered by run can read short,
its noise feeds the rule, its files are read back by doctor and by a run on the same host and core, and the
command runs end to end on a fake engine."""
import json
import math
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from harness.analysis import calibration, noise
from harness.commands.cli import main
from harness.machine import calibrations, doctor, host
from harness.running import calibrate as running_calibrate
from harness.running.calibrate import write
from harness.store.results import is_run_dir, read_trials

SPREAD = 0.05  # a trial's log noise


def synthetic_run(rng, rounds: int, points: int = 4, shift_sd: float = 0.0) -> list[dict]:
    """Trials of engines `a` and `b` (b ×3 slower) and of a's A/A copy at each point; b's factor over a moves
    by a shift of sd `shift_sd` shared by every round of the run."""
    trials = []
    for point in range(points):
        shift = shift_sd * rng.standard_normal()
        for round_index in range(rounds):
            for engine, log_factor in (("a", 0.0), ("a@#copy", 0.0), ("b", math.log(3.0) + shift)):
                time = 1e-6 * (point + 1) * math.exp(log_factor + SPREAD * rng.standard_normal())
                trials.append({"engine": engine, "workload": "tiny", "params": {"p": point}, "trial": round_index,
                               "per_iter_s": {"median": time}})
    return trials


def machine(seed: int, shift_sd: float, runs: int = noise.MIN_RUNS) -> dict:
    rng = np.random.default_rng(seed)
    return calibration.calibrate([synthetic_run(rng, 24, shift_sd=shift_sd) for _ in range(runs)], 0.05)


@pytest.fixture(scope="module")
def honest():
    return machine(47, 0.0)


@pytest.fixture(scope="module")
def shifted():
    return machine(5, 0.12)


def test_an_honest_machine_reads_consistent_with_95_percent(honest):
    shares = honest["shares"]
    for name in ("holds_noise", "holds_plain"):
        assert shares[name]["cases"] >= 400 and len(shares[name]["runs"]) == noise.MIN_RUNS
        assert shares[name]["share"] >= 0.92 and not shares[name]["short"], name
    assert shares["planted_noise"]["share"] <= 0.055 and shares["answered_without_floor"]["share"] <= 0.1
    for name in [*calibration.PLANTED_PATHS, "planted_rows", "planted_pooled"]:  # every path a claim takes
        assert shares[name]["cases"] >= 40 and not shares[name]["short"], name
    assert honest["noise"]["between_sd"] < 0.03


def test_a_run_shift_reads_short_for_one_runs_rounds_and_holds_with_the_measured_noise(shifted):
    """Where the claims' rule without the run level falls short, the calibration says so; with the noise
    it measured, the rule holds."""
    shares = shifted["shares"]
    assert shares["holds_plain"]["short"] and shares["holds_plain"]["share"] < 0.8
    assert not shares["holds_noise"]["short"] and shares["holds_noise"]["share"] >= 0.93
    assert shares["planted_plain"]["share"] > 0.1 >= shares["planted_noise"]["share"]
    for name in [*calibration.PLANTED_PATHS, "planted_rows", "planted_pooled"]:
        assert not shares[name]["short"], f"{name}: the measured noise keeps every path's error within 5%"
    assert 0.06 < shifted["noise"]["between_sd"] < 0.2 and shifted["noise"]["between_df"] == noise.MIN_RUNS - 1
    assert shifted["rerun_spread"]["largest"] > 1.1  # reruns moved factors of two engines, not one engine's time


def test_shares_are_clustered_by_run_not_counted_as_independent_cases(shifted):
    """A run's cases move together: the share's interval is over the runs' own shares."""
    share = shifted["shares"]["holds_plain"]
    assert share["low"] <= share["share"] <= share["high"]
    assert share["share"] == pytest.approx(float(np.mean(share["runs"])), abs=1e-3)


def test_pairs_are_every_two_engines_at_a_point_copies_included():
    trials = [{"engine": engine, "workload": "tiny", "params": {}, "trial": k, "per_iter_s": {"median": 1.0}}
              for engine in ("x", "x@#copy", "y") for k in range(3)]
    found = calibration.pairs(trials)
    assert sorted(other for _, other in found) == ["x@#copy", "y", "y"]
    assert [calibration.is_copy(p) for p in sorted(found, key=lambda p: p[1])] == [True, False, False]


def test_the_machine_key_names_the_host_in_one_safe_folder_name():
    key = calibrations.machine_key({"cpu_model": "Intel(R) Core(TM) i7-8650U CPU @ 1.90GHz", "os": "Linux"}, "lab-7")
    assert key == "lab-7-Intel-R-Core-TM-i7-8650U-CPU-1.90GHz-Linux"
    assert calibrations.machine_key({}, "h") == "h-unknown-CPU-unknown-OS"


def record_of(found: dict, facts: dict, cpu: int = 1, made: str = "2026-11-27T10:00:00+00:00") -> dict:
    return {"machine": {"key": calibrations.machine_key(facts, calibrations.host_name()), "host": "h",
                        "cpu_model": facts.get("cpu_model"), "os": facts.get("os"), "cpu": cpu},
            "created_at": made, "minutes": 5, "runs": ["results/calibration/x/runs/a", "results/calibration/x/runs/b"],
            "runs_count": noise.MIN_RUNS, **found}


def test_the_files_are_written_and_read_back(shifted, tmp_path):
    facts = {"cpu_model": "Test CPU 9000", "os": "Linux"}
    where = calibrations.folder(tmp_path, facts)
    write(where, record_of(shifted, facts))
    assert json.loads((where / calibrations.RECORD).read_text())["shares"] == shifted["shares"]
    page = (where / calibrations.PAGE).read_text()
    assert "short of it" in page and "run to run beyond what its rounds show" in page
    assert "results/calibration/x/runs/b" in page
    found = calibrations.latest(tmp_path, facts)
    assert found.page == where / calibrations.PAGE and found.made.startswith("2026-11-27")
    assert "short of 95% in: holds_plain" in found.line
    assert calibrations.latest(tmp_path, {"cpu_model": "Another CPU", "os": "Linux"}) is None


def test_a_calibration_applies_only_on_its_host_and_core_and_while_fresh(honest, tmp_path):
    facts = {"cpu_model": "Test CPU 9000", "os": "Linux"}
    made = datetime.now(timezone.utc) - timedelta(days=2)
    write(calibrations.folder(tmp_path, facts), record_of(honest, facts, cpu=1, made=made.isoformat()))
    record, _ = calibrations.applying(tmp_path, facts, 1)
    assert record and record["page"].endswith(calibrations.PAGE)
    assert "core 1, this run core 0" in calibrations.applying(tmp_path, facts, 0)[1]
    later = (made + timedelta(days=calibrations.MAX_AGE_DAYS + 5)).isoformat()
    assert "days old" in calibrations.applying(tmp_path, facts, 1, later)[1]
    assert "after this run" in calibrations.applying(tmp_path, facts, 1, (made - timedelta(days=1)).isoformat())[1]
    found = noise.of_machine(tmp_path, facts, 1)
    assert found.source.startswith("measured by `burtbench calibrate`")
    assert noise.of_machine(tmp_path, facts, 0).source.startswith("assumed: its calibration measured core 1")


def test_a_damaged_noise_record_never_narrows_an_interval(honest, tmp_path):
    facts = {"cpu_model": "Test CPU", "os": "Linux"}
    for bad in ({"acf": [0.1], "between_sd": float("nan")}, {"acf": "x", "between_sd": 0.1},
                {"acf": [0.1], "between_sd": -1}, {"acf": [2.0], "between_sd": 0.1}):
        assert noise.from_record(bad, "x") is None
    record = record_of(honest, facts, made=datetime.now(timezone.utc).isoformat())
    write(calibrations.folder(tmp_path, facts), {**record, "noise": {"acf": [0.1], "between_sd": "wide"}})
    found = noise.of_machine(tmp_path, facts, 1)
    assert found == noise.Noise(noise.ASSUMED.acf, noise.ASSUMED.between_sd, noise.ASSUMED.between_df, found.source)
    assert found.source.startswith("assumed: its calibration is damaged") and "noise.between_sd" in found.source


def test_doctor_shows_the_latest_calibration_or_how_to_make_one(honest, tmp_path):
    facts = host.describe()
    lines = doctor.format_findings([doctor.calibration_finding(facts, tmp_path)])
    assert "no calibration of this machine" in lines and "burtbench calibrate" in lines
    write(calibrations.folder(tmp_path, facts), record_of(honest, facts))
    (found,) = [f for f in doctor.diagnose(watch_s=0.01, results=tmp_path) if f.topic == "calibration"]
    assert found.message.startswith("2026-11-27") and "intervals held the machine's factor in" in found.message
    assert str(calibrations.folder(tmp_path, facts) / calibrations.PAGE) in found.message


def test_a_damaged_calibration_reads_as_none(tmp_path):
    facts = {"cpu_model": "Test CPU", "os": "Linux"}
    calibrations.folder(tmp_path, facts).mkdir(parents=True)
    (calibrations.folder(tmp_path, facts) / calibrations.RECORD).write_text("{not json")
    assert calibrations.latest(tmp_path, facts) is None
    assert calibrations.applying(tmp_path, facts, 1)[0] is None


@pytest.mark.parametrize("argv,message", [
    (["calibrate", "--minutes", "0"], "a number > 0"),
    (["calibrate", "--engine", "nosuch"], "nosuch"),
])
def test_bad_input_is_one_line_before_any_work(argv, message, tmp_path, capsys):
    assert main([*argv, "--out", str(tmp_path / "results")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert not (tmp_path / "results").exists()


def test_calibrate_end_to_end_on_a_fake_engine_and_a_run_after_it_carries_its_noise(fake_engines, tmp_path, capsys,
                                                                                   monkeypatch):
    # Two runs instead of MIN_RUNS: every step of the command, at the cost of a wide run-to-run component.
    monkeypatch.setattr(running_calibrate, "RUNS", 2)
    monkeypatch.setattr(running_calibrate, "SIMULATED_CASES", 10)  # the page's simulation: test_coverage.py's
    monkeypatch.setattr(running_calibrate, "WORKLOADS", "tiny")  # one point: every kind of case, a third the trials
    monkeypatch.setattr(running_calibrate, "POINT", ())
    assert main(["calibrate", "--minutes", "0.01", "--engine", "fake/ok", "--cpu", "0", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "run 2 of 2" in out and "intervals held the machine's factor in" in out
    where = calibrations.folder(tmp_path, host.describe())
    record = json.loads((where / calibrations.RECORD).read_text())
    assert len(record["runs"]) == 2 and record["machine"]["cpu"] == 0 and record["noise"]["between_df"] == 1
    for run in record["runs"]:
        assert is_run_dir(run)
        trials = read_trials(run)
        assert {t["engine"] for t in trials if t["engine"].endswith("#copy")} == {"fake/ok/python/cpu@#copy"}
        assert len({t["trial"] for t in trials}) >= calibration.MIN_ROUNDS
    assert record["shares"]["holds_noise"]["cases"] > 0 and record["shares"]["planted_noise"]["cases"] > 0
    assert set(record["noise"]) >= {"acf", "between_sd", "between_df", "source"}
    assert calibrations.latest(tmp_path, host.describe()).page == where / calibrations.PAGE
    # A run on the same host and core starts with the calibration's noise in its manifest.
    assert main(["run", "--engine", "fake/ok", "--workload", "tiny", "--profile", "smoke", "--cpu", "0", "--no-report",
                 "--out", str(tmp_path)]) == 0
    manifest = json.loads(next(p for p in tmp_path.glob("*/manifest.json")).read_text())
    assert manifest["noise"]["source"].startswith("measured by `burtbench calibrate`")
