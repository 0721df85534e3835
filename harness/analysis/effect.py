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
narrow it past the nearest one, from the samples' own spread. An interval that reaches 0 or ∞
decides nothing.

Looking again after every added round would spend the 5% error once per look (a boundary case
decided 17.7% of the time after 8 looks at a nominal 95%). `Looks` is the declared sequential
design every interval of a claim is computed at: the first look (the plan's trials) spends
FIRST_SHARE of the error, the added looks (rounds for undecided claims, --adaptive's trials) share
the rest at one nominal level (Pocock-type), found from the joint law of the looks' t statistics
under normal noise, so that the error over all the looks is the stated one. `sequential` is that
rule run over a sample's rounds in order.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import stats

from harness.analysis.stats import CONFIDENCE

MIN_TRIALS = 3  # fewer trials on a side give a ratio and no interval
MOST_MORE = 100  # beyond this many more trials, more trials are not the way to decide
FIRST_SHARE = 0.8  # of the error, spent at the first look: most claims are decided there, far from a boundary
SIMULATED_PATHS = 200_000  # of the looks' t statistics: the level found is within ~0.001 of its error


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
    runs: int = 1  # the runs pooled as a level (across_runs); 1: the trials of one run

    @property
    def decided_interval(self) -> bool:
        return self.low is not None

    @property
    def n(self) -> int:
        return min(self.n_a, self.n_b)

    def method(self) -> str:
        if self.runs > 1:
            within = "paired" if self.paired else "Welch"
            return f"t over {self.runs} runs' factors ({within} within each), {self.n_a} and {self.n_b} trials"
        if self.paired:
            return f"paired t on log ratios, {self.n} rounds"
        return f"Welch t on logs, {self.n_a} and {self.n_b} trials"

    def interval_text(self) -> str:
        return f"[{_num(self.low)}, {_num(self.high)}]" if self.low is not None else f"(no interval: {self.why})"


def _num(x: float) -> str:
    return f"{x:.3g}" if x < 1000 else f"{x:,.0f}"


def _positive(sample: dict) -> dict:
    return {k: float(v) for k, v in sample.items() if v is not None and v > 0 and math.isfinite(v)}


def effect(a: dict, b: dict, paired: bool = True, confidence: float = CONFIDENCE, run_of=None) -> Effect:
    """B / A of two samples {round: value} with its interval at `confidence`, paired on their common
    rounds where there are enough (paired=False: the samples' rounds are not the same rounds).
    `run_of(round)`: the run a round belongs to, where the samples pool several runs: runs are then a
    level of their own (across_runs)."""
    a, b = _positive(a), _positive(b)
    if not a or not b:
        return Effect(None, None, None, len(a), len(b), False, None, "not measured on both sides")
    if run_of is not None and len({run_of(k) for k in (*a, *b)}) > 1:
        return across_runs(a, b, run_of, paired, confidence)
    common = sorted(set(a) & set(b), key=str)
    if paired and len(common) >= MIN_TRIALS:
        diffs = np.log([b[k] for k in common]) - np.log([a[k] for k in common])
        return _paired(diffs, confidence)
    return _unpaired(np.log(list(a.values())), np.log(list(b.values())), confidence)


def across_runs(a: dict, b: dict, run_of, paired: bool, confidence: float) -> Effect:
    """Pooled runs of one machine: what moves between runs (the machine's state, the build's layout in
    memory) moves every trial of a run alike, so a run is one measurement, not its trials many: each
    run's own factor (its trials paired as in one run), then a t interval over the runs' logs. Runs
    that measured one side only are left out."""
    runs = _in_order({run_of(k) for k in a} & {run_of(k) for k in b})
    logs = []
    for run in runs:
        mine = effect({k: v for k, v in a.items() if run_of(k) == run},
                      {k: v for k, v in b.items() if run_of(k) == run}, paired)
        if mine.estimate is not None:
            logs.append(math.log(mine.estimate))
    n_a, n_b = len(a), len(b)
    if len(logs) < 2:
        return Effect(_exp(logs[0]) if logs else None, None, None, n_a, n_b, paired, None,
                      "one run measured both sides: runs pooled need two")
    mean, sd = float(np.mean(logs)), float(np.std(logs, ddof=1))
    half = float(stats.t.ppf((1 + confidence) / 2, len(logs) - 1)) * sd / math.sqrt(len(logs))
    return _bounded(Effect(_exp(mean), _exp(mean - half), _exp(mean + half), n_a, n_b, paired, sd,
                           runs=len(logs)))


def _paired(diffs: np.ndarray, confidence: float) -> Effect:
    n = len(diffs)
    mean, sd = float(diffs.mean()), float(diffs.std(ddof=1))
    half = float(stats.t.ppf((1 + confidence) / 2, n - 1)) * sd / math.sqrt(n)
    return _bounded(Effect(_exp(mean), _exp(mean - half), _exp(mean + half), n, n, True, sd))


def _exp(x: float) -> float:
    """exp that saturates to 0 or ∞ instead of raising: such an interval decides nothing (decide)."""
    return math.exp(x) if x < 709 else math.inf


def unbounded(e: Effect) -> str:
    """How an interval fails to bound a ratio (it reaches 0 or ∞, or is not a number); '' where it bounds one."""
    ends = [x for x in (e.estimate, e.low, e.high) if x is not None]
    if any(math.isnan(x) for x in ends):
        return "is not a number"
    if min(ends, default=1) <= 0:
        return "reaches 0"
    return "reaches ∞" if math.isinf(max(ends, default=1)) else ""


def _bounded(e: Effect) -> Effect:
    """An estimate or interval that reaches 0 or ∞ (a trial at 0 s, a ratio past the float range) is no
    interval: its estimate stays, with why."""
    if e.low is None or not unbounded(e):
        return e
    return Effect(e.estimate if e.estimate and 0 < e.estimate < math.inf else None, None, None, e.n_a, e.n_b,
                  e.paired, e.spread, "the interval reaches 0 or ∞", e.runs)


def _unpaired(log_a: np.ndarray, log_b: np.ndarray, confidence: float) -> Effect:
    estimate = _exp(log_b.mean() - log_a.mean())
    na, nb = len(log_a), len(log_b)
    if min(na, nb) < MIN_TRIALS:
        return Effect(estimate, None, None, na, nb, False, None,
                      f"{min(na, nb)} trial{'s' if min(na, nb) != 1 else ''} on a side, {MIN_TRIALS} give an interval")
    sd = math.sqrt(float(log_a.var(ddof=1)) + float(log_b.var(ddof=1)))
    if sd == 0:
        return Effect(estimate, estimate, estimate, na, nb, False, 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # near-identical samples (peak memory) are judged by the result, not a warning
        low, high = stats.ttest_ind(log_b, log_a, equal_var=False).confidence_interval(confidence)
    return _bounded(Effect(estimate, _exp(low), _exp(high), na, nb, False, sd))


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
        return Decision(None, more=max(MIN_TRIALS - e.n, 0) or None, why=e.why or "no interval")
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
    n = np.arange(e.n + 1, e.n + MOST_MORE + 1)
    narrow = np.nonzero(stats.t.ppf((1 + CONFIDENCE) / 2, n - 1) * e.spread / np.sqrt(n) < distance)[0]
    return int(n[narrow[0]] - e.n) if len(narrow) else None


# ----------------------------------------------------------------------------- looks that spend their error

@dataclass(frozen=True)
class Looks:
    """The sequential design: the first look at `first` rounds, then one more round a look, at most `most`
    looks in all, with the error over all of them within 1 - CONFIDENCE."""
    first: int
    most: int = 1

    def confidence(self, look: int) -> float:
        """The level of the interval at look `look` (1: the first; past `most`: the last look's)."""
        if self.most <= 1:
            return CONFIDENCE
        error = 1 - CONFIDENCE
        if look <= 1:
            return 1 - FIRST_SHARE * error
        return 1 - _added_level(max(self.first, 2), self.most)

    def look_of(self, n: int) -> int:
        """The look a sample of n rounds is at (the first at `first` or fewer)."""
        return min(max(n - self.first + 1, 1), self.most)

    def text(self) -> str:
        error = 1 - CONFIDENCE
        if self.most <= 1:
            return f"one look: {CONFIDENCE:.0%} intervals"
        return (f"{CONFIDENCE:.0%} over up to {self.most} looks: the first ({self.first} trials) at "
                f"{1 - FIRST_SHARE * error:.0%}, each of up to {self.most - 1} added rounds at "
                f"{1 - _added_level(max(self.first, 2), self.most):.2%} (error spent by look, Pocock-type after the first)")


@lru_cache(maxsize=None)
def _added_level(first: int, most: int) -> float:
    """The one nominal error of every added look such that, with FIRST_SHARE of the error at the first,
    some look's interval misses the truth in 1 - CONFIDENCE of normal samples. The t statistics' joint
    law does not depend on the noise's scale, so one seeded simulation of it serves every sample."""
    rng = np.random.default_rng(first * 1000 + most)
    steps = rng.standard_normal((SIMULATED_PATHS, first + most - 1))
    p_values = []
    for n in range(first, first + most):
        head = steps[:, :n]
        t = head.mean(axis=1) / (head.std(axis=1, ddof=1) / math.sqrt(n))
        p_values.append(2 * stats.t.sf(np.abs(t), n - 1))
    error = 1 - CONFIDENCE
    missed_first = p_values[0] < FIRST_SHARE * error
    later = np.min(p_values[1:], axis=0)[~missed_first]
    allowed = int(error * SIMULATED_PATHS) - int(missed_first.sum())  # paths the added looks may still miss on
    return float(np.sort(later)[allowed - 1]) if allowed > 0 else 0.0


def looked(a: dict, b: dict, looks: Looks, paired: bool = True, rows: int = 1, run_of=None) -> Effect:
    """B / A at the level of the look its rounds are at; `rows`: the intervals that must hold together
    (a maximum over rows), each at its share of the error (Bonferroni). Runs pooled as a level were each
    looked at by their own run: their interval is at the stated level."""
    n = min(len(_positive(a)), len(_positive(b)))
    pooled = run_of is not None and len({run_of(k) for k in (*a, *b)}) > 1
    level = CONFIDENCE if pooled else looks.confidence(looks.look_of(n))
    return effect(a, b, paired, 1 - (1 - level) / max(rows, 1), run_of)


def sequential(a: dict, b: dict, boundaries: tuple[float, ...], looks: Looks,
               paired: bool = True) -> tuple[Decision, int]:
    """The deciding rule over a sample's rounds in order: the first look at looks.first rounds, then one
    more round a look until the interval decides or looks.most looks are spent; (decision, looks used)."""
    rounds = _in_order(set(a) & set(b) if paired else set(a) | set(b))
    decision = Decision(None, why="no look")
    for look in range(1, looks.most + 1):
        kept = set(rounds[:looks.first + look - 1])
        found = effect({k: v for k, v in a.items() if k in kept}, {k: v for k, v in b.items() if k in kept},
                       paired, looks.confidence(look))
        decision = decide(found, boundaries)
        if decision.decided or looks.first + look - 1 >= len(rounds):
            return decision, look
    return decision, looks.most


def _in_order(rounds: set) -> list:
    """Rounds in the order they ran: numbers by value (round 10 after round 9), anything else by its text."""
    return sorted(rounds, key=lambda k: (0, k, "") if isinstance(k, (int, float)) else (1, 0, str(k)))
