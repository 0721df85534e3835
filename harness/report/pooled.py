"""`burtbench claims RUN [RUN ...]`: the paper's claims judged on several runs.

Runs of one machine (the same CPU model, OS and framework versions) pool their trials: each run's
rounds stay its own (a trial's round becomes RUN_INDEX * ROUND_STRIDE + its round, so trials pair
within their run and never across runs), and the claims are judged once on all of them, with
narrower intervals than any one run gives. Runs of different machines are judged apart: one column
per machine, and for each claim and subject "holds on k of n machines". Runs of different
--timing or profiles measured different things, and are refused.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from harness.errors import UsageError
from harness.report import claims
from harness.report.tables import build_tables
from harness.store.runs import Run, load_run

ROUND_STRIDE = 100_000  # far above any run's rounds


@dataclass
class Machine:
    name: str  # "Intel Xeon Processor, Linux"
    runs: list[str]  # the runs' folder names
    pooled: Run
    judged: list  # claims.Judged of the pooled run


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
    """One run of every trial of several runs of one machine, each run's rounds kept apart."""
    trials = []
    for index, run in enumerate(runs):
        for trial in run.trials:
            shifted = dict(trial)
            if isinstance(trial.get("trial"), int):
                shifted["trial"] = index * ROUND_STRIDE + trial["trial"]
            trials.append(shifted)
    first = runs[0]
    manifest = dict(first.manifest)
    manifest["unavailable"] = {k: v for r in runs for k, v in (r.manifest.get("unavailable") or {}).items()
                               if not any(t.get("engine") == k for t in trials)}
    return Run(run_id=" + ".join(r.run_id for r in runs), manifest=manifest, trials=trials, os=first.os,
               plan=first.plan)


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
                                claims.judge(pooled, build_tables(pooled))))
    names = [m.name for m in machines]
    twins = [[o for o, other in zip(machines, names) if other == name and o is not m] for m, name in zip(machines, names)]
    for m, others in zip(machines, twins):  # two framework sets on one CPU model: told apart by a version
        if others:
            m.name += f" ({_differs(m, others) or m.runs[0]})"
    return machines


def _differs(machine: Machine, twins: list[Machine]) -> str:
    mine = machine.pooled.manifest.get("frameworks") or {}
    for name, version in sorted(mine.items(), key=lambda item: (item[0] != "torch", item[0])):  # torch's first
        if version and any((t.pooled.manifest.get("frameworks") or {}).get(name) != version for t in twins):
            return f"{name} {version}"
    return ""


def verdict_text(v) -> str:
    """'✓ ×3.1 [2.8, 3.4] 3/3' or '– not measurable here'."""
    if v.verdict in (claims.NOT_COMPARABLE, claims.NOT_MEASURABLE):
        return f"{claims.SYMBOLS[v.verdict]} {v.verdict}"
    shown = f"×{v.ours:.3f}" if v.claim.rule == "flat" else claims.fx(v.ours)
    trials = f" {v.trials[0]}/{v.trials[1]}" if v.trials and v.low is not None else ""
    return f"{claims.SYMBOLS[v.verdict]} {shown}{claims.interval(v)}{trials}"


def holds_line(subject, machines: list[Machine], index: int) -> str:
    """'holds on 1 of 2 machines (Intel Xeon ✓ ×3.1 [2.8, 3.4] 3/3; AMD EPYC ≈ ×2 [1.8, 2.2] 6/6)'."""
    verdicts = [getattr(m.judged[index], subject.key) for m in machines]
    judged = [v for v in verdicts if v.verdict in (*claims.DECIDED, claims.UNDECIDED)]
    held = sum(v.verdict == claims.REPRODUCED for v in judged)
    head = f"holds on {held} of {len(judged)} machine{'s' if len(judged) != 1 else ''}" if judged else "not judged"
    return head + " (" + "; ".join(f"{m.name} {verdict_text(v)}" for m, v in zip(machines, verdicts)) + ")"


def lines(machines: list[Machine]) -> list[str]:
    out = [f"The paper's claims on {len(machines)} machine{'s' if len(machines) != 1 else ''}:"]
    out += [f"  {m.name}: {len(m.runs)} run{'s' if len(m.runs) != 1 else ''} pooled ({', '.join(m.runs)}), "
            f"{len(m.pooled.trials)} trials" for m in machines]
    for index, judged in enumerate(machines[0].judged):
        out += ["", f"{judged.claim.id}: {judged.claim.claim} (paper: {judged.claim.stated_text})"]
        out += [f"  {s.short}: {holds_line(s, machines, index)}" for s in claims.SUBJECTS]
    return out


def markdown(machines: list[Machine]) -> str:
    head = ["# The BurTorch paper's claims, pooled by machine", "",
            "Runs of one machine (CPU model, OS, framework versions) pool their trials into one verdict; each machine "
            "is judged apart. Made by `burtbench claims RUN [RUN ...]`.", ""]
    head += [f"- **{m.name}**: {len(m.runs)} run(s) pooled, {len(m.pooled.trials)} trials: "
             + ", ".join(f"`{r}`" for r in m.runs) for m in machines]
    heads = ["Claim", "Paper", *(f"{s.short}: {m.name}" for s in claims.SUBJECTS for m in machines),
             *(f"{s.short}: holds on" for s in claims.SUBJECTS)]
    rows = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    for index, judged in enumerate(machines[0].judged):
        cells = [f"`{judged.claim.id}`", judged.claim.stated_text]
        cells += [verdict_text(getattr(m.judged[index], s.key)) for s in claims.SUBJECTS for m in machines]
        cells += [holds_line(s, machines, index).split(" (")[0] for s in claims.SUBJECTS]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(head + ["", *rows, ""])


def json_record(machines: list[Machine]) -> dict:
    return {"machines": [{"name": m.name, "runs": m.runs, "trials": len(m.pooled.trials),
                          "claims": [{s.key: getattr(j, s.key).as_dict() for s in claims.SUBJECTS} | {"id": j.claim.id}
                                     for j in m.judged]} for m in machines]}


def write(folder: Path, machines: list[Machine]) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    files = {"claims-pooled.md": markdown(machines),
             "claims-pooled.json": json.dumps(json_record(machines), indent=1, ensure_ascii=False, default=str) + "\n"}
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return [folder / name for name in files]
