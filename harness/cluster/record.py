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
import os
from pathlib import Path

from harness.errors import UsageError
from harness.records.base import Damaged
from harness.records.base import read as read_record
from harness.records.cluster import SlurmRecord
from harness.store import results
from harness.text import clean

RECORD = "slurm.json"


def read(run: Path) -> dict:
    """The record (records/cluster.py's SlurmRecord): a damaged one is one line naming the field."""
    try:
        found = read_record(run / RECORD, SlurmRecord)
    except FileNotFoundError:
        raise UsageError(f"{run}: not a run submitted with --slurm (no {RECORD})") from None
    except OSError as exc:
        raise UsageError(f"{run / RECORD}: unreadable ({clean(str(exc))})") from None
    if isinstance(found, Damaged):
        top, _, inner = found.field.partition(".")
        what = f"'{top}'{' ' + inner if inner else ''}: {found.why}" if found.field else found.why
        raise UsageError(f"{run / RECORD}: damaged ({clean(what)}); the SLURM run cannot be followed from it")
    return found.model_dump(by_alias=True)  # every field its readers use, null where it was absent


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
