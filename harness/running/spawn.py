"""Child processes of a run: spawned pinned to one core, with one thread everywhere, a memory
cap, a timeout, their output drained, their CPU time taken from wait4; a signal to the runner
stops the child in flight (and anything it spawned).
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

from engines.children import STOPPING, kill_group
from harness.measure import affinity, limits, memory
from harness.store.run_plan import DEFAULT_TIMING

# A child dead of one of these may have been stopped with the runner (a job cancelled); the runner
# then sees the signal itself within this time.
STOP_SIGNALS = {-sig for sig in STOPPING} if os.name != "nt" else set()
SIGNAL_GRACE_S = 2.0
# Single-threaded settings every child gets, whatever its framework.
SINGLE_THREAD_ENV = {
    "OMP_NUM_THREADS": "1",
    "RAYON_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "VECLIB_MAXIMUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
    "TF_NUM_INTRAOP_THREADS": "1",
    "TF_NUM_INTEROP_THREADS": "1",
    "TF_CPP_MIN_LOG_LEVEL": "2",
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
    "JAX_PLATFORMS": "cpu",
    "PYTHONHASHSEED": "0",
}


@dataclass
class ChildRun:
    returncode: int | None
    stdout: str
    stderr: str
    wall_s: float
    cpu_time_s: float | None
    timed_out: bool = False
    spawn_error: str | None = None
    # (peak bytes, source) of the child's private memory, sampled from here (Linux, --sample-private).
    private_peak: tuple | None = None


@dataclass
class RunOptions:
    cpu: int
    python: str = sys.executable
    mem_limit_bytes: int | None = None
    sample_private: bool = False
    timing: str = DEFAULT_TIMING
    instructions: bool = False  # --instructions: count each trial's instructions per iteration too
    timeout_s: float | None = None  # the user's --timeout, which holds for valgrind's children too; None: not given


class Interrupted(Exception):
    """Ctrl-C or SIGTERM reached the runner."""


class MemoryCapFailed(RuntimeError):
    """The memory cap the user asked for could not be put on a child: nothing is measured without it."""


class ChildSpawner:
    """Runs one child at a time; a signal to the runner stops the child in flight."""

    def __init__(self, options: RunOptions):
        self.options = options
        self.current: subprocess.Popen | None = None
        self.interrupted = False
        self.pin_problem: str | None = None
        # --instructions: engines whose count failed for good here (SIGILL, too slow), with why: their
        # later trials are not counted again (a JIT runtime would spend its timeout each time).
        self.uncountable: dict[str, str] = {}

    def interrupt(self) -> None:
        self.interrupted = True
        if self.current is not None:
            kill_group(self.current)

    def run(self, cmd: list[str], timeout_s: float, cwd: str | os.PathLike | None = None,
            env: dict | None = None) -> ChildRun:
        """`env` adds to the child's environment; `cwd` is its working folder (default: ours)."""
        if self.interrupted:
            raise Interrupted
        env = {**os.environ, **SINGLE_THREAD_ENV, **(env or {})}
        # A child that compiles the harness's sources at every start (no bytecode cache) pays
        # ~0.7 MiB of peak memory for it, which a bare script importing installed packages does not.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        start = time.perf_counter()
        try:
            with affinity.pinned_spawning(self.options.cpu):
                proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd,
                                        stdin=subprocess.DEVNULL, **self._platform_kwargs())
        except OSError as exc:
            return ChildRun(None, "", "", time.perf_counter() - start, None,
                            spawn_error=f"cannot start {cmd[0]}: {exc.strerror or exc}")
        self.current = proc
        self.pin_problem = None if hasattr(os, "sched_setaffinity") else affinity.pin_process(proc.pid, self.options.cpu)
        job = self._windows_memory_cap(proc)
        sampler = None
        if self.options.sample_private and sys.platform.startswith("linux"):
            sampler = memory.PrivateSampler(pid=proc.pid)
            sampler.start()
        out, err = _drain(proc.stdout), _drain(proc.stderr)
        try:
            returncode, cpu_time_s, timed_out = _wait(proc, timeout_s)
        finally:
            self.current = None
            private_peak = sampler.stop() if sampler else None
            del job
        wall_s = time.perf_counter() - start
        out.join()
        err.join()
        if returncode in STOP_SIGNALS:
            self._await_own_signal()
        if self.interrupted:
            raise Interrupted
        return ChildRun(returncode, out.text(), err.text(), wall_s, cpu_time_s, timed_out,
                        private_peak=private_peak)

    def _await_own_signal(self) -> None:
        """A scheduler stopping a job (SLURM's scancel or time limit) signals every process of it at
        once, this child too, which may die a moment before the runner's handler has run: that trial
        was stopped with the run, not failed by its engine, and must stay missing for a resume."""
        deadline = time.monotonic() + SIGNAL_GRACE_S
        while not self.interrupted and time.monotonic() < deadline:
            time.sleep(0.01)

    def _windows_memory_cap(self, proc: subprocess.Popen):
        """Windows has no rlimits: a job object caps the child's memory (held until it exits)."""
        if os.name != "nt" or not self.options.mem_limit_bytes:
            return None
        try:
            return limits.cap_process_memory(proc.pid, self.options.mem_limit_bytes)
        except OSError as exc:
            kill_group(proc)
            raise MemoryCapFailed(f"--mem-limit could not be applied: {exc}") from exc

    def _platform_kwargs(self) -> dict:
        if os.name == "nt":
            return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
        # A session of its own: a Ctrl-C at the terminal reaches only the runner, which then
        # stops the child (and anything it spawned) itself.
        kwargs = {"start_new_session": True}
        limit = self.options.mem_limit_bytes
        if limit:
            # The cap must hold from the child's first allocation, which only a preexec_fn can give.
            import resource

            kwargs["preexec_fn"] = lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        return kwargs


class _drain(threading.Thread):
    def __init__(self, stream):
        super().__init__(daemon=True)
        self.stream, self.chunks = stream, []
        self.start()

    def run(self):
        for chunk in iter(lambda: self.stream.read1(65536), b""):
            self.chunks.append(chunk)
        self.stream.close()

    def text(self) -> str:
        return b"".join(self.chunks).decode("utf-8", errors="replace")


def _wait(proc: subprocess.Popen, timeout_s: float) -> tuple[int, float | None, bool]:
    """Wait for the child with a deadline; POSIX takes its rusage from wait4 on the way."""
    if os.name == "nt":
        try:
            return proc.wait(timeout=timeout_s), None, False
        except subprocess.TimeoutExpired:
            kill_group(proc)
            return proc.wait(), None, True
    reaped: dict = {}

    def reap():
        _, status, usage = os.wait4(proc.pid, 0)
        reaped["status"], reaped["usage"] = status, usage

    waiter = threading.Thread(target=reap, daemon=True)
    waiter.start()
    waiter.join(timeout_s)
    timed_out = waiter.is_alive()
    if timed_out:
        kill_group(proc)
        waiter.join()
    proc.returncode = os.waitstatus_to_exitcode(reaped["status"])
    usage = reaped["usage"]
    return proc.returncode, usage.ru_utime + usage.ru_stime, timed_out
