"""Paired statistics on synthetic data (scipy.stats): a known ratio is found, an A/A pair is not, the
noise floor and the verdicts; a versions run whose shown times agree with their ratio."""
from __future__ import annotations

import math
import random
import warnings
from pathlib import Path

import pytest
from test_compare import write_run

from harness.analysis import paired
from harness.analysis.compare import compare_runs, format_comparison
from harness.report import versions
from harness.store.results import Trial
from harness.store.runs import load_run

ENGINE = "autograd/eager/python/cpu"
OLD, NEW = "autograd==1.7.0", "autograd==1.9.1"


def drifting_rounds(ratio: float, n: int, seed: int, drift: float = 0.3, noise: float = 0.01) -> list[tuple]:
    """(A, B) per round: the machine's speed drifts a lot between rounds (both sides alike), little within."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        speed = math.exp(rng.gauss(0, drift))
        out.append((1e-4 * speed * math.exp(rng.gauss(0, noise)), ratio * 1e-4 * speed * math.exp(rng.gauss(0, noise))))
    return out


def test_a_known_ratio_is_found_and_paired_beats_unpaired():
    rounds = drifting_rounds(1.10, 10, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no library warning escapes
        found = paired.paired(rounds)
        unpaired = paired.unpaired([a for a, _ in rounds], [b for _, b in rounds])
    assert found.ratio == pytest.approx(1.10, rel=0.01)
    assert found.ci[0] < 1.10 < found.ci[1] and found.ci[0] > 1
    assert found.p < 0.01 and found.significant()
    assert found.ratio == pytest.approx(found.b / found.a)  # the shown geometric means give the ratio
    # The drift between rounds cancels only in pairs: the unpaired interval is many times wider.
    assert (unpaired.ci[1] - unpaired.ci[0]) > 5 * (found.ci[1] - found.ci[0])
    assert not unpaired.significant()
    assert paired.decide(found, floor=0.02).text == f"slower by {paired.percent(found.ratio - 1)}"
    assert paired.decide(found, floor=0.02).decided_by == "wall time"


def test_an_aa_pair_is_no_change_and_gives_the_floor():
    rounds = drifting_rounds(1.0, 10, seed=2)
    aa = paired.paired(rounds)
    assert aa.ci[0] < 1 < aa.ci[1] and not aa.significant()
    floor = paired.floor_of(aa)
    assert 0 < floor < 0.03
    verdict = paired.decide(aa, floor)
    assert verdict.text == f"same within noise (±{paired.percent(floor)})"
    # A real change smaller than the floor reads as noise, never faster or slower.
    small = paired.paired(drifting_rounds(1.004, 40, seed=3, noise=0.001))
    assert small.significant() and paired.decide(small, floor=0.01).text.startswith("same within noise (±1.0%)")


def test_degenerate_samples_are_a_verdict_of_their_own():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        same = paired.paired([(1e-4, 1e-4)] * 6)
        one = paired.paired([(1e-4, 2e-4)])
        unpaired_same = paired.unpaired([1e-4] * 3, [1e-4] * 3)
    assert same.degenerate == "identical samples" and paired.decide(same, None).text == "identical samples"
    assert one.ci is None and paired.decide(one, None).text.startswith("undecided: 1 round")
    assert unpaired_same.degenerate == "identical samples"
    # Five rounds cannot reach p < 0.05 in a signed-rank test: nothing is decided however clear.
    assert not paired.paired(drifting_rounds(1.5, 5, seed=4)).significant()


def test_instructions_decide_where_time_is_within_noise():
    time = paired.paired(drifting_rounds(1.0, 8, seed=5))
    instr = paired.paired([(1_000_000, 1_030_000 + i) for i in range(8)])
    verdict = paired.decide(time, 0.02, instr)
    assert verdict.decided_by == "instructions"
    assert verdict.text.startswith("instructions differ by +3.0% (±0.5%) while wall time is within noise (±2.0%)")
    same = paired.decide(time, 0.02, paired.paired([(1_000_000, 1_000_100 + i) for i in range(8)]))
    assert same.decided_by == "wall time and instructions" and same.text.startswith("same within noise")


def skewed_trials(env: str, per_iter: float, seed: int, trials: int = 8, instr: float | None = None) -> list[Trial]:
    """Trials of one version whose first timing block is 20x slower (a recompile), drifting per round."""
    rng = random.Random(seed)
    out = []
    for index in range(trials):
        speed = math.exp(random.Random(index).gauss(0, 0.2))  # the same drift for every version in a round
        level = per_iter * speed * math.exp(rng.gauss(0, 0.005))
        samples = [level * 20] + [level] * 19
        mean = sum(samples) / len(samples)
        out.append(Trial(engine=f"{ENGINE}@{env}", framework="autograd", mode="eager", language="python", device="cpu",
                         workload="tiny", params={}, trial=index, iterations=200, samples_s=samples,
                         loop_time_s=mean * 200, framework_version=env.split("==")[1].removesuffix("#2"),
                         per_iter_s={"mean": mean, "std": 0.0, "min": level, "median": level, "n": 20},
                         peak_resident_bytes=50 * 2**20, instructions_per_iter=instr))
    return out


@pytest.fixture
def version_run(tmp_path) -> Path:
    return write_run(tmp_path / "run", [
        *skewed_trials(OLD, 4.0e-4, seed=1, instr=1_743_293.0),
        *skewed_trials(NEW, 3.6e-4, seed=2, instr=1_953_988.0),
        *skewed_trials(NEW + "#2", 3.6e-4, seed=3, instr=1_953_990.0)])


def test_the_versions_table_shows_what_its_ratio_is_made_of(version_run):
    (table,) = versions.build(load_run(version_run))
    old, new = table.rows
    assert old["verdict"] == "reference (oldest)" and new["version"] == "1.9.1"
    # Skewed blocks: the shown times are per-trial means' geometric means, and their ratio is the ratio.
    assert new["time_ratio"] == pytest.approx(new["time_per_iter_s"] / old["time_per_iter_s"], rel=1e-9)
    assert new["time_ratio"] == pytest.approx(0.9, rel=0.01)
    assert new["noise_floor"] is not None and new["noise_floor"] < 0.02  # the A/A copy of 1.9.1
    assert new["verdict"] == f"faster by {paired.percent(1 - new['time_ratio'])}" and new["decided_by"] == "wall time"
    assert new["instr_ratio"] == pytest.approx(1_953_988 / 1_743_293)
    shown = table.shown.iloc[1]
    assert shown["Noise floor (A/A)"].startswith("±") and shown["Instr./iter (a proxy)"] == "1.954M"
    assert any(note.startswith(f"{ENGINE} : A/A {NEW}") for note in table.notes)
    assert all("#2" not in row["env"] for row in table.rows)  # the copy measures the floor, it is no version


def test_versions_figure_bars_start_at_zero(version_run, tmp_path):
    (table,) = versions.build(load_run(version_run))
    drawn = versions.figure(table, tmp_path / "figures")
    assert drawn.png.stat().st_size > 0


def test_compare_of_two_environments_of_one_run_is_paired(version_run, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    result = compare_runs(version_run, version_run, OLD, NEW)
    (row,) = result["rows"]
    assert result["paired"] and row["time_p"] is not None
    assert row["time_ratio"] == pytest.approx(row["time_b"] / row["time_a"], rel=1e-9)
    assert row["time_verdict"] == "faster" and not row["time_starred"]
    text = format_comparison(result, "table")
    assert all(len(line) <= 120 for line in text.splitlines())
    assert "| 1.743M → 1.954M | 1.1209 more |" in format_comparison(result, "md")


def test_an_aa_run_alone_reports_its_floor_and_no_difference(tmp_path):
    run = write_run(tmp_path / "aa", [*skewed_trials(NEW, 3.6e-4, seed=5), *skewed_trials(NEW + "#2", 3.6e-4, seed=6)])
    (table,) = versions.build(load_run(run))
    original, copy = table.rows
    assert copy["version"] == "1.9.1 (A/A copy)" and copy["env"] == NEW + "#2"
    assert original["noise_floor"] is not None and original["noise_floor"] < 0.02
    assert copy["verdict"].startswith("same within noise") and copy["time_ci_low"] < 1 < copy["time_ci_high"]


def test_an_aa_pair_that_differs_in_one_run_widens_the_floor_and_never_reads_faster(tmp_path):
    """Measured here: one of ten A/A pairs of autograd 1.9.1 read 0.952 [0.910, 0.980] (8 rounds, p < 0.05)."""
    run = write_run(tmp_path / "aa", [*skewed_trials(NEW, 3.6e-4, seed=5),
                                      *skewed_trials(NEW + "#2", 3.6e-4 * 0.95, seed=6)])
    (table,) = versions.build(load_run(run))
    _, copy = table.rows
    assert copy["time_ci_high"] < 1  # its interval excludes 1
    assert copy["noise_floor"] >= 1 - copy["time_ci_low"] > 0.04
    assert copy["verdict"] == f"same within noise (±{copy['noise_floor'] * 100:.1f}%)" and copy["decided_by"] == "wall time"
