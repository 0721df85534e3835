"""The parent side of a run: spawn one pinned child per trial, collect, validate, append.

The runner imports no framework (a parent that had imported one would also inflate what its
children report). It measures; the orchestrator writes every finished trial to disk before the
next starts (in a run folder the session has locked), so a crash, a hang or Ctrl-C loses at most
the trials in flight.
"""
from __future__ import annotations

import dataclasses
import json
import shutil
import signal
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from engines.base import find_executable
from harness.analysis.stats import summarize
from harness.envs.cache import RECORD
from harness.machine.valgrind import counted_iterations
from harness.measure.tsc import estimate_cycles
from harness.paths import worker_env
from harness.planning.plan import PlannedTrial
from harness.running import instructions
from harness.running.spawn import ChildRun, ChildSpawner, RunOptions
from harness.running.worker import EXIT_UNAVAILABLE, parse_value
from harness.records.base import Damaged, salvage
from harness.records.trials import TrialLine
from harness.store.results import ResultsUnwritable, Trial
from harness.store.run_plan import DEFAULT_TIMING

WORKER = Path(__file__).resolve().parent / "worker.py"

STDERR_TAIL_CHARS = 2000
OOM_MARKERS = ("MemoryError", "std::bad_alloc", "Cannot allocate memory", "out of memory", "OutOfMemory")


def child_command(pt: PlannedTrial, iterations: int, warmup: int, options: RunOptions,
                  inputs: Path | None, blocks: int | None = None) -> list[str]:
    counts = ["--iterations", str(iterations), "--warmup", str(warmup),
              "--blocks", str(blocks or pt.workload.timing_blocks(iterations))]
    shared = ["--inputs", str(inputs)] if inputs else []
    if pt.engine.kind == "native":
        cmd = [find_executable(pt.engine.executable) or pt.engine.executable, pt.workload.name, *counts,
               "--timing", options.timing, *shared]
        return cmd + param_args(pt.params)
    # An engine in a managed environment runs under that environment's interpreter.
    return worker_command(pt.engine.python or options.python, pt.engine, pt.workload, pt.params,
                          options.timing) + counts + shared


def worker_command(python: str, spec, workload, params: dict, timing: str = DEFAULT_TIMING) -> list[str]:
    """The Python worker's command line but for its counts: everything it would otherwise look up
    (the engine's module, the workload's kind, precision and graph) is named here, so that the
    child imports none of the declarations (harness/running/worker.py)."""
    # The worker's registry knows an engine of a managed environment by its id without the environment.
    cmd = [python, str(WORKER), "--engine", spec.base_id, "--module", spec.module, "--workload", workload.name,
           "--kind", workload.kind, "--precision", spec.precision or workload.precision, "--timing", timing]
    if workload.graph is not None:  # graph workloads, and those that save or measure a graph's nodes
        cmd += ["--graph", f"{workload.graph.__module__}:{workload.graph.__qualname__}"]
    return cmd + param_args(params)


def param_args(params: dict) -> list[str]:
    """`--param name=repr`, as both the worker and the native drivers parse it."""
    args = []
    for name, value in params.items():
        if parse_value(repr(value)) != value:
            raise ValueError(f"parameter {name}={value!r}: a child takes ints, floats, bools, None "
                             "and strings without quotes or escapes")
        args += ["--param", f"{name}={value!r}"]
    return args


def run_child(pt: PlannedTrial, spawner: ChildSpawner, iterations: int, warmup: int,
              inputs: Path | None, counted: bool = False) -> ChildRun:
    """One child of a trial. An engine of kind "program" (a program that prints its own text) gives
    the command and, once the child has ended well, turns what it printed and left in its scratch
    folder into the payload line; every other engine's child prints that line itself.
    `counted`: the child runs under valgrind, which reports its instructions on stderr (no payload)."""
    wrap, timeout_s = (instructions.wrap, instructions.timeout_s(spawner.options.timeout_s)) if counted else (list, pt.timeout_s)
    gone = environment_gone(pt)
    if gone:
        return _unavailable(gone)
    if pt.engine.kind != "program":
        blocks = instructions.COUNTED_BLOCKS if counted else None
        return spawner.run(wrap(child_command(pt, iterations, warmup, spawner.options, inputs, blocks)), timeout_s,
                           env=worker_env(pt.engine.python or spawner.options.python))
    workdir = Path(tempfile.mkdtemp(prefix="burtbench-trial-"))
    try:
        try:
            cmd, env = pt.engine.command(pt, iterations, inputs, workdir)
        except RuntimeError as exc:  # its program cannot be had (no source, a failed build)
            return _unavailable(str(exc))
        child = spawner.run(wrap(cmd), timeout_s, cwd=workdir, env=env)
        if not counted and child.spawn_error is None and not child.timed_out and child.returncode == 0:
            payload = pt.engine.payload(pt, iterations, child.stdout, workdir, inputs)
            stderr = child.stderr if payload.get("status") == "ok" else \
                f"{child.stderr}\n[its stdout, last lines]\n{child.stdout[-STDERR_TAIL_CHARS // 2:]}"
            child = dataclasses.replace(child, stdout=json.dumps(payload) + "\n", stderr=stderr)
        return child
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def environment_gone(pt: PlannedTrial) -> str | None:
    """Why the engine's managed environment is no longer whole (deleted under the run), or None."""
    if not pt.engine.python:  # not an engine of a managed environment
        return None
    folder = Path(pt.engine.python).parent.parent  # <env>/bin/python, <env>/Scripts/python.exe
    if Path(pt.engine.python).exists() and (folder / RECORD).exists():
        return None
    return f"its environment {folder} was deleted during the run (burtbench run --resume makes it again)"


def _unavailable(reason: str) -> ChildRun:
    """A child that was not started, as one of an engine that cannot run here would have ended."""
    return ChildRun(EXIT_UNAVAILABLE, json.dumps({"status": "unavailable", "reason": reason}), "", 0.0, None)


def prepare_inputs(pt: PlannedTrial, run_dir: Path, data_dir: str | None) -> Path | None:
    """The workload point's shared inputs, written once per run (a resumed run reuses them), from
    the real data sets in `data_dir` (the plan's --data-dir) or the synthetic ones."""
    if pt.workload.prepare is None:
        return None
    point = "-".join(f"{k}{v}" for k, v in pt.params.items())
    folder = Path(run_dir) / "inputs" / f"{pt.workload.name}-{point}-{pt.warmup + pt.iterations}"
    try:
        if not (folder / ".ready").exists():
            folder.mkdir(parents=True, exist_ok=True)
            pt.workload.prepare(pt.params, pt.warmup + pt.iterations, folder, data_dir)
            (folder / ".ready").touch()
    except OSError as exc:
        raise ResultsUnwritable(f"cannot write the inputs {folder}: {exc.strerror or exc}") from None
    return folder


def parse_payload(stdout: str) -> dict | None:
    """The child's result: its last non-empty stdout line, which must be a JSON object."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    if not lines:
        return None
    try:
        payload = json.loads(lines[-1])
    except json.JSONDecodeError:
        return None
    return payload if isinstance(payload, dict) else None


def classify(child: ChildRun, timeout_s: float, mem_limited: bool) -> tuple[str, str | None, dict | None]:
    """(status, reason, payload) of one child run."""
    if child.spawn_error:
        return "failed", child.spawn_error, None
    if child.timed_out:
        return "timeout", f"killed after the {timeout_s:g} s per-trial timeout", None
    payload = parse_payload(child.stdout)
    if child.returncode == EXIT_UNAVAILABLE and payload and payload.get("status") == "unavailable":
        return "unavailable", str(payload.get("reason")), payload
    if child.returncode != 0:
        if any(marker in child.stderr for marker in OOM_MARKERS) or (mem_limited and child.returncode < 0):
            return "oom", f"out of memory (exit code {child.returncode})", None
        if child.returncode < 0:
            return "failed", f"killed by signal {signal_name(-child.returncode)}", None
        return "failed", f"exit code {child.returncode}", None
    if payload is not None and payload.get("status") == "failed" and payload.get("reason"):
        return "failed", str(payload["reason"]), None
    if payload is None or payload.get("status") != "ok":
        shown = (child.stdout.strip().splitlines() or [""])[-1][:200]
        return "failed", f"unparseable result line from the child: {shown!r}", None
    return "ok", None, payload


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


TRIAL_FIELDS = set(Trial.__dataclass_fields__)
CHILD_LINE = "the child's result line"


def assign(trial: Trial, fields: dict) -> None:
    """Known trial fields go where they belong; anything else a child reports goes to `extra`."""
    for name, value in fields.items():
        if name in TRIAL_FIELDS:
            setattr(trial, name, value)
        else:
            trial.extra[name] = value


def fill_from_payload(trial: Trial, payload: dict, tsc: tuple[float | None, str]) -> None:
    # The parent's own readings of CPU time and the check take precedence over what the child says.
    measured = dict(estimate_cycles(payload, *tsc))
    if "per_iter_s" not in measured:  # the Python worker leaves it to us (harness.analysis.stats is not lean)
        measured["per_iter_s"] = summarize(measured.get("samples_s") or [])
    assign(trial, {k: v for k, v in measured.items() if k not in ("status", "outputs", "cpu_time_s", "check")})


def new_trial(pt: PlannedTrial, cpu: int, timing: str) -> Trial:
    e = pt.engine
    return Trial(engine=e.id, framework=e.framework, mode=e.mode, language=e.language, device=e.device,
                 workload=pt.workload.name, params=dict(pt.params), trial=pt.trial, timing=timing, cpu=cpu, added=pt.added,
                 started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))


def measure(pt: PlannedTrial, spawner: ChildSpawner, tsc: tuple[float | None, str],
            inputs: Path | None = None, meter=None) -> Trial:
    """Init run (1 iteration, end to end; see PlannedTrial.with_init) then the measured run, in fresh children.

    An energy meter, when given, reads its counter right before the measured child starts and
    right after it exits: the energy of the whole process life, imports included.
    """
    opts = spawner.options
    trial = new_trial(pt, opts.cpu, opts.timing)
    mem_limited = opts.mem_limit_bytes is not None
    if pt.with_init:
        init = run_child(pt, spawner, 1, 0, inputs)
        status, reason, _ = classify(init, pt.timeout_s, mem_limited)
        if status != "ok":
            return _record_failure(trial, status, f"init run: {reason}", init, pt)
        trial.init_time_s = init.wall_s
    if meter is not None:
        meter.start()
    main = run_child(pt, spawner, pt.iterations, pt.warmup, inputs)
    reading = meter.stop() if meter is not None else {}
    status, reason, payload = classify(main, pt.timeout_s, mem_limited)
    if status != "ok":
        return _record_failure(trial, status, reason, main, pt)
    trial.wall_time_s = main.wall_s
    trial.cpu_time_s = main.cpu_time_s if main.cpu_time_s is not None else payload.get("cpu_time_s")
    fill_from_payload(trial, payload, tsc)
    if main.private_peak is not None:
        trial.peak_private_bytes, trial.peak_private_source = main.private_peak
    assign(trial, reading)
    if spawner.pin_problem:
        trial.extra["not_pinned"] = spawner.pin_problem
    precision = payload.get("precision") or pt.workload.precision
    # A child (or a "program" engine's spec, which made the payload from what its program printed)
    # may judge its outputs itself: the floor engine computes nothing to check.
    own = payload.get("check")
    trial.check = own or pt.workload.check(pt.params, payload.get("outputs"), precision, inputs).as_dict()
    if opts.instructions:
        # Another build counted where valgrind cannot run the timed one (never timed itself).
        counted = pt.engine.counted_as
        count = count_instructions(dataclasses.replace(pt, engine=counted) if counted else pt, spawner, inputs)
        trial.instructions_per_iter, trial.instructions_reason = count.per_iter, count.reason
        trial.instructions_cost_s = count.cost_s
        trial.instructions_build = counted.note if counted else None
    return bounded(trial)


def bounded(trial: Trial) -> Trial:
    """The trial as its child measured it, held to the trial line's declaration (records/trials.py) before
    it is written: a number no measure can be (a child that printed garbage) is dropped alone, and the
    trial says which and why, so that trials.jsonl never holds what its reader would refuse."""
    dropped = []
    record, data = salvage(json.loads(trial.to_json()), TrialLine, CHILD_LINE,
                           lambda name, why: dropped.append(f"{name}: {why}"))
    if isinstance(record, Damaged):
        return dataclasses.replace(trial, status="failed", reason=f"{CHILD_LINE}: {record.field}: {record.why}")
    fields = {name: data.get(name) for name in TRIAL_FIELDS if name != "extra"}
    kept = dataclasses.replace(trial, **fields, extra=dict(data.get("extra") or {}))
    if dropped:
        kept.extra["dropped"] = "; ".join(dropped)
    return kept


def count_instructions(pt: PlannedTrial, spawner: ChildSpawner, inputs: Path | None) -> instructions.Count:
    """Instructions per iteration of the timed loop: the child under valgrind with N and 2N
    iterations (harness/running/instructions.py), within the inputs prepared for the point; a loop
    too short for its count to repeat is counted again LONGER times as long."""
    if pt.engine.id in spawner.uncountable:
        return instructions.Count(None, f"{spawner.uncountable[pt.engine.id]} (in an earlier trial; not tried again)", 0.0)
    n, warmup = counted_iterations(pt.workload)
    if inputs is not None:
        warmup = min(warmup, pt.warmup)
        n = max(1, min(n, (pt.iterations + pt.warmup - warmup) // 2))
    count = _count(pt, spawner, inputs, n, warmup)
    if inputs is None and count.per_iter is not None and count.per_iter * n < instructions.SHORT_LOOP:
        longer = _count(pt, spawner, inputs, n * instructions.LONGER, warmup)
        return dataclasses.replace(longer, cost_s=count.cost_s + longer.cost_s)
    return count


def _count(pt: PlannedTrial, spawner: ChildSpawner, inputs: Path | None, n: int, warmup: int) -> instructions.Count:
    counts, cost = [], 0.0
    for iterations in (n, 2 * n):
        child = run_child(pt, spawner, iterations, warmup, inputs, counted=True)
        cost += child.wall_s
        if child.spawn_error or child.timed_out or child.returncode != 0:  # its output is valgrind's, not a payload
            _, reason, _ = classify(child, instructions.timeout_s(spawner.options.timeout_s), False)
            spawner.uncountable[pt.engine.id] = instructions.why_not(child.stderr, reason, child.timed_out,
                                                                     instructions.timeout_s(spawner.options.timeout_s))
            return instructions.Count(None, spawner.uncountable[pt.engine.id], cost)
        counts.append(instructions.parse_refs(child.stderr))
    per_iter = instructions.per_iteration(*counts, n)
    return instructions.Count(per_iter, None if per_iter else "valgrind reported no instruction count", cost)


def _record_failure(trial: Trial, status: str, reason: str | None, child: ChildRun, pt: PlannedTrial) -> Trial:
    gone = environment_gone(pt) if status == "failed" else None
    if gone:  # it failed because its environment went away under it: it did not run, and --resume runs it
        status, reason = "unavailable", gone
    trial.status, trial.reason = status, reason
    trial.exit_code = child.returncode
    if child.returncode is not None and child.returncode < 0:
        trial.signal = -child.returncode
    trial.stderr_tail = child.stderr[-STDERR_TAIL_CHARS:] or None
    trial.wall_time_s = child.wall_s
    return trial
