"""burtbench run --slurm against a real one-node SLURM cluster (tests/slurm_cluster.py): a smoke plan
submitted as a job array, followed, merged and reported; a task killed mid-trial, resubmitted and
resumed; shards that fail twice; bad input refused before anything is submitted."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from rich.console import Console
from slurm_cluster import local_cluster, unavailable
from tests_support import FAKES, ROOT

from harness.cluster import follow, jobs, slurm
from harness.cluster import record as rec
from harness.commands.cli import main
from harness.commands.options import shard_argv
from harness.measure import affinity
from harness.running.spawn import ChildSpawner, Interrupted, RunOptions
from harness.running.session import planned_keys
from harness.store import results
from harness.store.run_plan import read_plan

PLAN = ["--engine", "fake/ok,fake/wrong", "--workload", "tiny,small", "--profile", "smoke", "--trials", "2"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    with pytest.MonkeyPatch.context() as mp, local_cluster(tmp_path_factory.mktemp("slurm")) as started:
        mp.setenv("SLURM_CONF", str(started.conf))
        # The jobs inherit this environment (sbatch --export=ALL), fault engines included.
        mp.setenv("BURTBENCH_ENGINE_MODULES", "fake_engines")
        mp.setenv("PYTHONPATH", os.pathsep.join([str(FAKES), str(ROOT)]))
        mp.syspath_prepend(str(FAKES))
        yield started


def the_run(out: Path) -> Path:
    (run,) = out.iterdir()
    return run


def trial_keys(run_dir: Path) -> list[tuple]:
    return [results.trial_key(t["engine"], t["workload"], t["params"], t["trial"])
            for t in results.read_trials(run_dir)]


def exactly_the_plan(run: Path) -> int:
    merged = run / "merged" / run.name
    manifest = results.read_manifest(merged)
    keys = trial_keys(merged)
    assert manifest["status"] == "complete"
    assert len(set(keys)) == len(keys), "a trial ran twice"
    assert sorted(keys) == sorted(planned_keys(read_plan(manifest))), "a planned trial is missing"
    return len(keys)


def test_a_smoke_plan_runs_as_a_job_array_then_merges_and_reports(cluster, tmp_path, capsys):
    code = main(["run", *PLAN, "--slurm", "2", "--wait", "--out", str(tmp_path / "results"),
                 "--report-dir", str(tmp_path / "reports")])
    printed = capsys.readouterr().out
    print(printed)
    assert code == 0
    run = the_run(tmp_path / "results")
    record = rec.read(run)
    assert [job["kind"] for job in record["jobs"]] == ["shards", "finish"], "nothing failed, nothing resubmitted"
    assert f"as job array {record['jobs'][0]['id']}" in printed and "shards: 2 done" in printed
    assert exactly_the_plan(run) == sum(s["trials"] for s in record["shards"])
    assert (tmp_path / "reports" / run.name / "index.html").exists()
    for k in (1, 2):  # each task pinned to the core SLURM gave it
        assert len(results.read_manifest(rec.shard_run(run, k))["cpus"]) == 1


def wait_for(found, what: str, within_s: float = 60.0):
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if found():
            return found()
        time.sleep(0.1)
    raise AssertionError(f"no {what} within {within_s:g} s")


def test_a_task_killed_mid_trial_is_resubmitted_and_resumed(cluster, tmp_path, capsys, monkeypatch):
    hold = tmp_path / "hold"
    hold.touch()
    monkeypatch.setenv("BURTBENCH_FAKE_HOLD", str(hold))
    monkeypatch.setenv("BURTBENCH_ENGINE_MODULES", "fake_engines,held_engine")
    plan = ["--engine", "fake/ok,fake/held", *PLAN[2:]]
    assert main(["run", *plan, "--slurm", "2", "--out", str(tmp_path / "results")]) == 0
    run = the_run(tmp_path / "results")
    held = wait_for(lambda: sorted(tmp_path.glob("hold.*")), "trial held mid-run")[0]
    task = f"{rec.read(run)['jobs'][0]['id']}_{held.suffix[1:]}"
    slurm.cancel([task])
    wait_for(lambda: slurm.states([task]).get(task) == "CANCELLED", "cancelled task")
    hold.unlink()  # the other task's trials, and the resumed task's, run through
    assert follow.follow(run, Console(width=200)) == 0
    record, index = rec.read(run), int(held.suffix[1:])
    print(capsys.readouterr().out, f"cancelled task {task} mid-trial; jobs: {record['jobs']}", sep="\n")
    assert [len(rec.attempts(record, k)) for k in (1, 2)] == [1 + (k == index) for k in (1, 2)]
    first = rec.log_of(run, rec.attempts(record, index)[0], index).read_text()
    assert "CANCELLED" in first and "interrupted" in first
    exactly_the_plan(run)
    merged = results.read_trials(run / "merged" / run.name)
    assert {t["status"] for t in merged} == {"ok"}, "the trial cut by the cancel was recorded, not run again"


def test_a_shard_failing_twice_is_reported_with_its_log_and_not_merged(cluster, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the nodes' tasks cannot import the fault engines
    assert main(["run", *PLAN, "--slurm", "2", "--wait", "--out", str(tmp_path / "results")]) == 1
    printed = capsys.readouterr().out
    record = rec.read(the_run(tmp_path / "results"))
    assert [job["kind"] for job in record["jobs"]] == ["shards", "finish", "shards", "finish"]
    assert record["outcome"]["status"] == "not merged" and set(record["outcome"]["failed"]) == {"1", "2"}
    assert "shard 1 not done after 2 attempts; its last log ends:" in printed and "fake" in record["outcome"]["failed"]["1"]


def jobs_named() -> list[str]:
    return subprocess.run(["squeue", "-h", "-t", "all", "-o", "%j"], capture_output=True, text=True,
                          check=True).stdout.split()


@pytest.mark.parametrize("case", ["no sbatch", "no such partition", "folder the nodes cannot see"])
def test_bad_input_is_one_line_and_exit_2_before_any_array(cluster, tmp_path, capsys, monkeypatch, case):
    out, before = tmp_path / "results", jobs_named()
    argv = ["run", *PLAN, "--slurm", "--out", str(out)]
    if case == "no such partition":
        argv += ["--partition", "no-such-partition"]
    elif case == "folder the nodes cannot see":
        out = cluster.hidden / "results"
        argv[-1] = str(out)
    with monkeypatch.context() as patch:
        if case == "no sbatch":
            patch.setenv("PATH", str(tmp_path))
        assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("burtbench: error:"), err
    assert {"no sbatch": "no sbatch on PATH", "no such partition": "no such partition",
            "folder the nodes cannot see": "nodes cannot see"}[case] in err[0]
    assert set(Counter(jobs_named()) - Counter(before)) <= {"burtbench-check"}, "a run's job was submitted"
    assert not out.exists() or not any(out.iterdir())


def test_each_task_is_limited_by_its_own_shards_estimate_and_a_resubmission_gets_twice(cluster, tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "shard.sh").write_text("#!/bin/bash\ntrue\n")
    record = {"shards": [{"index": 1, "estimate_s": 60.0}, {"index": 2, "estimate_s": 3600.0}],
              "jobs": [{"id": "0", "kind": "shards", "shards": [2]}],  # shard 2 ran once already
              "chdir": str(tmp_path), "sbatch": ["--hold"]}  # held: they stay pending, never run
    job = jobs.submit_shards(tmp_path, record, [1, 2])
    try:
        shown = {k: slurm.call(["scontrol", "-o", "show", "job", f"{job['id']}_{k}"]) for k in (1, 2)}
    finally:
        slurm.cancel([job["id"]])
    assert job["time_limit_min"] == {1: 12, 2: 2 * 130}
    assert "TimeLimit=00:12:00" in shown[1] and "TimeLimit=04:20:00" in shown[2]


SELF_TERMINATING = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"]


def test_a_child_stopped_with_its_job_is_no_failed_trial_but_one_alone_is():
    """scancel signals every process of the job: the child may die before the runner's handler runs."""
    spawner = ChildSpawner(RunOptions(cpu=affinity.default_cpu()))
    threading.Timer(0.3, spawner.interrupt).start()  # the runner's own SIGTERM, a moment later
    with pytest.raises(Interrupted):
        spawner.run(SELF_TERMINATING, timeout_s=30)
    alone = ChildSpawner(RunOptions(cpu=affinity.default_cpu())).run(SELF_TERMINATING, timeout_s=30)
    assert alone.returncode == -signal.SIGTERM


def test_each_task_gets_the_plans_options_and_none_of_the_submissions():
    argv = ["--debug", "run", "--engine", "fake/ok", "--slurm", "2", "--out", "x", "--wait", "--partition=p",
            "--sbatch-arg=--qos=long", "--trials", "3", "--report-dir", "r", "--no-report", "--param", "batch=1"]
    assert shard_argv(argv) == ["--engine", "fake/ok", "--trials", "3", "--param", "batch=1"]
