"""Managed environments (--env SPEC), offline: two versions of a fake framework built as wheels into
a wheelhouse here, installed with --no-index; made once, reused after, interleaved, reported."""
import json
import os
from pathlib import Path

import pytest
from tests_support import build_wheel

from engines.base import split_id
from harness.commands.cli import main
from harness.paths import ROOT, worker_env
from harness.report.render import render
from harness.store import results

ENGINE = "fakefw/eager/python/cpu"
OLD, NEW, MISSING = "burtbench-fakefw==1.0", "burtbench-fakefw==2.0", "burtbench-fakefw==9.9"
OLD_AUTOGRAD, NEW_AUTOGRAD = "autograd==1.7.0", "autograd==1.9.1"


def source(version: str, loop: int) -> str:
    return f"__version__ = {version!r}\n\n\ndef work():\n    return sum(range({loop}))\n"


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory):
    folder = tmp_path_factory.mktemp("wheelhouse")
    build_wheel(folder, "burtbench-fakefw", "1.0", "fakefw", source("1.0", 10))
    build_wheel(folder, "burtbench-fakefw", "2.0", "fakefw", source("2.0", 400))
    return folder


@pytest.fixture
def fakefw(monkeypatch):
    monkeypatch.setenv("BURTBENCH_ENGINE_MODULES", "tests.fakes.fake_versions")


def run_args(out: Path, env_dir: Path, wheelhouse: Path, *specs: str) -> list[str]:
    args = ["run", "--engine", "fakefw", "--workload", "tiny", "--profile", "smoke", "--trials", "2", "--no-report",
            "--out", str(out), "--env-dir", str(env_dir), "--pip-arg=--no-index", f"--pip-arg=--find-links={wheelhouse}",
            "--no-aa"]  # environments, not the floor, are what these runs test
    for spec in specs:
        args += ["--env", spec]
    return args


def only_run(out: Path) -> Path:
    (run_dir,) = [p for p in out.iterdir() if results.is_run_dir(p)]
    return run_dir


def installed_file(env: dict) -> Path:
    (found,) = Path(env["path"]).rglob("fakefw/__init__.py")
    return found


def test_two_versions_in_one_run_then_reused(fakefw, wheelhouse, tmp_path, capsys):
    env_dir = tmp_path / "envs"
    # The MISSING version cannot be installed: the run did not do all it was asked (exit 3), and says so.
    assert main(run_args(tmp_path / "first", env_dir, wheelhouse, OLD, NEW, MISSING)) == 3
    run_dir = only_run(tmp_path / "first")
    manifest = results.read_manifest(run_dir)
    made = manifest["environments"]
    assert made[OLD]["freeze"]["burtbench-fakefw"] == "1.0" and made[NEW]["freeze"]["burtbench-fakefw"] == "2.0"
    assert not made[OLD]["reused"] and not made[NEW]["reused"]
    assert made[OLD]["python_version"].startswith("CPython 3.") or made[OLD]["python_version"]
    # The uninstallable SPEC: its engine unavailable with the installer's reason, on one line.
    reason = manifest["unavailable"][f"{ENGINE}@{MISSING}"]
    assert "\n" not in reason and "9.9" in reason and made[MISSING]["problem"]
    assert manifest["status"] == "complete"

    trials = results.read_trials(run_dir)
    # In rounds: both versions run trial 0 (in the round's random order) before either runs trial 1;
    # each trial ran its own version.
    assert [t["trial"] for t in trials] == [0, 0, 1, 1]
    assert all({t["engine"] for t in trials[i:i + 2]} == {f"{ENGINE}@{OLD}", f"{ENGINE}@{NEW}"} for i in (0, 2))
    assert all(t["framework_version"] == {OLD: "1.0", NEW: "2.0"}[t["engine"].split("@")[1]] for t in trials)
    assert all(t["status"] == "ok" and t["check"]["ok"] for t in trials)

    # A second run reuses both environments: nothing is installed again.
    before = {spec: installed_file(made[spec]).stat().st_mtime_ns for spec in (OLD, NEW)}
    assert main(run_args(tmp_path / "second", env_dir, wheelhouse, OLD, NEW) + ["--change", "20"]) == 0
    again = results.read_manifest(only_run(tmp_path / "second"))["environments"]
    asked = render(only_run(tmp_path / "second"), tmp_path / "reports-second") / "tables" / "versions_tiny.md"
    assert "(20%; run or compare --change PCT asks about another)" in asked.read_text()  # the run's own --change
    assert again[OLD]["reused"] and again[NEW]["reused"]
    assert {spec: installed_file(again[spec]).stat().st_mtime_ns for spec in (OLD, NEW)} == before
    assert again[OLD]["path"] == made[OLD]["path"]

    # --resume makes (here: finds) the same environments.
    assert main(["run", "--resume", str(run_dir), "--no-report"]) == 3  # the MISSING version still cannot be made
    assert results.read_manifest(run_dir)["environments"][OLD]["reused"]
    assert len(results.read_trials(run_dir)) == 4

    # The report: a versions table (ratios to the oldest version) and the trend figure.
    folder = render(run_dir, tmp_path / "reports")
    table = (folder / "tables" / "versions_tiny.md").read_text()
    assert "reference (oldest)" in table and "| 2.0" in table and "[" in table
    assert (folder / "figures" / "fig_versions_tiny.png").stat().st_size > 0
    assert "tiny: framework versions" in (folder / "index.html").read_text()
    rows = (folder / "tables" / "versions_tiny.csv").read_text().splitlines()
    assert rows[0].startswith("engine,params,version,env") and len(rows) == 3

    # compare: two environments of one run.
    capsys.readouterr()
    assert main(["compare", f"{run_dir}@{OLD}", f"{run_dir}@{NEW}", "--format", "json"]) == 0
    compared = json.loads(capsys.readouterr().out)
    assert [r["engine"] for r in compared["rows"]] == [ENGINE]
    assert compared["run_b"]["frameworks"]["burtbench-fakefw"] == "2.0"

    # burtbench envs lists them; --prune all deletes every one.
    assert main(["envs", "--env-dir", str(env_dir)]) == 0
    listed = capsys.readouterr().out
    assert OLD in listed and NEW in listed and MISSING not in listed
    assert main(["envs", "--env-dir", str(env_dir), "--prune", "all"]) == 0
    assert not any(env_dir.iterdir())


@pytest.mark.parametrize("extra,message", [
    (["--env", "fakefw>>1"], "not a requirement set"),
    (["--env", "==1.0"], "not a requirement set"),
    (["--env", "burtbench-fakefw==1.0,"], "empty requirement"),
    (["--env", "burtbench-fakefw==1.0,burtbench_fakefw==2.0"], "names a distribution twice"),
    (["--env", OLD, "--env", "burtbench-fakefw == 1.0"], "given twice"),
    (["--env", "autograd==1.7.0"], "no --env SPEC installs its framework"),
    (["--env", OLD, "--env", "autograd==1.7.0"], "installs no framework of a selected engine"),
    (["--env", OLD, "--env-dir", "{file}/envs"], "cannot create the environments folder"),
    (["--env-dir", "{tmp}/envs"], "only apply with --env"),
    (["--pip-arg=--no-index"], "only apply with --env"),
])
def test_bad_env_input_is_one_line_and_exit_2(fakefw, extra, message, tmp_path, capsys):
    plain = tmp_path / "a-file"
    plain.write_text("x")
    extra = [a.replace("{file}", str(plain)).replace("{tmp}", str(tmp_path)) for a in extra]
    assert main(["run", "--engine", "fakefw", "--workload", "tiny", "--out", str(tmp_path / "out"), *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("burtbench: error:") and message in err, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("specs,extra,copies", [((OLD_AUTOGRAD, NEW_AUTOGRAD), (), True),
                                                ((OLD_AUTOGRAD, NEW_AUTOGRAD), ("--no-aa",), False),
                                                ((NEW_AUTOGRAD,), (), False)])
def test_two_versions_of_one_engine_measure_their_a_a_floor_unless_no_aa(specs, extra, copies, tmp_path):
    from harness.commands.cli import build_parser
    from harness.commands.request import ask_of, new_plan

    args = ["run", "--engine", "autograd", "--workload", "tiny", "--env-dir", str(tmp_path), *extra]
    plan, _ = new_plan(ask_of(build_parser().parse_args(args + [a for spec in specs for a in ("--env", spec)])), None)
    assert plan.aa is copies
    assert list(plan.engines) == [f"autograd/eager/python/cpu@{spec}{copy}" for spec in specs
                                  for copy in ("", "#copy") if copies or not copy]


def test_aa_with_no_aa_is_one_line_before_any_work(tmp_path, capsys):
    assert main(["run", "--engine", "autograd", "--workload", "tiny", "--env", OLD_AUTOGRAD, "--env", NEW_AUTOGRAD,
                 "--aa", "--no-aa", "--out", str(tmp_path / "out"), "--env-dir", str(tmp_path / "envs")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--no-aa: not allowed with argument --aa" in err, err
    assert not any(tmp_path.iterdir())


def test_only_python_engines_run_in_an_environment(capsys, tmp_path):
    assert main(["run", "--engine", "burtorch/eager/cpp", "--workload", "tiny", "--env", "burtorch==1.0",
                 "--env-dir", str(tmp_path)]) == 2
    assert "only Python engines" in capsys.readouterr().err


def test_compare_names_an_environment_the_run_has(fakefw, tmp_path, capsys):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    results.write_json_atomic(run_dir / results.MANIFEST_FILE,
                              {"plan": {"profile": "smoke", "engines": [], "workloads": [], "envs": [OLD]}})
    assert main(["compare", f"{run_dir}@{OLD}", f"{run_dir}@burtbench-fakefw==3.0"]) == 2
    assert "has no environment burtbench-fakefw==3.0 (it has: burtbench-fakefw==1.0)" in capsys.readouterr().err


def test_installer_reason_is_one_line():
    from harness.envs.install import installer_reason

    pip = ("Looking in links: /w\nERROR: Could not find a version that satisfies the requirement x==9 (from versions: 1)\n"
           "ERROR: No matching distribution found for x==9\n")
    assert installer_reason(pip) == "No matching distribution found for x==9"
    uv = ("  × No solution found when resolving dependencies:\n  ╰─▶ Because there is no version of x==9 and you\n"
          "      require x==9, we can conclude that your requirements are unsatisfiable.\n")
    assert installer_reason(uv) == ("No solution found when resolving dependencies: Because there is no version of "
                                    "x==9 and you require x==9, we can conclude that your requirements are unsatisfiable.")


def test_an_engine_id_carries_its_environment():
    from engines import all_engines
    from harness.envs import specs as envs

    spec = envs.parse_spec("Jax>=0.4, <0.5")
    assert spec.text == "jax<0.5,>=0.4" and spec.names == {"jax"}
    (jit, *_) = envs.variants([all_engines()["jax/jit/python/cpu"]], [spec], explicit=True)
    assert jit.id == "jax/jit/python/cpu@jax<0.5,>=0.4" and jit.base_id == "jax/jit/python/cpu"
    assert split_id(jit.id) == ("jax/jit/python/cpu", "jax<0.5,>=0.4")
    # Its framework is the environment's: this interpreter's packages do not decide it.
    assert jit.unavailable_reason() is None
    # Its worker runs under the environment's interpreter, which finds the harness through PYTHONPATH.
    assert worker_env("/an/environment/bin/python")["PYTHONPATH"].split(os.pathsep)[0] == str(ROOT)


@pytest.mark.slow
def test_two_autograd_releases_from_the_package_index(tmp_path):
    """Two real versions from the package index (network), on the tiny graph."""
    specs = ("autograd==1.7.0", "autograd==1.9.1")
    args = ["run", "--engine", "autograd", "--workload", "tiny", "--profile", "smoke", "--trials", "2", "--no-report",
            "--out", str(tmp_path / "out"), "--env-dir", str(tmp_path / "envs")]
    assert main(args + [a for spec in specs for a in ("--env", spec)]) == 0
    run_dir = only_run(tmp_path / "out")
    made = results.read_manifest(run_dir)["environments"]
    assert [made[s]["freeze"]["autograd"] for s in specs] == ["1.7.0", "1.9.1"]
    trials = results.read_trials(run_dir)
    # Each version beside its A/A copy (two versions of one engine measure their floor by default).
    assert sorted(t["framework_version"] for t in trials) == ["1.7.0"] * 4 + ["1.9.1"] * 4
    assert sum(t["engine"].endswith("#copy") for t in trials) == 4
    assert all(t["status"] == "ok" and t["check"]["ok"] for t in trials)
    folder = render(run_dir, tmp_path / "reports")
    assert "| 1.9.1" in (folder / "tables" / "versions_tiny.md").read_text()


@pytest.mark.parametrize("platform, variable, under", [
    ("linux", "XDG_CACHE_HOME", ""), ("win32", "LOCALAPPDATA", ""), ("darwin", None, "Library/Caches")])
def test_the_environments_live_beside_the_machine_caches_and_follow_burtbench_cache(
        monkeypatch, tmp_path, platform, variable, under):
    from harness.envs.cache import default_env_dir
    from harness.records import machine

    monkeypatch.setenv("BURTBENCH_CACHE", str(tmp_path / "mine"))
    assert default_env_dir() == tmp_path / "mine" / "envs", "one cache folder for all that outlives a run"
    monkeypatch.delenv("BURTBENCH_CACHE")
    monkeypatch.setattr(machine.sys, "platform", platform)
    monkeypatch.setattr(machine.Path, "home", lambda: tmp_path / "home")
    if variable:
        monkeypatch.setenv(variable, str(tmp_path / "base"))
    expected = (tmp_path / "base") if variable else tmp_path / "home" / under
    assert default_env_dir() == expected / "burtbench" / "envs"
    assert machine.cache_dir() == expected / "burtbench"
