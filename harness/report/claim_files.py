"""The verdicts of claims.py written out: claims.md (a table, then how each verdict was computed),
claims.csv and claims.json, and the cells the other pages (README, HTML, the run's summary) share."""
from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

from engines.base import finite
from harness.analysis.effect import CONFIDENCE, DECIDING_POWER, MIN_TRIALS
from harness.analysis.looks import Looks
from harness.analysis.noise import PLAIN, Noise
from harness.store.run_plan import MAX_DECIDING_ROUNDS
from harness.analysis.points import STATISTIC
from harness.judging import claims
from harness.analysis import paper
from harness.report import release_claims
from harness.judging.claims import Judged, Verdict
from harness.judging.rows import metric_keys, timed
from harness.judging.verdicts import direction
from harness.planning.claim_points import NO_CLAIM_JUDGED
from harness.store.runs import Run
from harness.text import markdown_cell
from harness.units import count
from workloads import all_workloads

SUBJECTS_TEXT = ("Each claim is judged twice: for the authors' BurTorch (their published programs, built from "
                 "their source: the code the paper measured) and for burtbench's engine (our re-implementation). "
                 "Where the authors' program differs from our workload (claims.csv's `authors` column), the "
                 "factor still counts where the claim is about time or memory and the difference does not change "
                 "what is compared; where it cannot answer the claim, its verdict is not comparable.")
HOW = ("Each factor is the other engine over the subject at the same point (above 1: BurTorch better), with its "
       "interval over trials (processes): a t interval on the logs of the per-round ratios where both ran in "
       "the same rounds, else Welch's; each time factor's interval also carries what this machine adds beyond "
       "one run's rounds (their correlation, and a run's own shift: below), so that it holds the factor another "
       "run here would give; runs pooled by `burtbench claims` are a level of their own (the runs' factors, "
       "their spread pooled with the machine's run-to-run component). The intervals are 95% over every look the "
       "run takes (the sequential design "
       "below), and a claim read as the largest (smallest) factor over rows holds the intervals of the rows "
       "that could be that maximum together (Bonferroni). A trial's time is the median of its timed blocks. "
       "The verdict holds the "
       "whole interval to the paper's number: reproduced: all of it reaches the paper's number within the "
       "claim's tolerance; partly: all of it in the same direction, short of the number; not reproduced: all of "
       "it in the opposite direction; undecided: it spans a boundary (the verdict says which trials would "
       "decide it); not comparable: the authors' program computes something else; not measurable here: this "
       "run lacks the claim's rows, or this machine the measure or the subject. Times are held to the paper's "
       "number as stated (from its Windows tables); memory, another measure on each OS, to the paper's own "
       "figure on this run's OS over the same rows.")

def shown(v: Verdict, which: str) -> str:
    """'Paper' and 'Ours' cells."""
    if v.claim.rule == "same_outputs":
        value = v.paper if which == "paper" else v.ours
        if value is None:
            return "n/a"
        return "exactly equal" if value == 0 else ("wrong results" if math.isinf(value) else f"max rel. diff {value:.2g}")
    if which == "paper":
        if v.paper is None or v.paper_basis == "as stated":
            return v.claim.stated_text
        return (f"{v.claim.stated_text} ({paper.OS_NAMES.get(v.claim.stated_os, v.claim.stated_os)} memory); held to "
                f"{claims.fx(v.paper)}, the same rows in {v.paper_basis}, the measure this run has")
    return f"{claims.fx(v.ours)}{claims.interval(v)}" if v.ours is not None else "n/a"


# A flat claim holds the subject to itself, its largest row over its smallest: its trials are those two rows'.
FLAT_TRIALS = "at its smallest / largest row"


def trials_text(v: Verdict, sep: str = " / ", noun: str = " trials") -> str:
    """'3 / 3 trials' (the subject's, the other engine's), or a flat claim's '5 / 3 trials at its smallest /
    largest row'; '' where the verdict has none."""
    if not v.trials:
        return ""
    rows = f" {FLAT_TRIALS.replace(' / ', sep)}" if v.claim.rule == "flat" else ""
    return f"{v.trials[0]}{sep}{v.trials[1]}{noun}{rows}"


def measured_only(v: Verdict) -> str:
    """' ×158,283 (1 trial, no interval) on the rows this run has' for a verdict that is not measurable for the
    rows it lacks but has a factor over those it has (its why says which), so that no page hides that number."""
    return f" {shown(v, 'ours')} on the rows this run has" if v.verdict == claims.NOT_MEASURABLE and \
        v.ours is not None else ""


def cell(v: Verdict) -> str:
    """One subject's cell: its verdict, its number with its interval and trials, and where it comes from."""
    if v.verdict in (claims.NOT_COMPARABLE, claims.NOT_MEASURABLE):
        return f"{claims.SYMBOLS[v.verdict]} **{v.verdict}**" + (f":{measured_only(v)}" if measured_only(v) else "")
    trials = f" ({trials_text(v)})" if v.trials else ""
    way = f" ({direction(v)})" if direction(v) else ""
    return f"{claims.SYMBOLS[v.verdict]} **{v.verdict}**{way}: {shown(v, 'ours')}{trials}" + \
        (f" at {v.at}" if v.at else "")


def trials_line(v: Verdict, short: str, os_name: str) -> str:
    """Where the factor comes from: its trials, the interval's method and level (none where it has no interval)
    and, for a time, what a trial's time is."""
    a, b = v.trials
    whose = f"at its smallest row and {b} at its largest" if v.claim.rule == "flat" else \
        f"of {short} and {b} of the other engine"
    time = f"; a trial's time: the {STATISTIC}" if timed(metric_keys(v.claim.metric, os_name)) else ""
    return f"From {count(a, 'trial')} {whose} ({method(v)}{time})."


def method(v: Verdict) -> str:
    """How the factor's interval was computed, at what level; a factor with none says so, not the level it would
    have had."""
    return v.method if v.low is not None or v.measurement else "no interval"


def markdown_table(judged: list[Judged]) -> str:
    heads = ["Claim", "Where", "Paper", *(s.title[0].upper() + s.title[1:] for s in claims.SUBJECTS)]
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    for j in judged:
        cells_ = [f"{j.claim.claim} (`{j.claim.id}`)", j.claim.where, shown(j.ours, "paper"),
                  *(cell(v) for v in j.verdicts())]
        lines.append("| " + " | ".join(markdown_cell(c) for c in cells_) + " |")
    return "\n".join(lines) + "\n"


def counts(verdicts: list[Verdict]) -> str:
    tally = {name: sum(v.verdict == name for v in verdicts) for name in claims.VERDICTS}
    return ", ".join(f"{n} {name}" for name, n in tally.items() if n)


def both(judged: list[Judged]) -> list[Verdict]:
    return [v for j in judged for v in j.verdicts()]


def counts_both(judged: list[Judged]) -> str:
    """'the authors' BurTorch (the paper's code): 5 reproduced, ...; burtbench's engine: ...'."""
    return "; ".join(f"{s.title}: {counts([getattr(j, s.key) for j in judged])}" for s in claims.SUBJECTS)


def family_line(verdicts: list[Verdict]) -> str:
    """How many decided verdicts may be wrong by chance at the stated level: an expectation over the verdicts
    decided on a real interval (a measurement, every trial the same, has none to be wrong by)."""
    decided = [v for v in verdicts if v.verdict in claims.DECIDED and v.low is not None and not v.measurement]
    measured = sum(v.verdict in claims.DECIDED and v.low is not None and v.measurement for v in verdicts)
    error = 1 - CONFIDENCE
    also = (f" {measured} more {'is' if measured == 1 else 'are'} decided on a measurement (every trial the same "
            "value: no interval, nothing left to chance)." if measured else "")
    if not decided:
        return "No verdict is decided on an interval, so none can be wrong by chance." + also
    those = "the 1 verdict" if len(decided) == 1 else f"the {len(decided)} verdicts"
    return (f"Of {those} decided on an interval, each at {CONFIDENCE:.0%}, at most {len(decided) * error:.1f} are "
            f"expected to be wrong by chance ({error:.0%} of each, and that only for a factor on its boundary; far "
            f"fewer for factors far from theirs): an expectation, not a bound on the family.{also}")


def planned_trials(run: Run) -> str:
    """The trials the run's plan gave each point, before any added round: '3' or '3 to 5'."""
    workloads = all_workloads()
    counts = {run.plan.trials} if run.plan.trials else \
        {workloads[w].trials.get(run.plan.profile) for w in run.plan.workloads if w in workloads} - {None}
    low, high = (min(counts), max(counts)) if counts else (MIN_TRIALS, MIN_TRIALS)
    return f"{low}" if low == high else f"{low} to {high}"


def design_line(run: Run) -> str:
    """The sequential design every claim's interval is computed at (harness/analysis/effect.py, Looks), from
    the run's own plan."""
    design = Looks(first=MIN_TRIALS, most=run.plan.most_looks)
    added = "" if design.most <= 1 else (f" Rounds added for undecided claims (`--claims-budget`: at most "
                                         f"{MAX_DECIDING_ROUNDS} at a point, in one batch sized to decide "
                                         f"{DECIDING_POWER:.0%} of the time at the level it is judged at) are the "
                                         "later look.")
    return f"Intervals: {design.text().replace(f'({MIN_TRIALS} trials)', '(the planned trials)')}; planned trials " \
           f"per point in this run: {planned_trials(run)}.{added}"


def rerun_line(noise: Noise) -> str:
    """What a rerun here does to a factor, and where the interval's run-to-run part came from."""
    if noise.plain:
        return "Each interval holds for this run's trials only: no run-to-run component was applied."
    return (f"Each time factor's interval carries {noise.text()}: it holds the factor another run of this plan "
            f"on this machine would give, not only this run's trials.")


def sureness(run: Run, judged: list[Judged], noise: Noise) -> list[str]:
    """How sure the page's verdicts are: the sequential design, the family, and what reruns do."""
    return [design_line(run), family_line(both(judged)), rerun_line(noise)]


def markdown(run: Run, judged: list[Judged], status: list[str], noise: Noise = PLAIN,
             picture: Path | None = None) -> str:
    head = [f"# The BurTorch paper's claims on run {run.run_id}", ""]
    head += [f"> **{line}**" for line in status] + ([""] if status else [])
    if all(v.verdict == claims.NOT_MEASURABLE for v in both(judged)):  # a run of other engines: nothing to list
        return "\n".join(head + [f"This run judges none of the paper's {len(judged)} claims ({NO_CLAIM_JUDGED}). "
                                 f"Machine: {machine_text(run)}; profile {run.plan.profile}.", ""])
    head += [f"{counts_both(judged)}. Machine: {machine_text(run)}; profile {run.plan.profile}. Several runs, of "
             "this machine or others: `burtbench claims RUN [RUN ...]` pools one machine's trials and judges each "
             "machine apart.", "",
             SUBJECTS_TEXT, "", HOW, "", *(f"- {line}" for line in sureness(run, judged, noise)), "",
             *([f"![Each claim's factor and its interval against the paper's number]({picture.name})", ""]
               if picture else []),
             markdown_table(judged), "## How each verdict was computed", ""]
    for j in judged:
        c = j.claim
        head += [f"### `{c.id}`: " + ", ".join(f"{s.short} {claims.SYMBOLS[v.verdict]} {v.verdict}"
                                               for s, v in zip(claims.SUBJECTS, j.verdicts())), "",
                 f"- Claim: {c.claim} ({c.where}). {c.note}",
                 f"- Rule: {c.rule} of `{c.metric}` over {', '.join(c.tables)}"
                 + (f" at {_points_text(c.points)}" if c.points else "")
                 + f"; engines: {_engines_text(c.engines)}"
                 + (f"; tolerance {c.tolerance:.0%}" if c.tolerance else "") + ".",
                 f"- The authors' program: {c.authors}" + (f": {c.authors_why}" if c.authors_why else "") + ".",
                 f"- Paper: {shown(j.ours, 'paper')}" + (
                     f"; its own figure over the same rows: {claims.fx(j.ours.paper_rows)} ({j.ours.paper_rows_source})"
                     if j.ours.paper_rows is not None and j.ours.paper_basis in ("", "as stated") else "") + "."]
        for s, v in zip(claims.SUBJECTS, j.verdicts()):
            head += [f"- **{s.title[0].upper() + s.title[1:]}** ({s.engine}): {v.verdict}: {shown(v, 'ours')}"
                     + (f" at {v.at}" if v.at else "") + f". {v.why[0].upper() + v.why[1:] if v.why else ''}."]
            if v.trials:
                head.append(f"  - {trials_line(v, s.short, run.os)}")
            if v.used:
                head.append(f"  - From the run's rows: {'; '.join(v.used)}.")
            if v.missing and not v.why.startswith("missing:"):
                head.append(f"  - Missing from this run: {'; '.join(v.missing)}.")
        head.append("")
    return "\n".join(head)


def _engines_text(engines: tuple[str, ...]) -> str:
    if engines == ("*",):
        return "every other framework"
    return ", ".join(engines) or "the subject alone"


def _points_text(points: dict) -> str:
    return " ".join(f"{k}={','.join(map(str, v))}" for k, v in points.items())


def machine_text(run: Run) -> str:
    machine = run.manifest.get("machine") or {}
    parts = [machine.get("cpu_model"), paper.OS_NAMES.get(run.os)]
    return ", ".join(str(p) for p in parts if p) or "unknown"


CLAIM_FIELDS = ["id", "claim", "where", "metric", "rule", "stated", "stated_text", "tolerance", "authors_program"]
SUBJECT_FIELDS = ["verdict", "value", "low", "high", "trials", "statistic", "method", "at", "paper", "paper_basis",
                  "why", "missing"]
CSV_FIELDS = CLAIM_FIELDS + [f"{s.key}_{f}" for s in claims.SUBJECTS for f in SUBJECT_FIELDS]


def csv_text(judged: list[Judged]) -> str:
    """One row per claim: the claim, then each subject's verdict, number and reason."""
    out = io.StringIO()
    writer = csv.DictWriter(out, CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for j in judged:
        c = j.claim
        row = {"id": c.id, "claim": c.claim, "where": c.where, "metric": c.metric, "rule": c.rule,
               "stated": c.stated, "stated_text": c.stated_text, "tolerance": c.tolerance, "authors_program": c.authors}
        for s, v in zip(claims.SUBJECTS, j.verdicts()):
            values = {"verdict": v.verdict, "value": v.ours, "low": v.low, "high": v.high,
                      "trials": " / ".join(map(str, v.trials)) if v.trials else None,
                      "statistic": STATISTIC if v.trials else None, "method": v.method, "at": v.at, "paper": v.paper,
                      "paper_basis": v.paper_basis, "why": v.why, "missing": "; ".join(v.missing)}
            row.update({f"{s.key}_{k}": "" if x is None else x for k, x in values.items()})
        writer.writerow(row)
    return out.getvalue()


def json_record(run: Run, judged: list[Judged], status: list[str]) -> dict:
    return {"run": run.run_id, "status": status,
            "subjects": [{"key": s.key, "engine": s.engine, "title": s.title} for s in claims.SUBJECTS],
            "claims": [{"id": j.claim.id, "authors_program": j.claim.authors, "authors_why": j.claim.authors_why,
                        **{s.key: finite(v.as_dict(), lambda _: None) for s, v in zip(claims.SUBJECTS, j.verdicts())}}
                       for j in judged]}


def write(folder: Path, run: Run, judged: list[Judged], status: list[str], noise: Noise = PLAIN,
          picture: Path | None = None, release: tuple[list, list] = ([], [])) -> list[Path]:
    """`release`: the report's tables and the verdicts of other sources' claims (release_claims.py), if any."""
    record = json_record(run, judged, status) | ({"release_claims": release_claims.record(release[1])}
                                                 if release[1] else {})
    paths = {"claims.md": "\n".join([markdown(run, judged, status, noise, picture),
                                      *release_claims.markdown(*release)]),
             "claims.csv": csv_text(judged), "claims.json": json.dumps(record, indent=1, ensure_ascii=False) + "\n"}
    for name, text in paths.items():
        (folder / name).write_text(text, encoding="utf-8")
    return [folder / name for name in paths]
