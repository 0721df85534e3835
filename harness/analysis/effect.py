"""The one rule that decides a ratio of two samples of trials: B over A with its 95% interval, and on
which side of each boundary (×1, the paper's factor, a noise floor) that whole interval lies.

The unit of repetition is the trial (one process): each sample holds one value per trial, keyed by
its round (the plan runs every engine once per round, harness/planning/plan.py). Steps inside one
process are not independent samples and never enter here. What repeats at a higher level, the run, is
carried by the machine's Noise (harness/analysis/noise.py): the rounds' correlation widens the spread of
their mean, and the run's own shift is added to the interval's variance, so that with the machine's
calibration an interval holds the factor another run here would give.

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

The looks a run takes at its rounds, and the level each look's interval is at: harness/analysis/looks.py.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np
from scipy import stats

from harness.analysis.noise import PLAIN, Noise, satterthwaite
from harness.analysis.stats import CONFIDENCE

MIN_TRIALS = 3  # fewer trials on a side give a ratio and no interval
MOST_MORE = 100  # beyond this many more trials, more trials are not the way to decide
DECIDING_POWER = 0.8  # added rounds decide this often at the estimated factor (just clearing it: half the time)


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
    noise: Noise = PLAIN  # what the machine adds beyond this run's rounds (harness/analysis/noise.py)
    resolution: float = 0.0  # what each reading is known to, relative (read_to): 0, exactly

    @property
    def measurement(self) -> bool:
        """Every trial gave the same value (peak memory): a number measured, not an interval over trials."""
        return self.low is not None and self.spread == 0 and self.runs == 1 and self.noise.plain

    @property
    def decided_interval(self) -> bool:
        return self.low is not None

    @property
    def n(self) -> int:
        return min(self.n_a, self.n_b)

    def method(self) -> str:
        if self.spread == 0 and self.runs == 1:
            known = f"known to ±{self.resolution:.2%} (a page a reading)" if self.resolution else "no interval"
            if self.measurement:
                return f"every trial the same value ({self.n_a} and {self.n_b} trials): a measurement, {known}"
            return f"every trial the same value ({self.n_a} and {self.n_b} trials), {known}; with {self.noise.text()}"
        if self.runs > 1:
            within = "paired" if self.paired else "Welch"
            found = f"t over {self.runs} runs' factors ({within} within each), {self.n_a} and {self.n_b} trials"
        elif self.paired:
            found = f"paired t on log ratios, {self.n} rounds"
        else:
            found = f"Welch t on logs, {self.n_a} and {self.n_b} trials"
        return found if self.noise.plain else f"{found}; with {self.noise.text()}"

    def interval_text(self) -> str:
        return f"[{_num(self.low)}, {_num(self.high)}]" if self.low is not None else f"(no interval: {self.why})"


def read_to(e: Effect, a: dict, b: dict, resolution: float) -> Effect:
    """`e` with each reading known only to `resolution` (its units: a page of memory): the interval widened by
    what one resolution on each side moves B / A, so that two readings of one quantity that differ by less
    than their resolution are not told apart."""
    if e.low is None or not resolution or min(a.values(), default=0) <= resolution \
            or min(b.values(), default=0) <= resolution:
        return e
    on_a, on_b = resolution / min(a.values()), resolution / min(b.values())
    return replace(e, low=e.low * (1 - on_b) / (1 + on_a), high=e.high * (1 + on_b) / (1 - on_a),
                   resolution=max(on_a, on_b))


def _num(x: float) -> str:
    return f"{x:.3g}" if x < 1000 else f"{x:,.0f}"


def positive(sample: dict) -> dict:
    return {k: float(v) for k, v in sample.items() if v is not None and v > 0 and math.isfinite(v)}


def effect(a: dict, b: dict, paired: bool = True, confidence: float = CONFIDENCE, run_of=None,
           noise: Noise = PLAIN) -> Effect:
    """B / A of two samples {round: value} with its interval at `confidence`, paired on their common
    rounds where there are enough (paired=False: the samples' rounds are not the same rounds).
    `run_of(round)`: the run a round belongs to, where the samples pool several runs: runs are then a
    level of their own (across_runs). `noise`: what the machine adds beyond the rounds (PLAIN: nothing,
    the interval holds for these trials)."""
    a, b = positive(a), positive(b)
    if not a or not b:
        return Effect(None, None, None, len(a), len(b), False, None, "not measured on both sides")
    a, b, run_of = one_run(a, b, run_of)
    if run_of is not None and len({run_of(k) for k in (*a, *b)}) > 1:
        return across_runs(a, b, run_of, paired, confidence, noise)
    found = _within(a, b, paired, noise, confidence)
    if found.spread is None:
        return Effect(_exp(found.mean), None, None, found.n_a, found.n_b, False, None,
                      f"{found.n} trial{'s' if found.n != 1 else ''} on a side, {MIN_TRIALS} give an interval")
    return _interval(found, confidence, noise)


@dataclass(frozen=True)
class Within:
    """One run's factor on the log scale, and the variance of that mean as its rounds give it."""
    mean: float
    variance: float | None  # of the mean, inflated by the rounds' correlation; None: too few trials
    df: float
    n_a: int
    n_b: int
    paired: bool
    spread: float | None  # one trial's log ratio sd (unpaired: both sides' combined)

    @property
    def n(self) -> int:
        return min(self.n_a, self.n_b)


def _within(a: dict, b: dict, paired: bool, noise: Noise = PLAIN, confidence: float = CONFIDENCE) -> Within:
    common = in_order(set(a) & set(b))
    if paired and len(common) >= MIN_TRIALS:
        diffs = np.log([b[k] for k in common]) - np.log([a[k] for k in common])
        n, sd = len(diffs), _sd(diffs)
        inflation, df = noise.inflation(common, confidence)
        return Within(float(diffs.mean()), sd * sd / n * inflation, df, n, n, True, sd)
    log_a, log_b = (np.log([side[k] for k in in_order(set(side))]) for side in (a, b))
    na, nb, mean = len(log_a), len(log_b), float(log_b.mean() - log_a.mean())
    if min(na, nb) < MIN_TRIALS:
        return Within(mean, None, 0, na, nb, False, None)
    parts = []
    for side, keys in ((log_a, a), (log_b, b)):
        inflation, df = noise.inflation(in_order(set(keys)), confidence)
        parts.append((_sd(side) ** 2 / len(side) * inflation, df))
    sd = math.hypot(_sd(log_a), _sd(log_b))
    return Within(mean, parts[0][0] + parts[1][0], satterthwaite(parts), na, nb, False, sd)


def _sd(logs: np.ndarray) -> float:
    """The sample's standard deviation; exactly 0 where every value is the same (memory read alike in every
    trial), which the mean's rounding would otherwise leave a few ulps above 0."""
    return 0.0 if np.ptp(logs) == 0 else float(logs.std(ddof=1))


def _interval(found: Within, confidence: float, noise: Noise, runs: int = 1) -> Effect:
    """The interval of a run's factor (or of runs' mean factor) with the machine's run-to-run component
    added to its variance (a prediction of another run's factor, at `confidence`)."""
    estimate = _exp(found.mean)
    if found.variance == 0 and noise.plain:  # every trial the same (peak memory): a measurement, not an interval
        return Effect(estimate, estimate, estimate, found.n_a, found.n_b, found.paired, 0.0, runs=runs)
    between = noise.between_sd ** 2 / runs
    # Each part at its own t quantile, summed in quadrature: adding the run's part never narrows an interval
    # (Satterthwaite's mix would let a small known part raise a few rounds' df and narrow what it widens), and
    # a known part is not read with the few degrees of freedom of three rounds.
    half = math.hypot(_quantile(confidence, found.df) * math.sqrt(found.variance),
                      _quantile(confidence, noise.between_df) * math.sqrt(between))
    return _bounded(Effect(estimate, _exp(found.mean - half), _exp(found.mean + half), found.n_a, found.n_b,
                           found.paired, found.spread, runs=runs, noise=noise))


@lru_cache(maxsize=65536)
def _t_quantile(confidence: float, df: float) -> float:
    return float(stats.t.ppf((1 + confidence) / 2, df))


def _quantile(confidence: float, df: float) -> float:
    """The two-sided t quantile; a Satterthwaite df kept to three digits (the quantile moves far less)."""
    return _t_quantile(confidence, float(f"{df:.3g}") if math.isfinite(df) else math.inf)


def across_runs(a: dict, b: dict, run_of, paired: bool, confidence: float, noise: Noise = PLAIN) -> Effect:
    """Pooled runs of one machine: what moves between runs (the machine's state, the build's layout in
    memory) moves every trial of a run alike, so a run is one measurement, not its trials many. Each run's
    own factor and its variance from its rounds; the runs' spread beyond that is the between-run variance,
    pooled with the machine's calibrated one (weighted by their degrees of freedom), so that two runs that
    agree give a surer verdict than either alone rather than a t with one degree of freedom. Runs that
    measured one side only are left out."""
    per_run = [_within(of_run(a, run, run_of), of_run(b, run, run_of), paired, noise, confidence)
               for run in runs_measuring_both(a, b, run_of)]
    n_a, n_b = len(a), len(b)
    if len(per_run) < 2:
        return Effect(None, None, None, n_a, n_b, paired, None, "no run measured both sides")
    k = len(per_run)
    means = np.array([w.mean for w in per_run])
    mean = float(means.mean())
    if any(w.variance is None for w in per_run):  # a run too short for its own spread: the runs' spread alone
        within, within_df = 0.0, math.inf
    else:
        within = float(np.mean([w.variance for w in per_run]))
        within_df = satterthwaite([(w.variance, w.df) for w in per_run])
    seen = max(float(means.var(ddof=1)) - within, 0.0)
    if noise.between_sd or not math.isinf(noise.between_df):  # the machine's run component: assumed, or measured
        weight = 0.0 if math.isinf(noise.between_df) else (k - 1) / ((k - 1) + noise.between_df)
        between = noise.between_sd ** 2 * (1 - weight) + seen * weight
        between_df = noise.between_df + k - 1
    else:  # nothing known of the machine: the runs' own spread, with the few degrees of freedom it has
        between, between_df = seen, k - 1
    pooled = Within(mean, within / k, within_df, n_a, n_b, paired, float(means.std(ddof=1)))
    found = _interval(pooled, confidence, Noise(noise.acf, math.sqrt(between), between_df, noise.source), runs=k)
    return Effect(found.estimate, found.low, found.high, n_a, n_b, paired, found.spread, found.why, k, noise)


def one_run(a: dict, b: dict, run_of) -> tuple:
    """(a, b, run_of) as the one run gave them where only one of the pooled runs measured both sides (its own
    interval, at its own look), else as they are."""
    if run_of is not None and len(both := runs_measuring_both(a, b, run_of)) == 1:
        return of_run(a, both[0], run_of), of_run(b, both[0], run_of), None
    return a, b, run_of


def runs_measuring_both(a: dict, b: dict, run_of) -> list:
    return in_order({run_of(k) for k in a} & {run_of(k) for k in b})


def of_run(sample: dict, run, run_of) -> dict:
    return {k: v for k, v in sample.items() if run_of(k) == run}


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


def holds(e: Effect, truth: float) -> bool | None:
    """Whether the interval holds `truth`; None where it gives no interval that bounds a ratio."""
    return None if e.low is None or unbounded(e) else e.low <= truth <= e.high


def _bounded(e: Effect) -> Effect:
    """An estimate or interval that reaches 0 or ∞ (a trial at 0 s, a ratio past the float range) is no
    interval: its estimate stays, with why."""
    if e.low is None or not unbounded(e):
        return e
    return Effect(e.estimate if e.estimate and 0 < e.estimate < math.inf else None, None, None, e.n_a, e.n_b,
                  e.paired, e.spread, "the interval reaches 0 or ∞", e.runs, e.noise)


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


def decide(e: Effect, boundaries: tuple[float, ...], confidence: float | None = CONFIDENCE) -> Decision:
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
    more = more_trials(e, inside, confidence) if confidence is not None else None  # None: no later look
    return Decision(None, inside, more, f"the interval spans ×{_num(inside[0])}" if len(inside) == 1 else
                    "the interval spans " + " and ".join(f"×{_num(b)}" for b in inside))


def more_trials(e: Effect, inside: tuple[float, ...], confidence: float = CONFIDENCE) -> int | None:
    """Trials per side to add so that the interval at `confidence` (the level the added rounds will be
    judged at), with the spread seen so far and the machine's run-to-run component, clears the boundary
    nearest the estimate with DECIDING_POWER; None where the estimate sits on it, where the run-to-run component
    alone keeps it across (more rounds of this run cannot decide; another run can), or past MOST_MORE."""
    distance = min(abs(math.log(e.estimate) - math.log(b)) for b in inside)
    if not e.spread or distance == 0 or e.runs > 1:
        return None
    n = np.arange(e.n + 1, e.n + MOST_MORE + 1)
    within = e.spread ** 2 * e.noise.inflation(list(range(e.n)))[0] / n
    between = e.noise.between_sd ** 2
    half = np.hypot(stats.t.ppf((1 + confidence) / 2, n - 1) * np.sqrt(within),  # as _interval reads them
                    _quantile(confidence, e.noise.between_df) * math.sqrt(between))
    narrow = np.nonzero(half + stats.norm.ppf(DECIDING_POWER) * np.sqrt(within + between) < distance)[0]
    return int(n[narrow[0]] - e.n) if len(narrow) else None


def in_order(rounds: set) -> list:
    """Rounds in the order they ran: numbers by value (round 10 after round 9), anything else by its text."""
    if all(type(k) is int for k in rounds):
        return sorted(rounds)
    return sorted(rounds, key=lambda k: (0, k, "") if isinstance(k, (int, float)) else (1, 0, str(k)))
