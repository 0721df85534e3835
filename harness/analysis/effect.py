"""The one rule that decides a ratio of two samples of trials: B over A with its 95% interval, and on
which side of each boundary (×1, the paper's factor, a noise floor) that whole interval lies.

The unit of repetition is the trial (one process): each sample holds one value per trial, keyed by
its round (the plan runs every engine once per round, harness/planning/plan.py). Steps inside one
process are not independent samples and never enter here.

- Paired, where the two samples share at least MIN_TRIALS rounds: the per-round ratios B_i / A_i
  cancel what drifts between rounds; the estimate is their geometric mean and the interval a t
  interval on their logs (scipy.stats.t).
- Unpaired otherwise (two runs, two points of one engine): Welch's t interval on the log values
  (scipy.stats.ttest_ind); the estimate is the ratio of the geometric means.
With 3 to 8 trials a bootstrap interval is too narrow (3 values have 10 distinct resamples); a t
interval on logs is exact for log-normal times and widens honestly when trials are few.

`decide` holds an interval to sorted boundaries: the region (between two boundaries) that holds the
whole interval, or undecided with the boundaries it straddles and how many more trials would
narrow it past the nearest one, from the samples' own spread.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import stats

from harness.analysis.stats import CONFIDENCE

MIN_TRIALS = 3  # fewer trials on a side give a ratio and no interval
MOST_MORE = 100  # beyond this many more trials, more trials are not the way to decide


@dataclass(frozen=True)
class Effect:
    """B / A with its interval; low and high are None where the samples cannot give one (`why`)."""
    estimate: float | None
    low: float | None
    high: float | None
    n_a: int
    n_b: int
    paired: bool
    spread: float | None  # standard deviation of one trial's log ratio (unpaired: of the two sides' combined)
    why: str | None = None

    @property
    def decided_interval(self) -> bool:
        return self.low is not None

    @property
    def n(self) -> int:
        return min(self.n_a, self.n_b)

    def method(self) -> str:
        if self.paired:
            return f"paired t on log ratios, {self.n} rounds"
        return f"Welch t on logs, {self.n_a} and {self.n_b} trials"

    def interval_text(self) -> str:
        return f"[{_num(self.low)}, {_num(self.high)}]" if self.low is not None else f"(no interval: {self.why})"


def _num(x: float) -> str:
    return f"{x:.3g}" if x < 1000 else f"{x:,.0f}"


def _positive(sample: dict) -> dict:
    return {k: float(v) for k, v in sample.items() if v is not None and v > 0 and math.isfinite(v)}


def effect(a: dict, b: dict, paired: bool = True) -> Effect:
    """B / A of two samples {round: value}, paired on their common rounds where there are enough
    (paired=False: the samples' rounds are not the same rounds)."""
    a, b = _positive(a), _positive(b)
    if not a or not b:
        return Effect(None, None, None, len(a), len(b), False, None, "not measured on both sides")
    common = sorted(set(a) & set(b), key=str)
    if paired and len(common) >= MIN_TRIALS:
        diffs = np.log([b[k] for k in common]) - np.log([a[k] for k in common])
        return _paired(diffs)
    return _unpaired(np.log(list(a.values())), np.log(list(b.values())))


def _paired(diffs: np.ndarray) -> Effect:
    n = len(diffs)
    mean, sd = float(diffs.mean()), float(diffs.std(ddof=1))
    half = float(stats.t.ppf((1 + CONFIDENCE) / 2, n - 1)) * sd / math.sqrt(n)
    return Effect(math.exp(mean), math.exp(mean - half), math.exp(mean + half), n, n, True, sd)


def _unpaired(log_a: np.ndarray, log_b: np.ndarray) -> Effect:
    estimate = math.exp(log_b.mean() - log_a.mean())
    na, nb = len(log_a), len(log_b)
    if min(na, nb) < MIN_TRIALS:
        return Effect(estimate, None, None, na, nb, False, None,
                      f"{min(na, nb)} trial{'s' if min(na, nb) != 1 else ''} on a side, {MIN_TRIALS} give an interval")
    sd = math.sqrt(float(log_a.var(ddof=1)) + float(log_b.var(ddof=1)))
    if sd == 0:
        return Effect(estimate, estimate, estimate, na, nb, False, 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # near-identical samples (peak memory) are judged by the result, not a warning
        low, high = stats.ttest_ind(log_b, log_a, equal_var=False).confidence_interval(CONFIDENCE)
    return Effect(estimate, math.exp(low), math.exp(high), na, nb, False, sd)


@dataclass(frozen=True)
class Decision:
    region: int | None  # index of the region holding the whole interval (0: below the first boundary); None: undecided
    straddles: tuple[float, ...] = ()  # the boundaries inside the interval
    more: int | None = None  # trials (rounds) to add to decide, estimated from the spread; None: more cannot decide
    why: str = ""

    @property
    def decided(self) -> bool:
        return self.region is not None


def region_of(x: float, boundaries: tuple[float, ...]) -> int:
    return sum(x >= b for b in boundaries)


def decide(e: Effect, boundaries: tuple[float, ...]) -> Decision:
    """Which region of the sorted boundaries holds the whole interval, or why none does yet."""
    bounds = tuple(sorted(set(boundaries)))
    if e.estimate is None:
        return Decision(None, why=e.why or "not measured")
    if e.low is None:
        return Decision(None, more=MIN_TRIALS - e.n, why=e.why or "no interval")
    low, high = region_of(e.low, bounds), region_of(e.high, bounds)
    if low == high:
        return Decision(low)
    inside = tuple(b for b in bounds if e.low < b <= e.high)
    more = more_trials(e, inside)
    return Decision(None, inside, more, f"the interval spans ×{_num(inside[0])}" if len(inside) == 1 else
                    "the interval spans " + " and ".join(f"×{_num(b)}" for b in inside))


def more_trials(e: Effect, inside: tuple[float, ...]) -> int | None:
    """Trials per side to add so that the interval, with the spread seen so far, clears the boundary
    nearest the estimate; None where the estimate sits on it or more than MOST_MORE would be needed."""
    distance = min(abs(math.log(e.estimate) - math.log(b)) for b in inside)
    if not e.spread or distance == 0:
        return None
    for n in range(e.n + 1, e.n + MOST_MORE + 1):
        if stats.t.ppf((1 + CONFIDENCE) / 2, n - 1) * e.spread / math.sqrt(n) < distance:
            return n - e.n
    return None
