"""added.jsonl: the trials a run added once its plan was done (--adaptive's, the deciding rounds'), one
line a batch, written and fsynced before the batch's first trial starts: a resumed run re-creates them
(planning/resume.py) and runs those without a record, and the deciding rounds go on with the budget
they had left.

A line: {"trials": [{"engine", "workload", "params", "trial", "why", "with_init"}], "deciding_spent_s"}.
`deciding_spent_s` is null for --adaptive's batch; for a deciding batch it is the claims budget spent once
the batch has run (by its estimate), and a deciding batch without trials says the rounds ended.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from harness.errors import UsageError
from harness.records.base import Damaged, parse, validate
from harness.records.run import AddedBatch
from harness.store.results import ResultsUnreadable, ResultsUnwritable

ADDED_FILE = "added.jsonl"


@dataclass(frozen=True)
class Batch:
    trials: tuple[dict, ...]
    deciding_spent_s: float | None


def append(run_dir: Path, trials: list[dict], deciding_spent_s: float | None = None) -> None:
    """One batch, after cutting a line a kill left half written (its trials never started)."""
    path = Path(run_dir) / ADDED_FILE
    line = json.dumps({"trials": trials, "deciding_spent_s": deciding_spent_s}, sort_keys=True) + "\n"
    try:
        with open(path, "a+b") as fh:
            fh.seek(0)
            data = fh.read()
            if data and not data.endswith(b"\n"):
                fh.truncate(data.rfind(b"\n") + 1)
            fh.write(line.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        raise ResultsUnwritable(f"cannot write {path}: {exc.strerror or exc}") from exc


def read(run_dir: Path) -> list[Batch]:
    """Every whole batch; a damaged one is a UsageError naming the file, the line and the field."""
    path = Path(run_dir) / ADDED_FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise ResultsUnreadable(f"cannot read {path}: {exc.strerror or exc}") from None
    whole = data[: data.rfind(b"\n") + 1]  # a last line without its newline was cut before its batch began
    batches = []
    for number, line in enumerate(whole.splitlines(), 1):
        problem, batch = _batch(line)
        if problem:
            raise UsageError(f"{path}:{number}: damaged ({problem}); the rounds added to the run cannot be "
                             f"known: start a new run")
        batches.append(batch)
    return batches


def _batch(line: bytes) -> tuple[str | None, Batch | None]:
    try:
        record = parse(line.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError is one
        return "not a JSON line", None
    found = validate(record, AddedBatch, ADDED_FILE)
    if isinstance(found, Damaged):
        return f"{found.field or 'the line'}: {found.why}", None
    return None, Batch(tuple(record["trials"]), record.get("deciding_spent_s"))
