"""A SLURM run followed from its folder: `run --slurm --wait`, `burtbench slurm status` and `cancel`.

The shards' folders say what was recorded (trials.jsonl, the manifest's status); squeue says
which task is pending, running or ended. A line is printed whenever the picture changes, so that
a log of a long wait stays short.
"""
from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from harness.cluster import record as rec
from harness.cluster import slurm
from harness.units import count

POLL_S = 1.0


def shard_states(run: Path, record: dict, known: dict[str, str]) -> dict[int, str]:
    """Each shard's state: done (its folder is complete), else its latest task's (pending, running,
    failed), or 'ended' where the controller no longer knows it."""
    found = {}
    for s in record["shards"]:
        k = s["index"]
        if rec.shard_done(run, k):
            found[k] = "done"
            continue
        tasks = rec.attempts(record, k)
        state = known.get(rec.task_id(tasks[-1], k), "") if tasks else ""
        found[k] = ("running" if state in ("RUNNING", "COMPLETING") else "failed" if state in slurm.FAILED
                    else "pending" if state in ("PENDING", "CONFIGURING", "REQUEUED", "SUSPENDED") else "ended")
    return found


def progress(run: Path, record: dict, states: dict[int, str]) -> str:
    """shards done/running/pending/failed, the trials recorded of those planned, and the time left
    (the slowest unfinished shard's estimate, scaled by what it has left)."""
    counts = {s: sum(v == s for v in states.values()) for s in ("done", "running", "pending", "failed")}
    recorded = {s["index"]: rec.recorded_trials(run, s["index"]) for s in record["shards"]}
    planned = sum(s["trials"] for s in record["shards"])
    left = [s["estimate_s"] * max(0.0, 1 - recorded[s["index"]] / max(1, s["trials"]))
            for s in record["shards"] if states[s["index"]] != "done"]
    eta = f"ETA {timedelta(seconds=round(max(left)))}" if left else "merging"
    return (f"shards: {counts['done']} done, {counts['running']} running, {counts['pending']} pending, "
            f"{counts['failed']} failed · trials: {sum(recorded.values())} of {planned} recorded · {eta}")


def since(record: dict) -> str:
    """'0:02:05 after submission', the one elapsed time of --wait, `slurm status` and the outcome: from
    slurm.json's submitted_at by the wall clock, the clock that wrote it (a follower on another machine has
    no other start in common); a clock behind the submitter's reads no time rather than a negative one."""
    return f"{timedelta(seconds=round(max(0.0, time.time() - record['submitted_at'])))} after submission"


def follow(run: Path, console: Console) -> int:
    """Until the run has an outcome: 0 when merged and reported, 1 when not."""
    last = ""
    while True:
        record = rec.read(run)
        try:
            known = slurm.states(rec.job_ids(record))
        except slurm.SlurmError as exc:  # the controller busy or restarting: the jobs go on, ask again
            console.print(f"[yellow]{escape(str(exc))}[/] (asking again)", highlight=False)
            time.sleep(POLL_S * 10)
            continue
        line = progress(run, record, shard_states(run, record, known))
        if line != last:
            console.print(f"{since(record)} · {line}", highlight=False)
            last = line
        if record["outcome"]:
            return outcome(run, record, console)
        if no_node_left(run, record, console):
            return 1
        if all(known.get(j, "COMPLETED") in slurm.ENDED for j in jobs_of(record, known)):
            fresh = rec.read(run)  # the last job wrote its outcome, or submitted more, before it ended
            if fresh["outcome"]:
                return outcome(run, fresh, console)
            if len(fresh["jobs"]) > len(record["jobs"]):
                continue
            finish = record["jobs"][-1]
            log = run / "logs" / f"finish-{finish['id']}.log"
            console.print(f"[red]the follow-up job {finish['id']} ended without merging[/]; its log ends: "
                          f"{escape(rec.log_tail(log))}", highlight=False)
            return 1
        time.sleep(POLL_S)


def no_node_left(run: Path, record: dict, console: Console) -> bool:
    """Whether the cluster lost every node the run's jobs may use, said with the shards not done and
    how to finish them; the jobs stay queued and go on where a node comes back."""
    partition = next((a.split("=", 1)[1] for a in record["sbatch"] if a.startswith("--partition=")), None)
    try:
        if slurm.nodes_left(partition):
            return False
    except slurm.SlurmError:  # no answer is no verdict: the follow loop asks the controller again
        return False
    where = f"partition {partition}" if partition else "the cluster"
    missing = [s for s in record["shards"] if not rec.shard_done(run, s["index"])]
    if not missing:
        return False
    console.print(f"[red]every node of {escape(where)} is lost[/] (sinfo: down, drained or failing); shards not done: "
                  + ", ".join(f"{s['index']} ({rec.recorded_trials(run, s['index'])} of {count(s['trials'], 'trial')} "
                              f"recorded)" for s in missing), highlight=False)
    console.print(f"  their jobs stay queued and go on once a node is back: burtbench slurm status {escape(str(run))}",
                  highlight=False)
    console.print(f"  or merge what was recorded: burtbench slurm cancel {escape(str(run))}; burtbench slurm finish "
                  f"{escape(str(run))} --allow-partial", highlight=False)
    return True


def jobs_of(record: dict, known: dict[str, str]) -> list[str]:
    """Every job and array task of the run the controller knows of (an array's tasks by their ids)."""
    ids = [j for j in known if j.split("_")[0] in rec.job_ids(record)]
    return ids or rec.job_ids(record)


def outcome(run: Path, record: dict, console: Console) -> int:
    done = record["outcome"]
    for k, tail in (done.get("failed") or {}).items():
        tries = sum(k in map(str, job.get("shards", ())) for job in record["jobs"])
        console.print(f"[red]shard {escape(k)} not done after {count(tries, 'attempt')}[/]; its last log ends: "
                      f"{escape(tail)}", highlight=False)
    if "merged" not in done:
        console.print(f"[red]not merged[/]: {escape(done['reason'])} ({since(record)})", highlight=False)
        return 1
    finish = run / "logs" / f"finish-{record['jobs'][-1]['id']}.log"
    if finish.exists():  # the follow-up job's account: a line per paper claim
        console.print(escape(finish.read_text(errors="replace").rstrip()), highlight=False)
    report = f"; report: {done['report']}/index.html" if done["report"] else ""
    console.print(f"merged: {done['trials']} trials ({done['status']}) → {done['merged']}{report} "
                  f"({since(record)})", highlight=False)
    return 0


def status(run: Path, console: Console) -> int:
    record = rec.read(run)
    known = slurm.states(rec.job_ids(record))
    states = shard_states(run, record, known)
    console.print(f"{since(record)} · {progress(run, record, states)}", highlight=False)
    for s in record["shards"]:
        k = s["index"]
        tasks = rec.attempts(record, k)
        jobs = f"jobs {', '.join(rec.task_id(t, k) for t in tasks)}; log {rec.log_of(run, tasks[-1], k)}" if tasks \
            else "never submitted (sbatch did not answer)"
        console.print(f"  shard {k}: {states[k]}, {rec.recorded_trials(run, k)} of {s['trials']} trials, {jobs}",
                      highlight=False)
    for job in record["jobs"]:
        if job["kind"] == "finish":
            console.print(f"  follow-up job {job['id']} (after {job['after']}): "
                          f"{known.get(job['id'], 'ended').lower()}", highlight=False)
    if record["outcome"]:
        return outcome(run, record, console)
    no_node_left(run, record, console)
    return 0


def cancel(run: Path, console: Console) -> int:
    record = rec.read(run)
    ids = rec.job_ids(record)
    try:
        slurm.cancel(ids)
    except slurm.SlurmError as exc:
        console.print(f"[yellow]{escape(str(exc))}[/]", highlight=False)
        return 1
    console.print(f"cancelled jobs {', '.join(ids)}; the trials recorded stay in {run / 'shards'} "
                  f"(burtbench merge --allow-partial joins them)", highlight=False)
    return 0
