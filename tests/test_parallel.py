"""--cpus: two workers at once keep every guarantee of one: each trial pinned, every fault recorded,
a signal or a killed runner loses no finished trial, a resume duplicates none."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engines.none import FLOOR
from harness.commands.cli import main
from harness.running.session import make_plan
from harness.store import results
from harness.store.run_plan import read_plan

ROOT = Path(__file__).resolve().parent.parent
CORES = sorted(os.sched_getaffinity(0))[:2]
pytestmark = pytest.mark.skipif(len(CORES) < 2, reason="needs two cores")
TWO = ",".join(map(str, CORES))


def planned_once(run_dir: Path) -> list[dict]:
    """The fault engines' trials of the run, all its trials checked to be its plan's, each exactly once."""
    trials = results.read_trials(run_dir)
    found = [results.trial_key(t["engine"], t["workload"], t["params"], t["trial"]) for t in trials]
    assert len(found) == len(set(found)), "a trial was written twice"
    planned = {pt.key() for pt in make_plan(read_plan(results.read_manifest(run_dir)))}
    assert set(found) <= planned
    return [t for t in trials if t["engine"] != FLOOR]  # the harness's floor row runs beside the fault engines


def test_two_workers_record_every_fault_once_each_pinned(fake_engines, tmp_path):
    assert main(["run", "--engine", "fake/ok,fake/wrong,fake/crash,fake/hang,fake/garbage", "--workload", "tiny,small",
                 "--profile", "smoke", "--trials", "2", "--timeout", "4", "--cpus", TWO, "--no-report",
                 "--out", str(tmp_path)]) == 0
    (run_dir,) = tmp_path.iterdir()
    trials = planned_once(run_dir)
    assert len(trials) == 5 * 2 * 2
    status = {t["engine"].split("/")[1]: t["status"] for t in trials}
    assert status == {"ok": "ok", "wrong": "ok", "crash": "failed", "hang": "timeout", "garbage": "failed"}
    assert {t["cpu"] for t in trials} == set(CORES)
    manifest = results.read_manifest(run_dir)
    assert manifest["cpus"] == CORES and manifest["status"] == "complete"
    assert os.sched_getaffinity(0) >= set(CORES), "the runner's own cores were not given back"


def start(tmp_path: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "harness.commands.cli", "run", "--workload", "tiny,small",
                             "--profile", "smoke", "--engine", "fake/ok,fake/hang", "--trials", "2", "--timeout", "8",
                             "--cpus", TWO, "--no-report", "--out", str(tmp_path)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def first_trial(tmp_path: Path) -> Path:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = list(tmp_path.glob("*/trials.jsonl"))
        if found and found[0].read_text().strip():
            return found[0].parent
        time.sleep(0.1)
    raise AssertionError("the first trial never reached disk")


def descendants(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            children = task.read_text().split()
        except (FileNotFoundError, ProcessLookupError):  # a thread or process that ended meanwhile has none
            continue
        for child in children:
            found += [int(child), *descendants(int(child))]
    return found


def test_sigterm_with_two_workers_keeps_finished_trials_and_resume_completes(fake_engines, tmp_path):
    proc = start(tmp_path)
    run_dir = first_trial(tmp_path)
    time.sleep(0.5)  # a hang trial is in flight on the other core
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 130
    assert results.read_manifest(run_dir)["status"] == "interrupted"
    before = planned_once(run_dir)
    assert before and all(t["engine"].startswith("fake/ok") for t in before)
    assert not (run_dir / ".lock").exists()
    assert main(["run", "--resume", str(run_dir), "--no-report"]) == 0
    after = planned_once(run_dir)
    assert len(after) == 2 * 2 * 2 and after[:len(before)] == before
    assert results.read_manifest(run_dir)["cpus"] == CORES


def test_a_killed_runner_with_two_workers_loses_nothing_on_resume(fake_engines, tmp_path):
    proc = start(tmp_path)
    run_dir = first_trial(tmp_path)
    children = descendants(proc.pid)
    proc.kill()
    proc.wait(timeout=60)
    for pid in children:  # the runner's children live in sessions of their own: gone with it only here
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    before = planned_once(run_dir)
    assert main(["run", "--resume", str(run_dir), "--no-report"]) == 0
    after = planned_once(run_dir)
    assert len(after) == 2 * 2 * 2 and after[:len(before)] == before


@pytest.mark.parametrize("argv, message", [
    (["--cpus", "x"], "--cpus x: expected a core list"),
    (["--cpus", "0,0"], "listed twice"),
    (["--cpus", "0-999"], "may only run on cores"),
    (["--cpus", "0", "--cpu", "0"], "--cpu and --cpus"),
])
def test_a_bad_core_list_is_one_usage_line(argv, message, capsys):
    assert main(["run", "--workload", "tiny", "--dry-run", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("burtbench: error:") and message in err and err.count("\n") == 1


def test_interference_times_a_trial_alone_and_beside_busy_cores(fake_engines):
    from engines import all_engines
    from harness.running.interference import interference
    from workloads import load

    registry = all_engines()
    rows = interference([registry["fake/ok/python/cpu"], registry["fake/crash/python/cpu"]], [load("tiny")],
                        CORES, profile="smoke", rounds=1)
    ok, crash = rows
    assert ok.alone_s > 0 and ok.busy_s > 0 and ok.slowdown == ok.busy_s / ok.alone_s and ok.reason is None
    assert crash.slowdown is None and "failed" in crash.reason
    assert os.sched_getaffinity(0) >= set(CORES)


def test_doctor_interference_needs_two_cores(capsys):
    assert main(["doctor", "--interference", "--cpus", str(CORES[0])]) == 2
    assert "at least two cores" in capsys.readouterr().err


def test_a_parallel_run_resumes_on_one_core_when_told(fake_engines, tmp_path):
    assert main(["run", "--engine", "fake/ok", "--workload", "tiny,small", "--profile", "smoke", "--trials", "2",
                 "--cpus", TWO, "--no-report", "--out", str(tmp_path)]) == 0
    (run_dir,) = tmp_path.iterdir()
    path = run_dir / results.TRIALS_FILE
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:2]))
    assert main(["run", "--resume", str(run_dir), "--cpu", str(CORES[1]), "--no-report"]) == 0
    assert [t["cpu"] for t in planned_once(run_dir)[2:]] == [CORES[1], CORES[1]]
    assert results.read_manifest(run_dir)["cpus"] == [CORES[1]]
