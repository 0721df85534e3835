"""`burtbench run --slurm`: the plan split into shards by cost and submitted as one SLURM job array,
one task per shard, with a follow-up job that resubmits failed shards once, then merges and reports.

Everything is checked before the array is submitted: sbatch on PATH, the partition, the plan (as
`run` checks it), and that the nodes see the results folder (a one-minute job reads back a token
written here), since every task writes its shard there and the follow-up job reads them all.
"""
from __future__ import annotations

import dataclasses
import secrets
import shlex
import shutil
import time
from pathlib import Path

from rich.console import Console

from harness.cluster import follow, jobs, slurm
from harness.cluster import record as rec
from harness.errors import UsageError
from harness.planning import shard
from harness.planning.estimate import Estimator
from harness.running import session
from harness.store.runs import check_out_dir, existing_run

# Without --slurm N: a task per this much estimated work, at most one per point.
SECONDS_PER_TASK = 1800.0
CHECK_POLL_S = 0.5
# Options of a one-core run that a task decides for itself, or that a SLURM run does otherwise.
NOT_WITH_SLURM = ("shard", "resume", "cpu", "cpus", "dry_run")


def submit(args, argv: list[str], console: Console) -> int:
    """`argv`: run's arguments less the submission's own (each task's command gets them)."""
    slurm.require_sbatch()
    given = [f"--{o.replace('_', '-')}" for o in NOT_WITH_SLURM if getattr(args, o) not in (None, False)]
    if given:
        raise UsageError(f"--slurm and {', '.join(given)}: a SLURM run splits the plan, picks each task's core "
                         f"and resumes failed shards itself; drop {', '.join(given)}")
    if args.partition:
        slurm.check_partition(args.partition)
    out = Path(args.out)
    check_out_dir(out)
    plan = session.new_plan(args)
    if args.seed is None:  # as every task computes it (run --shard): one order of rounds for all
        plan = dataclasses.replace(plan, round_seed=session.plan_seed(plan))
    shards = split(session.make_plan(plan), args)
    run = session.new_run_dir(out, plan.profile).resolve()
    run.mkdir(parents=True)
    sbatch = jobs.passed_through(args.partition, args.account, args.constraint, args.sbatch_arg)
    try:
        check_shared(run, sbatch, console)
    except (UsageError, slurm.SlurmError):
        shutil.rmtree(run, ignore_errors=True)
        raise
    record = {"run": run.name, "submitted_at": time.time(), "chdir": str(Path.cwd()), "sbatch": sbatch,
              "report_dir": None if args.no_report else str(Path(args.report_dir).resolve()), "shards": shards,
              "jobs": [], "outcome": None}
    jobs.write_scripts(run, argv, len(shards))
    rec.write(run, record)
    array = jobs.submit_shards(run, record, [s["index"] for s in shards])
    record["jobs"].append(array)
    rec.write(run, record)
    record["jobs"].append(jobs.submit_finish(run, record, array["id"]))
    rec.write(run, record)
    limits = sorted(array["time_limit_min"].values())
    console.print(f"submitted {len(shards)} shards as job array {array['id']} (1 core each, time limits "
                  f"{limits[0]}–{limits[-1]} min), then job {record['jobs'][-1]['id']}: merge and report → {run}",
                  highlight=False)
    if not args.wait:
        console.print(f"follow: burtbench slurm status {run}   cancel: burtbench slurm cancel {run}", highlight=False)
        return 0
    return follow.follow(run, console)


def split(plan: list, args) -> list[dict]:
    """The shards of the plan, as every task's --shard K/N computes them (the same estimates)."""
    source = existing_run(args.estimate_from, "--estimate-from") if args.estimate_from else None
    trial_s = Estimator(source, probe=None).trial_s
    points = {pt.point_key() for pt in plan}
    count = args.slurm or max(1, min(len(points), round(sum(map(trial_s, plan)) / SECONDS_PER_TASK)))
    if count > len(points):
        raise UsageError(f"--slurm {count}: the plan has {len(points)} points, and a point is never split; "
                         f"ask for {len(points)} tasks at most")
    # The trials a task will run: an engine unavailable here (no GPU, a framework not installed) is
    # left out on the nodes too; building engines (the authors' programs) is the tasks' work.
    reasons = {pt.engine.id: pt.engine.unavailable_reason() for pt in plan}
    shards = []
    for index, part in enumerate(shard.split(plan, count, trial_s), start=1):
        trials = [pt for pt in shard.only(plan, part) if reasons[pt.engine.id] is None]
        shards.append({"index": index, "points": len(part), "trials": len(trials),
                       "estimate_s": round(sum(map(trial_s, trials)), 1)})
    return shards


def check_shared(run: Path, sbatch: list[str], console: Console) -> None:
    """A job on the nodes reads a token written here and writes it back: else the nodes cannot see it."""
    token, sent, back = secrets.token_hex(8), run / ".nodes-see-this", run / ".nodes-saw-this"
    sent.write_text(token)
    try:
        script = run / ".check.sh"
        script.write_text(f"#!/bin/bash\ncat {shlex.quote(str(sent))} > {shlex.quote(str(back))}\n")
        job = slurm.sbatch(["--job-name=burtbench-check", "--ntasks=1", "--cpus-per-task=1", "--time=1",
                            "--output=/dev/null", "--chdir=/", *sbatch], str(script))
    except slurm.SlurmError as exc:
        raise UsageError(f"--slurm: the cluster refused a job with these options: {exc}") from None
    console.print(f"checking that the nodes see {run.parent} (job {job}, a few seconds once a core is free)",
                  highlight=False)
    while slurm.states([job]).get(job, "COMPLETED") not in slurm.ENDED:
        time.sleep(CHECK_POLL_S)
    seen = back.read_text() if back.exists() else ""
    for path in (sent, back, script):
        path.unlink(missing_ok=True)
    if seen != token:
        raise UsageError(f"--out {run.parent}: the cluster's nodes cannot see this folder (a job there could not "
                         f"read a file written here); put the results on a file system the nodes share")
