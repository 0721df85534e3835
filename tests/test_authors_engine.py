"""Engines of kind "program" (a program that prints its own text) under the runner, the authors'
engine without a source, fetch-upstream, and the report's authors' rows and page. None of this
needs the authors' archive: a shell script stands for their program (tests/fakes/fake_programs.py).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from engines import all_engines, burtorch_authors
from engines.authors.source import ENV_VAR
from harness.analysis.points import group
from harness.commands.cli import main
from harness.planning.selection import resolve_engines
from harness.report.render import render
from harness.analysis.tables import build_tables
from harness.store import results
from harness.store.results import MANIFEST_FILE, Trial, append_trial
from harness.store.runs import load_run

FAKES = Path(__file__).resolve().parent / "fakes"
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def fake_programs(monkeypatch):
    monkeypatch.setenv("BURTBENCH_ENGINE_MODULES", "fake_programs")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(FAKES), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.syspath_prepend(str(FAKES))


@pytest.fixture
def no_upstream(monkeypatch, tmp_path):
    """No source of the authors' code anywhere: no variable, no default checkout."""
    monkeypatch.setenv(ENV_VAR, "")
    monkeypatch.setattr(burtorch_authors, "DEFAULT_CHECKOUT", tmp_path / "no-checkout")


def only_run(out: Path) -> Path:
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    return run_dir


def test_a_program_engine_runs_under_the_runner_with_its_measures(fake_programs, tmp_path):
    engines = ",".join(f"fakeprog/{m}/cpp/cpu" for m in ("ok", "undecided", "garbled", "fails", "unbuildable"))
    code = main(["run", "--workload", "tiny,small", "--profile", "smoke", "--engine", engines, "--out", str(tmp_path)])
    assert code == 1  # the unbuildable program's trials did not run: the run says so
    run_dir = only_run(tmp_path)
    assert results.read_manifest(run_dir)["status"].startswith(
        "incomplete: 2 of 10 planned trials not run (fakeprog/unbuildable/cpp/cpu unavailable: init run: their "
        "program did not build")
    trials = results.read_trials(run_dir)
    by = {(t["engine"].split("/")[1], t["workload"]): t for t in trials}

    ok = by[("ok", "tiny")]
    assert ok["status"] == "ok" and ok["iterations"] == 200 and ok["warmup"] == 0
    # The runner's own measures, as for every engine.
    assert ok["init_time_s"] > 0 and ok["wall_time_s"] > 0 and ok["cpu_time_s"] is not None and ok["cpu"] is not None
    # Its check is the workload's, on the outputs the spec read from the program's working folder...
    assert ok["check"]["ok"] is True
    # ...which was a scratch folder of its own, gone after the trial; the spec's variables reached it.
    ran_in = Path(ok["extra"]["ran_in"])
    assert ran_in != Path.cwd() and ran_in.name.startswith("burtbench-trial-") and not ran_in.exists()
    assert ok["extra"]["env_seen"] == "from-the-spec"
    assert ok["framework_version"] == "fake program 1.0"

    undecided = by[("undecided", "tiny")]
    assert undecided["status"] == "ok"
    assert undecided["check"]["ok"] is None and undecided["check"]["status"] == "not comparable"

    garbled = by[("garbled", "tiny")]
    assert garbled["status"] == "failed" and garbled["reason"] == "init run: their program printed no 'iterations:' line"
    assert "not our JSON line" in garbled["stderr_tail"]

    fails = by[("fails", "tiny")]
    assert fails["status"] == "failed" and fails["exit_code"] == 3

    # A program that cannot be had: unavailable with its one line, and skipped from then on.
    unbuildable = [t for t in trials if t["engine"].startswith("fakeprog/unbuildable")]
    assert len(unbuildable) == 1 and unbuildable[0]["status"] == "unavailable"
    assert unbuildable[0]["reason"] == "init run: their program did not build: fake.cpp:1: error: nothing to see"


def test_an_undecided_check_is_neither_a_pass_nor_a_failure(fake_programs, tmp_path):
    assert main(["run", "--workload", "tiny", "--profile", "smoke", "--engine", "fakeprog/undecided/cpp/cpu",
                 "--out", str(tmp_path / "results")]) == 0
    run_dir = only_run(tmp_path / "results")
    (point,) = group(results.read_trials(run_dir)).values()
    assert point.check() == (None, None) and point.check_status() == "not comparable"
    assert not any("FAILED" in n for n in point.notes())
    folder = render(run_dir, tmp_path / "reports")
    tiny = (folder / "tables" / "tiny.md").read_text()
    row = next(line for line in tiny.splitlines() if "fakeprog/undecided" in line)
    assert "not comparable" in row and "FAILED" not in row


def test_without_a_source_the_authors_engine_is_unavailable_and_says_how_to_get_one(no_upstream, tmp_path, capsys):
    spec = all_engines()["burtorch-authors/eager/cpp/cpu"]
    assert spec.kind == "program" and set(spec.workloads) == {"tiny", "small", "save_load", "energy", "mlp", "gpt"}
    assert spec.paper_row == ("burtorch", "eager", "cpp", "cpu") and spec.label == "BurTorch (authors' code)"
    reason = spec.unavailable_reason()
    if shutil.which("cmake") is not None:
        assert reason == burtorch_authors.NO_SOURCE and "--upstream" in reason and "fetch-upstream" in reason
    assert spec.prepare([]) == reason
    assert main(["list"]) == 0
    assert "burtorch-authors/eager/cpp/cpu" in capsys.readouterr().out


def test_run_skips_the_authors_engine_without_a_source(no_upstream, tmp_path, capsys):
    code = main(["run", "--workload", "tiny", "--profile", "smoke", "--engine", "burtorch-authors",
                 "--out", str(tmp_path)])
    assert code == 2
    err = capsys.readouterr().err.splitlines()
    # The run looked for their source everywhere, tried to fetch it, and says in one line why it is left out
    # (on stderr, as every skip reason), then the error.
    assert sum("without the authors' programs" in line for line in err) == 1
    assert err[-1].startswith("burtbench: error: nothing to run")


def test_upstream_option_is_checked_and_kept_for_resume(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(ENV_VAR, "")
    assert main(["run", "--workload", "tiny", "--engine", "burtorch-authors", "--upstream", str(tmp_path / "nope"),
                 "--out", str(tmp_path)]) == 2
    assert "--upstream" in capsys.readouterr().err
    run_dir = tmp_path / "old"
    run_dir.mkdir()
    (run_dir / MANIFEST_FILE).write_text(json.dumps({"plan": {}}))
    assert main(["run", "--resume", str(run_dir), "--upstream", str(tmp_path)]) == 2
    assert "--upstream" in capsys.readouterr().err


def test_burtorch_selects_the_authors_engine_too():
    registry = all_engines()
    assert "burtorch-authors/eager/cpp/cpu" in [e.id for e in resolve_engines("burtorch", registry)]
    assert "burtorch-authors/eager/cpp/cpu" not in [e.id for e in resolve_engines("burtorch/eager", registry)]
    assert [e.id for e in resolve_engines("torch", registry)] == [e for e in registry if e.startswith("torch/")]


# ----------------------------------------------------------------------------- fetch-upstream

def git(*args: str, cwd: Path) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org", "GIT_CONFIG_GLOBAL": os.devnull}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_fetch_upstream_clones_a_commit_and_says_so(tmp_path, capsys):
    work = tmp_path / "work"
    (work / "burt").mkdir(parents=True)
    git("init", "-q", str(work), cwd=tmp_path)
    (work / "burt" / "CMakeLists.txt").write_text("project(x)\n")
    git("add", ".", cwd=work)
    git("commit", "-qm", "one", cwd=work)
    commit = git("rev-parse", "HEAD", cwd=work)
    bare = tmp_path / "bare.git"
    git("init", "-q", "--bare", str(bare), cwd=tmp_path)
    git("push", "-q", str(bare), "HEAD:refs/heads/main", cwd=work)
    dest = tmp_path / "dest"
    assert main(["fetch-upstream", "--dir", str(dest), "--url", f"file://{bare}", "--commit", commit]) == 0
    assert f"commit {commit} verified" in capsys.readouterr().out
    assert git("rev-parse", "HEAD", cwd=dest) == commit


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_fetch_upstream_where_the_network_refuses_is_one_line_and_exit_2(tmp_path, capsys):
    code = main(["fetch-upstream", "--dir", str(tmp_path / "dest"), "--url", f"file://{tmp_path}/no-such-repo.git"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("burtbench: error: cannot fetch")


# ----------------------------------------------------------------------------- report

def trial(engine: str, workload: str, params: dict, per_iter: float, check: dict, **extra) -> Trial:
    framework, mode, language, device = engine.split("/")
    return Trial(engine=engine, framework=framework, mode=mode, language=language, device=device, workload=workload,
                 params=params, trial=0, check=check, iterations=1000, loop_time_s=per_iter * 1000,
                 per_iter_s={"mean": per_iter, "std": None, "min": None, "median": None, "n": 1000},
                 peak_resident_bytes=3 * 2**20, peak_virtual_bytes=6 * 2**20, framework_version="x", extra=extra)


AUTHORS, OURS = "burtorch-authors/eager/cpp/cpu", "burtorch/eager/cpp/cpu"
SMALL = {"a": -4.0, "b": 2.0}
FAILED_SMALL = {"ok": False, "status": "mismatch", "max_rel_err": 0.25,
                "expected": {"g": 2421 / 98, "dg_da": 47620 / 343, "dg_db": 221433 / 343},
                "got": {"g": 24.7041, "dg_da": 104.125, "dg_db": 680.286},
                "printed": {"g": "24.7041", "dg_da": "104.125", "dg_db": "680.286"},
                "reason": "dg_da: printed 104.125, expected 138.8338192419825"}
NOT_COMPARABLE = {"ok": None, "status": "not comparable", "max_rel_err": None, "expected": {},
                  "got": {"losses": [4.2, 4.1], "loss_steps": [10, 20]}, "reason": "their own weights and data"}


@pytest.fixture(scope="module")
def authors_report(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("authors")
    run_dir = root / "results" / "run-1"
    run_dir.mkdir(parents=True)
    change = {"file": "burt/bin_small_example/src/main_small_graph.cpp", "line": 36,
              "old": "constexpr size_t kIterations = 20 * 1000;", "new": "constexpr size_t kIterations = 1000;"}
    manifest = {"run_id": "run-1", "status": "complete", "machine": {"os": "Debian GNU/Linux 12"},
                "engine_builds": {AUTHORS: {"found_by": "$BURTBENCH_UPSTREAM", "peak_memory_library": "/x/lib.so",
                                            "source": {"commit": "b1a9d66aae60e7220e19bf9dada45416a731aa8e",
                                                       "kind": "archive", "origin": "/up/burtorch.tar.gz"},
                                            "builds": [{"target": "bin_small_example", "ok": True,
                                                        "variant": "bin_small_example.kIterations=1000",
                                                        "changes": [change], "compiler": {"version": "g++ 12"}}]}}}
    (run_dir / MANIFEST_FILE).write_text(json.dumps(manifest))
    for t in (trial(OURS, "small", SMALL, 2e-7, {"ok": True, "max_rel_err": 0.0, "expected": {}, "got": {}}),
              trial(AUTHORS, "small", SMALL, 1.4e-6, FAILED_SMALL, ran_on_cpu=1, changes=[change]),
              trial(OURS, "gpt", {"batch": 1}, 1e-3, {"ok": True, "max_rel_err": 0.0, "expected": {}, "got": {}}),
              trial(AUTHORS, "gpt", {"batch": 1}, 4e-3, NOT_COMPARABLE, ran_on_cpu=1, pinned_itself_to=1,
                    param_count=46289)):
        append_trial(run_dir, t)
    return render(run_dir, root / "reports")


def test_both_burtorch_rows_stand_beside_the_papers(authors_report):
    run = load_run(authors_report.parents[1] / "results" / authors_report.name)
    tables = {t.name: t for t in build_tables(run)}
    small = {r["engine"]: r for r in tables["small"].rows}
    assert small[AUTHORS]["paper_row"] == small[OURS]["paper_row"] == "BurTorch, Eager, C++, CPU"
    assert small[AUTHORS]["paper_time_per_iter_s"] == small[OURS]["paper_time_per_iter_s"] is not None
    text = (authors_report / "tables" / "small.md").read_text()
    assert "BurTorch (authors' code): burtorch-authors/eager/cpp/cpu" in text
    assert "BurTorch (this project's engine): burtorch/eager/cpp/cpu" in text
    failed = next(line for line in text.splitlines() if "authors' code" in line)
    assert "✗ FAILED" in failed
    gpt = (authors_report / "tables" / "gpt.md").read_text()
    # The authors' row only where it ran; ours at every batch of the paper's.
    assert sum("authors' code" in line for line in gpt.splitlines()) == 1
    assert "not comparable" in next(line for line in gpt.splitlines() if "authors' code" in line)


def test_the_authors_page_lists_failures_differences_and_changes(authors_report):
    page = (authors_report / "authors.md").read_text()
    assert "| small | 1 | FAILED |" in page and "dg_da = 104.125" in page and "dg_da = 138.8338192419825" in page
    assert "| gpt | 1 | not comparable |" in page
    assert "main_small_graph.cpp:36" in page and "kIterations = 1000;" in page
    assert "b1a9d66aae60e7220e19bf9dada45416a731aa8e" in page
    # Differences of the workloads in the run, with their evidence and experiments.
    assert "one backward per token loss" in page and "tests/test_authors_gpt_backward.py" in page
    assert "ReLU derivative" in page and "save and load" not in page.lower().split("## how their")[1]
    assert "| gpt | batch=1 | 1/1 | 4 ms | 1 ms | 4 |" in page and "1 (pins itself to 1)" in page
    index = (authors_report / "index.html").read_text()
    assert "<section id='authors'>" in index and "<tr class='failed'>" in index


def test_a_run_without_the_authors_engine_has_no_authors_page(tmp_path):
    run_dir = tmp_path / "results" / "run-2"
    run_dir.mkdir(parents=True)
    (run_dir / MANIFEST_FILE).write_text(json.dumps({"run_id": "run-2"}))
    append_trial(run_dir, trial(OURS, "small", SMALL, 2e-7, {"ok": True, "max_rel_err": 0.0, "expected": {}, "got": {}}))
    folder = render(run_dir, tmp_path / "reports")
    assert not (folder / "authors.md").exists() and "id='authors'" not in (folder / "index.html").read_text()


def test_the_authors_builds_say_how_far_they_are_and_how_long_is_left(monkeypatch):
    """A first run builds a program per point and iteration count: each announced build is counted
    out of the plan's variants, with the time left at the pace so far."""
    from types import SimpleNamespace

    spec = all_engines()["burtorch-authors/eager/cpp/cpu"]
    announced = []
    monkeypatch.setattr(type(spec), "unavailable_reason", lambda self: None)
    monkeypatch.setattr(burtorch_authors, "source_tree", lambda given="": None)
    monkeypatch.setattr(burtorch_authors, "executables",  # no builds, as executables() gives them: a list
                        lambda workload, params, iterations, given="", progress="": announced.append(progress) or [])
    # Each build takes 10 s.
    monkeypatch.setattr(burtorch_authors, "time", SimpleNamespace(monotonic=lambda: 10.0 * len(announced)))

    def planned(workload, params, iterations, with_init):
        return SimpleNamespace(workload=SimpleNamespace(name=workload), params=params, iterations=iterations,
                               with_init=with_init)
    plan = [planned("tiny", {"a": -41.0, "b": 2.0}, 1000, True), planned("tiny", {"a": -41.0, "b": 2.0}, 1000, True),
            planned("mlp", {"batch": 64, "hidden_dim": 1024}, 20, False)]
    assert spec.prepare(plan) is None
    # tiny at 1 (its init run) and 1,000 iterations, the MLP at 20: three programs, one build each
    assert announced == ["[1/3] ", "[2/3, about 20 s left] ", "[3/3, about 10 s left] "]
    assert burtorch_authors._progress(1, 40, 120.0) == "[2/40, about 78 min left] "


def test_a_point_of_two_programs_names_each_of_its_builds_under_one_count(monkeypatch):
    """save/load is their saving program, then their loading one: one unit of the plan's count, each build
    saying which of the two it is, never the same count announced twice for two builds."""
    from types import SimpleNamespace

    announced = []
    monkeypatch.setattr(burtorch_authors, "source_tree", lambda given="": SimpleNamespace(root="their-tree"))
    monkeypatch.setattr(burtorch_authors, "knob_values", lambda workload, params, iterations: {
        step.target: {} for step in burtorch_authors.PROGRAMS[workload].steps})
    monkeypatch.setattr(burtorch_authors.builder, "plan_changes", lambda tree, step, values: ())
    monkeypatch.setattr(burtorch_authors, "_builds", {})

    def build(tree, target, changes, progress=""):
        announced.append(progress)
        return SimpleNamespace(ok=True)
    monkeypatch.setattr(burtorch_authors.builder, "build", build)
    burtorch_authors.executables("save_load", {}, 1, progress="[21/34] ")
    assert announced == ["[21/34] program 1 of 2: ", "[21/34] program 2 of 2: "]
