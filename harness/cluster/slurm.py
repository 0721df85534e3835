"""SLURM's client commands, each behind one function: sbatch, squeue, scontrol, scancel, sinfo.

Only the client commands are used, never sacct (it needs the accounting database, which many
clusters and the tests' clusters lack): squeue -r -t all gives every array task's state for as long
as the controller keeps finished jobs (MinJobAge), scontrol the partitions, sinfo the nodes.
"""
from __future__ import annotations

import re
import shutil
import subprocess

from engines import children
from harness.errors import UsageError
from harness.text import clean

# A task in one of these states ended without finishing its shard: it is resubmitted once.
FAILED = ("FAILED", "TIMEOUT", "CANCELLED", "PREEMPTED", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE")
ENDED = ("COMPLETED", *FAILED)
CLIENT_TIMEOUT_S = 60
# A node whose state (sinfo's, flags such as '*' aside) begins so takes no job: down (the controller
# lost it), drained or draining, failing, not yet or no longer in service.
LOST = ("down", "drain", "fail", "future", "inval", "power")
# What the client commands say where this machine has no working SLURM (no slurm.conf, no configless
# source, no controller answering): no option of ours is at fault then, so no refusal is blamed on one.
NOT_CONFIGURED = re.compile(r"slurm\.conf|configuration (file|source)|contact slurm controller|slurmctld"
                            r"|control machine", re.IGNORECASE)


class SlurmError(RuntimeError):
    """A SLURM command failed; the message is one line with its own words."""


class NotConfigured(SlurmError):
    """The command found no cluster to talk to, whatever it was asked."""


def require_sbatch() -> None:
    if shutil.which("sbatch") is None:
        raise UsageError("--slurm: no sbatch on PATH (run on a SLURM cluster's login node, or load its module)")


def call(argv: list[str], stdin: str | None = None) -> str:
    try:
        done = children.run(argv, f"asking SLURM ({argv[0]})", CLIENT_TIMEOUT_S, input=stdin, capture_output=True,
                            text=True)
    except FileNotFoundError:
        raise SlurmError(f"{argv[0]}: not on PATH") from None
    except subprocess.TimeoutExpired:
        raise SlurmError(f"{argv[0]}: no answer from the cluster's controller within {CLIENT_TIMEOUT_S} s") from None
    if done.returncode != 0:
        said = clean(" ".join((done.stderr or done.stdout).split())) or f"exit status {done.returncode}"
        if NOT_CONFIGURED.search(said):
            raise NotConfigured(f"SLURM is not configured on this machine, or its controller does not answer "
                                f"({argv[0]} said: {said})")
        raise SlurmError(f"{argv[0]}: {said}")
    return done.stdout


def check_partition(name: str) -> None:
    try:
        call(["scontrol", "-o", "show", "partition", name])
    except NotConfigured as exc:
        raise UsageError(f"--slurm: {exc}") from None
    except SlurmError:
        raise UsageError(f"--partition {name}: the cluster has no such partition (sinfo lists them)") from None


def sbatch(options: list[str], script: str) -> str:
    """Submits `script` (a file) with `options`; the job's id: digits, or the answer is no job of ours
    (a wrapper's banner, a garbled line) and every later squeue and scancel would name the wrong one."""
    said = call(["sbatch", "--parsable", *options, script]).strip()
    job = said.split(";")[0]
    if not job.isascii() or not job.isdigit():
        raise SlurmError(f"sbatch: answered {clean(said[:200])!r}, not a job id; nothing is known to be submitted")
    return job


def states(job_ids: list[str]) -> dict[str, str]:
    """Each job's, or array task's ('12_3'), state, for the jobs the controller still knows."""
    if not job_ids:
        return {}
    try:
        out = call(["squeue", "-r", "-t", "all", "-h", "-o", "%i %T", "-j", ",".join(job_ids)])
    except SlurmError as exc:
        if "Invalid job id" in str(exc):  # every one ended longer ago than the controller keeps jobs
            return {}
        raise
    return dict(line.split(None, 1) for line in out.splitlines() if len(line.split(None, 1)) == 2)


def cancel(job_ids: list[str]) -> None:
    if job_ids:
        call(["scancel", *job_ids])


def nodes_left(partition: str | None) -> int:
    """How many nodes of the partition (of every partition where None) can still take a job."""
    out = call(["sinfo", "-h", "-N", "-o", "%N %T", *(["--partition", partition] if partition else [])])
    states = dict(line.split(None, 1) for line in out.splitlines() if len(line.split(None, 1)) == 2)
    return sum(not state.startswith(LOST) for state in states.values())
