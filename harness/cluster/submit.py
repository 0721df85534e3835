"""`burtbench run --slurm`: the plan split into shards by cost and submitted as one SLURM job array,
one task per shard, with a follow-up job that resubmits failed shards once, then merges and reports.

The request comes checked as `run`'s is (harness/commands/request.py: sbatch on PATH, the partition,
the options a SLURM run decides itself, the plan, the number of tasks); before the array is submitted a
one-minute job checks that the nodes see the results folder (it reads back a token written here), since
every task writes its shard there and the follow-up job reads them all.
"""
from __future__ import annotations

import json
import secrets
import shlex
import shutil
import time
from pathlib import Path

from rich.console import Console

from harness.analysis.summary import param_text
from harness.cluster import follow, jobs, slurm
from harness.cluster import record as rec
from harness.errors import UsageError
from harness.planning import shard
from harness.planning.estimate import Estimator
from harness.planning.preview import duration
from harness.running import session
from harness.running.ask import RunRequest
from harness.text import clean
from harness.units import count

# Without --slurm N: a task per this much estimated work, at most one per point.
SECONDS_PER_TASK = 1800.0
CHECK_POLL_S = 0.5


def submit(req: RunRequest, console: Console) -> int:
    """A checked request of `run --slurm` (harness/commands/request.py): its plan's shards submitted,
    or with --dry-run shown."""
    asked = req.slurm
    if req.dry_run:
        return show(session.make_plan(req.plan), asked.tasks, req.estimate_from, console)
    shards = split(session.make_plan(req.plan), asked.tasks, req.estimate_from)
    run = session.new_run_dir(req.out, req.plan.profile).resolve()
    run.mkdir(parents=True)
    sbatch = jobs.passed_through(asked.partition, asked.account, asked.constraint, asked.sbatch_arg)
    try:
        check_shared(run, sbatch, console)
    except (UsageError, slurm.SlurmError):
        shutil.rmtree(run, ignore_errors=True)
        raise
    record = {"run": run.name, "submitted_at": time.time(), "chdir": str(Path.cwd()), "sbatch": sbatch,
              "report_dir": str(req.report_dir.resolve()) if req.report_dir else None, "shards": shards,
              "jobs": [], "outcome": None}
    jobs.write_scripts(run, list(asked.task_argv), len(shards))
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
    if not asked.wait:
        console.print(f"follow: burtbench slurm status {run}   cancel: burtbench slurm cancel {run}", highlight=False)
        return 0
    return follow.follow(run, console)


def split(plan: list, tasks: int, estimate_from: Path | None) -> list[dict]:
    """The shards of the plan as slurm.json records them."""
    return [record for record, _ in shards_of(plan, tasks, estimate_from)]


def shards_of(plan: list, tasks: int, estimate_from: Path | None) -> list[tuple[dict, list[list]]]:
    """The shards of the plan (`tasks` of them, checked; 0: a task per SECONDS_PER_TASK of work), as every
    task's --shard K/N computes them: the same estimates. Each shard's record and its points."""
    trial_s = Estimator(estimate_from, probe=None).trial_s
    points = {pt.point_key() for pt in plan}
    wanted = tasks or max(1, min(len(points), round(sum(map(trial_s, plan)) / SECONDS_PER_TASK)))
    # The trials a task will run: an engine unavailable here (no GPU, a framework not installed) is
    # left out on the nodes too; building engines (the authors' programs) is the tasks' work.
    reasons = {pt.engine.id: pt.engine.unavailable_reason() for pt in plan}
    shards = []
    for index, part in enumerate(shard.split(plan, wanted, trial_s), start=1):
        trials = [pt for pt in shard.only(plan, part) if reasons[pt.engine.id] is None]
        shards.append(({"index": index, "points": len(part), "trials": len(trials),
                        "estimate_s": round(sum(map(trial_s, trials)), 1)}, part))
    return shards


def show(plan: list, tasks: int, estimate_from: Path | None, console: Console) -> int:
    """`run --slurm --dry-run`: the shards the run would submit, each with its points and estimate."""
    shards = shards_of(plan, tasks, estimate_from)
    console.print(f"burtbench run --slurm --dry-run: {count(len(shards), 'shard')}, one array task each, estimated "
                  f"from {estimate_from or 'built-in figures'}; nothing submitted", highlight=False)
    for s, points in shards:
        console.print(f"shard {s['index']}: {count(s['points'], 'point')}, {count(s['trials'], 'trial')}, "
                      f"about {duration(s['estimate_s'])} (time limit {jobs.time_limit_min(s['estimate_s'])} min)",
                      highlight=False)
        for engine, workload, params in points:
            shown = " ".join(f"{k}={param_text(v)}" for k, v in json.loads(params).items())
            console.print(f"  {clean(engine)} · {workload} {clean(shown)}".rstrip(), highlight=False)
    return 0


def check_shared(run: Path, sbatch: list[str], console: Console) -> None:
    """A job on the nodes reads a token written here and writes it back: else the nodes cannot see it."""
    token, sent, back = secrets.token_hex(8), run / ".nodes-see-this", run / ".nodes-saw-this"
    sent.write_text(token)
    try:
        script = run / ".check.sh"
        script.write_text(f"#!/bin/bash\ncat {shlex.quote(str(sent))} > {shlex.quote(str(back))}\n")
        job = slurm.sbatch(["--job-name=burtbench-check", "--ntasks=1", "--cpus-per-task=1", "--time=1",
                            "--output=/dev/null", "--chdir=/", *sbatch], str(script))
    except slurm.NotConfigured as exc:
        raise UsageError(f"--slurm: {exc}") from None
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
