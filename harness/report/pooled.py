"""The page of `burtbench claims RUN [RUN ...]`: each machine's pooled verdicts (harness/judging/pooled.py) as
terminal lines, claims-pooled.md, claims-pooled.json and a forest plot per machine."""
from __future__ import annotations

import json
from pathlib import Path

from harness.analysis.metrics import METRICS, PAPER_MEMORY
from harness.judging import claims
from harness.judging.pooled import Machine, build_differences
from harness.judging.verdicts import LEGEND
from harness.report import forest
from harness.report.claim_files import both, family_line
from harness.report.epilogue import held_number, paper_number, subject_text
from harness.text import markdown_cell

# The rules whose factor is held to a number: flat is held to a growth, same_outputs to equality.
RATIO_RULES = ("max", "min")
VIRTUAL = "peak_virtual_bytes"  # the trial field of peak virtual memory (VmPeak)


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
    """'✓ ×3.1 [2.8, 3.4] 3/3 at tiny: jax/eager/python/cpu', '✗ better than claimed ×3.6 [3.08, 4.21] 6/6',
    '≈ max rel. diff 3.5e-08' or '– not measurable here': the single run's words (epilogue.subject_text); a
    factor held to another number than the paper states says which."""
    head, value = subject_text(v)
    if v.verdict in (claims.NOT_COMPARABLE, claims.NOT_MEASURABLE):
        return head + value
    # An outputs claim is held to exact equality, no number: only a ratio's can differ from the paper's.
    held = f", held to {claims.fx(v.paper)}" if v.claim.rule in RATIO_RULES and v.paper is not None and \
        v.paper_basis not in ("", "as stated") else ""
    where = f" at {v.at}" if v.at and v.claim.rule != "flat" else ""
    return f"{head}{value}{where}{held}"


def claim_head(machines: list[Machine], index: int) -> str:
    """The claim and the paper's number with the boundary its tolerance sets, as the single run's head line
    (epilogue.paper_number) where every machine holds it to the same number; each machine's number is in its
    verdict where they differ (memory, another measure on each OS)."""
    judged = [m.judged[index] for m in machines]
    c = judged[0].claim
    if c.rule not in RATIO_RULES or len({held_number(j) for j in judged}) == 1:
        return f"{c.id}: {c.claim}; {paper_number(judged[0])}"
    return (f"{c.id}: {c.claim}; paper {c.stated_text} (✓ where the interval reaches {c.tolerance:.0%} short of the "
            "number each machine holds it to)")


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
RUNS_AS_LEVEL = ("Where several runs measured a factor, its interval is over the runs' own factors: what moves "
                 "between runs moves every trial of a run alike, so a run counts once, not its trials; the runs' "
                 "spread is pooled with the machine's run-to-run component, so that runs that agree give a surer "
                 "verdict than each alone.")


def families(machines: list[Machine]) -> str:
    return family_line([v for m in machines for v in both(m.judged)])


def lines(machines: list[Machine]) -> list[str]:
    out = [f"The paper's claims on {len(machines)} machine{'s' if len(machines) != 1 else ''}:"]
    out += [f"  {m.name}: {pooled_text(m)}" for m in machines]
    out += [f"  {line}" for line in (LEGEND, HOLDS, RUNS_AS_LEVEL, families(machines))]
    for index, judged in enumerate(machines[0].judged):
        out += ["", claim_head(machines, index)]
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
