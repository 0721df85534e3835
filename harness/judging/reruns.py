"""How far reruns of one plan on one machine move the claims' factors (`burtbench claims`, one machine's runs).

A factor's interval holds for the trials of its run: what changes between runs (the machine's state, the
other load, where a build lands in memory) moves every trial of a run alike, and no interval of one run
can see it. Here each run that measured trials of its own is judged alone, and for each two of them: how
many factors that have an interval in both have intervals that miss each other (two valid intervals of
one quantity almost never do), and how far the factors moved.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from harness.judging import claims
from harness.analysis.tables import build_tables
from harness.store.runs import Run


@dataclass
class Reruns:
    pairs: list[tuple[str, str]] = field(default_factory=list)
    compared: int = 0  # factors with an interval in both runs of a pair
    apart: list[str] = field(default_factory=list)  # those whose intervals do not overlap: 'claim (subject)'
    moves: list[float] = field(default_factory=list)  # ×/÷ a factor moved from one run to the other

    def as_dict(self) -> dict:
        return {"pairs": [list(p) for p in self.pairs], "compared": self.compared, "apart": self.apart,
                "moved_median": statistics.median(self.moves) if self.moves else None,
                "moved_largest": max(self.moves) if self.moves else None}

    def text(self) -> str:
        if not self.compared:
            return ""
        names = ", ".join(f"{a} and {b}" for a, b in self.pairs)
        apart = f" ({', '.join(self.apart)})" if self.apart else ""
        have = "has an interval that does" if len(self.apart) == 1 else "have intervals that do"
        return (f"reruns ({names}): of {self.compared} factors with an interval in both runs, {len(self.apart)} {have} "
                f"not overlap{apart}; factors moved by ×/÷{statistics.median(self.moves):.3g} "
                f"(median), up to ×/÷{max(self.moves):.3g}")


def _factors(run: Run) -> dict[str, tuple[float, float, float]]:
    """{'claim (subject)': (factor, low, high)} of every verdict of the run with an interval."""
    found = {}
    for judged in claims.judge(run, build_tables(run)):
        for s, v in zip(claims.SUBJECTS, judged.verdicts()):
            if v.low is not None and v.ours and math.isfinite(v.ours):
                found[f"{judged.claim.id} ({s.short})"] = (v.ours, v.low, v.high)
    return found


def reruns(runs: list[Run]) -> Reruns:
    """Each run after the first against the one before it, where the two measured different trials (a merged
    run and its shard are one measurement, not two)."""
    alone = [(run, {t.get("measured_in") for t in run.trials}) for run in runs]
    judged: dict[int, dict] = {}

    def factors(run: Run) -> dict:
        if id(run) not in judged:
            judged[id(run)] = _factors(run)
        return judged[id(run)]

    found = Reruns()
    earlier = None
    for run, measured in alone:
        if earlier is not None and not measured & earlier[1]:
            before, after = factors(earlier[0]), factors(run)
            found.pairs.append((earlier[0].run_id, run.run_id))
            for name in before.keys() & after.keys():
                (x, low_x, high_x), (y, low_y, high_y) = before[name], after[name]
                found.compared += 1
                found.moves.append(math.exp(abs(math.log(y / x))))
                if high_x < low_y or high_y < low_x:
                    found.apart.append(name)
        earlier = (run, measured)
    return found
