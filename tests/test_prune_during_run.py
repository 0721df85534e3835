"""Issue 37's data-loss case, exactly: `burtbench envs --prune all` while a run uses the environment.

With the lock, prune keeps the environment and says so, and the run completes every trial. With
the lock defeated (a platform without it, or a user's rm -rf), the run says it is incomplete, how
many trials it lost and why, and exits non-zero; then --resume makes the environment again and runs
every missing trial, however the manifest recorded the engine's unavailability.
"""
import subprocess
import sys

import pytest
from test_envs import ENGINE, OLD, fakefw, only_run, run_args, wheelhouse  # noqa: F401 (fixtures)

from harness.commands.cli import main
from harness.envs import cache
from harness.paths import ROOT
from harness.running import orchestrator
from harness.store import results

TRIALS = 4


def prune_during_trial(monkeypatch, env_dir, at: int, outcome: list):
    """Fault injection: `burtbench envs --prune all`, a separate process, right after trial `at` ran."""
    measure, done = orchestrator.measure, []

    def measured(*args, **kwargs):
        trial = measure(*args, **kwargs)
        done.append(trial)
        if len(done) == at:
            outcome.append(subprocess.run([sys.executable, "-m", "harness.commands.cli", "envs", "--env-dir",
                                           str(env_dir), "--prune", "all"], capture_output=True, text=True,
                                          cwd=ROOT, timeout=120))
        return trial

    monkeypatch.setattr(orchestrator, "measure", measured)


def args_for(tmp_path, wheelhouse):  # noqa: F811 (the fixture's value)
    args = run_args(tmp_path / "out", tmp_path / "envs", wheelhouse, OLD)
    return [a if a != "2" else str(TRIALS) for a in args]  # --trials 4


def test_prune_during_a_run_keeps_the_environment_and_the_run_completes(fakefw, wheelhouse, tmp_path, monkeypatch,  # noqa: F811
                                                                        capfd):
    outcome = []
    prune_during_trial(monkeypatch, tmp_path / "envs", 1, outcome)
    assert main(args_for(tmp_path, wheelhouse)) == 0
    (prune,) = outcome
    assert prune.returncode == 0 and "deleted" not in prune.stdout
    assert prune.stderr.count("\n") == 1 and "in use by a run" in prune.stderr, prune.stderr
    run_dir = only_run(tmp_path / "out")
    trials = results.read_trials(run_dir)
    assert len(trials) == TRIALS and all(t["status"] == "ok" for t in trials)
    assert results.read_manifest(run_dir)["status"] == "complete"
    # Once the run has ended, nothing holds it: prune deletes it.
    assert main(["envs", "--env-dir", str(tmp_path / "envs"), "--prune", "all"]) == 0
    assert not any((tmp_path / "envs").iterdir())


def test_an_environment_deleted_under_a_run_is_said_and_resume_completes_every_trial(
        fakefw, wheelhouse, tmp_path, monkeypatch, capfd):  # noqa: F811
    outcome = []
    with monkeypatch.context() as without_lock:
        # The run takes no lock (as where the platform has none): the prune process's own lock is free.
        without_lock.setattr(cache.EnvLock, "take", lambda self, exclusive, wait=True: True)
        prune_during_trial(without_lock, tmp_path / "envs", 1, outcome)
        capfd.readouterr()
        code = main(args_for(tmp_path, wheelhouse))
    out, err = capfd.readouterr()
    assert "deleted" in outcome[0].stdout  # the environment was deleted under the run
    run_dir = only_run(tmp_path / "out")
    status = results.read_manifest(run_dir)["status"]
    print(f"the run: exit {code}, status {status!r}", file=sys.__stderr__)
    assert code == orchestrator.EXIT_INCOMPLETE
    assert status.startswith(f"incomplete: {TRIALS - 1} of {TRIALS} planned trials not run ({ENGINE}@{OLD} unavailable:")
    errors = [line for line in err.splitlines() if line.startswith("burtbench: error:")]
    assert len(errors) == 1 and "burtbench run --resume" in errors[0] and "\x1b" not in err
    assert "is gone" not in out  # the reasons are on stderr, one line each
    assert all(line.startswith("burtbench: ") for line in err.splitlines() if "is gone" in line)

    code = main(["run", "--resume", str(run_dir), "--no-report"])
    out, err = capfd.readouterr()
    manifest = results.read_manifest(run_dir)
    print(f"the resume: exit {code}, status {manifest['status']!r}", file=sys.__stderr__)
    assert code == 0 and manifest["status"] == "complete", err
    assert f"resuming: {TRIALS - 1} of {TRIALS} trials missing" in out
    assert manifest["unavailable"] == {}
    assert not manifest["environments"][OLD]["reused"]  # made again: the cause is gone
    trials = results.read_trials(run_dir)
    assert sorted(t["trial"] for t in trials) == list(range(TRIALS))
    assert all(t["status"] == "ok" and t["check"]["ok"] for t in trials)


def test_a_resume_whose_cause_is_still_there_says_so_and_stays_incomplete(fake_engines, tmp_path, capfd):
    # fake/missing cannot import in its child: every resume says why in one line and exits non-zero.
    argv = ["run", "--engine", "fake/ok,fake/missing", "--workload", "tiny", "--profile", "smoke", "--trials", "2",
            "--no-report", "--out", str(tmp_path)]
    assert main(argv) == orchestrator.EXIT_INCOMPLETE
    run_dir = only_run(tmp_path)
    capfd.readouterr()
    assert main(["run", "--resume", str(run_dir), "--no-report"]) == orchestrator.EXIT_INCOMPLETE
    err = capfd.readouterr().err
    assert results.read_manifest(run_dir)["status"].startswith("incomplete: 2 of 4 planned trials not run")
    assert sum(line.startswith("burtbench: error: run incomplete") for line in err.splitlines()) == 1
    # The run recorded one unavailable trial and skipped the other; the resume's record replaced the
    # first (read once, never counted twice, no warning of a copy).
    assert (run_dir / results.TRIALS_FILE).read_text().count("\n") == 4
    assert sorted(t["status"] for t in results.read_trials(run_dir)) == ["ok", "ok", "unavailable"]
    assert "copy" not in err


@pytest.mark.skipif(sys.platform == "win32", reason="fcntl's shared locks")
def test_two_runs_share_an_environment_and_a_remake_waits_for_both(tmp_path):
    from contextlib import ExitStack

    folder = tmp_path / "env"
    with ExitStack() as first, ExitStack() as second:
        cache.hold(folder, first)
        cache.hold(folder, second)  # a second run using it: shared, no wait
        probe = cache.EnvLock(folder)
        assert not probe.take(exclusive=True, wait=False)  # neither prune nor a remake gets it
        probe.close()
    probe = cache.EnvLock(folder)
    assert probe.take(exclusive=True, wait=False)
    probe.close()


def test_an_environment_the_os_will_not_delete_is_kept_with_why(tmp_path, monkeypatch, capfd):
    # Windows takes no shared lock here, but refuses to delete a running interpreter's files.
    folder = tmp_path / "envs" / "autograd-1.7.0-py3.11.7-0123456789ab"
    folder.mkdir(parents=True)

    def refuse(path):
        raise PermissionError(13, "The process cannot access the file because it is being used by another process")

    monkeypatch.setattr(cache.shutil, "rmtree", refuse)
    assert main(["envs", "--env-dir", str(tmp_path / "envs"), "--prune", "all"]) == 0
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and "kept" in err and "cannot delete it" in err and "being used" in err
    assert folder.exists()
