"""An ETA that counts everything: the builds and --env installs before the first trial, valgrind's counting
from what a run measured, A/A copies as their originals, and a source run chosen for how much of the plan it
measured."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from engines import all_engines, burn
from harness.commands.cli import main
from harness.envs import install
from harness.envs.cache import RECORD
from harness.envs.specs import parse_spec
from harness.machine.host import describe
from harness.planning import estimate
from harness.planning.preview import duration
from harness.running.session import make_plan
from harness.store import results
from harness.store.run_plan import RunPlan
from workloads import load

FAKE = "fake/ok/python/cpu"
PLAN = ["--engine", "fake/ok", "--workload", "tiny,small", "--profile", "quick", "--trials", "1"]
SPEC = RunPlan(profile="quick", engines=(FAKE,), workloads=("tiny",), trials=1)


def previous_run(folder: Path, made: str, workloads: tuple = ("tiny", "small"), manifest: dict | None = None,
                 counting_s: float | None = None) -> Path:
    """A run on this CPU of fake/ok at the quick points of `workloads`."""
    folder.mkdir(parents=True)
    lines = []
    for workload, params in ((w, p) for w in workloads for p in load(w).points(profile="quick")):
        trial = results.Trial(engine=FAKE, framework="fake", mode="ok", language="python", device="cpu",
                              workload=workload, params=params, trial=0, iterations=500, warmup=10,
                              per_iter_s={"mean": 1e-3}, wall_time_s=2.51, instructions_cost_s=counting_s)
        lines.append(trial.to_json())
    (folder / results.TRIALS_FILE).write_text("\n".join(lines) + "\n")
    (folder / results.MANIFEST_FILE).write_text(json.dumps({
        "run_id": folder.name, "created_at": made, "status": "complete",
        "machine": {"cpu_model": describe()["cpu_model"]}, **(manifest or {})}))
    return folder


def test_the_run_that_measured_most_of_the_plan_is_the_source_not_the_newest(fake_engines, tmp_path, capsys):
    previous_run(tmp_path / "full", "2026-01-01T00:00:00+00:00")
    previous_run(tmp_path / "newer", "2026-03-01T00:00:00+00:00", workloads=("tiny",))
    assert main(["run", *PLAN, "--dry-run", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"from the per-iteration times of {tmp_path / 'full'} (made 2026-01-01" in out
    assert "it measured 2 of the plan's 3 points" in out  # the harness's floor row on small: in neither
    # Of two runs that measured as much, the newer.
    previous_run(tmp_path / "full-again", "2026-02-01T00:00:00+00:00")
    assert main(["run", *PLAN, "--dry-run", "--out", str(tmp_path)]) == 0
    assert f"per-iteration times of {tmp_path / 'full-again'} (made 2026-02-01" in capsys.readouterr().out


def test_a_revision_to_build_is_in_the_eta_at_what_the_last_build_took(tmp_path, capsys):
    environments = {"burtorch@abc": {"kind": "revision", "host": {"setup_s": 42.0, "reused": False},
                                     "counting": {"setup_s": 1.0, "reused": True}}}
    source = previous_run(tmp_path / "runs" / "built", "2026-01-01T00:00:00+00:00",
                          manifest={"environments": environments})
    argv = ["run", "--engine", "burtorch/eager/cpp", "--env", "burtorch@HEAD", "--workload", "tiny", "--profile",
            "smoke", "--dry-run", "--estimate-from", str(source), "--env-dir", str(tmp_path / "no-builds-yet")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"built first: burtorch@HEAD (host build), 0:00:42 (as in {source.name})" in out
    builds = next(line for line in out.splitlines() if "│ builds" in line)
    assert "0:00:42" in builds
    # Without a run that built one: a constant, labelled.
    assert main([*argv[:-4], "--env-dir", str(tmp_path / "no-builds-yet")]) == 0
    assert (f"built first: burtorch@HEAD (host build), {duration(estimate.ROUGH_BUILD_S['revision'])} "
            "(rough: none measured on this CPU)") in capsys.readouterr().out


def test_burn_and_the_authors_programs_priced_from_recorded_builds(tmp_path, monkeypatch):
    monkeypatch.setattr(burn, "is_built", lambda: False)
    monkeypatch.setattr(burn, "build_blocker", lambda: None)
    made = [estimate.Build(estimate.BURN_BUILD, "Burn's driver (cargo)").record(180.0),
            estimate.Build(estimate.AUTHORS_BUILD, "the authors' programs (4)", 4).record(48.0)]
    source = previous_run(tmp_path / "built", "2026-01-01T00:00:00+00:00", manifest={"builds": made})
    plan = make_plan(RunPlan(profile="smoke", engines=("burn/eager/rust/cpu",), workloads=("tiny",)))
    needed = estimate.engine_builds(plan)
    assert [b.kind for b in needed] == [estimate.BURN_BUILD]
    priced = estimate.Estimator(source).builds([*needed, estimate.Build(estimate.AUTHORS_BUILD, "theirs (3)", 3)])
    assert [(seconds, where) for _, seconds, where in priced] == [(180.0, "as in built"), (36.0, "as in built")]
    monkeypatch.setattr(burn, "is_built", lambda: True)
    assert estimate.engine_builds(plan) == [], "a built driver costs nothing"


def test_valgrind_s_counting_is_priced_from_the_run_that_measured_it(fake_engines, tmp_path):
    source = previous_run(tmp_path / "counted", "2026-01-01T00:00:00+00:00", counting_s=7.0)
    plan = make_plan(SPEC)
    counted = estimate.Estimator(source, instructions=True)
    assert counted.trial_s(plan[0]) == pytest.approx(estimate.Estimator(source).trial_s(plan[0]) + 7.0)
    assert ("--instructions included: 7 s per trial on average under valgrind (7-7 s; 1 trial measured in that run)") in counted.describe(plan)
    rough = estimate.Estimator(previous_run(tmp_path / "uncounted", "2026-01-01T00:00:00+00:00"), instructions=True)
    assert estimate.VALGRIND_ROUGH in rough.describe(plan)


def test_an_a_a_copy_is_priced_as_its_original(fake_engines, tmp_path):
    source = previous_run(tmp_path / "run", "2026-01-01T00:00:00+00:00")
    pt = make_plan(SPEC)[0]
    estimator = estimate.Estimator(source)
    for env in ("#copy", "v1#copy", "v1"):
        other = type(pt)(**{**pt.__dict__, "engine": all_engines()[FAKE].replace(env=env)})
        assert estimator.source(other) == "run"
        assert estimator.trial_s(other) == pytest.approx(estimator.trial_s(pt))


ENV_SPEC = "burtbench-fakefw==1.0"


def test_each_environment_to_install_is_in_the_eta_until_it_is_installed(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("BURTBENCH_ENGINE_MODULES", "tests.fakes.fake_versions")
    env_dir = tmp_path / "envs"
    argv = ["run", "--engine", "fakefw", "--workload", "tiny", "--profile", "smoke", "--no-aa", "--env", ENV_SPEC,
            "--env-dir", str(env_dir), "--out", str(tmp_path / "runs"), "--dry-run"]
    assert main(argv) == 0
    rough = duration(estimate.ROUGH_BUILD_S[estimate.ENV_BUILD])
    out = capsys.readouterr().out
    assert f"built first: environment {ENV_SPEC} (installed), {rough} (rough: none measured on this CPU)" in out
    assert rough in next(line for line in out.splitlines() if "│ builds" in line)
    # Installed (its record ready, its interpreter there, as envs/install.py leaves it): nothing to build.
    folder = env_dir / install.folder_name(parse_spec(ENV_SPEC), install.python_version(sys.executable))
    install.interpreter(folder).parent.mkdir(parents=True)
    install.interpreter(folder).write_text("")
    (folder / RECORD).write_text(json.dumps({"spec": ENV_SPEC, "ready": True}))
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "built first" not in out and "│ builds" not in out


def test_an_install_is_priced_at_what_the_last_run_that_made_one_took(tmp_path):
    made = {"installer": "pip", "reused": False, "setup_s": 5.4, "problem": None}
    environments = {ENV_SPEC: made, "burtbench-fakefw==2.0": {**made, "reused": True, "setup_s": 0.2},
                    "burtbench-fakefw==9.9": {**made, "problem": "no such version", "setup_s": 0.9}}
    source = previous_run(tmp_path / "installed", "2026-01-01T00:00:00+00:00", manifest={"environments": environments})
    wanted = [estimate.Build(estimate.ENV_BUILD, f"environment {ENV_SPEC} (installed)")] * 2
    # Only the environment made there counts: one reused, or one the installer refused, took no install.
    assert [(s, where) for _, s, where in estimate.Estimator(source).builds(wanted)] == [(5.4, "as in installed")] * 2
