"""One point, one number (#49): a run whose trials' times are known (1, 2 and 32 µs: their median is 2, their
mean 11.7, their geometric mean 4) shows 4 µs on every surface, and each says which statistic it is. A trial
alone is its median block, never the mean of its blocks. Also the smaller things seen on those surfaces: a
floor row with no factor, parameters as the workload writes them, engines in the registry's order, and
compare's ratio beside an undecided answer."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from harness.analysis import summary
from harness.analysis.compare import compare_runs, format_comparison
from harness.analysis.points import POINT_STATISTIC, STATISTIC
from harness.planning.plan import PlannedTrial
from harness.report import epilogue, versions
from harness.analysis import tables
from harness.running import orchestrator
from harness.store.results import MANIFEST_FILE, Trial, append_trial
from harness.store.runs import load_run
from engines import all_engines
from engines.none import FLOOR
from workloads import load

OURS = "burtorch/eager/cpp/cpu"
TIMES = (1e-6, 2e-6, 32e-6)  # the trials' medians: geometric mean 4 µs
SHOWN = "4 µs"


def trial(engine: str, index: int, median: float, workload: str = "tiny", params: dict | None = None) -> Trial:
    """A trial whose blocks' median is `median` and whose blocks' mean is 5 times more (one slow block)."""
    framework, mode, language, device = engine.split("@")[0].split("/")
    return Trial(engine=engine, framework=framework, mode=mode, language=language, device=device, workload=workload,
                 params={"a": -41.0, "b": 2.0} if params is None else params, trial=index, iterations=100,
                 samples_s=[median] * 4, loop_time_s=median * 5 * 100, framework_version=engine.partition("@")[2] or None,
                 per_iter_s={"mean": median * 5, "std": 0.0, "min": median, "median": median, "n": 4},
                 peak_resident_bytes=2**20)


def write_run(folder: Path, trials: list[Trial]) -> Path:
    folder.mkdir(parents=True)
    (folder / MANIFEST_FILE).write_text(json.dumps({"run_id": folder.name, "profile": "quick", "status": "complete",
                                                    "machine": {"cpu_model": "Synthetic CPU"}}), encoding="utf-8")
    for t in trials:
        append_trial(folder, t)
    return folder


def printed(renderable, width: int = 200) -> str:
    buffer = io.StringIO()
    Console(file=buffer, width=width, color_system=None).print(renderable)
    return buffer.getvalue()


def test_a_trial_on_the_progress_line_is_its_median_block():
    spec = all_engines()[OURS]
    planned = PlannedTrial(spec, load("tiny"), {"a": -41.0, "b": 2.0}, 0, 100, 0, 60.0)
    buffer = io.StringIO()
    console = Console(file=buffer, width=200, color_system=None)  # not a terminal: every trial gets its line
    orchestrator._announce(console, orchestrator._progress(console), planned, trial(OURS, 0, 2e-6))
    assert f"2 µs/iteration ({STATISTIC})" in buffer.getvalue()  # not its blocks' mean, 10 µs


def test_every_surface_shows_the_geometric_mean_of_the_trials_and_says_so(tmp_path):
    a = write_run(tmp_path / "a", [trial(OURS, k, t) for k, t in enumerate(TIMES)])
    b = write_run(tmp_path / "b", [trial(OURS, k, 2 * t) for k, t in enumerate(TIMES)])
    run = load_run(a)

    table = printed(summary.summary_table(run.trials))
    assert SHOWN in table and POINT_STATISTIC in table and "11.7 µs" not in table and " 2 µs" not in table

    (tiny,) = tables.build_tables(run)
    (row,) = [r for r in tiny.rows if r["in_run"]]
    assert row["time_per_iter_s"] * 1e6 == pytest.approx(4.0)
    assert any(POINT_STATISTIC in note for note in tiny.notes)

    (closing,) = epilogue.speed_lines(run)  # the closing lines' fastest engine at the point
    assert SHOWN in closing

    compared = compare_runs(a, b)
    assert compared["rows"][0]["time_a"] * 1e6 == pytest.approx(4.0)
    shown = format_comparison(compared, "md")
    assert f"{SHOWN} → 8 µs" in shown and POINT_STATISTIC.split()[0] in shown


def test_versions_lines_and_table_show_the_same_number(tmp_path):
    engine = "autograd/eager/python/cpu"
    folder = write_run(tmp_path / "v", [trial(f"{engine}@autograd=={v}", k, t * scale)
                                        for v, scale in (("1.7.0", 1), ("1.9.1", 2)) for k, t in enumerate(TIMES)])
    (table,) = versions.build(load_run(folder))
    assert [round(r["time_per_iter_s"] * 1e6, 6) for r in table.rows] == [4.0, 8.0]
    (column,) = [c for c in table.shown.columns if c.startswith("Time/iter")]
    assert list(table.shown[column]) == [SHOWN, "8 µs"] and "geo. mean" in column
    assert POINT_STATISTIC in table.caption


def test_the_floor_has_no_factor_params_read_as_written_and_engines_keep_their_order(tmp_path):
    params = {"batch": 1.0, "hidden_dim": 4}
    trials = [trial(e, k, t, "mlp", params) for k, t in enumerate(TIMES)
              for e in ("micrograd/eager/python/cpu", FLOOR, OURS)[::(-1) ** k]]  # rounds in varying orders
    folder = write_run(tmp_path / "r", trials)
    text = printed(summary.summary_table(load_run(folder).trials))
    lines = [[cell.strip() for cell in line.replace("┃", "│").split("│")[1:-1]]
             for line in text.splitlines() if "│" in line or "┃" in line]
    head, rows = lines[0], [dict(zip(lines[0], cells)) for cells in lines[1:] if cells[1]]
    assert "batch=1" in text and "batch=1.0" not in text
    registry = list(all_engines())
    named = [next(e for e in registry if e.startswith(row["engine"])) for row in rows]
    assert named == sorted(named, key=registry.index)  # the registry's order, whatever the rounds'
    (floor_row,) = [row for row in rows if FLOOR.startswith(row["engine"])]
    assert floor_row["×BurTorch"] == floor_row["×micrograd"] == "—"
    assert {"×BurTorch", "×micrograd"} <= set(head)
    assert summary.shown_params("mlp", {"hidden_dim": 4, "batch": 64.0}) == " hidden_dim=4 batch=64"
    assert summary.param_text(-41.0) == "-41" and summary.param_text(0.5) == "0.5"


def test_compare_shows_the_ratio_beside_an_undecided_answer(tmp_path):
    a = write_run(tmp_path / "a", [trial(OURS, 0, 1e-6)])
    b = write_run(tmp_path / "b", [trial(OURS, 0, 1.5e-6)])
    text = format_comparison(compare_runs(a, b), "md")
    assert "undecided: B/A 1.5, 1 trial a side" in text
