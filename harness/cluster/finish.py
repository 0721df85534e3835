"""What the follow-up job runs once the array has ended (`burtbench slurm finish RUN`).

A shard is done when its run folder's manifest says complete: the folder, not the scheduler's
account of the task, says whether every planned trial was recorded. A shard not done is
resubmitted once (its task resumes its folder, so no trial runs twice and none is lost), with a
new follow-up job after it. A shard that failed twice is reported with its log's last lines; then
the shards are merged into RUN/merged/<RUN's name>/ and the report rendered, and a partial run is refused unless
--allow-partial. That option is asked by hand (the cluster lost every node, a shard keeps failing): it
resubmits nothing and merges what the shards recorded, the missing points named.
"""
from __future__ import annotations

from pathlib import Path

from rich.console import Console

from harness.cluster import jobs
from harness.cluster import record as rec
from harness.errors import UsageError
from harness.report.epilogue import after_run
from harness.running.session import planned_keys
from harness.store import merge, results
from harness.units import count

ATTEMPTS = 2  # a shard's first task and one resubmission


def finish(run: Path, console: Console, allow_partial: bool = False) -> int:
    record = rec.read(run)
    indices = [s["index"] for s in record["shards"]]
    undone = [k for k in indices if not rec.shard_done(run, k)]
    # --allow-partial, asked by hand: merge what the shards recorded now (the cluster may have no node left)
    again = [] if allow_partial else [k for k in undone if len(rec.attempts(record, k)) < ATTEMPTS]
    if again:
        array = jobs.submit_shards(run, record, again)
        record["jobs"].append(array)
        rec.write(run, record)
        record["jobs"].append(jobs.submit_finish(run, record, array["id"]))
        rec.write(run, record)
        console.print(f"resubmitted shard{'s' * (len(again) > 1)} {', '.join(map(str, again))} as job "
                      f"{array['id']} (resuming their folders), then job {record['jobs'][-1]['id']}", highlight=False)
        return 0
    failed = {str(k): rec.log_tail(rec.log_of(run, rec.attempts(record, k)[-1], k)) for k in undone}
    for k in undone:
        console.print(f"shard {k} not done after {count(len(rec.attempts(record, k)), 'attempt')}; its last log "
                      f"ends: {failed[str(k)]}", highlight=False)
    try:
        merged = merge_shards(run, [k for k in indices if rec.shard_run(run, k)], allow_partial)
    except UsageError as exc:
        record["outcome"] = {"status": "not merged", "reason": str(exc), "failed": failed}
        rec.write(run, record)
        raise
    folder = None
    if record["report_dir"]:  # else --no-report
        after_run(merged, console, Path(record["report_dir"]))  # the report, and a line per paper claim
        folder = Path(record["report_dir"]) / merged.name
    record["outcome"] = {"status": results.read_manifest(merged)["status"], "trials": len(results.read_trials(merged)),
                         "merged": str(merged), "failed": failed,
                         "report": str(folder) if folder and (folder / "index.html").exists() else None}
    console.print(f"merged {record['outcome']['trials']} trials → {merged}"
                  + (f"; report: {folder / 'index.html'}" if folder else ""), highlight=False)
    rec.write(run, record)  # last: a follower that sees the outcome finds this job's whole account in its log
    return 0


def merge_shards(run: Path, indices: list[int], allow_partial: bool) -> Path:
    if not indices:
        raise UsageError(f"merge: no shard of {run} recorded a run (see its logs/)")
    return merge.merge([rec.shard_run(run, k) for k in indices], run / "merged" / run.name, allow_mixed=False,
                       allow_partial=allow_partial, planned=planned_keys)
