"""Running one of the authors' programs once, as a trial would: a reference implementation for the runner.

    run_step(step, executable, workdir, data_path=None, cpu=None, timeout_s=None) -> StepRun
    run_program(program, executables, workdir, data_dir=None, cpu=None, timeout_s=None) -> dict

run_program returns the trial's measures: the parsed output (per_iter_s, loop_time_s, outputs,
timer), the check, the process's own peak memory and core (from the preloaded library), the exit
status, wall time and CPU time (wait4) of each step.
"""
from __future__ import annotations

import os
import resource
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from engines.authors import memory
from engines.authors.programs import AuthorsProgram, ParseError, Step, merge_measures


@dataclass
class StepRun:
    target: str
    argv: list[str]
    returncode: int | None          # None: killed at the timeout
    stdout: str
    stderr: str
    wall_s: float
    cpu_time_s: float | None
    peak: dict
    measures: dict | None
    error: str | None               # one line: why there are no measures

    def as_record(self) -> dict:
        return {"target": self.target, "argv": self.argv, "returncode": self.returncode, "wall_s": self.wall_s,
                "cpu_time_s": self.cpu_time_s, "error": self.error, **self.peak}


def data_path_for(step: Step, data_dir: str | os.PathLike | None) -> Path | None:
    if step.data_file is None:
        return None
    if data_dir is None:
        raise ValueError(f"{step.target} needs {step.data_file}: give data_dir")
    path = Path(data_dir) / step.data_file
    if not path.is_file():
        raise FileNotFoundError(f"{step.target} needs {path}")
    return path


def run_step(step: Step, executable: str | os.PathLike, workdir: str | os.PathLike,
             data_path: str | os.PathLike | None = None, cpu: int | None = None,
             timeout_s: float | None = None, line_buffered: bool = False,
             extra_env: Mapping[str, str] | None = None) -> StepRun:
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    argv = step.argv(executable, data_path)
    peak_file = workdir / f".burtbench-peak-{step.target}.txt"
    peak_file.unlink(missing_ok=True)
    env = {**os.environ, **(extra_env or {})}
    try:
        env.update(memory.child_env(peak_file, base=env, line_buffered=line_buffered))
        preload_error = None
    except memory.PreloadUnavailable as exc:
        preload_error = str(exc)

    def pin() -> None:
        if cpu is not None:
            os.sched_setaffinity(0, {cpu})

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, errors="replace", preexec_fn=pin,
                            start_new_session=True)
    timed_out = False
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
    wall = time.perf_counter() - started
    # CPU time: what RUSAGE_CHILDREN gained while this child ran (exact when the caller runs one
    # child at a time, as here; the runner uses wait4 on its own spawns).
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_time = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if preload_error:
        peak = {"peak_resident_bytes": None, "peak_resident_source": preload_error,
                "peak_virtual_bytes": None, "peak_virtual_source": preload_error,
                "ran_on_cpu": None, "cpus_allowed": None, "cpu_source": preload_error}
    else:
        peak = memory.read_peak(peak_file, executable)
    measures, error = None, None
    if timed_out:
        error = f"timed out after {timeout_s:g} s"
    elif proc.returncode != 0:
        error = f"exit code {proc.returncode}" + (f": {stderr.strip().splitlines()[-1]}" if stderr.strip() else "")
    else:
        try:
            measures = step.parse(stdout, workdir)
        except ParseError as exc:
            error = str(exc)
    return StepRun(step.target, argv, None if timed_out else proc.returncode, stdout, stderr, wall, cpu_time,
                   peak, measures, error)


def run_program(program: AuthorsProgram, executables: Mapping[str, str | os.PathLike], workdir: str | os.PathLike,
                data_dir: str | os.PathLike | None = None, cpu: int | None = None, timeout_s: float | None = None,
                reference: Mapping | None = None) -> dict:
    """Run every step in one scratch folder, in order; the trial's result as a dict (status ok/failed/timeout)."""
    runs: list[StepRun] = []
    for step in program.steps:
        run = run_step(step, executables[step.target], workdir, data_path_for(step, data_dir), cpu=cpu,
                       timeout_s=timeout_s, line_buffered=program.line_buffer_ok)
        runs.append(run)
        if run.error:
            break
    failed = next((r for r in runs if r.error), None)
    result: dict = {"workload": program.workload, "steps": [r.as_record() for r in runs],
                    "wall_time_s": sum(r.wall_s for r in runs)}
    resident = [r.peak.get("peak_resident_bytes") for r in runs]
    virtual = [r.peak.get("peak_virtual_bytes") for r in runs]
    result["peak_resident_bytes"] = max(resident) if all(v is not None for v in resident) else None
    result["peak_virtual_bytes"] = max(virtual) if all(v is not None for v in virtual) else None
    result["peak_resident_source"] = runs[-1].peak.get("peak_resident_source")
    result["peak_virtual_source"] = runs[-1].peak.get("peak_virtual_source")
    result["ran_on_cpu"] = [r.peak.get("ran_on_cpu") for r in runs]
    result["cpus_allowed"] = [r.peak.get("cpus_allowed") for r in runs]
    if failed is not None:
        result["status"] = "timeout" if failed.returncode is None else "failed"
        result["reason"] = f"{failed.target}: {failed.error}"
        result["stderr_tail"] = failed.stderr[-2000:]
        result["stdout_tail"] = failed.stdout[-2000:]
        return result
    measures = merge_measures(program.workload, [r.measures for r in runs])
    result.update(measures)
    result["status"] = "ok"
    result["precision"] = program.precision
    result["check"] = program.check(measures, reference)
    return result
