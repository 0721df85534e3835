"""`burtbench claims RUN [RUN ...]`: the paper's claims judged on several runs (their page: harness/report/pooled.py).

Runs of one machine (the same CPU model, OS and framework builds) pool their trials, each trial once: a
trial is the run that measured it, its point and its number (store/results.identity), so a merged run
and its shards, given together, count each trial once and say so. A trial's round stays the round of the
run that measured it (it becomes that run's place among the measuring runs * ROUND_STRIDE + its round),
so trials pair within the run that measured them and never across runs, and the claims are judged once
on all of them, with narrower intervals than any one run gives (a factor only one run measured keeps
that run's interval). Runs of different machines are judged
apart: one column per machine, and for each claim and subject "holds on k of n machines"; machines whose
builds of a framework differ (torch 2.11.0+cu130 and 2.11.0+cpu) are named by it, and their line says
so. Runs of different --timing or profiles measured different things, and are refused.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from harness.errors import UsageError
from harness.judging import claims
from harness.judging.reruns import Reruns, reruns
from harness.judging.rows import run_noise
from harness.analysis.tables import build_tables
from harness.store.merge import merged_from
from harness.store.results import identity
from harness.store.runs import ROUND_STRIDE, Run, load_run

@dataclass
class Machine:
    name: str  # "Intel Xeon Processor, Linux"
    runs: list[str]  # the runs' folder names
    pooled: Run
    judged: list  # claims.Judged of the pooled run
    reruns: Reruns  # how far its runs, each judged alone, moved the factors


def machine_key(run: Run) -> tuple:
    machine = run.manifest.get("machine") or {}
    frameworks = run.manifest.get("frameworks") or {}
    return (machine.get("cpu_model"), run.os, json.dumps(frameworks, sort_keys=True, default=str))


def machine_name(run: Run) -> str:
    model = str((run.manifest.get("machine") or {}).get("cpu_model") or "unknown CPU")
    return " ".join(model.replace("(R)", "").replace("(TM)", "").split())


def trials_timing(run: Run) -> str:
    """The timing its trials were measured with (load_run refuses a run whose trials mix two)."""
    return next((t["timing"] for t in run.trials if t.get("timing")), run.timing)


def check_poolable(runs: list[Run], names: list[str]) -> None:
    """Runs of another --timing or profile measured other things, and one run given twice would count its
    trials twice: one line, before any judging."""
    seen: dict[tuple, str] = {}
    for name, run in zip(names, runs):
        if not run.manifest.get("run_id") or not run.manifest.get("created_at"):
            raise UsageError(f"burtbench claims: {name}/manifest.json is damaged or lacks 'run_id' and 'created_at': "
                             "it cannot be told from another run")
        key = (run.manifest.get("run_id"), run.manifest.get("created_at"))  # a copy of a run is the run again
        if key in seen:
            raise UsageError(f"burtbench claims: {name} is the run {seen[key]} again; give each run once")
        seen[key] = name
    for what, value in (("--timing", trials_timing), ("profile", lambda r: r.plan.profile)):
        seen = {value(r) for r in runs}
        if len(seen) > 1:
            which = ", ".join(f"{n}: {value(r)}" for n, r in zip(names, runs))
            raise UsageError(f"burtbench claims: the runs differ in {what} ({which}); pool runs of one {what}")


def pool(runs: list[Run]) -> Run:
    """One run of every trial of several runs of one machine, each trial once, its round kept apart by the
    run that measured it. The manifest adds how many runs measured them and which given runs shared trials."""
    measured: dict[str, int] = {}  # a run that measured trials -> its place among them
    holder: dict[tuple, int] = {}  # a trial's identity -> the place of the first given run that holds it
    shared: dict[tuple[int, int], int] = {}  # (a given run's place, a later one's) -> the trials both hold
    trials = []
    for index, run in enumerate(runs):
        for trial in run.trials:
            first = holder.setdefault(identity(trial), index)
            if first != index:
                shared[first, index] = shared.get((first, index), 0) + 1
                continue
            place = measured.setdefault(trial["measured_in"], len(measured))
            trials.append({**trial, "trial": place * ROUND_STRIDE + trial["trial"]})
    first = runs[0]
    manifest = dict(first.manifest)
    manifest["unavailable"] = {k: v for r in runs for k, v in (r.manifest.get("unavailable") or {}).items()
                               if not any(t.get("engine") == k for t in trials)}
    manifest["measuring_runs"] = len(measured)
    manifest["noise"] = widest_noise(runs)
    manifest["shared_trials"] = [shared_line(runs[a], runs[b], count) for (a, b), count in shared.items()]
    return Run(run_id=" + ".join(r.run_id for r in runs), manifest=manifest, trials=trials, os=first.os,
               plan=first.plan)


def widest_noise(runs: list[Run]) -> dict | None:
    """The noise record the pooled runs are judged with, whatever their order: where their calibrations
    differ, the one that adds the most (a narrower one would claim more than the others measured)."""
    found = [run_noise(run) for run in runs]
    widest = max(found, key=lambda n: (n.between_sd, n.rho(1), n.source))
    return widest.record()


def shared_line(a: Run, b: Run, count: int) -> str:
    """'M and S1 share 54 trials (M was merged from S1): each counted once'."""
    why = merged_from((a.run_id, a.manifest), (b.run_id, b.manifest))
    return f"{a.run_id} and {b.run_id} share {count} trials{f' ({why})' if why else ''}: each counted once"


def judge_machines(run_dirs: list[str]) -> list[Machine]:
    runs = [load_run(Path(d)) for d in run_dirs]
    check_poolable(runs, run_dirs)
    groups: dict[tuple, list[int]] = {}
    for index, run in enumerate(runs):
        groups.setdefault(machine_key(run), []).append(index)
    machines = []
    for indexes in groups.values():
        pooled = pool([runs[i] for i in indexes])
        machines.append(Machine(machine_name(runs[indexes[0]]), [Path(run_dirs[i]).name for i in indexes], pooled,
                                claims.judge(pooled, build_tables(pooled)),
                                reruns([runs[i] for i in indexes]) if len(indexes) > 1 else Reruns()))
    differing = build_differences(machines)
    for m in machines:  # a framework's build moves what it measures (a CUDA build maps far more memory)
        shown = ", ".join(f"{name} {frameworks(m)[name]}" for name in differing if frameworks(m).get(name))
        m.name += f" ({shown})" if shown else ""
    names = [m.name for m in machines]
    twins = [[o for o, other in zip(machines, names) if other == name and o is not m] for m, name in zip(machines, names)]
    for m, others in zip(machines, twins):  # two framework sets on one CPU model: told apart by a version
        if others:
            m.name += f" ({_differs(m, others) or m.runs[0]})"
    return machines


def frameworks(machine: Machine) -> dict:
    return machine.pooled.manifest.get("frameworks") or {}


def _torch_first(names) -> list[str]:
    return sorted(names, key=lambda name: (name != "torch", name))


def _differs(machine: Machine, twins: list[Machine]) -> str:
    mine = frameworks(machine)
    for name in _torch_first(mine):
        if mine[name] and any(frameworks(t).get(name) != mine[name] for t in twins):
            return f"{name} {mine[name]}"
    return ""


def build_differences(machines: list[Machine]) -> dict[str, list[str]]:
    """{framework: its versions} where the machines that have it hold different builds of it: the versions'
    local parts differ (2.11.0+cu130, 2.11.0+cpu, 2.11.0)."""
    found = {}
    for name in _torch_first({n for m in machines for n in frameworks(m)}):
        versions = list(dict.fromkeys(str(v) for m in machines if (v := frameworks(m).get(name))))
        if len({v.partition("+")[2] for v in versions}) > 1:
            found[name] = versions
    return found
