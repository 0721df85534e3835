"""The harness's floor row (none/empty/python/cpu): the worker with no framework, in every run that
reports memory, its check undecided rather than failed, and lighter than any framework's row."""
from __future__ import annotations

from engines import all_engines
from harness.commands import versus
from harness.commands.cli import main
from harness.planning.selection import with_floor
from harness.report.epilogue import speed_lines
from harness.store import results
from harness.store.runs import load_run
from workloads import load

FLOOR = "none/empty/python/cpu"


def test_the_floor_joins_only_runs_whose_workloads_report_memory():
    registry = all_engines()
    micrograd = [registry["micrograd/eager/python/cpu"]]
    assert FLOOR in [e.id for e in with_floor(micrograd, [load("small")], registry)]
    assert with_floor(micrograd, [load("tiny")], registry) == micrograd
    native_only = [registry["burtorch/eager/cpp/cpu"]]
    assert with_floor(native_only, [load("small")], registry) == native_only


def test_a_run_that_reports_memory_measures_the_floor(tmp_path):
    assert main(["run", "--workload", "small", "--engine", "micrograd", "--profile", "smoke", "--trials", "1",
                 "--out", str(tmp_path), "--no-report"]) == 0
    (run_dir,) = tmp_path.iterdir()
    trials = {t["engine"]: t for t in results.read_trials(run_dir)}
    floor, micrograd = trials[FLOOR], trials["micrograd/eager/python/cpu"]
    assert floor["status"] == "ok" and floor["check"]["ok"] is None
    assert floor["check"]["status"] == "not comparable"
    assert 0 < floor["peak_resident_bytes"] <= micrograd["peak_resident_bytes"]
    # The run's summary names the fastest framework, never the harness's own floor.
    (line,) = speed_lines(load_run(run_dir))
    assert FLOOR not in line and "micrograd/eager/python/cpu" in line
    # Nor does `make perf-grid` hold an engine against it.
    assert versus.rows(list(trials.values()), "micrograd/eager/python/cpu") == []
