"""The paper's claims, checked on a run: for every row of claims.csv (workloads/claims.py), two
verdicts, one per subject.

The subjects: the authors' BurTorch (their published programs, the code the paper measured: the
primary subject) and burtbench's engine (our re-implementation). Each factor is other engine /
subject at the same point (above 1: BurTorch better; below 1: the other engine better), from the
report's tables (tables.py) and, for the outputs, the run's points; the rules are in
claim_rules.py:

- max / min: the largest (smallest) factor over the claim's rows, against the paper's number.
  "Up to ×2000" is a maximum over the paper's rows, so the run's is the maximum over the same rows.
- flat: the subject's largest over smallest value across the run's points (memory against batch).
- same_outputs: every engine's outputs compared bit for bit with the subject's at the same point.

Each factor comes with its 95% interval over trials (processes), paired by round where both engines
ran in the same rounds (harness/analysis/effect.py, the one rule); a trial's time is the median of
its timed blocks (analysis/points.py's STATISTIC), so one stalled step moves neither. A verdict is
held to the whole interval: `reproduced` (all of it reaches the paper's number within the claim's
tolerance), `partly` (all of it in the paper's direction, short of its number), `not reproduced`
(all of it on the other side of ×1), `undecided` (it spans a boundary: the verdict says which rows'
trials would decide it, and how many), `not comparable` (the authors' program computes something
else, so it cannot answer the claim: the claim's `authors` column) or `not measurable here` (this
run lacks the claim's rows, or this machine the measure or the subject). For max (min) the claim's
interval is that of the largest (smallest) factor: [largest low, largest high] over the rows.
A maximum that already reaches the paper's number stands even when some rows are missing (more
rows can only raise it); otherwise missing rows make the claim not measurable, never guessed.

The paper's numbers come from its Windows tables. A time is a time on every OS, so a time claim
is held to the number as stated. Memory is another measure on each OS (Windows private bytes,
Linux VmPeak, macOS resident): on another OS a memory claim is held to the paper's own figure on
that OS, by the same rule over the same rows, and is not measurable where the paper has no table
for that OS.
"""
from __future__ import annotations

from dataclasses import replace

from engines.base import AUTHORS
from harness.analysis.points import run_points
from harness.judging import rules as claim_rules
from harness.analysis.tables import Table, build_tables
from harness.judging.verdicts import (BY_KEY, DECIDED, NOT_COMPARABLE, NOT_MEASURABLE, NOT_REPRODUCED, OS_SPECIFIC,
                                     PARTLY, REPRODUCED, SUBJECTS, SYMBOLS, UNDECIDED, VERDICTS, Judged, Subject,
                                     Verdict, fx, interval)
from harness.store.runs import Run
from workloads.claims import NOT_COMPARABLE as AUTHORS_NOT_COMPARABLE
from workloads.claims import Claim, load_claims, parse_claims

# What the pages, the summary and the tests read from here, defined in verdicts.py and workloads/claims.py.
__all__ = ["BY_KEY", "DECIDED", "NOT_COMPARABLE", "NOT_MEASURABLE", "NOT_REPRODUCED", "OS_SPECIFIC", "PARTLY",
           "REPRODUCED", "SUBJECTS", "SYMBOLS", "UNDECIDED", "VERDICTS", "Claim", "Judged", "Subject", "Verdict", "fx",
           "interval", "load_claims",
           "parse_claims", "judge", "evaluate", "absent_subject", "absent_engine"]


def absent_subject(run: Run, subject: Subject) -> str | None:
    """Why the run has nothing of the subject (one reason for every claim), or None."""
    return absent_engine(run, subject.engine, "the authors' code" if subject.engine == AUTHORS else subject.engine)


def absent_engine(run: Run, engine: str, what: str) -> str | None:
    """Why the run has no trial of `engine` (called `what`): the reason it was unavailable, or None."""
    if any(t.get("engine") == engine for t in run.trials):
        return None
    reason = (run.manifest.get("unavailable") or {}).get(engine)
    if reason:
        return f"{what} is not available ({reason})"
    return f"missing: {what} ({engine}) is not in this run"


def verdict_for(claim: Claim, subject: Subject, run: Run, tables: list[Table], points: dict,
                absent: str | None) -> Verdict:
    if absent:  # a subject the run never ran is judged on nothing, not even as not comparable
        return Verdict(claim, NOT_MEASURABLE, subject.key, why=absent)
    if subject.engine == AUTHORS and claim.authors == AUTHORS_NOT_COMPARABLE:
        return Verdict(claim, NOT_COMPARABLE, subject.key, why=f"their program cannot answer it: {claim.authors_why}")
    if claim.rule == "same_outputs":
        verdict = claim_rules.outputs_verdict(claim, subject.engine, run, tables, points)
    elif claim.rule == "flat":
        verdict = claim_rules.flat_verdict(claim, subject.engine, run, tables)
    else:
        verdict = claim_rules.ratio_verdict(claim, subject.engine, run, tables)
    verdict.subject = subject.key
    return verdict


def judge(run: Run, tables: list[Table], claims: tuple[Claim, ...] | None = None) -> list[Judged]:
    """Both subjects' verdicts on every claim, from the report's tables and the run's points. A verdict the
    plan's own trials decided (the first look) stands: rounds added to decide other claims at the same points
    are a later look, and a decision once taken is not looked at again (the sequential design's error is
    spent over its looks as a stopping rule)."""
    chosen = claims if claims is not None else load_claims()
    judged = _judged(run, tables, chosen)
    planned = replace(run, trials=[t for t in run.trials if not t.get("added")])
    if len(planned.trials) == len(run.trials):
        return judged
    first = _judged(planned, build_tables(planned), chosen)
    return [Judged(j.claim, *(early if early.verdict in DECIDED else late
                              for early, late in zip(f.verdicts(), j.verdicts())))
            for f, j in zip(first, judged)]


def _judged(run: Run, tables: list[Table], claims: tuple[Claim, ...]) -> list[Judged]:
    points = run_points(run)
    absent = {s.key: absent_subject(run, s) for s in SUBJECTS}
    return [Judged(claim, *(verdict_for(claim, s, run, tables, points, absent[s.key]) for s in SUBJECTS))
            for claim in claims]


def evaluate(run: Run, tables: list[Table], claims: tuple[Claim, ...] | None = None,
             subject: str = "ours") -> list[Verdict]:
    """One subject's verdicts (judge() gives both)."""
    return [getattr(j, subject) for j in judge(run, tables, claims)]
