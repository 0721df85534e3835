"""A machine probe never outlives its command (issue 57: SIGTERM to `doctor` or `run` during the bandwidth probe left
`burtorch-bench --bandwidth` running under init, and the command ended "Terminated" without a word). The probe
goes through engines/children.py: the signal stops it and what it started, and the command says what it was
doing. The driver is a fake that sleeps (no core is measured)."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.paths import ROOT

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups and /proc: Linux")


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def test_sigterm_during_the_bandwidth_probe_stops_the_probe_and_says_what_it_was_doing(tmp_path):
    driver = tmp_path / "burtorch-bench"
    driver.write_text(f"#!/bin/sh\nsleep 300 & echo $! > {tmp_path / 'pid'}; wait\n")
    driver.chmod(0o755)
    code = ("from harness.machine import bandwidth\n"
            f"print(bandwidth.probe([4096], 0, {str(driver)!r}))")
    command = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
    deadline = time.monotonic() + 60
    while not (tmp_path / "pid").is_file() or not (tmp_path / "pid").read_text().strip():
        assert time.monotonic() < deadline and command.poll() is None, command.stderr.read()
        time.sleep(0.05)
    sleeper = int((tmp_path / "pid").read_text())
    command.send_signal(signal.SIGTERM)
    err = command.communicate(timeout=60)[1]
    assert command.returncode == 128 + signal.SIGTERM
    assert err.strip() == ("burtbench: stopped while measuring the memory bandwidth (burtorch-bench --bandwidth); "
                           "it and every process it started were stopped")
    deadline = time.monotonic() + 10
    while alive(sleeper) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(sleeper), "the probe's own child is gone too"



def test_a_stop_while_the_child_starts_stops_the_child_too(tmp_path):
    """SIGTERM inside subprocess.Popen, its child already running (a loaded host can run the child before
    Popen returns): the child is stopped once Popen gives its pid, not left behind."""
    pid_file = tmp_path / "pid"
    code = ("import os, signal, subprocess\n"
            "from engines import children\n"
            "real = subprocess.Popen\n"
            "def popen(*args, **kwargs):\n"
            "    proc = real(*args, **kwargs)\n"
            f"    while not (os.path.exists({str(pid_file)!r}) and os.path.getsize({str(pid_file)!r})): pass\n"
            "    os.kill(os.getpid(), signal.SIGTERM)\n"
            "    return proc\n"
            "subprocess.Popen = popen\n"
            f"children.run(['sh', '-c', 'sleep 300 & echo $! > {pid_file}; wait'], 'waiting', timeout=None)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 128 + signal.SIGTERM, done.stderr
    assert done.stderr.strip() == "burtbench: stopped while waiting; it and every process it started were stopped"
    sleeper = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while alive(sleeper) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(sleeper), "the child's own child is gone too"

def test_every_child_but_a_trial_starts_through_the_one_helper():
    """Probes, library timings, venvs, builds, git, installers and SLURM's clients: each started through
    engines/children.py, which stops it with its command and says what it was doing; a trial's child
    through harness/running/spawn.py, whose signals the trial loop handles."""
    starts = re.compile(r"subprocess\.(run|Popen|call|check_call|check_output)\(|os\.(system|popen|exec\w*|spawn\w*)\(")
    found = [f"{path.relative_to(ROOT)}:{number}" for package in ("harness", "engines")
             for path in (ROOT / package).rglob("*.py")
             for number, line in enumerate(path.read_text().splitlines(), 1) if starts.search(line)]
    assert sorted(where.split(":")[0] for where in found) == ["engines/children.py", "harness/running/spawn.py"], found
