"""The vocabulary of the claims' verdicts (claims.py judges, claim_rules.py computes): the subjects,
the verdict values and their symbols, Verdict, Judged, and how a factor is held to the paper's."""
from __future__ import annotations

from dataclasses import dataclass, field

from engines.base import AUTHORS, BASELINE
from harness.analysis.points import STATISTIC
from harness.analysis import cells
from workloads.claims import Claim

REPRODUCED, PARTLY, NOT_REPRODUCED = "reproduced", "partly", "not reproduced"
UNDECIDED = "undecided"  # the factor's interval spans a boundary: more trials would decide it
NOT_COMPARABLE, NOT_MEASURABLE = "not comparable", "not measurable here"
VERDICTS = (REPRODUCED, PARTLY, NOT_REPRODUCED, UNDECIDED, NOT_COMPARABLE, NOT_MEASURABLE)
DECIDED = (REPRODUCED, PARTLY, NOT_REPRODUCED)
SYMBOLS = {REPRODUCED: "✓", PARTLY: "≈", NOT_REPRODUCED: "✗", UNDECIDED: "?", NOT_COMPARABLE: "≠",
           NOT_MEASURABLE: "–"}
# What the symbols and a verdict's numbers mean, wherever they are shown.
# Which way a ✗ missed, for BurTorch (direction): the factor is the other engine's over BurTorch's.
BETTER, WORSE = "better than claimed", "worse than claimed"
LEGEND = ", ".join(f"{symbol} {name}" + (f" ({BETTER} or {WORSE}, for BurTorch)" if name == NOT_REPRODUCED else "")
                   for name, symbol in SYMBOLS.items()) + \
    "; ×factor [its interval] k/m: k trials of the subject, m of the other engine"
# Metric ids whose measure is another one on each OS.
OS_SPECIFIC = {"paper_memory", "peak_private", "peak_resident"}


@dataclass(frozen=True)
class Subject:
    key: str  # "authors" | "ours": the field of Judged and the column prefix of claims.csv
    engine: str
    title: str  # what the reader is told the verdict is about
    short: str  # the summary line's label


SUBJECTS = (Subject("authors", AUTHORS, "the authors' BurTorch (the paper's code)", "authors"),
            Subject("ours", BASELINE, "burtbench's engine", "ours"))
BY_KEY = {s.key: s for s in SUBJECTS}


@dataclass
class Verdict:
    claim: Claim
    verdict: str
    subject: str = "ours"  # a key of BY_KEY
    ours: float | None = None  # the run's number (for the subject)
    paper: float | None = None  # the number the run's is held to
    paper_basis: str = ""  # where that number comes from
    paper_rows: float | None = None  # the paper's own figure over the same rows (for the reader)
    paper_rows_source: str = ""
    at: str = ""  # the row the run's number comes from
    used: list[str] = field(default_factory=list)  # the run's rows it was computed from
    missing: list[str] = field(default_factory=list)
    why: str = ""
    # The factor's 95% interval over trials (harness/analysis/effect.py) and what it came from.
    low: float | None = None
    high: float | None = None
    trials: tuple[int, int] | None = None  # (the subject's, the other side's) trials behind the factor
    method: str = ""
    measurement: bool = False  # the factor is a reading (every trial the same), not an interval over trials
    # Undecided: (workload, params, engine, more trials per side or None) of the rows that would decide it.
    needs: list[tuple] = field(default_factory=list)

    @property
    def engine(self) -> str:
        return BY_KEY[self.subject].engine

    def as_dict(self) -> dict:
        c = self.claim
        return {"id": c.id, "subject": self.subject, "subject_engine": self.engine, "verdict": self.verdict,
                "claim": c.claim, "where": c.where, "metric": c.metric, "engines": list(c.engines), "rule": c.rule,
                "stated": c.stated, "stated_text": c.stated_text, "tolerance": c.tolerance, "paper": self.paper,
                "paper_basis": self.paper_basis, "paper_rows": self.paper_rows,
                "paper_rows_source": self.paper_rows_source, "ours": self.ours, "low": self.low, "high": self.high,
                "trials": list(self.trials) if self.trials else None, "statistic": STATISTIC, "method": self.method,
                "at": self.at, "why": self.why,
                "used": self.used, "missing": self.missing, "note": c.note}


@dataclass
class Judged:
    """A claim and its two verdicts."""
    claim: Claim
    authors: Verdict
    ours: Verdict

    def verdicts(self) -> list[Verdict]:
        return [getattr(self, s.key) for s in SUBJECTS]


def direction(v: "Verdict") -> str:
    """Which side of the paper's number a ✗'s interval lies on, for BurTorch: above it (the other engine's
    time or memory over BurTorch's larger than the paper says) BurTorch did better than claimed; below it,
    worse. A flat claim that grows did worse; outputs that differ say so in their own words ('')."""
    if v.verdict != NOT_REPRODUCED or v.claim.rule == "same_outputs":
        return ""
    if v.claim.rule == "flat":
        return WORSE
    if v.ours is None or v.paper is None:
        return ""
    return BETTER if v.ours > v.paper else WORSE


def regions(target: float, tolerance: float) -> tuple[tuple[float, ...], tuple[str, ...]]:
    """The boundaries a factor is held to for the paper's number, and the verdict of each region
    between them (effect.decide): ×1 and the paper's number within the tolerance, in its direction."""
    if target >= 1:
        reached = target * (1 - tolerance)
        if reached > 1:
            return (1.0, reached), (NOT_REPRODUCED, PARTLY, REPRODUCED)
        return (reached,), (NOT_REPRODUCED, REPRODUCED)
    reached = target / (1 - tolerance)
    if reached < 1:
        return (reached, 1.0), (REPRODUCED, PARTLY, NOT_REPRODUCED)
    return (reached,), (REPRODUCED, NOT_REPRODUCED)


def interval(v: "Verdict") -> str:
    """' [0.91, 1.48]' after a factor, or ' (1 trial)' where its trials give no interval."""
    if v.low is not None:
        return f" [{_bare(v.low)}, {_bare(v.high)}]"
    if v.trials:
        n = min(v.trials)
        return f" ({n} trial{'s' if n != 1 else ''}, no interval)"
    return ""


def _bare(value: float) -> str:
    return "∞" if value == float("inf") else fx(value).removeprefix("×")


def fx(value: float | None) -> str:
    """A factor as the report's tables print it."""
    if value is None:
        return "n/a"
    return cells.factor(value) if value >= 1 else f"×{value:.2g}"


