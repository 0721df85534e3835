"""A child never outlives the command that started it (engines/children.py for builds, installs and git;
harness/running/spawn.py for trials): on SIGTERM, SIGINT or SIGHUP the command stops its child and what
the child started, and says in one line what it was doing.

The children are fakes: a shell that starts a long `sleep` (a compiler under cargo, in a real build) and
writes its id, so that the test can look for it once the command is gone.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engines import burn
from harness.paths import ROOT

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups and /proc: Linux")

SLEEPER = "sleep 300 & echo $! > \"$SLEEPER_PID\"; wait"


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def gone(pid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)


def wait_for(path: Path, within: float = 60.0) -> int:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if path.is_file() and path.read_text().strip():
            return int(path.read_text())
        time.sleep(0.05)
    raise AssertionError(f"the fake child never wrote {path}")


def stop(code: str, tmp_path: Path, sig: int, env: dict | None = None) -> tuple[int, str, int]:
    """Runs `code` in a Python child of the test, sends it `sig` once its sleeper runs: (exit code, stderr,
    the sleeper's id)."""
    pid_file = tmp_path / "sleeper.pid"
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "SLEEPER_PID": str(pid_file), **(env or {})})
    sleeper = wait_for(pid_file)
    time.sleep(0.2)  # the command is now waiting on its child
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    return proc.returncode, err, sleeper


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: signal.Signals(s).name)
def test_a_signal_stops_the_child_and_what_it_started_and_says_what_was_being_done(tmp_path, sig):
    code = ("from engines import children; "
            f"children.run(['sh', '-c', {SLEEPER!r}], 'building a fake driver (sleep)', 600)")
    returncode, err, sleeper = stop(code, tmp_path, sig)
    assert returncode == 128 + sig
    assert err.strip().splitlines() == ["burtbench: stopped while building a fake driver (sleep); it and every "
                                        "process it started were stopped"], err
    assert gone(sleeper), "the child's child outlived the command"


def test_a_timeout_stops_what_the_child_started_too(tmp_path):
    from engines import children

    pid_file = tmp_path / "sleeper.pid"
    with pytest.raises(subprocess.TimeoutExpired):
        children.run(["sh", "-c", SLEEPER], "waiting", 1.0, env={**os.environ, "SLEEPER_PID": str(pid_file)})
    assert gone(wait_for(pid_file))


def test_sigterm_while_cargo_builds_burn_stops_cargo_and_says_so(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cargo = bin_dir / "cargo"
    cargo.write_text(f"#!/bin/sh\n{SLEEPER}\n")
    cargo.chmod(0o755)
    # Flags of their own: a build folder of their own, which no real build has filled.
    flags = f"--cfg burtbench_test_{os.getpid()}_{tmp_path.name}"
    code = "from engines import burn; import shutil, atexit; atexit.register(shutil.rmtree, burn.build_dir(), True); " \
           "burn.build_driver()"
    # Burn's crates where cargo would find them offline (its download cache), so the build reaches cargo.
    cached = tmp_path / "cargo-home" / "registry" / "cache" / "index"
    cached.mkdir(parents=True)
    (cached / f"{burn.PINNED_CRATE}-{burn.burn_version()}.crate").write_bytes(b"")
    returncode, err, sleeper = stop(code, tmp_path, signal.SIGTERM,
                                    {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "RUSTFLAGS": flags,
                                     "CARGO_HOME": str(tmp_path / "cargo-home")})
    assert returncode == 143
    assert err.strip().splitlines()[-1].startswith("burtbench: stopped while building Burn's driver (cargo);"), err
    assert gone(sleeper), "cargo's work outlived the command"


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def descendants(pid: int) -> set[int]:
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found, todo = set(), [pid]
    while todo:
        of = todo.pop()
        children = [p for p, parent in parents.items() if parent == of]
        found.update(children)
        todo += children
    return found


def test_sighup_during_a_trial_stops_its_child_and_the_run_says_it_was_interrupted(fake_engines, tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "harness.commands.cli", "run", "--workload", "tiny", "--profile",
                             "smoke", "--engine", "fake/hang", "--timeout", "300", "--no-report", "--out",
                             str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline, trial = time.monotonic() + 60, set()
    while not trial and time.monotonic() < deadline:
        time.sleep(0.5)
        # The trial's own worker: the run's machine probes start children of their own before it.
        trial = {pid for pid in descendants(proc.pid) if b"fake/hang" in cmdline(pid)}
    assert trial, "the trial's child never started"
    proc.send_signal(signal.SIGHUP)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted" in out and "--resume" in out
    assert all(gone(pid) for pid in trial), "the trial's child outlived the run"
