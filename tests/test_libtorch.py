"""The LibTorch engine: its driver builds against the torch wheel on first use (cached in
build/libtorch/), speaks the native drivers' JSON-line protocol and matches the references."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from importlib import metadata

import pytest

from engines import all_engines, file_lock, libtorch
from workloads import load

ENGINE = "libtorch/eager/cpp/cpu"
# The keys harness/running/worker.py writes; the runner treats every child alike.
WORKER_KEYS = {"status", "outputs", "precision", "iterations", "warmup", "loop_time_s", "per_iter_s", "samples_s",
               "framework_version", "cpu_clocks", "cpu_clocks_source", "loop_cpu_time_s", "cpu_time_s",
               "peak_resident_bytes", "peak_virtual_bytes", "peak_private_bytes", "peak_private_source"}


@pytest.fixture(scope="module")
def driver() -> str:
    spec = all_engines()[ENGINE]
    why = spec.prepare()
    assert why is None, why
    assert spec.unavailable_reason() is None
    return spec.executable


def run(driver: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([driver, *args], capture_output=True, text=True, timeout=120)


def result_of(driver: str, workload: str, *args: str, iterations: int = 200) -> dict:
    point = load(workload).points()[0]
    params = [arg for name, value in point.items() for arg in ("--param", f"{name}={value!r}")]
    done = run(driver, workload, "--iterations", str(iterations), "--warmup", "3", "--blocks", "10", *args, *params)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout
    return json.loads(lines[0])


@pytest.mark.parametrize("timing", ["paper", "lean"])
@pytest.mark.parametrize("workload", ["tiny", "small", "energy"])
def test_outputs_match_the_reference_under_both_timings(driver, workload, timing):
    result = result_of(driver, workload, "--timing", timing)
    w = load(workload)
    check = w.check(w.points()[0], result["outputs"], result["precision"])
    assert check.ok, check.as_dict()
    assert result["timed_as"] == timing  # leaves made per step under paper (workloads/timed_regions.csv)


def test_save_load_has_one_loop_and_says_so(driver):
    assert result_of(driver, "save_load", "--timing", "paper", iterations=5)["timed_as"] == "lean"


def test_the_line_follows_the_worker_protocol(driver):
    result = result_of(driver, "small", iterations=100)
    assert WORKER_KEYS <= set(result)
    assert result["status"] == "ok" and result["precision"] == "fp64"
    assert result["iterations"] == 100 and result["warmup"] == 3 and result["per_iter_s"]["n"] == 10
    assert result["framework_version"] == metadata.version("torch").split("+")[0]
    assert result["cpu_clocks"] is None and result["cpu_clocks_source"]
    assert result["cpu_time_s"] >= result["loop_cpu_time_s"] >= 0


def test_bad_input_is_a_usage_error(driver):
    unknown = run(driver, "mlp", "--iterations", "10")
    assert unknown.returncode == 2 and "unknown workload 'mlp'" in unknown.stderr
    bad_param = run(driver, "tiny", "--iterations", "10", "--param", "z=1")
    assert bad_param.returncode == 2 and "no parameter 'z'" in bad_param.stderr
    bad_timing = run(driver, "tiny", "--iterations", "10", "--timing", "fast")
    assert bad_timing.returncode == 2 and len(bad_timing.stderr.splitlines()) == 1 and "--timing" in bad_timing.stderr
    assert unknown.stdout == bad_param.stdout == bad_timing.stdout == ""


@pytest.fixture
def scratch_build(tmp_path, monkeypatch):
    """The build folder moved to tmp_path, so these tests neither use nor spoil the real cache."""
    build = tmp_path / "build"
    monkeypatch.setattr(libtorch, "BUILD_DIR", build)
    monkeypatch.setattr(libtorch, "EXECUTABLE", build / "libtorch-bench")
    monkeypatch.setattr(libtorch, "STATE_FILE", build / "state.json")
    monkeypatch.setattr(libtorch, "BUILD_LOG", build / "build.log")
    monkeypatch.setattr(libtorch, "BUILD_LOCK", build.with_name("libtorch.lock"))
    return build


def test_listing_does_not_build(scratch_build):
    assert all_engines()[ENGINE].unavailable_reason() is None
    assert not scratch_build.exists()


def test_a_failed_build_is_remembered_with_its_reason(scratch_build, tmp_path, monkeypatch):
    sources = tmp_path / "sources"
    shutil.copytree(libtorch.SOURCE_DIR, sources)
    (sources / "main.cpp").write_text('#error "deliberately broken"\n')
    monkeypatch.setattr(libtorch, "SOURCE_DIR", sources)
    spec = all_engines()[ENGINE]
    reason = spec.prepare()
    assert reason is not None and "LibTorch driver build failed" in reason and "deliberately broken" in reason
    # Listing and the next run report the remembered failure without building again.
    log_written = (scratch_build / "build.log").stat().st_mtime_ns
    assert spec.unavailable_reason() == reason
    assert spec.prepare() == reason
    assert (scratch_build / "build.log").stat().st_mtime_ns == log_written


def test_without_torch_the_engine_is_unavailable(monkeypatch):
    monkeypatch.setattr(libtorch, "torch_cmake_prefix", lambda: None)
    assert all_engines()[ENGINE].unavailable_reason() == "python module 'torch' is not installed"


def test_a_second_build_waits_for_the_first(scratch_build, monkeypatch, capfd):
    # Another process (another terminal's run) holds the build lock until told to let go.
    hold = ("import sys; from pathlib import Path; from engines import file_lock\n"
            "with file_lock.exclusive(Path(sys.argv[1]), 'unused'):\n"
            "    print('held', flush=True); sys.stdin.readline()")
    holder = subprocess.Popen([sys.executable, "-c", hold, str(libtorch.BUILD_LOCK)], cwd=libtorch.PROJECT_ROOT,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    monkeypatch.setattr(libtorch, "torch_cmake_prefix", lambda: None)  # the build itself would end at once
    results = []
    second = threading.Thread(target=lambda: results.append(libtorch.build_driver()))
    second.start()
    second.join(timeout=1.0)
    assert second.is_alive() and results == []  # still waiting: it did not build beside the first
    holder.communicate("go\n", timeout=30)
    second.join(timeout=30)
    assert results == ["python module 'torch' is not installed"]
    assert "waiting for another process's build to finish" in capfd.readouterr().err


def test_the_windows_lock_keeps_asking_and_unlocks(tmp_path, monkeypatch, capsys):
    # msvcrt.locking(LK_LOCK) gives up after about 10 s: a long build must not make the next one fail.
    calls = []

    class FakeMsvcrt:
        LK_LOCK, LK_NBLCK, LK_UNLCK = "lock", "try", "unlock"

        @staticmethod
        def locking(fd, mode, nbytes):
            calls.append(mode)
            if calls.count("try") + calls.count("lock") <= 2:  # held elsewhere: the try and one long wait fail
                raise OSError(36, "Resource deadlock avoided")

    monkeypatch.setitem(sys.modules, "msvcrt", FakeMsvcrt)
    monkeypatch.setattr(libtorch.os, "name", "nt")
    with file_lock.exclusive(tmp_path / "build.lock", "waiting for the other build"):
        assert calls == ["try", "lock", "lock"]
    assert calls[-1] == "unlock"
    assert "waiting for the other build" in capsys.readouterr().err
