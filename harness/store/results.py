"""Result schema and store: one trial per JSON line in <run>/trials.jsonl, plus manifest.json.

Each trial is appended, flushed and fsynced before the next one starts, so a crash, a power
loss or Ctrl-C never loses a finished trial. A torn last line (power loss mid-write) is
reported once and ignored by every reader.
"""
from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from harness.store import readings
from harness.store.run_plan import DEFAULT_TIMING
from harness.text import clean

TRIALS_FILE = "trials.jsonl"
MANIFEST_FILE = "manifest.json"
STATUSES = ("ok", "failed", "timeout", "oom", "unavailable")

# The fields of the one JSON line every child prints when its trial ran: the Python worker
# (harness/running/worker.py) and the native drivers (burtorch_ext/src/driver/measured_run.hpp) alike.
# A workload may add fields of its own (param_count, save_s ...): they land in Trial.extra.
CHILD_FIELDS = frozenset({
    "status", "outputs", "precision", "iterations", "warmup", "loop_time_s", "samples_s",
    "framework_version", "cpu_clocks", "cpu_clocks_source", "instructions", "loop_cpu_time_s", "cpu_time_s",
    "peak_resident_bytes", "peak_resident_source", "peak_virtual_bytes", "peak_virtual_source",
    "peak_private_bytes", "peak_private_source",
})
# A child may also report per_iter_s (the native drivers do; else the runner summarizes samples_s)
# and timed_as (which timed region it ran, see Trial.timed_as).
OPTIONAL_CHILD_FIELDS = frozenset({"per_iter_s", "timed_as"})


@dataclass
class Trial:
    engine: str
    framework: str
    mode: str
    language: str
    device: str
    workload: str
    params: dict
    trial: int
    # The run's --timing (store/run_plan.py): "paper" or "lean"; a trial that says none reads as the default.
    timing: str = DEFAULT_TIMING
    # What this child timed: "paper" where its engine has the authors' timed region, "lean" where
    # it ran the lean one; None where the child cannot say (the authors' programs, and trials of
    # native drivers from before they said).
    timed_as: str | None = None
    status: str = "ok"
    reason: str | None = None
    exit_code: int | None = None
    signal: int | None = None
    stderr_tail: str | None = None
    check: dict | None = None
    precision: str | None = None
    iterations: int | None = None
    warmup: int | None = None
    loop_time_s: float | None = None
    per_iter_s: dict | None = None
    samples_s: list | None = None
    init_time_s: float | None = None
    wall_time_s: float | None = None
    cpu_time_s: float | None = None
    cpu_clocks: float | None = None
    cpu_clocks_source: str | None = None
    instructions: float | None = None
    # --instructions: instructions per iteration of the timed loop counted under valgrind, a proxy for
    # time (harness/running/instructions.py); None with instructions_reason where not counted.
    instructions_per_iter: float | None = None
    instructions_reason: str | None = None
    instructions_cost_s: float | None = None  # what counting took (both counted children)
    # Where the instructions were counted on another build than the one timed (valgrind cannot run
    # AVX-512: harness/envs/revisions.py), which one; None where the timed build itself was counted.
    instructions_build: str | None = None
    peak_virtual_bytes: int | None = None
    peak_private_bytes: int | None = None
    peak_private_source: str | None = None
    peak_resident_bytes: int | None = None
    peak_resident_source: str | None = None
    peak_virtual_source: str | None = None
    energy_total_j: float | None = None
    energy_task_j: float | None = None
    energy_os_j: float | None = None
    energy_source: str | None = None
    framework_version: str | None = None
    cpu: int | None = None
    started_at: str | None = None
    added: bool = False  # a round added after the plan (planning/plan.py, PlannedTrial.added): a later look
    # The run that measured it (its folder's name): a merged run's copy keeps its shard's, so a trial counts once.
    measured_in: str | None = None
    extra: dict = field(default_factory=dict)

    def key(self) -> tuple:
        return trial_key(self.engine, self.workload, self.params, self.trial)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=False)


def params_key(params: dict | None) -> str:
    """A point's parameters as one string: the key every grouping of trials into points uses."""
    return json.dumps(params or {}, sort_keys=True)


def trial_key(engine: str, workload: str, params: dict, trial: int) -> tuple:
    return (engine, workload, params_key(params), trial)


def identity(trial: dict) -> tuple:
    """A trial as one measurement, wherever it was copied to: the run that measured it, and its key there."""
    return (trial["measured_in"], *trial_key(trial["engine"], trial["workload"], trial["params"], trial["trial"]))


class ResultsError(OSError):
    """The results folder failed a read or a write; the message is one line."""


class ResultsUnwritable(ResultsError):
    """The results folder cannot take another trial (disk full, read-only, gone)."""


class ResultsUnreadable(ResultsError):
    """A results file exists but the OS refuses to read it."""


def append_trial(run_dir: Path, trial: Trial) -> None:
    path = Path(run_dir) / TRIALS_FILE
    trial = replace(trial, measured_in=trial.measured_in or Path(run_dir).name)
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(trial.to_json() + "\n")
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        raise ResultsUnwritable(f"cannot write {path}: {exc.strerror or exc}") from exc


_reported: set[tuple[str, int, str]] = set()
# Numbers beyond this are no measure of anything here: a damaged line, not a reading.
LARGEST = 1e300


def damage(record) -> str | None:
    """Why a parsed trial line cannot be used (wrong types, unknown status, a non-finite or
    absurd number), or None when it can."""
    if not isinstance(record, dict):
        return "not a JSON object"
    for name in ("engine", "workload"):
        if not isinstance(record.get(name), str) or not record[name]:
            return f"'{name}' is not a name"
    if not isinstance(record.get("params"), dict):
        return "'params' is not an object"
    if isinstance(record.get("trial"), bool) or not isinstance(record.get("trial"), int) or record["trial"] < 0:
        return "'trial' is not a trial number"
    if record.get("status", "ok") not in STATUSES:
        return f"unknown status {record.get('status')!r}"
    if not isinstance(record.get("measured_in") or "", str):
        return "'measured_in' is not a run's name"
    return None  # its measures are checked one by one (store/readings.py): a bad one drops alone


def _number(text: str, kind):
    value = kind(text)
    if not abs(value) <= LARGEST:
        raise ValueError(f"the number {text[:40]} is out of range")
    return value


def _no_constant(text: str):
    raise ValueError(f"{text} is not a measure")


# Only a float written with a three-digit positive exponent can pass LARGEST: lines without one are
# parsed without a hook per float (a trial line holds hundreds of them, and few integers).
_HUGE_FLOAT = re.compile(r"[eE]\+?\d{3}")


def _int(text: str) -> int:
    return _number(text, int)


def _float(text: str) -> float:
    return _number(text, float)


def loads(text: str):
    """JSON as a results file may hold it: NaN, infinities and numbers beyond LARGEST are damage (ValueError)."""
    floats = _float if _HUGE_FLOAT.search(text) else None
    return json.loads(text, parse_float=floats, parse_int=_int, parse_constant=_no_constant)


class _Bad:
    """Where a trial line held NaN, an infinity or a number beyond LARGEST: a field to drop."""

    def __repr__(self) -> str:
        return "a non-finite number"


BAD = _Bad()


def _lenient(kind):
    def parse(text: str):
        try:
            return _number(text, kind)
        except ValueError:
            return BAD
    return parse


def loads_trial(text: str):
    """A trial line: as `loads`, but a number no measure can be reads as BAD (its field is dropped)."""
    floats = _lenient(float) if _HUGE_FLOAT.search(text) else None
    return json.loads(text, parse_float=floats, parse_int=_lenient(int), parse_constant=lambda _: BAD)


def _holds_bad(value) -> bool:
    if value is BAD:
        return True
    if isinstance(value, dict):
        return any(_holds_bad(v) for v in value.values())
    return isinstance(value, list) and any(_holds_bad(v) for v in value)


def read_trials(run_dir: Path, warn=None) -> list[dict]:
    """Every usable trial line; a torn, damaged or repeated line is reported (once per process) and skipped."""
    path = Path(run_dir) / TRIALS_FILE
    try:
        lines = path.read_bytes().decode("utf-8", errors="replace").split("\n")
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise ResultsUnreadable(f"cannot read {path}: {exc.strerror or exc}") from None
    trials, seen = [], {}  # a trial's key -> its place in `trials`
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = loads_trial(line)
        except json.JSONDecodeError:
            record, why = None, "an incomplete trial line (interrupted write?)"
        except (ValueError, RecursionError) as exc:
            record, why = None, f"a damaged trial line ({exc})"
        else:
            why = damage(record)
            if why is None:  # a field that is no plausible measure drops alone: the trial's others stay
                found = readings.problems(record, BAD)
                for name, problem in found:
                    _once(path, number, f"{path}:{number}: dropping the field {name} ({problem}); "
                                        f"the trial's other fields are kept", warn)
                record = readings.drop(record, found)
                record["measured_in"] = record.get("measured_in") or Path(run_dir).name  # an older line: here
                why = "a number no measure can be, outside its measures" if _holds_bad(record) else None
            why = why and f"a damaged trial line ({why})"
            # The runner writes each trial once: a second line of it is a copy, which would count it twice;
            # but a trial recorded `unavailable` did not run, and a resumed run's record of it replaces it.
            key = None if why else trial_key(record["engine"], record["workload"], record["params"], record["trial"])
            if key in seen and trials[seen[key]].get("status") == "unavailable":
                trials[seen[key]] = record
                continue
            if key is not None and key in seen:
                why = "a second copy of a trial already read"
        if why:
            _once(path, number, f"{path}:{number}: ignoring {why}", warn)
            continue
        seen[key] = len(trials)
        trials.append(record)
    return trials


def _once(path: Path, number: int, message: str, warn) -> None:
    """Each warning about a line once per process (a report reads a run several times)."""
    if (str(path), number, message) not in _reported:
        _reported.add((str(path), number, message))
        (warn or _stderr)(message)


def mend_tail(run_dir: Path) -> str | None:
    """Make the file end on a complete, usable line before a resume appends to it: a last line
    that lacks only its newline is a trial written whole and keeps it; a last line that is torn
    or damaged is cut (its trial runs again). Returns what was done, or None."""
    path = Path(run_dir) / TRIALS_FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ResultsUnreadable(f"cannot read {path}: {exc.strerror or exc}") from None
    body = data[:-1] if data.endswith(b"\n") else data
    start = body.rfind(b"\n") + 1
    last = body[start:]
    if not last.strip():
        return None
    try:
        usable = damage(loads_trial(last.decode("utf-8"))) is None
    except (ValueError, RecursionError):
        usable = False
    if usable and data.endswith(b"\n"):
        return None
    try:
        with open(path, "r+b") as fh:
            if usable:
                fh.seek(len(data))
                fh.write(b"\n")
            else:
                fh.truncate(start)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        raise ResultsUnwritable(f"cannot repair {path}: {exc.strerror or exc}") from exc
    return "completed the last line, which had lost its newline" if usable else \
        "dropped a torn or damaged last line; that trial runs again"


def _stderr(message: str) -> None:
    print(f"burtbench: warning: {clean(message)}", file=sys.stderr)


def write_json_atomic(path: Path, data: dict) -> None:
    """Write via a temporary file in the same folder and rename it over the target."""
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise ResultsUnwritable(f"cannot write in {path.parent}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, sort_keys=True)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a manifest is for everyone to read
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise ResultsUnwritable(f"cannot write {path}: {exc.strerror or exc}") from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class ManifestDamaged(ValueError):
    """manifest.json cannot be read as a manifest; the message says what is wrong, in one line."""


# The type of each manifest field readers use; a field of another type is damage.
MANIFEST_TYPES = {
    "run_id": str, "created_at": str, "finished_at": str, "status": str, "burtbench_version": str,
    "profile": str, "git_commit": str, "cpu": int, "argv": list, "engines": list, "workloads": list,
    "doctor": list, "resumed_at": list, "plan": dict, "machine": dict, "python": dict, "frameworks": dict,
    "native": dict, "ceiling": list, "tsc": dict, "energy": dict, "unavailable": dict, "options": dict,
    "cpus": list, "merged_from": list, "mixed": list,
}


def read_manifest(run_dir: Path) -> dict:
    """The manifest as written; ManifestDamaged when it is unreadable, not an object, or has a
    field of the wrong type."""
    path = Path(run_dir) / MANIFEST_FILE
    try:
        data = loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestDamaged(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    except json.JSONDecodeError:
        raise ManifestDamaged(f"{path} is not valid JSON") from None
    except (ValueError, RecursionError) as exc:
        raise ManifestDamaged(f"{path} is damaged: {exc}") from None
    problem = manifest_damage(data)
    if problem:
        raise ManifestDamaged(f"{path} is damaged: {problem}")
    return data


def manifest_damage(data) -> str | None:
    if not isinstance(data, dict):
        return "not a JSON object"
    for name, kind in MANIFEST_TYPES.items():
        value = data.get(name)
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
            return f"'{name}' is not a{'n' if kind.__name__[0] in 'aeiou' else ''} {kind.__name__}"
    return None


def sane_manifest(run_dir: Path, warn=None) -> dict:
    """For readers that can go on without it (report, compare): the manifest, or {} with a warning."""
    try:
        return read_manifest(run_dir)
    except ManifestDamaged as exc:
        (warn or _stderr)(f"{exc}; going on without it")
        return {}


def is_run_dir(path: Path) -> bool:
    return (Path(path) / MANIFEST_FILE).is_file()
