"""Result schema and store: one trial per JSON line in <run>/trials.jsonl, plus manifest.json.

Each trial is appended, flushed and fsynced before the next one starts, so a crash, a power
loss or Ctrl-C never loses a finished trial. A torn last line (power loss mid-write) is
reported once and ignored by every reader.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

TRIALS_FILE = "trials.jsonl"
MANIFEST_FILE = "manifest.json"
STATUSES = ("ok", "failed", "timeout", "oom", "unavailable")

# The fields of the one JSON line every child prints when its trial ran: the Python worker
# (harness/worker.py) and the native drivers (burtorch_ext/src/driver/measured_run.hpp) alike.
# A workload may add fields of its own (param_count, save_s ...): they land in Trial.extra.
CHILD_FIELDS = frozenset({
    "status", "outputs", "precision", "iterations", "warmup", "loop_time_s", "per_iter_s", "samples_s",
    "framework_version", "cpu_clocks", "cpu_clocks_source", "instructions", "loop_cpu_time_s", "cpu_time_s",
    "peak_resident_bytes", "peak_resident_source", "peak_virtual_bytes", "peak_virtual_source",
    "peak_private_bytes", "peak_private_source",
})


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
    extra: dict = field(default_factory=dict)

    def key(self) -> tuple:
        return trial_key(self.engine, self.workload, self.params, self.trial)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=False)


def trial_key(engine: str, workload: str, params: dict, trial: int) -> tuple:
    return (engine, workload, json.dumps(params, sort_keys=True), trial)


class ResultsUnwritable(OSError):
    """The results folder cannot take another trial (disk full, read-only, gone)."""


def append_trial(run_dir: Path, trial: Trial) -> None:
    path = Path(run_dir) / TRIALS_FILE
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(trial.to_json() + "\n")
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        raise ResultsUnwritable(f"cannot write {path}: {exc.strerror or exc}") from exc


_reported: set[tuple[str, int]] = set()
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
    for name in ("per_iter_s", "check", "extra"):
        if record.get(name) is not None and not isinstance(record[name], dict):
            return f"'{name}' is not an object"
    return _bad_number(record)


def _bad_number(value, where: str = "") -> str | None:
    if isinstance(value, dict):
        return next(filter(None, (_bad_number(v, f"{where}.{k}" if where else str(k)) for k, v in value.items())), None)
    if isinstance(value, list):
        return next(filter(None, (_bad_number(v, f"{where}[{i}]") for i, v in enumerate(value))), None)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and not abs(value) <= LARGEST:
        return f"'{where}' is {value!r}"
    return None


def read_trials(run_dir: Path, warn=None) -> list[dict]:
    """Every usable trial line; a torn or damaged line is reported (once per process) and skipped."""
    path = Path(run_dir) / TRIALS_FILE
    try:
        lines = path.read_bytes().decode("utf-8", errors="replace").split("\n")
    except FileNotFoundError:
        return []
    trials = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            record, why = None, "an incomplete trial line (interrupted write?)"
        else:
            why = damage(record)
            why = why and f"a damaged trial line ({why})"
        if why:
            if (str(path), number) not in _reported:
                _reported.add((str(path), number))
                (warn or _stderr)(f"{path}:{number}: ignoring {why}")
            continue
        trials.append(record)
    return trials


def mend_tail(run_dir: Path) -> str | None:
    """Make the file end on a complete, usable line before a resume appends to it: a last line
    that lacks only its newline is a trial written whole and keeps it; a last line that is torn
    or damaged is cut (its trial runs again). Returns what was done, or None."""
    path = Path(run_dir) / TRIALS_FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    body = data[:-1] if data.endswith(b"\n") else data
    start = body.rfind(b"\n") + 1
    last = body[start:]
    if not last.strip():
        return None
    try:
        usable = damage(json.loads(last.decode("utf-8"))) is None
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
    print(f"burtbench: warning: {message}", file=sys.stderr)


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


def read_manifest(run_dir: Path) -> dict:
    return json.loads((Path(run_dir) / MANIFEST_FILE).read_text(encoding="utf-8"))


def is_run_dir(path: Path) -> bool:
    return (Path(path) / MANIFEST_FILE).is_file()
