"""The two kinds of job a SLURM run submits, and their sbatch options: the shards' array (first
submitted for every shard, later for the failed ones alone) and the follow-up job after it.

Each array task asks for one core (SLURM's consumable-core selection gives it to no other job) and
runs pinned to it; its time limit is its shard's estimate with a margin (submit_shards). The follow-up job starts
when every task of the array has ended, however it ended (afterany).
"""
from __future__ import annotations

import shlex
import sys
from pathlib import Path

from harness.cluster import record as rec
from harness.cluster import slurm

# A task's time limit: its shard's estimate times this, plus start-up and the engines' builds.
TIME_MARGIN, TIME_FLOOR_S = 2.0, 600.0
FINISH_MINUTES = 30  # merging and rendering the report
# The command every job runs: this interpreter (the venv, which the nodes must see) and this checkout.
CLI = [sys.executable, "-m", "harness.commands.cli"]


def time_limit_min(estimate_s: float) -> int:
    return int(-(-(estimate_s * TIME_MARGIN + TIME_FLOOR_S) // 60))


def passed_through(partition, account, constraint, extra) -> list[str]:
    """The user's own sbatch options, given to every job of the run."""
    return ([f"--partition={partition}"] * bool(partition) + [f"--account={account}"] * bool(account)
            + [f"--constraint={constraint}"] * bool(constraint) + list(extra))


def shard_script(run: Path, argv: list[str], count: int) -> str:
    q = shlex.quote
    cli = shlex.join(CLI)
    return f"""#!/bin/bash
# One array task: shard $SLURM_ARRAY_TASK_ID of {count} of this plan, pinned to the last core SLURM gave it.
# Where the shard has a run folder already (a resubmitted or requeued task), it resumes it: the
# trials it recorded are kept and not run again. Its lock tells whether a task on a node the
# controller lost still writes there: the resumption waits for that task (harness/store/lock.py).
set -u
shards={q(str(run / 'shards'))}/"$SLURM_ARRAY_TASK_ID"
cpu=$({q(sys.executable)} -c 'import os; print(max(os.sched_getaffinity(0)))')
previous=$(ls -d "$shards"/*/manifest.json 2>/dev/null | tail -n 1)
echo "shard $SLURM_ARRAY_TASK_ID on node ${{SLURMD_NODENAME:-?}}, core $cpu${{SLURM_RESTART_COUNT:+, requeued $SLURM_RESTART_COUNT time(s)}}"
if [ -n "$previous" ]; then
  exec {cli} run --resume "${{previous%/manifest.json}}" --cpu "$cpu" --no-report
fi
exec {cli} run {shlex.join(argv)} --shard "$SLURM_ARRAY_TASK_ID/{count}" --cpu "$cpu" --out "$shards" --no-report
"""


def finish_script(run: Path) -> str:
    return f"""#!/bin/bash
# After the array: resubmit its failed shards once, else merge the shards and render the report.
exec {shlex.join(CLI)} slurm finish {shlex.quote(str(run))}
"""


def submit_shards(run: Path, record: dict, indices: list[int]) -> dict:
    """An array of these shards' tasks; the job as the record keeps it. A task's time limit is its
    shard's estimate with the margin, doubled for a resubmission (the estimate fell short, or the
    task was cut for another reason). The array is submitted with the longest, then each task's
    is lowered to its own (a user may lower a limit of their own job)."""
    estimates = {s["index"]: s["estimate_s"] for s in record["shards"]}
    limits = {k: time_limit_min(estimates[k]) * (1 + len(rec.attempts(record, k))) for k in indices}
    job_id = slurm.sbatch([f"--job-name=burtbench-{run.name}", f"--array={','.join(map(str, indices))}",
                           "--ntasks=1", "--cpus-per-task=1", f"--time={max(limits.values())}",
                           f"--output={run / 'logs' / 'shard-%a-%A.log'}", "--open-mode=append",
                           f"--chdir={record['chdir']}",
                           "--export=ALL", *record["sbatch"]], str(run / "shard.sh"))
    for k, minutes in limits.items():
        if minutes < max(limits.values()):
            try:
                slurm.call(["scontrol", "update", f"JobId={job_id}_{k}", f"TimeLimit={minutes}"])
            except slurm.SlurmError:  # the longest limit stays: a task is never cut shorter than its own
                limits[k] = max(limits.values())
    return {"id": job_id, "kind": "shards", "shards": indices, "time_limit_min": limits}


def submit_finish(run: Path, record: dict, after: str) -> dict:
    job_id = slurm.sbatch([f"--job-name=burtbench-{run.name}-finish", f"--dependency=afterany:{after}",
                           "--ntasks=1", "--cpus-per-task=1", f"--time={FINISH_MINUTES}",
                           f"--output={run / 'logs' / 'finish-%j.log'}", f"--chdir={record['chdir']}",
                           "--export=ALL", *record["sbatch"]], str(run / "finish.sh"))
    return {"id": job_id, "kind": "finish", "after": after}


def write_scripts(run: Path, argv: list[str], count: int) -> None:
    (run / "logs").mkdir(parents=True, exist_ok=True)
    for name, text in (("shard.sh", shard_script(run, argv, count)), ("finish.sh", finish_script(run))):
        (run / name).write_text(text)
        (run / name).chmod(0o755)

