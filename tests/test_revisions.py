"""Versions of BurTorch itself (--env burtorch@REV): revisions resolved in a git repository, each built
once into the environments' folder, the counting build where valgrind cannot run the host's, and a
revision that does not build. A tiny repository made here stands in for this one: its "build" is a
CMake project with no compiler that writes a fake driver (a Python script speaking the driver's
protocol), so that no test compiles our engine."""
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from test_paired_rounds import fake_valgrind  # noqa: F401 (a fixture)

from engines.base import AA_COPY
from engines.burtorch import ENGINES
from harness.commands.cli import main
from harness.envs import revisions
from harness.errors import UsageError
from harness.machine.valgrind import uncountable_isa
from harness.paths import ROOT
from harness.store import results

CMAKE = """cmake_minimum_required(VERSION 3.18)
project(fake NONE)
option(BURTORCH_AVX512 "" ON)
configure_file(driver.py ${CMAKE_BINARY_DIR}/burtorch-bench @ONLY
               FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
add_custom_target(burtorch-bench)
add_custom_target(burtorch COMMAND ${CMAKE_COMMAND} -E touch ${CMAKE_BINARY_DIR}/burtorch.fake.so)
"""
BROKEN = """cmake_minimum_required(VERSION 3.18)
project(fake NONE)
add_custom_target(burtorch-bench COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/fail.sh)
"""
FAIL = """echo 'src/driver/main.cpp:3:5: error: first' >&2
echo 'src/driver/main.cpp:9:1: error: expected ; before }' >&2
exit 1
"""
# Speaks the native driver's protocol for the tiny workload; logs where it ran from.
DRIVER = f"""#!{sys.executable}
import json, os, sys
sys.path.insert(0, {str(ROOT)!r})
from workloads.catalog.tiny import reference
with open(os.environ["FAKE_DRIVER_LOG"], "a") as log:
    log.write(sys.argv[0] + " avx512=@BURTORCH_AVX512@\\n")
params = dict(p.split("=", 1) for p in sys.argv[sys.argv.index("--param") + 1::2])
params = {{k: float(v) for k, v in params.items()}}
n = int(sys.argv[sys.argv.index("--iterations") + 1])
print(json.dumps({{"status": "ok", "outputs": reference(params), "precision": "fp64", "iterations": n,
                  "warmup": 0, "samples_s": [1e-6], "framework_version": "fake"}}))
"""


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def commit(repo: Path, message: str, cmake: str = CMAKE, note: str = "") -> str:
    ext = repo / "burtorch_ext"
    ext.mkdir(parents=True, exist_ok=True)
    (ext / "CMakeLists.txt").write_text(cmake)
    (ext / "driver.py").write_text(DRIVER)
    (ext / "note.txt").write_text(note)
    (ext / "fail.sh").write_text(FAIL)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """v1 (tagged), then main's second commit; branch `broken` does not build."""
    folder = tmp_path / "repo"
    folder.mkdir()
    git(folder, "init", "-q", "-b", "main")
    first = commit(folder, "first: the base", note="1")
    git(folder, "tag", "v1")
    second = commit(folder, "second: a kernel change", note="2")
    git(folder, "checkout", "-qb", "broken")
    commit(folder, "third: does not compile", cmake=BROKEN)
    git(folder, "checkout", "-q", "main")
    monkeypatch.setattr(revisions, "ROOT", folder)
    return SimpleNamespace(path=folder, first=first, second=second)


def test_revisions_resolve_tags_branches_and_relative_names(repo):
    assert revisions.resolve("v1").commit == repo.first
    assert revisions.resolve("HEAD~1").commit == repo.first
    assert revisions.resolve("main").commit == repo.second
    second = revisions.resolve("HEAD")
    assert second.subject == "second: a kernel change" and not second.dirty
    assert second.name.startswith(f"{repo.second[:7]} second: a kernel change")
    with pytest.raises(UsageError) as err:
        revisions.resolve("no-such-branch")
    assert "no such revision" in str(err.value) and "\n" not in str(err.value)


def test_an_unknown_revision_is_one_line_and_exit_2_before_anything_runs(capsys):
    code = main(["run", "--engine", "burtorch", "--workload", "tiny", "--env", "burtorch@no-such-rev-xyz",
                 "--env", "burtorch@HEAD", "--dry-run"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "burtorch@no-such-rev-xyz: no such revision" in err and len(err.splitlines()) == 1


def test_the_working_tree_is_dirty_where_burtorch_ext_has_uncommitted_changes(repo):
    assert not revisions.resolve(revisions.WORKTREE).dirty
    (repo.path / "burtorch_ext" / "note.txt").write_text("changed, not committed")
    tree = revisions.resolve(revisions.WORKTREE)
    assert tree.dirty and tree.commit == repo.second and tree.name.endswith("(dirty: uncommitted changes)")
    assert not revisions.resolve("HEAD").dirty  # HEAD is the commit, without what is not committed
    (repo.path / "burtorch_ext" / "note.txt").write_text("changed again")
    assert revisions.resolve(revisions.WORKTREE).fingerprint != tree.fingerprint  # another build


def test_a_build_is_kept_by_revision_and_flags_and_a_second_run_builds_nothing(repo, tmp_path, monkeypatch):
    root = tmp_path / "envs"
    first = revisions.resolve("v1")
    made = revisions.build(first, "burtorch@v1", revisions.HOST, root)
    assert made.problem is None and not made.reused and Path(made.driver).is_file()
    assert "avx512=ON" in Path(made.driver).read_text()
    log = Path(made.path) / "build.log"
    again = revisions.build(first, "burtorch@v1", revisions.HOST, root)
    assert again.reused and again.path == made.path and log.stat().st_mtime_ns == log.stat().st_mtime_ns
    counting = revisions.build(first, "burtorch@v1", revisions.COUNTING, root)
    assert counting.path != made.path and "avx512=OFF" in Path(counting.driver).read_text()
    other = revisions.build(revisions.resolve("main"), "burtorch@main", revisions.HOST, root)
    assert other.path != made.path
    monkeypatch.setenv("CXXFLAGS", "-O1")
    assert revisions.build(first, "burtorch@v1", revisions.HOST, root).path != made.path
    assert git(repo.path, "status", "--porcelain") == ""  # the checkout was never touched


def test_a_revisions_python_row_runs_the_model_code_of_that_revision(repo, tmp_path):
    """Its module's calls change with it: the revision's engines/burtorch_models.py lies beside its
    module, and the Python row's training program is built by that one, not this checkout's."""
    models = repo.path / revisions.MODELS
    models.parent.mkdir()
    for version in ("3", "4"):
        models.write_text(f"def build(workload, folder):\n    return 'the models of commit {version}'\n")
        git(repo.path, "add", "-A")
        git(repo.path, "commit", "-qm", f"models {version}")
    assert revisions.resolve(revisions.WORKTREE).dirty is False
    models.write_text("def build(workload, folder):\n    return 'the models not committed'\n")
    assert revisions.resolve(revisions.WORKTREE).dirty, "a change of the model code is a change of the revision"
    runs = {}
    for rev in ("HEAD~1", "HEAD", revisions.WORKTREE):
        made = revisions.build(revisions.resolve(rev), f"burtorch@{rev}", revisions.HOST, tmp_path / "envs")
        code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); from engines import burtorch; "
                "print(burtorch.training_program(None, None, None))")
        site = next(Path(made.path).glob("lib/python*/site-packages"))
        assert list(site.glob("__pycache__/burtorch_models.*.pyc")), \
            "compiled at the build: no counted child compiles it (it would count that once)"
        runs[rev] = subprocess.run([made.python, "-c", code], capture_output=True, text=True).stdout.strip()
    assert runs == {"HEAD~1": "the models of commit 3", "HEAD": "the models of commit 4",
                    revisions.WORKTREE: "the models not committed"}


def test_a_revision_that_does_not_build_says_the_compilers_last_error(repo, tmp_path):
    made = revisions.build(revisions.resolve("broken"), "burtorch@broken", revisions.HOST, tmp_path / "envs")
    assert made.problem.startswith("did not build: src/driver/main.cpp:9:1: error: expected ; before }")
    assert "\n" not in made.problem


def test_the_counting_build_is_chosen_where_valgrind_lacks_the_hosts_isa(repo, tmp_path, monkeypatch):
    assert uncountable_isa({"avx2", "fma", "avx512f"}) == "AVX-512"
    assert uncountable_isa({"avx2", "fma"}) is None
    console = SimpleNamespace(print=lambda *a, **k: None)
    plan = SimpleNamespace(envs=("burtorch@v1",), env_dir=str(tmp_path / "envs"), upstream=None, instructions=True)
    monkeypatch.setattr(revisions, "uncountable_isa", lambda: None)
    assert revisions.make_all(plan, sys.executable, console)["burtorch@v1"].counting is None
    monkeypatch.setattr(revisions, "uncountable_isa", lambda: "AVX-512")
    env = revisions.make_all(plan, sys.executable, console)["burtorch@v1"]
    native, python = (env.bind(e.replace(env="burtorch@v1")) for e in ENGINES)
    assert native.executable == env.host.driver and native.counted_as.executable == env.counting.driver
    assert native.counted_as.note == revisions.COUNTED_LABEL and "AVX+FMA" in native.counted_as.note
    assert python.python == env.host.python and python.counted_as.python == env.counting.python
    plan.instructions = False  # no counting, no second build
    assert revisions.make_all(plan, sys.executable, console)["burtorch@v1"].counting is None


def test_versions_run_count_the_counting_build_time_the_host_build_and_survive_a_broken_one(
        repo, tmp_path, monkeypatch, fake_valgrind):  # noqa: F811
    monkeypatch.setattr(revisions, "uncountable_isa", lambda: "AVX-512")
    monkeypatch.setenv("FAKE_DRIVER_LOG", str(tmp_path / "driver.log"))
    out = tmp_path / "runs"
    code = main(["run", "--engine", "burtorch/eager/cpp/cpu", "--workload", "tiny", "--profile", "smoke",
                 "--trials", "2", "--env", "burtorch@v1", "--env", "burtorch@main", "--env", "burtorch@broken",
                 "--instructions", "--no-aa", "--no-report", "--out", str(out), "--env-dir", str(tmp_path / "envs")])
    assert code == 3  # burtorch@broken does not build: the run ran the rest and says not all it was asked ran
    run_dir = next(out.iterdir())
    trials = results.read_trials(run_dir)
    assert sorted({t["engine"].partition("@")[2] for t in trials}) == ["burtorch@main", "burtorch@v1"]
    assert all(t["status"] == "ok" and t["instructions_per_iter"] == 250.0 for t in trials)
    assert all(t["instructions_build"] == revisions.COUNTED_LABEL for t in trials)
    counted = fake_valgrind.read_text().splitlines()
    assert counted and all("-avx-fma-" in line for line in counted)  # valgrind ran the counting build only
    timed = (tmp_path / "driver.log").read_text().splitlines()
    assert timed and all("-host-" in line and "avx512=ON" in line for line in timed)  # time: the host build
    manifest = results.read_manifest(run_dir)
    broken = manifest["environments"]["burtorch@broken"]
    assert "error: expected ; before }" in broken["problem"]
    assert "error: expected ; before }" in manifest["unavailable"]["burtorch/eager/cpp/cpu@burtorch@broken"]
    assert manifest["environments"]["burtorch@v1"]["name"].startswith(f"{repo.first[:7]} first: the base")


def test_the_gate_fails_on_more_instructions_or_none_counted(fake_engines, fake_valgrind, tmp_path,  # noqa: F811
                                                             monkeypatch, capsys):
    def run(out: Path, *more: str) -> str:
        assert main(["run", "--engine", "fake/ok", "--workload", "tiny", "--profile", "smoke", "--trials", "2",
                     "--no-report", "--out", str(out), *more]) == 0
        return str(next(out.iterdir()))

    base, same, uncounted = run(tmp_path / "a", "--instructions"), run(tmp_path / "b", "--instructions"), \
        run(tmp_path / "c")
    assert main(["compare", base, same, "--fail-if-more-instructions", "0.5"]) == 0
    monkeypatch.setattr("harness.running.instructions.per_iteration", lambda short, long, n: 260.0)
    more = run(tmp_path / "d", "--instructions")  # 260 against 250: +4%
    capsys.readouterr()
    assert main(["compare", base, more, "--fail-if-more-instructions", "5"]) == 0
    assert main(["compare", base, more, "--fail-if-more-instructions", "0.5"]) == 1
    assert "more instructions by more than 0.5%: tiny fake/ok" in capsys.readouterr().err
    assert main(["compare", base, uncounted, "--fail-if-more-instructions", "0.5"]) == 1
    assert "no instruction count to gate on" in capsys.readouterr().err


def test_our_rows_in_no_environment_are_counted_on_a_build_of_this_checkout(repo, tmp_path, monkeypatch):
    from harness.envs.specs import bind

    monkeypatch.setattr(revisions, "uncountable_isa", lambda: "AVX-512")
    console = SimpleNamespace(print=lambda *a, **k: None)
    plan = SimpleNamespace(envs=(), env_dir=str(tmp_path / "envs"), upstream=None, instructions=True)
    made = revisions.make_all(plan, sys.executable, console, plain=True)
    native, python = ENGINES
    bound = bind({native.id: native, python.id + "@" + AA_COPY: python.replace(env=AA_COPY)}, made)
    assert bound[native.id].executable == native.executable  # timed: the installed driver, as without counting
    assert bound[native.id].counted_as.executable == made[revisions.CHECKOUT].counting.driver
    assert bound[python.id + "@" + AA_COPY].counted_as.python == made[revisions.CHECKOUT].counting.python  # its A/A copy too
    assert "this checkout" in bound[native.id].counted_as.note
    assert revisions.make_all(plan, sys.executable, console, plain=False) == {}


def test_a_resumed_run_refuses_a_revision_that_moved(repo):
    moved = revisions.OursEnv("burtorch@HEAD", revisions.resolve("HEAD"), None)
    manifest = {"environments": {"burtorch@HEAD": {"revision": {"commit": repo.first, "fingerprint": ""}}}}
    with pytest.raises(UsageError) as err:
        revisions.check_resumed(manifest, {"burtorch@HEAD": moved})
    assert f"burtorch@{repo.first[:12]}" in str(err.value)
    manifest["environments"]["burtorch@HEAD"]["revision"]["commit"] = repo.second
    revisions.check_resumed(manifest, {"burtorch@HEAD": moved})


def test_doctor_says_which_build_the_counts_come_from(fake_valgrind, monkeypatch):  # noqa: F811
    from harness.machine import doctor

    monkeypatch.setattr(doctor, "uncountable_isa", lambda: "AVX-512")
    assert "without AVX-512 (AVX+FMA), their time from the host build" in doctor.valgrind_finding().message
    monkeypatch.setattr(doctor, "uncountable_isa", lambda: None)
    assert "of the builds that are timed" in doctor.valgrind_finding().message


@pytest.mark.slow
def test_a_real_counting_build_counts_repeat_within_half_a_percent(tmp_path):
    """This repository's HEAD built for counting (the one real build), both of our rows counted twice
    under the real valgrind, as two runs would."""
    from harness.machine.valgrind import missing_valgrind
    from harness.planning.plan import make_plan
    from harness.running.runner import count_instructions
    from harness.running.spawn import ChildSpawner, RunOptions
    from workloads import load

    if missing_valgrind():
        pytest.skip(missing_valgrind())
    made = revisions.build(revisions.resolve("HEAD"), "burtorch@HEAD", revisions.COUNTING, tmp_path / "envs")
    assert made.problem is None, made.problem
    native, python = (revisions.from_build(e.replace(env="burtorch@HEAD"), made) for e in ENGINES)
    for engine in (native, python):
        (pt,) = make_plan([engine], [load("tiny")], "smoke", trials=1)
        counts = [count_instructions(pt, ChildSpawner(RunOptions(cpu=0)), None) for _ in range(2)]
        assert all(c.per_iter for c in counts), [c.reason for c in counts]
        assert abs(counts[0].per_iter / counts[1].per_iter - 1) < 0.005
