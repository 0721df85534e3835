"""The runner survives misbehaving engines and records each with its status; nothing finished is lost."""
import ast
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from harness.commands.cli import main
from harness.store import results
from tests.tests_support import worker_argv

ROOT = Path(__file__).resolve().parent.parent


def run_cli(*argv):
    return main(["run", "--workload", "tiny", "--profile", "smoke", *argv])


def only_run(out: Path) -> Path:
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    return run_dir


def by_engine(run_dir: Path) -> dict:
    return {t["engine"]: t for t in results.read_trials(run_dir)}


def test_faulty_engines_are_recorded_and_the_rest_still_run(fake_engines, tmp_path):
    code = run_cli("--engine", "fake/ok,fake/wrong,fake/crash,fake/garbage,fake/missing,fake/absent,fake/unstartable",
                   "--timeout", "60", "--out", str(tmp_path))
    # fake/missing fails to import in its child: its trial did not run, and the run says so (exit 1).
    assert code == 1
    run_dir = only_run(tmp_path)
    trials = by_engine(run_dir)

    ok = trials["fake/ok/python/cpu"]
    assert ok["status"] == "ok" and ok["check"]["ok"] is True
    assert ok["per_iter_s"]["n"] > 0 and ok["loop_time_s"] > 0
    assert ok["init_time_s"] > 0 and ok["wall_time_s"] > 0 and ok["cpu_time_s"] > 0
    assert ok["peak_resident_bytes"] > 1 << 20 and ok["peak_virtual_bytes"] >= ok["peak_resident_bytes"]
    assert ok["cpu_clocks"] is None or ok["cpu_clocks"] > 0
    assert ok["cpu_clocks_source"]

    wrong = trials["fake/wrong/python/cpu"]
    assert wrong["status"] == "ok" and wrong["check"]["ok"] is False
    assert wrong["check"]["max_rel_err"] > 1e-12

    crash = trials["fake/crash/python/cpu"]
    assert crash["status"] == "failed" and crash["signal"] == signal.SIGKILL
    assert "SIGKILL" in crash["reason"]

    garbage = trials["fake/garbage/native/cpu"]
    assert garbage["status"] == "failed" and "unparseable" in garbage["reason"]

    unstartable = trials["fake/unstartable/native/cpu"]
    assert unstartable["status"] == "failed" and "cannot start" in unstartable["reason"]

    missing = trials["fake/missing/python/cpu"]
    assert missing["status"] == "unavailable" and "no_such_framework_xyz" in missing["reason"]

    manifest = results.read_manifest(run_dir)
    assert "fake/absent/python/cpu" not in trials
    assert "not installed" in manifest["unavailable"]["fake/absent/python/cpu"]
    assert manifest["status"].startswith("incomplete: 1 of 6 planned trials not run (fake/missing/python/cpu "
                                         "unavailable: init run: ModuleNotFoundError")


def test_hang_is_killed_at_the_timeout(fake_engines, tmp_path):
    start = time.monotonic()
    assert run_cli("--engine", "fake/hang,fake/ok", "--timeout", "4", "--out", str(tmp_path)) == 0
    assert time.monotonic() - start < 60
    trials = by_engine(only_run(tmp_path))
    assert trials["fake/hang/python/cpu"]["status"] == "timeout"
    assert trials["fake/ok/python/cpu"]["status"] == "ok"


def test_memory_cap_records_oom(fake_engines, tmp_path):
    assert run_cli("--engine", "fake/hog", "--mem-limit", "2G", "--out", str(tmp_path)) == 0
    (trial,) = results.read_trials(only_run(tmp_path))
    assert trial["status"] == "oom"


def test_trials_are_interleaved_across_engines(fake_engines, tmp_path):
    assert run_cli("--engine", "fake/ok,fake/wrong", "--trials", "2", "--out", str(tmp_path)) == 0
    trials = results.read_trials(only_run(tmp_path))
    # In rounds: both engines run trial 0 (in the round's seeded random order) before either runs trial 1.
    assert [t["trial"] for t in trials] == [0, 0, 1, 1]
    assert all({t["engine"].split("/")[1] for t in trials[i:i + 2]} == {"ok", "wrong"} for i in (0, 2))
    # Outside the paper profile the init run is measured once per point, with its first trial.
    assert [t["init_time_s"] is not None for t in trials] == [True, True, False, False]


def test_every_trial_is_pinned_to_the_requested_core(fake_engines, tmp_path):
    cpu = max(os.sched_getaffinity(0))
    assert run_cli("--engine", "fake/ok", "--cpu", str(cpu), "--out", str(tmp_path)) == 0
    run_dir = only_run(tmp_path)
    assert results.read_trials(run_dir)[0]["cpu"] == cpu
    assert results.read_manifest(run_dir)["cpu"] == cpu


def test_resume_runs_only_missing_trials(fake_engines, tmp_path):
    assert run_cli("--engine", "fake/ok,fake/wrong", "--trials", "2", "--out", str(tmp_path)) == 0
    run_dir = only_run(tmp_path)
    path = run_dir / results.TRIALS_FILE
    lines = path.read_text().splitlines(keepends=True)
    # Power loss: the last trial is gone and the one before it is torn mid-line.
    path.write_text("".join(lines[:2]) + lines[2][: len(lines[2]) // 2])
    assert main(["run", "--resume", str(run_dir)]) == 0
    keys = [(t["engine"], t["trial"]) for t in results.read_trials(run_dir)]
    assert len(keys) == len(set(keys)) == 4


def test_torn_last_line_is_reported_once_and_ignored(tmp_path, capsys):
    good = results.Trial(engine="e/m/l/d", framework="e", mode="m", language="l", device="d",
                         workload="tiny", params={}, trial=0)
    (tmp_path / results.TRIALS_FILE).write_text(good.to_json() + "\n" + good.to_json()[:40])
    assert len(results.read_trials(tmp_path)) == 1
    assert capsys.readouterr().err.count("incomplete trial line") == 1


def test_a_full_disk_stops_the_run_with_a_clear_error(fake_engines, tmp_path, monkeypatch, capsys):
    real_fsync, calls = os.fsync, []

    def disk_fills_after_the_manifest(fd):
        calls.append(os.readlink(f"/proc/self/fd/{fd}"))
        if len(calls) > 1:
            raise OSError(28, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", disk_fills_after_the_manifest)
    assert run_cli("--engine", "fake/ok,fake/wrong", "--trials", "3", "--out", str(tmp_path)) == 1
    err = capsys.readouterr().err
    assert "No space left on device" in err and err.count("\n") == 1
    trial_writes = [path for path in calls if path.endswith("trials.jsonl")]
    assert len(trial_writes) == 1, "the run went on measuring after the disk filled"


def test_sigterm_stops_the_run_keeps_finished_trials_and_marks_the_manifest(fake_engines, tmp_path):
    from harness.planning.plan import round_order
    from workloads import load

    # A seed whose first round runs the ok engine before the hanging one.
    point = load("tiny").points({}, "smoke")[0]
    seed = next(s for s in range(100) if round_order(["ok", "hang"], s, 0, "tiny", point)[0] == "ok")
    proc = subprocess.Popen([sys.executable, "-m", "harness.commands.cli", "run", "--workload", "tiny,small",
                             "--profile", "smoke", "--engine", "fake/ok,fake/hang", "--timeout", "300",
                             "--seed", str(seed), "--out", str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    trials_file = None
    while time.monotonic() < deadline:
        found = list(tmp_path.glob("*/trials.jsonl"))
        if found and found[0].read_text().strip():
            trials_file = found[0]
            break
        time.sleep(0.2)
    assert trials_file is not None, "the first trial never reached disk"
    time.sleep(1)  # the hang engine's trial is now in flight
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 130
    run_dir = trials_file.parent
    assert results.read_manifest(run_dir)["status"] == "interrupted"
    assert [t["engine"] for t in results.read_trials(run_dir)] == ["fake/ok/python/cpu"]
    assert not (run_dir / ".lock").exists()


def test_manifest_says_where_and_how_the_run_was_made(fake_engines, tmp_path):
    assert run_cli("--engine", "fake/ok", "--out", str(tmp_path)) == 0
    manifest = results.read_manifest(only_run(tmp_path))
    assert manifest["plan"]["profile"] == "smoke" and manifest["argv"]
    assert manifest["machine"]["cpu_model"] and manifest["machine"]["logical_cores"] >= 1
    assert "governor" in manifest["machine"] and "smt" in manifest["machine"]
    assert manifest["frameworks"]["burtbench"] and "torch" in manifest["frameworks"]
    assert manifest["python"]["runner_version"].count(".") == 2
    assert manifest["plan"]["engines"] == ["fake/ok/python/cpu"]
    assert any(f["topic"] for f in manifest["doctor"])
    assert manifest["finished_at"] and manifest["status"] == "complete"


def test_adaptive_adds_trials_to_noisy_points_up_to_the_cap(fake_engines, tmp_path):
    # One trial cannot show a point is quiet (3 give an interval): it gets trials up to --max-trials.
    assert run_cli("--engine", "fake/ok", "--trials", "1", "--adaptive", "--max-trials", "3",
                   "--noise-threshold", "0.0001", "--out", str(tmp_path)) == 0
    assert sorted(t["trial"] for t in results.read_trials(only_run(tmp_path))) == [0, 1, 2]


def test_adaptive_stops_when_the_interval_is_tight(fake_engines, tmp_path):
    assert run_cli("--engine", "fake/ok", "--trials", "3", "--adaptive", "--max-trials", "6",
                   "--noise-threshold", "1000", "--out", str(tmp_path)) == 0
    assert len(results.read_trials(only_run(tmp_path))) == 3


def test_energy_reading_brackets_the_measured_child(fake_engines):
    from engines import all_engines
    from harness.measure import affinity
    from harness.planning.plan import make_plan
    from harness.running.runner import measure
    from harness.running.spawn import ChildSpawner, RunOptions
    from workloads import load

    class Meter:
        calls = []

        def start(self):
            self.calls.append("start")

        def stop(self):
            self.calls.append("stop")
            return {"energy_total_j": 3.0, "energy_os_j": 1.0, "energy_task_j": 2.0,
                    "energy_source": "fake", "energy_window_s": 0.5}

    (pt,) = make_plan([all_engines()["fake/ok/python/cpu"]], [load("small")], "smoke")
    spawner = ChildSpawner(RunOptions(cpu=affinity.default_cpu()))
    trial = measure(pt, spawner, (None, "no rate"), None, Meter())
    assert Meter.calls == ["start", "stop"]
    assert (trial.energy_total_j, trial.energy_task_j, trial.energy_os_j) == (3.0, 2.0, 1.0)
    assert trial.energy_source == "fake" and trial.extra["energy_window_s"] == 0.5


def test_python_option_runs_the_workers_under_another_interpreter(fake_engines, tmp_path, monkeypatch):
    import site

    # The same interpreter reached by another path, outside this venv: it sees this venv's
    # packages only because we say so, as another venv would have its own.
    other = tmp_path / "other-python"
    other.symlink_to(Path(sys.executable).resolve())
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([os.environ["PYTHONPATH"], *site.getsitepackages()]))
    out = tmp_path / "out"
    assert run_cli("--engine", "fake/ok", "--python", str(other), "--out", str(out)) == 0
    run_dir = only_run(out)
    (trial,) = results.read_trials(run_dir)
    assert trial["status"] == "ok" and trial["check"]["ok"]
    manifest = results.read_manifest(run_dir)
    assert manifest["options"]["python"] == str(other)
    assert manifest["python"]["executable"] == str(other) and manifest["frameworks"]["torch"]


# Modules a bare micrograd script never imports, each worth 0.4 to 20 MiB of a row's peak memory.
NOT_BEFORE_THE_PEAKS = {"numpy", "dataclasses", "inspect", "typing", "pathlib", "json", "argparse", "threading",
                        "importlib.metadata", "workloads.base", "harness.analysis.stats", "platform"}


def test_a_graph_worker_imports_nothing_heavy_before_its_peaks_are_read():
    argv = worker_argv("micrograd/eager/python/cpu", "tiny", {"a": -41.0, "b": 2.0}, "--iterations", "5")
    # Record the modules loaded when the worker reads its peaks, then let it finish (no runpy: it imports typing).
    code = ("import sys\n"
            "from harness.measure import memory\n"
            "read = memory.peak_memory\n"
            "def spy():\n"
            "    print(sorted(sys.modules), file=sys.stderr)\n"
            "    return read()\n"
            "memory.peak_memory = spy\n"
            f"sys.argv = {argv[1:]!r}\n"
            "exec(compile(open(sys.argv[0]).read(), sys.argv[0], 'exec'), {'__name__': '__main__', '__file__': sys.argv[0]})\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    loaded = set(ast.literal_eval(proc.stderr.strip().splitlines()[0]))
    assert "micrograd.engine" in loaded
    assert loaded & NOT_BEFORE_THE_PEAKS == set()


def test_a_number_no_measure_can_be_is_dropped_before_the_trial_is_written(fake_engines, tmp_path):
    """What a child (or a meter beside it) reports goes through the trial line's declaration before it is
    written: the impossible number is dropped alone and named; the trial and its time are kept."""
    from engines import all_engines
    from harness.measure import affinity
    from harness.planning.plan import make_plan
    from harness.running.runner import measure
    from harness.running.spawn import ChildSpawner, RunOptions
    from workloads import load

    class Meter:
        def start(self):
            pass

        def stop(self):
            return {"energy_total_j": -5.0, "energy_source": "a meter that ran backwards"}

    (pt,) = make_plan([all_engines()["fake/ok/python/cpu"]], [load("small")], "smoke")
    trial = measure(pt, ChildSpawner(RunOptions(cpu=affinity.default_cpu())), (None, "no rate"), None, Meter())
    assert trial.status == "ok" and trial.per_iter_s["median"] > 0 and trial.energy_total_j is None
    assert trial.extra["dropped"].startswith("energy_total_j: ")
    results.append_trial(tmp_path, trial)
    said = []
    (back,) = results.read_trials(tmp_path, said.append)
    assert said == [] and back["energy_total_j"] is None and back["energy_source"] == "a meter that ran backwards"
