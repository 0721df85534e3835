"""A SLURM run's folder: its record (slurm.json), its scripts, its shards' runs and logs.

RUN/slurm.json   the plan's shards (points, planned trials, estimated seconds), the sbatch options,
                 every job submitted (the array, resubmissions, the follow-up jobs) and the outcome
RUN/shard.sh     one array task: a fresh run of shard $SLURM_ARRAY_TASK_ID, or the resumption of its
                 folder when it has one (a resubmitted or requeued task)
RUN/finish.sh    the follow-up job (afterany): resubmits the failed shards once, else merges and reports
RUN/shards/K/    shard K's run folder (burtbench run --shard K/N --out RUN/shards/K)
RUN/logs/        each task's and follow-up job's output
RUN/merged/RUN/  the merged run (named as RUN, so is its report under --report-dir)
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

from harness.errors import UsageError
from harness.store import results
from harness.text import clean

RECORD = "slurm.json"


def read(run: Path) -> dict:
    """The record, every field its readers use checked: a damaged one is one line naming the field."""
    try:
        record = json.loads((run / RECORD).read_text())
    except FileNotFoundError:
        raise UsageError(f"{run}: not a run submitted with --slurm (no {RECORD})") from None
    except (OSError, ValueError, RecursionError) as exc:
        raise UsageError(f"{run / RECORD}: unreadable ({clean(str(exc))})") from None
    wrong = damage(record)
    if wrong:
        raise UsageError(f"{run / RECORD}: damaged ({wrong}); the SLURM run cannot be followed from it")
    return record


def _count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _seconds(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0


def _text(v) -> bool:
    return isinstance(v, str)


def _each(check):
    return lambda v: isinstance(v, list) and all(check(x) for x in v)


def _fields(checks: dict):
    return lambda v: isinstance(v, dict) and all(check(v.get(name)) for name, check in checks.items())


SHARD = {"index": lambda v: _count(v) and v >= 1, "points": _count, "trials": _count, "estimate_s": _seconds}
JOB = {"id": lambda v: isinstance(v, str) and bool(v), "kind": lambda v: v in ("shards", "finish")}
JOB_OF_KIND = {"shards": {"shards": _each(lambda v: _count(v) and v >= 1)}, "finish": {"after": _text}}
OUTCOME = {"status": _text, "failed": lambda v: v is None or isinstance(v, dict) and all(map(_text, v.values()))}
OUTCOME_OF_KIND = {True: {"trials": _count, "merged": _text, "report": lambda v: v is None or _text(v)},
                   False: {"reason": _text}}
# What each field of the record must be.
FIELDS = {
    "run": _text, "submitted_at": _seconds, "chdir": _text, "sbatch": _each(_text),
    "report_dir": lambda v: v is None or _text(v),
    "shards": lambda v: _each(_fields(SHARD))(v) and bool(v),
    "jobs": _each(lambda job: _fields(JOB)(job) and _fields(JOB_OF_KIND[job["kind"]])(job)),
    "outcome": lambda v: v is None or _fields(OUTCOME)(v) and _fields(OUTCOME_OF_KIND["merged" in v])(v),
}


def damage(record) -> str | None:
    """The first field of the record that is not what its readers take it for, or None."""
    if not isinstance(record, dict):
        return "not a JSON object"
    wrong = next((f"'{name}'" for name, check in FIELDS.items() if not check(record.get(name))), None)
    shards = {s["index"] for s in record["shards"]} if wrong is None else set()
    if wrong is None and not all(set(job.get("shards", ())) <= shards for job in record["jobs"]):
        return "'jobs' (a shard the record does not have)"
    return wrong


def write(run: Path, record: dict) -> None:
    """Whole or not at all: the follower on another machine may read it at any moment."""
    part = run / f".{RECORD}.part"
    with open(part, "w", encoding="utf-8") as fh:
        json.dump(record, fh, indent=1)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(part, run / RECORD)


def job_ids(record: dict) -> list[str]:
    return [job["id"] for job in record["jobs"]]


def shard_run(run: Path, index: int) -> Path | None:
    """Shard `index`'s run folder, once its task has written a manifest there."""
    found = sorted((run / "shards" / str(index)).glob(f"*/{results.MANIFEST_FILE}"))
    return found[-1].parent if found else None


def shard_done(run: Path, index: int) -> bool:
    folder = shard_run(run, index)
    try:
        return folder is not None and results.read_manifest(folder).get("status") == "complete"
    except results.ManifestDamaged:
        return False


def recorded_trials(run: Path, index: int) -> int:
    """Trials shard `index` has written (whole lines: a line cut by a kill is not a trial)."""
    folder = shard_run(run, index)
    try:
        with open(folder / results.TRIALS_FILE, "rb") as fh:
            return sum(1 for line in fh if line.endswith(b"\n"))
    except (OSError, TypeError):
        return 0


def attempts(record: dict, index: int) -> list[dict]:
    """The jobs that ran shard `index`, first to last."""
    return [job for job in record["jobs"] if index in job.get("shards", ())]


def task_id(job: dict, index: int) -> str:
    return f"{job['id']}_{index}"


def log_of(run: Path, job: dict, index: int) -> Path:
    return run / "logs" / f"shard-{index}-{job['id']}.log"


def log_tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError as exc:
        return f"(no log: {exc.strerror or exc})"
    return " | ".join(line.strip() for line in text[-lines:] if line.strip()) or "(empty log)"
