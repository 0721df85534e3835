"""--dry-run prints the plan and its ETA from a previous run's per-iteration times; nothing runs."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from engines.none import FLOOR
from harness.commands.cli import main
from harness.machine.host import describe
from harness.planning import estimate
from harness.planning.preview import duration
from harness.running.orchestrator import Eta
from harness.running.probe import probe_floor
from harness.running.session import make_plan
from harness.store import results
from harness.store.run_plan import RunPlan
from workloads import load

STARTUP_S, PER_ITER_S = 2.0, 1e-3


def synthetic_run(folder: Path, cpu_model: str) -> Path:
    """A previous run of fake/ok on tiny, every point: start-up STARTUP_S, PER_ITER_S an iteration."""
    folder.mkdir(parents=True)
    tiny = load("tiny")
    lines = []
    for params in tiny.points(profile="quick"):
        iterations, warmup = 500, 10
        trial = results.Trial(engine="fake/ok/python/cpu", framework="fake", mode="ok", language="python",
                              device="cpu", workload="tiny", params=params, trial=0, iterations=iterations,
                              warmup=warmup, per_iter_s={"mean": PER_ITER_S},
                              wall_time_s=STARTUP_S + PER_ITER_S * (iterations + warmup))
        lines.append(trial.to_json())
    (folder / results.TRIALS_FILE).write_text("\n".join(lines) + "\n")
    manifest = {"run_id": folder.name, "created_at": "2026-01-01T00:00:00+00:00", "status": "complete",
                "machine": {"cpu_model": cpu_model}}
    (folder / results.MANIFEST_FILE).write_text(json.dumps(manifest))
    return folder


def expected_s(argv_plan: RunPlan) -> float:
    total = 0.0
    for pt in make_plan(argv_plan):
        total += (STARTUP_S + PER_ITER_S if pt.with_init else 0) + STARTUP_S + PER_ITER_S * (pt.iterations + pt.warmup)
    return total


PLAN = ["--engine", "fake/ok", "--workload", "tiny", "--profile", "quick", "--trials", "3"]
SPEC = RunPlan(profile="quick", engines=("fake/ok/python/cpu",), workloads=("tiny",), trials=3)


def test_dry_run_takes_its_eta_from_the_newest_run_on_this_cpu(fake_engines, tmp_path, capsys):
    synthetic_run(tmp_path / "old", describe()["cpu_model"])
    synthetic_run(tmp_path / "elsewhere", "Another CPU")  # newer by name, other machine: not used
    assert main(["run", *PLAN, "--dry-run", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"from the per-iteration times of {tmp_path / 'old'} (made 2026-01-01" in out
    assert f"ETA: {duration(expected_s(SPEC))}" in out
    points = len(load("tiny").points(profile="quick"))
    row = next(line for line in out.splitlines() if "tiny" in line).split()
    assert row[3] == str(points) and row[7] == str(3 * points) and "previous run" in " ".join(row)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere", "old"], "a dry run made a run folder"


def test_dry_run_with_two_cores_halves_the_wall_time(fake_engines, tmp_path, capsys):
    run = synthetic_run(tmp_path / "old", "any")
    assert main(["run", *PLAN, "--dry-run", "--estimate-from", str(run), "--cpus", "0,1"]) == 0
    out = capsys.readouterr().out
    plan = make_plan(SPEC)
    assert f"ETA: {duration(estimate.wall_s(plan, estimate.Estimator(run), 2))}" in out
    assert estimate.wall_s(plan, estimate.Estimator(run), 2) < 0.6 * expected_s(SPEC)


def test_dry_run_without_a_previous_run_says_its_figures_are_rough(fake_engines, tmp_path, capsys):
    assert main(["run", *PLAN, "--dry-run", "--out", str(tmp_path / "none")]) == 0
    out = capsys.readouterr().out
    assert "rough built-in figures" in out and "rough figures" in out


def test_the_progress_eta_starts_from_the_estimates(fake_engines, tmp_path):
    run = synthetic_run(tmp_path / "old", "any")
    plan = make_plan(SPEC)
    eta = Eta(estimate.Estimator(run), workers=2)
    fields = eta.add(plan)
    assert fields["eta_s"] == pytest.approx(expected_s(SPEC) / 2)
    assert eta.finished(plan[0])["eta_s"] < fields["eta_s"]


def test_dry_run_of_a_resume_shows_only_the_trials_left(fake_engines, tmp_path, capsys):
    assert main(["run", *PLAN, "--out", str(tmp_path), "--no-report"]) == 0
    (run,) = tmp_path.iterdir()
    lines = (run / results.TRIALS_FILE).read_text().splitlines(keepends=True)
    (run / results.TRIALS_FILE).write_text(lines[0])
    capsys.readouterr()
    assert main(["run", "--resume", str(run), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"1 of {len(lines)} planned trials are done" in out
    total = next(line for line in out.splitlines() if line.split("│")[1:2] and "total" in line.split("│")[1])
    assert total.split("│")[4].strip() == str(len(lines) - 1)
    assert (run / results.TRIALS_FILE).read_text() == lines[0], "a dry run ran trials"


def test_a_previous_run_s_figures_follow_the_machine_s_speed_now_gauged_by_its_floor_trial(fake_engines, tmp_path,
                                                                                           capsys):
    run = synthetic_run(tmp_path / "old", describe()["cpu_model"])
    floor = results.Trial(engine=FLOOR, framework="none", mode="empty", language="python", device="cpu",
                          workload="small", params={"a": -4.0, "b": 2.0}, trial=0, iterations=100, warmup=0,
                          per_iter_s={"mean": 1e-6}, wall_time_s=0.05)
    with (run / results.TRIALS_FILE).open("a") as f:
        f.write(floor.to_json() + "\n")
    pt = make_plan(SPEC)[0]
    same = estimate.Estimator(run, probe=lambda trial: trial["wall_time_s"])
    slower = estimate.Estimator(run, probe=lambda trial: 2 * trial["wall_time_s"])
    assert slower.trial_s(pt) == pytest.approx(2 * same.trial_s(pt))
    assert "scaled ×2.00 to this machine's speed now" in slower.describe([pt])
    # The real gauge: the floor trial run again here, as the runner spawns it.
    assert 0 < probe_floor(floor.__dict__) < 60
    assert main(["run", *PLAN, "--dry-run", "--estimate-from", str(run)]) == 0
    assert "to this machine's speed now" in capsys.readouterr().out
