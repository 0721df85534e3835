"""Result schema and store: one trial per JSON line in <run>/trials.jsonl, plus manifest.json.

Each trial is appended, flushed and fsynced before the next one starts, so a crash, a power
loss or Ctrl-C never loses a finished trial. A torn last line (power loss mid-write) is
reported once and ignored by every reader. Both files are read back through their declarations
(harness/records/trials.py, records/run.py): a damaged measure is dropped alone, with a line naming it.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from harness.records.base import Damaged, parse, salvage
from harness.records.run import Manifest
from harness.records.trials import TrialLine
from harness.store.run_plan import DEFAULT_TIMING
from harness.text import clean

TRIALS_FILE = "trials.jsonl"
MANIFEST_FILE = "manifest.json"

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


def _trial_line(line: str, file: str, warn=None):
    """(the record of a trial line, or Damaged): its damaged measures dropped, each said through warn(field, why)."""
    try:
        parsed = parse(line)
    except ValueError:
        return Damaged(file, "", "an incomplete trial line (interrupted write?)")
    record, data = salvage(parsed, TrialLine, file, warn)
    return record if isinstance(record, Damaged) else data


def read_trials(run_dir: Path, warn=None) -> list[dict]:
    """Every usable trial line (records/trials.py); a torn, damaged or repeated line is reported (once per
    process) and skipped, a damaged measure dropped alone with a line naming it."""
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

        def said(name, problem, number=number):
            _once(path, number, f"{path}:{number}: dropping the field {name} ({problem}); "
                                f"the trial's other fields are kept", warn)

        record = _trial_line(line, str(path), said)
        key = why = None
        if isinstance(record, Damaged):
            why = record.why if not record.field else f"a damaged trial line ({record.field}: {record.why})"
        else:
            record["measured_in"] = record.get("measured_in") or Path(run_dir).name  # an older line: here
            # The runner writes each trial once: a second line of it is a copy, which would count it twice;
            # but a trial recorded `unavailable` did not run, and a resumed run's record of it replaces it.
            key = trial_key(record["engine"], record["workload"], record["params"], record["trial"])
            if key in seen and trials[seen[key]].get("status") == "unavailable":
                trials[seen[key]] = record
                continue
            if key in seen:
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
    usable = not isinstance(_trial_line(last.decode("utf-8", errors="replace"), str(path)), Damaged)
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
    try:
        print(f"burtbench: warning: {clean(message)}", file=sys.stderr)
    except (OSError, ValueError):
        pass  # a closed stderr: the warning has nowhere to go, and reading goes on


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


def read_manifest(run_dir: Path, warn=None) -> dict:
    """The manifest as written, less each damaged field (records/run.py's Manifest; each dropped with a line
    naming file and field); ManifestDamaged when it is unreadable or no manifest at all."""
    path = Path(run_dir) / MANIFEST_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestDamaged(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        parsed = parse(text)
    except ValueError:
        raise ManifestDamaged(f"{path} is not valid JSON") from None

    def said(name, problem):
        _once(path, 0, f"{path}: dropping the field {name} ({problem}); the manifest's other fields are kept", warn)

    record, data = salvage(parsed, Manifest, str(path), said)
    if isinstance(record, Damaged):
        raise ManifestDamaged(f"{path} is damaged: {record.field + ': ' if record.field else ''}{record.why}")
    return data


def sane_manifest(run_dir: Path, warn=None) -> dict:
    """For readers that can go on without it (report, compare): the manifest, or {} with a warning."""
    try:
        return read_manifest(run_dir, warn)
    except ManifestDamaged as exc:
        (warn or _stderr)(f"{exc}; going on without it")
        return {}


def is_run_dir(path: Path) -> bool:
    return (Path(path) / MANIFEST_FILE).is_file()
