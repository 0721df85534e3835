"""The one answer to "did B change?" (harness/analysis/change.py's change_answer) on synthetic paired
data: a known ratio is found, an A/A pair gives the floor, a floor wider than the change asked about
leaves it undecided, one round is undecided, an interval reaching 0 or ∞ decides nothing, an answer
without a floor says so whatever its kind, instructions decide where time cannot; and every surface
(the versions table, compare, the run's closing lines) gives the same answer and numbers."""
from __future__ import annotations

import math
import random
import warnings
from pathlib import Path

import pytest
from test_compare import write_run

from harness.analysis import change, effect
from harness.analysis.compare import compare_runs, format_comparison
from harness.report import versions
from harness.store.results import Trial
from harness.store.runs import load_run

ENGINE = "autograd/eager/python/cpu"
OLD, NEW = "autograd==1.7.0", "autograd==1.9.1"
THRESHOLD = 0.05


def drifting_rounds(ratio: float, n: int, seed: int, drift: float = 0.3, noise: float = 0.01) -> tuple[dict, dict]:
    """({round: A}, {round: B}): the machine's speed drifts a lot between rounds (both sides alike), little within."""
    rng = random.Random(seed)
    a, b = {}, {}
    for k in range(n):
        speed = math.exp(rng.gauss(0, drift))
        a[k] = 1e-4 * speed * math.exp(rng.gauss(0, noise))
        b[k] = ratio * 1e-4 * speed * math.exp(rng.gauss(0, noise))
    return a, b


def test_a_known_ratio_is_found_and_paired_beats_unpaired():
    a, b = drifting_rounds(1.10, 10, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no library warning escapes
        found = effect.effect(a, b)
        unpaired = effect.effect(a, b, paired=False)
    assert found.paired and found.estimate == pytest.approx(1.10, rel=0.01)
    assert 1 < found.low < 1.10 < found.high
    # The drift between rounds cancels only in pairs: the unpaired interval is many times wider.
    assert (unpaired.high - unpaired.low) > 5 * (found.high - found.low)
    answer = change.change_answer(found, change.Floor(1.02, "x"), THRESHOLD)
    assert answer.kind == "slower" and answer.decided_by == "time"
    # B/A with its interval and the floor it was held to, in every answer.
    assert answer.text == (f"slower by {(found.estimate - 1) * 100:.1f}%: B/A {found.estimate:.3f} "
                           f"[{found.low:.3f}, {found.high:.3f}], beyond the floor ×/÷1.02 (A/A of x)")
    assert change.change_answer(unpaired, None, THRESHOLD).kind == "undecided"


def test_an_aa_pair_gives_a_floor_as_a_factor_and_reads_the_same():
    aa = effect.effect(*drifting_rounds(1.0, 10, seed=2))
    floor = change.floor_of(aa, NEW)
    assert 1 < floor.factor < 1.03 and floor.text().startswith("×/÷1.0") and floor.text().endswith(f"(A/A of {NEW})")
    answer = change.change_answer(aa, floor, THRESHOLD)
    assert answer.kind == "same" and answer.text.startswith(f"same within the floor {floor.text()}")
    # A real change inside the floor is never faster or slower.
    small = effect.effect(*drifting_rounds(1.004, 40, seed=3, noise=0.001))
    assert small.low > 1 and change.change_answer(small, change.Floor(1.01, NEW), THRESHOLD).kind == "same"


def test_a_floor_wider_than_the_change_asked_about_is_undecided_never_the_same():
    """Measured: A/A floors of ±44% at 8 rounds of autograd on tiny; ×1.32 [1.11, 1.79] read "same within noise"."""
    moved = effect.effect(*drifting_rounds(1.32, 8, seed=4, noise=0.2))
    answer = change.change_answer(moved, change.Floor(1.8, NEW), THRESHOLD)
    assert answer.kind == "undecided" and "is wider than the 5.0% change asked about" in answer.text
    # Without --aa the same interval is judged against ×1 alone.
    assert change.change_answer(moved, None, THRESHOLD).kind in ("slower", "undecided")


def test_one_round_and_a_boundary_are_undecided_with_what_decides_them():
    one = change.change_answer(effect.effect({0: 1e-4}, {0: 2e-4}), None, THRESHOLD)
    assert one.text.startswith("undecided: B/A ") and one.text.endswith(", 1 trial a side (3 give an interval)")
    assert one.more == 2 and one.trials == 3
    near = change.change_answer(effect.effect(*drifting_rounds(1.04, 4, seed=6, noise=0.03)), None, THRESHOLD)
    assert near.kind == "undecided" and "spans" in near.text


@pytest.mark.parametrize("ratio,rounds,kind", [(0.8, 8, "faster"), (1.2, 8, "slower"), (1.0, 8, "same"),
                                                (1.04, 4, "undecided"), (1.2, 1, "undecided")])
def test_every_kind_of_answer_without_a_floor_says_so(ratio, rounds, kind):
    time = effect.effect(*drifting_rounds(ratio, rounds, seed=6, noise=0.01 if kind == "same" else 0.03))
    bare = change.change_answer(time, None, THRESHOLD, without=change.NO_AA)
    assert bare.kind == kind and bare.text.endswith(" (no A/A floor: --no-aa)")
    assert change.time_answer(time, None, THRESHOLD, change.TWO_RUNS).text.endswith("(no A/A floor: two separate runs)")
    # Where instructions decide, the time beside them says it too; with a floor, nothing is said.
    counted = effect.effect({k: 1e6 for k in range(8)}, {k: 1.03e6 + k for k in range(8)})
    assert change.change_answer(time, None, THRESHOLD, counted, change.NO_AA).text.endswith("(no A/A floor: --no-aa)")
    assert "no A/A floor" not in change.change_answer(time, change.Floor(1.02, NEW), THRESHOLD, without=change.NO_AA).text


@pytest.mark.parametrize("low,high,why", [(76_996.0, math.inf, "reaches ∞"), (0.0, 1.5, "reaches 0"),
                                          (math.nan, math.nan, "is not a number")])
def test_an_interval_that_reaches_zero_or_infinity_decides_nothing(low, high, why):
    """Measured: one trial recorded at 0 s per iteration gave "×84,100 [76,996, ∞]" as if decided."""
    reaching = effect.Effect(84_100.0, low, high, 4, 4, True, 0.5)
    answer = change.change_answer(reaching, change.Floor(1.02, NEW), THRESHOLD)
    assert answer.kind == "undecided" and answer.decided_by == "" and f"{why}: it bounds no change" in answer.text
    # Nor do instructions decide on such an interval, nor does an A/A pair of it give a usable floor.
    finite_time = effect.effect(*drifting_rounds(1.0, 8, seed=5))
    assert change.change_answer(finite_time, None, THRESHOLD, reaching).decided_by != "instructions"
    assert change.change_answer(finite_time, change.floor_of(reaching, NEW), THRESHOLD).kind == "undecided"


def test_instructions_decide_where_time_cannot():
    time = effect.effect(*drifting_rounds(1.0, 8, seed=5))
    more = effect.effect({k: 1_000_000 for k in range(8)}, {k: 1_030_000 + k for k in range(8)})
    answer = change.change_answer(time, change.Floor(1.02, NEW), THRESHOLD, more)
    assert answer.kind == "slower" and answer.decided_by == "instructions"
    assert answer.text.startswith("3.0% more instructions (±0.5%); time same within the floor")
    same = change.change_answer(time, change.Floor(1.02, NEW), THRESHOLD,
                                effect.effect({k: 1_000_000 for k in range(8)}, {k: 1_000_100 + k for k in range(8)}))
    assert same.decided_by == "time and instructions" and same.text.startswith("same within the floor")


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
                         loop_time_s=mean * 200, framework_version=env.split("==")[1].removesuffix("#copy"),
                         per_iter_s={"mean": mean, "std": 0.0, "min": level, "median": level, "n": 20},
                         peak_resident_bytes=50 * 2**20, instructions_per_iter=instr))
    return out


@pytest.fixture
def version_run(tmp_path) -> Path:
    return write_run(tmp_path / "run", [
        *skewed_trials(OLD, 4.0e-4, seed=1, instr=1_743_293.0),
        *skewed_trials(NEW, 3.6e-4, seed=2, instr=1_953_988.0),
        *skewed_trials(NEW + "#copy", 3.6e-4, seed=3, instr=1_953_990.0)])


def test_the_versions_table_shows_what_its_ratio_is_made_of(version_run):
    (table,) = versions.build(load_run(version_run))
    old, new = table.rows
    assert old["verdict"] == "reference (oldest)" and new["version"] == "1.9.1"
    # Skewed blocks: the shown times are the trials' medians' geometric means, and their ratio is the ratio.
    assert new["time_ratio"] == pytest.approx(new["time_per_iter_s"] / old["time_per_iter_s"], rel=1e-9)
    assert new["time_ratio"] == pytest.approx(0.9, rel=0.01)
    assert 1 < new["noise_floor"] < 1.02 and new["floor_pair"] == NEW  # the A/A copy of 1.9.1
    assert new["verdict"] == (f"faster by {(1 - new['time_ratio']) * 100:.1f}%: B/A {new['time_ratio']:.3f} "
                              f"[{new['time_ci_low']:.3f}, {new['time_ci_high']:.3f}], beyond the floor "
                              f"×/÷{new['noise_floor']:.3g} (A/A of {NEW})")
    assert new["decided_by"] == "time"
    assert new["instr_ratio"] == pytest.approx(1_953_988 / 1_743_293)
    shown = table.shown.iloc[1]
    assert shown["Noise floor (A/A)"] == f"×/÷{new['noise_floor']:.3g} (A/A of {NEW})"
    assert shown["Instr./iter (a proxy)"] == "1.954M"
    assert any(note.startswith(f"{ENGINE}: A/A {NEW}") for note in table.notes)
    assert all("#copy" not in row["env"] for row in table.rows)  # the copy measures the floor, it is no version


def test_versions_figure_bars_start_at_zero(version_run, tmp_path):
    (table,) = versions.build(load_run(version_run))
    drawn = versions.figure(table, tmp_path / "figures")
    assert drawn.png.stat().st_size > 0


def test_every_surface_gives_the_same_answer(version_run, tmp_path, monkeypatch):
    """The versions table, compare of the two environments and the run's closing lines: one answer, one set of numbers."""
    from harness.report.epilogue import summary_lines
    from harness.report.render import render_report

    monkeypatch.setenv("COLUMNS", "120")
    (table,) = versions.build(load_run(version_run))
    answer = table.rows[1]["verdict"]
    result = compare_runs(version_run, version_run, OLD, NEW)
    (row,) = result["rows"]
    assert result["paired"] and row["answer_text"] == answer
    assert row["floor"] == table.rows[1]["noise_floor"]
    assert row["time_ratio"] == pytest.approx(row["time_b"] / row["time_a"], rel=1e-9)
    closing = " ".join("\n".join(summary_lines(render_report(version_run, tmp_path / "reports"))).split())
    assert answer in closing  # wrapped at spaces on the terminal
    text = format_comparison(result, "table")
    assert all(len(line) <= 120 for line in text.splitlines())
    assert answer.split(" [")[0] in text
    assert "| 1.1209 |" in format_comparison(result, "md")


def test_without_copies_every_surface_says_no_a_a_floor(tmp_path, monkeypatch):
    """A versions run with --no-aa: the table, compare of its environments and the closing lines say it;
    compare of two separate runs says it of every row, the geometric mean's too."""
    from harness.report.epilogue import summary_lines
    from harness.report.render import render_report

    monkeypatch.setenv("COLUMNS", "120")
    run = write_run(tmp_path / "run", [*skewed_trials(OLD, 4.0e-4, seed=1), *skewed_trials(NEW, 3.6e-4, seed=2)])
    (table,) = versions.build(load_run(run))
    answer = table.rows[1]["verdict"]
    assert answer.startswith("faster by") and answer.endswith(" (no A/A floor: --no-aa)")
    assert table.shown.iloc[1]["Noise floor (A/A)"] == "not measured"
    assert compare_runs(run, run, OLD, NEW)["rows"][0]["answer_text"] == answer
    assert answer in " ".join("\n".join(summary_lines(render_report(run, tmp_path / "reports"))).split())
    other = write_run(tmp_path / "other", [*skewed_trials(OLD, 4.0e-4, seed=3), *skewed_trials(NEW, 3.6e-4, seed=4)])
    apart = compare_runs(run, other)
    assert not apart["paired"] and len(apart["rows"]) == 2
    said = [r["answer_text"] for r in apart["rows"]] + [apart["geomean"]["tiny"]["answer_text"]]
    assert all(text.endswith("(no A/A floor: two separate runs)") for text in said), said


def test_an_aa_run_alone_reports_its_floor_and_no_difference(tmp_path):
    run = write_run(tmp_path / "aa", [*skewed_trials(NEW, 3.6e-4, seed=5), *skewed_trials(NEW + "#copy", 3.6e-4, seed=6)])
    (table,) = versions.build(load_run(run))
    original, copy = table.rows
    assert copy["version"] == "1.9.1 (A/A copy)" and copy["env"] == NEW + "#copy"
    assert 1 < original["noise_floor"] < 1.02
    assert copy["verdict"].startswith("same within the floor ×/÷") and copy["time_ci_low"] < 1 < copy["time_ci_high"]


def test_an_aa_pair_that_differs_in_one_run_widens_the_floor_and_never_reads_faster(tmp_path):
    """Measured here: one of ten A/A pairs of autograd 1.9.1 read 0.952 [0.910, 0.980] (8 rounds, p < 0.05)."""
    run = write_run(tmp_path / "aa", [*skewed_trials(NEW, 3.6e-4, seed=5),
                                      *skewed_trials(NEW + "#copy", 3.6e-4 * 0.95, seed=6)])
    (table,) = versions.build(load_run(run))
    _, copy = table.rows
    assert copy["time_ci_high"] < 1  # its interval excludes 1
    assert copy["noise_floor"] >= 1 / copy["time_ci_low"] > 1.04
    assert copy["answer"] in ("same", "undecided") and "faster" not in copy["verdict"]


def test_aa_without_env_shows_the_copy_and_its_floor(tmp_path):
    plain = [Trial(**{**t.__dict__, "engine": ENGINE}) for t in skewed_trials(NEW, 3.6e-4, seed=7)]
    copy = [Trial(**{**t.__dict__, "engine": f"{ENGINE}@#copy"}) for t in skewed_trials(NEW, 3.6e-4, seed=8)]
    (table,) = versions.build(load_run(write_run(tmp_path / "aa", plain + copy)))
    original, twin = table.rows
    assert twin["env"] == "#copy" and twin["version"].endswith("(A/A copy)")
    assert original["noise_floor"] is not None and original["floor_pair"] == "no environment"
    assert twin["answer"] in ("same", "undecided") and "faster" not in twin["verdict"]
