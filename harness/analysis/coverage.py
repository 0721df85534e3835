"""How often each interval method of effect.py holds the truth, and how often the deciding rule decides a
case whose truth sits on its boundary: simulated on synthetic trials whose truth is known.

The noise is what a shared machine gives: log-normal trial times, heavy tails (t with 3 degrees of
freedom on the log scale), drift between rounds that moves both sides of a round alike, and, for runs
pooled, a run-level shift that moves every trial of a run alike. Each method is held to its stated
level over every case; the tests (tests/test_coverage.py) and `burtbench calibrate`'s page read the
same table.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from harness.analysis.effect import MIN_TRIALS, Looks, decide, effect, looked, sequential
from harness.analysis.stats import CONFIDENCE
from harness.store.run_plan import MAX_DECIDING_ROUNDS

NOISES = ("log-normal", "t3 tails", "drift")
SIZES = (3, 5, 8, 12)  # trials a side
SPREAD = 0.08  # a trial's log noise (8%: a busy shared core)
DRIFT = 0.15  # a round's shift, both sides alike
RUN_SHIFT = 0.1  # a run's shift of the factor: what reruns of one plan move
ROWS = 5  # rows a maximum is taken over
# The deciding rounds' design: a claim's planned trials, then every round they may add.
DESIGN = Looks(first=MIN_TRIALS, most=1 + MAX_DECIDING_ROUNDS)


@dataclass(frozen=True)
class Result:
    method: str
    measure: str  # "holds the truth" | "decides a boundary case"
    cases: int
    share: float
    promise: str  # what the method states

    def as_dict(self) -> dict:
        return asdict(self)


def _noise(rng, kind: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Log values of two sides' n trials (truth: equal), with the kind's noise."""
    if kind == "t3 tails":
        a, b = (SPREAD / math.sqrt(3) * rng.standard_t(3, n) for _ in range(2))
    else:
        a, b = (SPREAD * rng.standard_normal(n) for _ in range(2))
    if kind == "drift":
        shift = DRIFT * rng.standard_normal(n)
        a, b = a + shift, b + shift
    return a, b


def _sample(rng, kind: str, n: int, factor: float) -> tuple[dict, dict]:
    a, b = _noise(rng, kind, n)
    return dict(enumerate(np.exp(a))), dict(enumerate(np.exp(b + math.log(factor))))


def _cells(cases: int):
    """(case, noise, trials a side) cycling over every noise and size."""
    for case in range(cases):
        yield case, NOISES[case % len(NOISES)], SIZES[(case // len(NOISES)) % len(SIZES)]


def _holds(e, truth: float) -> bool:
    return e.low is not None and e.low <= truth <= e.high


def interval_methods(cases: int, rng) -> list[Result]:
    truth = 1.7
    held = {"paired t on log ratios": 0, "Welch t on logs": 0}
    for _, kind, n in _cells(cases):
        a, b = _sample(rng, kind, n, truth)
        held["paired t on log ratios"] += _holds(effect(a, b), truth)
        held["Welch t on logs"] += _holds(effect(a, b, paired=False), truth)
    return [Result(name, "holds the truth", cases, count / cases, f"{CONFIDENCE:.0%}") for name, count in held.items()]


def maximum_over_rows(cases: int, rng) -> list[Result]:
    """A claim read as the largest factor over ROWS rows: [largest low, largest high] of intervals that hold
    together (each at its share of the error) holds the largest true factor."""
    truths = np.array([2.0, 2.0, 2.0, 1.9, 1.5])  # ties at the top: where the largest low runs high
    held = naive = 0
    for _, kind, n in _cells(cases):
        samples = [_sample(rng, kind, n, t) for t in truths]
        together = [looked(a, b, Looks(n), rows=ROWS) for a, b in samples]
        alone = [effect(a, b) for a, b in samples]
        for found, spans in ((together, "together"), (alone, "alone")):
            ok = all(e.low is not None for e in found) and \
                max(e.low for e in found) <= truths.max() <= max(e.high for e in found)
            if spans == "together":
                held += ok
            else:
                naive += ok
    return [Result(f"largest of {ROWS} rows, intervals held together (Bonferroni)", "holds the truth", cases,
                   held / cases, f"{CONFIDENCE:.0%}"),
            Result(f"largest of {ROWS} rows, each row's own 95% (before)", "holds the truth", cases, naive / cases,
                   "none stated for the maximum")]


def pooled_runs(cases: int, rng) -> list[Result]:
    """Two or three runs of one plan, each shifted by its own run-level factor: runs as a level hold the
    factor the machine gives over reruns; their trials pooled as one run's do not."""
    truth = 1.7
    level = pooled = 0
    for case, kind, n in _cells(cases):
        a, b = {}, {}
        for run in range(2 + case % 2):
            sa, sb = _sample(rng, kind, n, truth * math.exp(RUN_SHIFT * rng.standard_normal()))
            a.update({run * 1000 + k: v for k, v in sa.items()})
            b.update({run * 1000 + k: v for k, v in sb.items()})
        level += _holds(effect(a, b, run_of=lambda k: k // 1000), truth)
        pooled += _holds(effect(a, b), truth)
    return [Result("runs pooled as a level (t over runs' factors)", "holds the truth", cases, level / cases,
                   f"{CONFIDENCE:.0%}"),
            Result("runs pooled as one run's trials (before)", "holds the truth", cases, pooled / cases,
                   f"{CONFIDENCE:.0%} stated")]


def deciding_rule(cases: int, rng, design: Looks = DESIGN) -> list[Result]:
    """The truth exactly on the claim's boundary: any decision is a wrong one, so the share decided is
    the rule's error over all its looks."""
    boundary = 2.0
    spent = every_look = 0
    for _, kind, _ in _cells(cases):
        a, b = _sample(rng, kind, design.first + design.most - 1, boundary)
        spent += sequential(a, b, (boundary,), design)[0].decided
        every_look += any(decide(effect(*_head(a, b, n)), (boundary,)).decided
                          for n in range(design.first, design.first + design.most))
    return [Result(f"deciding rule, {design.text()}", "decides a boundary case", cases, spent / cases,
                   f"≤ {1 - CONFIDENCE:.0%}"),
            Result(f"95% at each of {design.most} looks (before)", "decides a boundary case", cases,
                   every_look / cases, f"≤ {1 - CONFIDENCE:.0%} stated")]


def _head(a: dict, b: dict, n: int) -> tuple[dict, dict]:
    return {k: a[k] for k in list(a)[:n]}, {k: b[k] for k in list(b)[:n]}


def simulate(cases: int = 2000, seed: int = 0) -> list[Result]:
    rng = np.random.default_rng(seed)
    return [*interval_methods(cases, rng), *maximum_over_rows(cases, rng), *pooled_runs(cases, rng),
            *deciding_rule(cases, rng)]


def markdown(results: list[Result]) -> str:
    rows = ["| method | measure | cases | share | stated |", "|---|---|---|---|---|"]
    rows += [f"| {r.method} | {r.measure} | {r.cases:,} | {r.share:.1%} | {r.promise} |" for r in results]
    return "\n".join(rows) + "\n"
