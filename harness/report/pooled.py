"""`burtbench claims RUN [RUN ...]`: the paper's claims judged on several runs.

Runs of one machine (the same CPU model, OS and framework builds) pool their trials, each trial once: a
trial is the run that measured it, its point and its number (store/results.identity), so a merged run
and its shards, given together, count each trial once and say so. A trial's round stays the round of the
run that measured it (it becomes that run's place among the measuring runs * ROUND_STRIDE + its round),
so trials pair within the run that measured them and never across runs, and the claims are judged once
on all of them, with narrower intervals than any one run gives. Runs of different machines are judged
apart: one column per machine, and for each claim and subject "holds on k of n machines"; machines whose
builds of a framework differ (torch 2.11.0+cu130 and 2.11.0+cpu) are named by it, and their line says
so. Runs of different --timing or profiles measured different things, and are refused.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from harness.errors import UsageError
from harness.report import claims, forest
from harness.report.claim_files import both, family_line, shown
from harness.report.metrics import METRICS, PAPER_MEMORY
from harness.report.reruns import Reruns, reruns
from harness.report.verdicts import LEGEND
from harness.report.tables import build_tables
from harness.store.merge import merged_from
from harness.store.results import identity
from harness.store.runs import ROUND_STRIDE, Run, load_run
from harness.text import markdown_cell

VIRTUAL = "peak_virtual_bytes"  # the trial field of peak virtual memory (VmPeak)


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
    manifest["shared_trials"] = [shared_line(runs[a], runs[b], count) for (a, b), count in shared.items()]
    return Run(run_id=" + ".join(r.run_id for r in runs), manifest=manifest, trials=trials, os=first.os,
               plan=first.plan)


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


def held_to_virtual(claim, os_name: str) -> bool:
    """Whether the claim is held to peak virtual memory on that OS (paper_memory is VmPeak on Linux)."""
    metric = PAPER_MEMORY.get(os_name) if claim.metric == "paper_memory" else METRICS.get(claim.metric)
    return metric is not None and metric.key == VIRTUAL


def build_note(machines: list[Machine], claim) -> str:
    """Where the machines differ in a framework's build: which, and for a claim held to virtual memory, why it
    matters ('' where they do not)."""
    differing = build_differences(machines)
    if not differing:
        return ""
    note = "the machines differ in " + "; ".join(f"{name}'s build ({', '.join(v)})" for name, v in differing.items())
    if any(held_to_virtual(claim, m.pooled.os) for m in machines):
        note += ", and builds differ in what they map: a CUDA build maps far more virtual memory, which this claim " \
                "is held to"
    return note


def verdict_text(v) -> str:
    """'✓ ×3.1 [2.8, 3.4] 3/3 at tiny: jax/eager/python/cpu', '≈ max rel. diff 3.5e-08' or '– not measurable
    here'; a factor held to another number than the paper states says which."""
    if v.verdict in (claims.NOT_COMPARABLE, claims.NOT_MEASURABLE):
        return f"{claims.SYMBOLS[v.verdict]} {v.verdict}"
    trials = f" {v.trials[0]}/{v.trials[1]}" if v.trials and v.low is not None else ""
    held = f", held to {claims.fx(v.paper)}" if v.paper is not None and v.paper_basis not in ("", "as stated") else ""
    where = f" at {v.at}" if v.at and v.claim.rule != "flat" else ""
    return f"{claims.SYMBOLS[v.verdict]} {shown(v, 'ours')}{trials}{where}{held}"


def holds_head(subject, machines: list[Machine], index: int) -> str:
    """'holds on 1 of 2 machines', and where the machines differ in a framework's build, that."""
    verdicts = [getattr(m.judged[index], subject.key) for m in machines]
    judged = [v for v in verdicts if v.verdict in (*claims.DECIDED, claims.UNDECIDED)]
    held = sum(v.verdict == claims.REPRODUCED for v in judged)
    if not judged:
        return "not judged"
    note = build_note(machines, machines[0].judged[index].claim)
    head = f"holds on {held} of {len(judged)} machine{'s' if len(judged) != 1 else ''}"
    return head + (f"; {note}" if note else "")


def holds_line(subject, machines: list[Machine], index: int) -> str:
    """'holds on 1 of 2 machines; ... (Intel Xeon ✓ ×3.1 [2.8, 3.4] 3/3; AMD EPYC ≈ ×2 [1.8, 2.2] 6/6)'."""
    verdicts = [getattr(m.judged[index], subject.key) for m in machines]
    return holds_head(subject, machines, index) + " (" + "; ".join(
        f"{m.name} {verdict_text(v)}" for m, v in zip(machines, verdicts)) + ")"


def pooled_text(machine: Machine) -> str:
    """'3 runs pooled (a, b, c), 9 trials measured in 2 runs' and which runs shared trials."""
    runs, manifest = machine.runs, machine.pooled.manifest
    measuring = manifest["measuring_runs"]
    return "; ".join([f"{len(runs)} run{'s' if len(runs) != 1 else ''} pooled ({', '.join(runs)}), "
                      f"{len(machine.pooled.trials)} trials measured in {measuring} run{'s' if measuring != 1 else ''}",
                      *manifest["shared_trials"], *filter(None, [machine.reruns.text()])])


HOLDS = ("holds on k of n machines: n counts the machines whose runs give the claim a number (decided or "
         "undecided), k those where it is reproduced")
RUNS_AS_LEVEL = ("Where several runs measured a factor, its interval is a t interval over the runs' own factors: "
                 "what moves between runs moves every trial of a run alike, so a run counts once, not its trials.")


def families(machines: list[Machine]) -> str:
    return family_line([v for m in machines for v in both(m.judged)])


def lines(machines: list[Machine]) -> list[str]:
    out = [f"The paper's claims on {len(machines)} machine{'s' if len(machines) != 1 else ''}:"]
    out += [f"  {m.name}: {pooled_text(m)}" for m in machines]
    out += [f"  {line}" for line in (LEGEND, HOLDS, RUNS_AS_LEVEL, families(machines))]
    for index, judged in enumerate(machines[0].judged):
        out += ["", f"{judged.claim.id}: {judged.claim.claim} (paper: {judged.claim.stated_text})"]
        out += [f"  {s.short}: {holds_line(s, machines, index)}" for s in claims.SUBJECTS]
    return out


def markdown(machines: list[Machine], pictures: dict | None = None) -> str:
    head = ["# The BurTorch paper's claims, pooled by machine", "",
            "Runs of one machine (CPU model, OS, framework builds) pool their trials into one verdict, each trial "
            "once (a merged run holds copies of its shards'); each machine is judged apart. Made by "
            "`burtbench claims RUN [RUN ...]`.", ""]
    head += [f"- **{markdown_cell(m.name)}**: {markdown_cell(pooled_text(m))}" for m in machines]
    head += ["", f"{LEGEND}. {HOLDS}.", "", RUNS_AS_LEVEL, families(machines)]
    heads = ["Claim", "Paper", *(f"{s.short}: {m.name}" for s in claims.SUBJECTS for m in machines),
             *(f"{s.short}: holds on" for s in claims.SUBJECTS)]
    rows = ["| " + " | ".join(markdown_cell(h) for h in heads) + " |", "|" + "---|" * len(heads)]
    for index, judged in enumerate(machines[0].judged):
        cells = [f"`{judged.claim.id}`", judged.claim.stated_text]
        cells += [verdict_text(getattr(m.judged[index], s.key)) for s in claims.SUBJECTS for m in machines]
        cells += [holds_head(s, machines, index) for s in claims.SUBJECTS]
        rows.append("| " + " | ".join(markdown_cell(c) for c in cells) + " |")
    drawn = [f"![{markdown_cell(m.name)}: each claim's factor and its interval against the paper's number]"
             f"({pictures[m.name].name})" for m in machines if (pictures or {}).get(m.name)]
    return "\n".join(head + ["", *rows, "", *(line for png in drawn for line in (png, "")), ""])


def json_record(machines: list[Machine]) -> dict:
    return {"machines": [{"name": m.name, "runs": m.runs, "trials": len(m.pooled.trials),
                          "measuring_runs": m.pooled.manifest["measuring_runs"],
                          "shared_trials": m.pooled.manifest["shared_trials"], "reruns": m.reruns.as_dict(),
                          "claims": [{s.key: getattr(j, s.key).as_dict() for s in claims.SUBJECTS} | {"id": j.claim.id}
                                     for j in m.judged]} for m in machines]}


def write(folder: Path, machines: list[Machine]) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    pictures = {m.name: forest.draw(m.judged, folder / f"claims-forest-{forest.slug(m.name)}.png", m.name)
                for m in machines}
    files = {"claims-pooled.md": markdown(machines, pictures),
             "claims-pooled.json": json.dumps(json_record(machines), indent=1, ensure_ascii=False, default=str) + "\n"}
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return [folder / name for name in files] + [p for p in pictures.values() if p]
