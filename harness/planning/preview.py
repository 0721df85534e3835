"""`burtbench run --dry-run`: the plan per workload and how long it will take, nothing run."""
from __future__ import annotations

import shutil
import sys
import textwrap
from datetime import timedelta

from rich.console import Console
from rich.table import Table

from harness.analysis.effect import MIN_TRIALS
from harness.errors import UsageError
from harness.planning.claim_points import NO_CLAIM_JUDGED, added_trials, judges_any
from harness.planning.estimate import engine_builds, env_builds, revision_builds, wall_s
from harness.text import clean
from harness.units import count

# Said by the run and by its --dry-run alike (both exit 2).
NOTHING_TO_RUN = ("nothing to run: every selected engine is unavailable here (the lines before say why, on stderr; "
                  "burtbench list shows the engines that are)")


# Why a versions run's trial beyond the profile's count joined the plan (running/session.py).
INTERVAL = f"{MIN_TRIALS} trials for an interval"


def duration(seconds: float) -> str:
    return str(timedelta(seconds=round(seconds)))


def points(trials: list) -> int:
    """The workload points the trials run at, each once whatever engines run it: the engines have a column of
    their own."""
    return len({(pt.workload.name, pt.point_key().params) for pt in trials})


def skip_line(eid: str, reason: str, width: int | None) -> str:
    """Why an engine would be skipped, wrapped to a terminal's `width` (its continuation lines indented, a path or an
    option never broken); one line where stderr is no terminal, for a reader that greps it."""
    text = f"burtbench: would skip {clean(eid)}: unavailable: {clean(reason)}"
    return textwrap.fill(text, width, subsequent_indent="  ", break_on_hyphens=False, break_long_words=False) \
        if width else text


def show(plan: list, req, estimator, console: Console) -> int:
    unavailable = {}
    for pt in plan:
        if pt.engine.id not in unavailable:
            unavailable[pt.engine.id] = pt.engine.unavailable_reason()
    for eid, reason in unavailable.items():
        if reason:
            print(skip_line(eid, reason, shutil.get_terminal_size().columns if sys.stderr.isatty() else None),
                  file=sys.stderr)
    plan = [pt for pt in plan if not unavailable[pt.engine.id]]
    if not plan and req.run_dir is None:
        raise UsageError(NOTHING_TO_RUN)
    workers = len(req.cpus) or 1
    table = Table(title=f"burtbench run --dry-run: {req.plan.profile} profile, "
                        f"{count(workers, 'worker core')}", title_justify="left")
    for name in ("workload", "points", "engines", "trials", "core time", "ETA", "estimated from"):
        table.add_column(name, justify="left" if name in ("workload", "estimated from") else "right")
    for workload in dict.fromkeys(pt.workload.name for pt in plan):
        mine = [pt for pt in plan if pt.workload.name == workload]
        rough = sum(estimator.source(pt) == "rough" for pt in mine)
        table.add_row(workload, str(points(mine)), str(len({pt.engine.id for pt in mine})),
                      str(len(mine)), duration(sum(estimator.trial_s(pt) for pt in mine)),
                      duration(wall_s(mine, estimator, workers)),
                      "rough figures" if rough == len(mine) else "previous run" + (f" ({rough} rough)" if rough else ""))
    # Builds run one after another before the first trial (a resumed run's were made when it began).
    builds = (estimator.builds(revision_builds(req.plan) + env_builds(req.plan, req.python) + engine_builds(plan))
              if req.run_dir is None else [])
    building_s = sum(seconds for _, seconds, _ in builds)
    if builds:
        table.add_row("builds", "", "", "", duration(building_s), duration(building_s),
                      "rough figures" if all(source.startswith("rough") for *_, source in builds) else "previous runs")
    eta = duration(building_s + wall_s(plan, estimator, workers))
    table.add_row("total", str(points(plan)), str(len({pt.engine.id for pt in plan})),
                  str(len(plan)), duration(building_s + sum(estimator.trial_s(pt) for pt in plan)), eta, "", style="bold")
    console.print(table)
    for made, seconds, source in builds:
        console.print(f"built first: {clean(made.what)}, {duration(seconds)} ({source})", highlight=False)
    for line, trials in added_trials(plan):
        console.print(f"added for the paper's claims: {line} (core time "
                      f"{duration(sum(estimator.trial_s(pt) for pt in trials))})", highlight=False)
    interval = [pt for pt in plan if pt.why == INTERVAL]
    if interval:
        console.print(f"added for the versions' answers: {count(len(interval), 'trial')} ({INTERVAL} at every point; "
                      f"core time {duration(sum(estimator.trial_s(pt) for pt in interval))})", highlight=False)
    judged = judges_any([pt.engine for pt in plan])
    if not judged:
        console.print(NO_CLAIM_JUDGED, highlight=False)
    budget = req.plan.claims_budget_min * 60
    if budget and judged and any(pt.why for pt in plan):
        console.print(f"then, for at most {duration(budget)} (--claims-budget), rounds at the points of claims "
                      "still undecided (not in the ETA)", highlight=False)
    shard = req.plan.shard
    if shard:
        console.print(f"shard {shard['index']}/{shard['count']}: {count(len(shard['points']), 'point')} "
                      f"(split balanced by {shard['estimated_from']})", highlight=False)
    console.print(f"{estimator.describe(plan)}; ETA: {eta} "
                  f"(an estimate; no trial of the plan was run)", highlight=False)
    return 0
