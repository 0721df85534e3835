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


def read_trials(run_dir: Path, warn=None) -> list[dict]:
    """Every complete trial line; a torn or corrupt line is reported (once per process) and skipped."""
    path = Path(run_dir) / TRIALS_FILE
    if not path.exists():
        return []
    trials = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                record = None
            if not isinstance(record, dict):
                if (str(path), number) not in _reported:
                    _reported.add((str(path), number))
                    (warn or _stderr)(f"{path}:{number}: ignoring an incomplete trial line (interrupted write?)")
                continue
            trials.append(record)
    return trials


def drop_torn_tail(run_dir: Path) -> bool:
    """Cut a last line that lacks its newline (a write cut short), so appends start on a fresh line."""
    path = Path(run_dir) / TRIALS_FILE
    if not path.exists():
        return False
    data = path.read_bytes()
    if not data or data.endswith(b"\n"):
        return False
    with open(path, "r+b") as fh:
        fh.truncate(data.rfind(b"\n") + 1)
        fh.flush()
        os.fsync(fh.fileno())
    return True


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
