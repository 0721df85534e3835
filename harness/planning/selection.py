"""What the user asked for, as the registry's objects: engines, workloads, a narrowed grid, paths.

Every check here runs before the first trial: a bad value is one UsageError line with a
did-you-mean where one helps.
"""
from __future__ import annotations

import difflib
import os
import subprocess
import sys
from pathlib import Path

from engines import children
from engines.none import FLOOR
from harness.errors import UsageError
from harness.measure import affinity
from harness.paths import worker_env
from harness.store.run_plan import MAX_PLANNED_TRIALS
from workloads import data


def did_you_mean(word: str, choices) -> str:
    # Options are compared without their dashes, which every option shares: with them '--bogus' is as like
    # '--out' as a typo is like its word. Below 0.6 a guess names a word the user did not mean.
    by_name = {str(c).lstrip("-"): c for c in choices}
    close = difflib.get_close_matches(word.lstrip("-"), list(by_name), n=1, cutoff=0.6)
    return f"; did you mean '{by_name[close[0]]}'?" if close else ""


def _tokens(text: str, option: str) -> list[str]:
    tokens = [t.strip() for t in text.split(",")]
    if not all(tokens):
        raise UsageError(f"{option}: empty name in {text!r}")
    return tokens


def resolve_engines(text: str, registry: dict) -> list:
    if text.strip() == "all":
        return list(registry.values())
    chosen = []
    for token in _tokens(text, "--engine"):
        # A framework's name also selects its variants: 'burtorch' takes burtorch-authors/... too.
        matches = [spec for eid, spec in registry.items() if eid == token or eid.startswith(token.rstrip("/") + "/")
                   or ("/" not in token and eid.split("/")[0].startswith(token + "-"))]
        if not matches:
            raise UsageError(f"unknown engine '{token}'{did_you_mean(token, _engine_names(registry))} "
                             f"(burtbench list shows them)")
        chosen += [m for m in matches if m not in chosen]
    return chosen


def not_run(engines: list, workloads: list, engines_named: bool, workloads_named: bool) -> list[str]:
    """One line per named engine that cannot run some of the workloads (named or all): what is left out,
    so that nothing is dropped silently. Nothing to say when neither was named (every engine × every workload)."""
    if not (engines_named or workloads_named):
        return []
    lines = []
    for engine in engines:
        missing = [w.name for w in workloads if not engine.runs(w)]
        if missing and (engines_named or len(engines) == 1):
            lines.append(f"{engine.id} does not run {', '.join(missing)}: left out for it (see burtbench list)")
    nobody = [w.name for w in workloads if not any(e.runs(w) for e in engines)]
    if nobody and not engines_named:
        lines.append(f"no selected engine runs {', '.join(nobody)}: left out (see burtbench list)")
    return lines


def with_floor(engines: list, workloads: list, registry: dict) -> list:
    """The engines, plus the harness's floor row where a selected workload reports memory and a
    selected Python engine runs it: a memory table shows what of each row is the worker itself."""

    floor = registry[FLOOR]
    wanted = any(floor.runs(w) and any(e.kind == "python" and e.runs(w) for e in engines) for w in workloads)
    return [*engines, floor] if wanted and floor not in engines else engines


def _engine_names(registry: dict) -> set[str]:
    names = set(registry)
    for eid in registry:
        parts = eid.split("/")
        names.update("/".join(parts[:i]) for i in range(1, len(parts)))
    return names


def resolve_workloads(text: str, registry: dict) -> list:
    if text.strip() == "all":
        return list(registry.values())
    chosen = []
    for token in _tokens(text, "--workload"):
        if token not in registry:
            raise UsageError(f"unknown workload '{token}'{did_you_mean(token, registry)} "
                             f"(known: {', '.join(registry)})")
        if registry[token] not in chosen:
            chosen.append(registry[token])
    return chosen


def parse_params(items: list[str], workloads: list) -> dict[str, tuple]:
    grids: dict[str, tuple] = {}
    for w in workloads:
        for name, values in w.grid.items():
            grids[name] = tuple(dict.fromkeys(grids.get(name, ()) + tuple(values)))
    narrow: dict[str, tuple] = {}
    for item in items:
        name, sep, values = item.partition("=")
        name = name.strip()
        if not sep or not name or not values.strip():
            raise UsageError(f"--param expects NAME=V1,V2, got {item!r}")
        if name not in grids:
            where = ", ".join(w.name for w in workloads)
            known = ", ".join(sorted(grids)) or "none"
            raise UsageError(f"--param {name}: no selected workload ({where}) has a parameter '{name}'"
                             f"{did_you_mean(name, grids)} (parameters: {known})")
        narrow[name] = tuple(dict.fromkeys(_grid_value(name, v.strip(), grids[name]) for v in values.split(",")))
    return narrow


def _grid_value(name: str, text: str, allowed: tuple):
    for value in allowed:
        try:
            if type(value)(text) == value:
                return value
        except ValueError:
            pass
    shown = ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in allowed)
    raise UsageError(f"--param {name}={text}: not in the workload's grid ({shown})")


MAX_IDLE_S = 3600
# Below this no interpreter or driver starts: every trial would be recorded as oom.
MIN_MEM_LIMIT = 32 << 20


def check_mem_limit(limit: int | None) -> None:
    if limit is None:
        return
    if limit < MIN_MEM_LIMIT:
        raise UsageError(f"--mem-limit {limit}: below {MIN_MEM_LIMIT >> 20}M no engine can start")
    if limit >= 1 << 63:
        raise UsageError(f"--mem-limit {limit}: larger than any address space")
    try:
        import resource
    except ImportError:
        return  # Windows: a job object takes any size
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY and limit > hard:
        raise UsageError(f"--mem-limit {limit}: above this shell's hard address-space limit ({hard} bytes, ulimit -Hv)")


def check_plan_size(trials: int) -> None:
    if trials > MAX_PLANNED_TRIALS:
        raise UsageError(f"the plan has {trials:,} trials, more than {MAX_PLANNED_TRIALS:,}: "
                         "narrow it with --workload/--engine/--param or lower --trials")


def check_cpu(cpu: int | None) -> int:
    if cpu is None:
        return affinity.default_cpu()
    problem = affinity.validate_cpu(cpu)
    if problem:
        raise UsageError(problem)
    return cpu


def check_cpus(text: str) -> tuple[int, ...]:
    """--cpus 2-15 / 0,1: distinct cores this process may pin to, in the order given."""

    try:
        cpus = affinity.parse_cpus(text)
    except ValueError:
        cpus = []
    if not cpus or any(c < 0 for c in cpus):
        raise UsageError(f"--cpus {text}: expected a core list like 2-15 or 0,1")
    if len(set(cpus)) != len(cpus):
        raise UsageError(f"--cpus {text}: a core is listed twice")
    allowed = affinity.allowed_cpus()
    outside = [c for c in cpus if c not in allowed]
    if outside:
        raise UsageError(f"--cpus {text}: this process may only run on cores {affinity.format_cpus(allowed)}")
    return tuple(cpus)


def check_python(path: str | None) -> str:
    """The interpreter for the workers: it must run, be Python 3.10 or later and import the worker."""
    if path is None:
        return sys.executable
    if not (Path(path).is_file() and os.access(path, os.X_OK)):
        raise UsageError(f"--python {path}: not an executable file")
    probe = ("import sys\nif sys.version_info < (3, 10): sys.exit('Python %d.%d, older than 3.10' % sys.version_info[:2])\n"
             "import harness.running.worker")
    env = {**os.environ, **worker_env(path)}
    try:
        done = children.run([path, "-c", probe], f"checking --python {path}", 60, capture_output=True, text=True,
                            env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"--python {path}: does not run ({exc})") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise UsageError(f"--python {path}: cannot run the worker ({last})")
    return str(Path(path).absolute())


def check_data_dir(folder: str | None, workloads: list = ()) -> None:
    """`folder` (--data-dir) holds the real data sets and they can serve every workload given;
    the plan keeps it and the workloads' prepare() reads it."""

    if folder is None:
        return
    try:
        data.check_dir(folder)
        for workload in workloads:
            if workload.check_data is not None:
                workload.check_data(folder)
    except data.DataError as exc:
        raise UsageError(f"--data-dir: {exc}") from None
