"""Every child that is not a trial (a build's cargo or CMake, an installer, git, a machine probe, a library's
timing child) dies with the command that
started it. It starts in a process group of its own, so that a kill reaches what it started too (cargo's
rustc, make's compilers); a SIGTERM, SIGINT or SIGHUP to the command, or the child's timeout, kills that
group, and a signal then ends the command with one line saying what it was doing. (A trial's child:
harness/running/spawn.py, whose signals the trial loop handles.)
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

STOPPING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGHUP") if hasattr(signal, name))


class _Stopped(BaseException):
    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def run(cmd: list[str], doing: str, timeout: float | None, input=None, **popen) -> subprocess.CompletedProcess:
    """subprocess.run's call and answer (TimeoutExpired past `timeout`; `input` written to its stdin); `doing`
    says what the child is for, as in "building Burn's driver (cargo)"."""
    if popen.pop("capture_output", False):
        popen.update(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if input is not None:
        popen["stdin"] = subprocess.PIPE
    group = {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP} if os.name == "nt" else {"start_new_session": True}
    previous, proc, pending = {}, None, []
    if threading.current_thread() is threading.main_thread():  # only its handlers can be set, and it hears them

        def stop(signum, _frame):
            if proc is None:  # inside Popen, whose child may already run: stopped once Popen gives its pid
                pending.append(signum)
                return
            raise _Stopped(signum)

        # Before the child starts: a signal between its start and the handlers would end us and leave it running.
        previous = {sig: signal.signal(sig, stop) for sig in STOPPING}
    try:
        proc = subprocess.Popen(cmd, **group, **popen)
        if pending:
            raise _Stopped(pending[0])
        out, err = proc.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        proc.communicate()
        raise
    except _Stopped as stopped:
        if proc is not None:
            kill_group(proc)
            proc.communicate()
        print(f"burtbench: stopped while {doing}; it and every process it started were stopped", file=sys.stderr)
        raise SystemExit(128 + stopped.signum) from None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if proc is not None and proc.returncode is None:  # any other way out leaves no child behind either
            kill_group(proc)
            proc.wait()
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def kill_group(proc: subprocess.Popen) -> None:
    """The child and every process it started (a trial's child too: harness/running/spawn.py)."""
    try:
        if os.name == "nt":
            proc.kill()
        else:
            os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
