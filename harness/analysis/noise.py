"""What a machine adds to a factor beyond the spread of one run's rounds: the correlation of rounds within a
run, and a shift shared by every round of a run. Both are measured by `burtbench calibrate` on the machine
(harness/analysis/calibration.py) and carried into every interval a run's claims are judged with
(harness/analysis/effect.py), so that a 95% interval answers what another run of the plan here would give,
not only what this run's trials hold (Kalibera and Jones, "Rigorous benchmarking in reasonable time": repeat
at the level that varies, or measure what it adds).

- Rounds k apart are correlated by acf[k - 1] (a state that lasts several rounds, a drift): the spread of a
  few rounds then understates the noise of their mean. `inflation` is the exact factor for a stationary
  process with that autocorrelation, for the rounds a sample has.
- A run's factor moves by `between_sd` (on the log scale) from run to run on top of its rounds' noise (the
  build's layout in memory, the machine's state that day): added to the interval's variance, as a prediction
  interval adds the spread of the next draw.

Where no calibration of the machine applies, ASSUMED stands in, said so on every page that uses it: a rerun
shift and a correlation of the size this project's hosts measured, so that the stated 95% leans wide rather
than narrow until the machine is calibrated.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from pathlib import Path

import numpy as np
from scipy import stats

from harness.machine import calibrations
from harness.records.base import Damaged, validate
from harness.records.calibration import Noise as NoiseRecord
from harness.text import clean

LAGS = 8  # autocorrelation lags a calibration measures; rounds further apart are taken as uncorrelated
MIN_RUNS = 5  # runs a calibration measures the run-to-run component over
MOST_CORRELATED = 0.9  # a larger correlation leaves a few rounds no information of their own: held at this


@dataclass(frozen=True)
class Noise:
    acf: tuple[float, ...] = ()  # correlation of one pair's log ratio between rounds 1, 2, ... apart
    between_sd: float = 0.0  # sd of a run's log factor beyond its rounds' noise
    between_df: float = math.inf  # degrees of freedom of between_sd (the calibration's runs less one)
    source: str = "this run's trials only"  # where the two came from, in words

    @property
    def plain(self) -> bool:
        return not self.between_sd and not any(self.acf)

    def rho(self, lag: int) -> float:
        if lag == 0:
            return 1.0
        return min(max(self.acf[lag - 1], 0.0), MOST_CORRELATED) if lag <= len(self.acf) else 0.0

    def inflation(self, rounds: list, confidence: float = 0.95) -> tuple[float, float]:
        """(Var(mean) over its naive estimate s²/n, the degrees of freedom to read s² with) for these rounds
        (numbers: their distance is their lag). With R the rounds' correlation matrix and P the centring
        projection, Var(mean) = σ²·ΣR/n² while E[s²] = σ²·tr(PRP)/(n − 1). How far s² strays then depends on
        R: the degrees of freedom are those whose t quantile at `confidence` matches the quantile of the
        mean's t ratio simulated under R (normal rounds), so that a few correlated rounds are read as the
        little they say."""
        n = len(rounds)
        if n < 2 or not any(self.acf):
            return 1.0, float(max(n - 1, 1))
        at = [r if isinstance(r, (int, float)) else i for i, r in enumerate(rounds)]
        used = tuple(self.rho(lag) for lag in range(1, len(self.acf) + 1))
        return _inflation(tuple(int(round(r - at[0])) for r in at), used, round(confidence, 6))

    def text(self) -> str:
        if self.plain:
            return "no run-to-run component: the interval holds for this run's trials"
        lag1 = f"rounds correlated {self.rho(1):.2f} at lag 1" if any(self.acf) else "rounds uncorrelated"
        rounds = f" and {lag1}" if self.acf else ""  # none measured: a reading's noise (MEMORY) has no rounds
        return f"a run-to-run component of ×/÷{math.exp(self.between_sd):.3f} (1 sd){rounds}, {self.source}"

    def record(self) -> dict:
        found = asdict(self)
        found["acf"] = list(self.acf)
        found["between_df"] = None if math.isinf(self.between_df) else self.between_df
        return found


PLAIN = Noise()
# Until `burtbench calibrate` measures this machine: what it measured on this project's AMD EPYC host (5 runs
# in 10 minutes, the host shared with other work: a run's factor ×/÷1.043 beyond its rounds, rounds of a pair
# correlated 0.04 at lags 1 to 8), rounded up; two `make bench-linux` runs there moved factors ×/÷1.06 (median).
ASSUMED = Noise(acf=(0.05, 0.05, 0.05, 0.05), between_sd=0.05, between_df=math.inf,
                source="assumed (no calibration of this machine applies; `burtbench calibrate` measures it)")

# A memory reading is the same in every trial of a run but not from run to run (how a framework's threads and
# arenas map their memory that time). Over three same-host `make bench-linux` runs, a framework's reading at a
# point moved by 0.005 (sd of its log, pooled over 166 points) and at most by 0.042: JAX jit's GPT b = 1 peak
# virtual memory read 1,617, 1,546 and 1,680 MiB, every trial of a run alike. The largest stands for every
# engine; `calibrate`, whose engines' readings do not move, cannot measure it yet.
MEMORY = Noise(between_sd=0.042, between_df=math.inf,
               source="assumed: the most a framework's reading moved over this project's same-host reruns")


SIMULATED = 20_000  # draws of a few correlated rounds: their t ratio's quantile within a few per cent


@lru_cache(maxsize=4096)
def _inflation(offsets: tuple[int, ...], acf: tuple[float, ...], confidence: float) -> tuple[float, float]:
    """Noise.inflation's, for rounds at `offsets` and correlations as Noise.rho reads them."""
    n = len(offsets)
    at = np.array(offsets, dtype=float)
    lags = np.abs(at[:, None] - at[None, :]).astype(int)
    table = np.array([1.0, *acf])
    corr = _correlation(np.where(lags < len(table), table[np.minimum(lags, len(table) - 1)], 0.0))
    centre = np.eye(n) - 1.0 / n
    trace = float(np.trace(centre @ corr @ centre))
    if trace <= 1e-9:
        return 1e9, 1.0
    inflation = float(corr.sum() / n) * (n - 1) / trace
    # The t ratio of the mean, with s² inflated as above, over normal rounds correlated by R.
    rng = np.random.default_rng(abs(hash((offsets, acf, confidence))) % 2**32)
    draws = rng.standard_normal((SIMULATED, n)) @ np.linalg.cholesky(corr + 1e-12 * np.eye(n)).T
    ratio = np.abs(draws.mean(axis=1)) / np.sqrt(draws.var(axis=1, ddof=1) / n * inflation)
    wanted = float(np.quantile(ratio, confidence))
    grid = np.geomspace(0.3, 1000, 400)
    quantiles = stats.t.ppf((1 + confidence) / 2, grid)  # falls as df grows
    return inflation, float(np.interp(-wanted, -quantiles, grid))


def _correlation(matrix: np.ndarray) -> np.ndarray:
    """The nearest correlation matrix of rounds (unit diagonal, no negative eigenvalue) to one built lag by lag:
    correlations measured at each lag apart, from a few rounds, need not make one that any rounds could have."""
    values, vectors = np.linalg.eigh(matrix)
    if values.min() > 1e-9:
        return matrix
    fixed = (vectors * np.clip(values, 1e-9, None)) @ vectors.T
    scale = np.sqrt(np.diag(fixed))
    return fixed / np.outer(scale, scale)


def from_record(record, source: str) -> Noise | None:
    """A noise record (a calibration's, a run manifest's) read by its declaration, or None where any part of it
    is out of bounds (harness/records/calibration.py): a damaged record must never narrow an interval."""
    found = validate(record, NoiseRecord, "noise")
    if isinstance(found, Damaged):
        return None
    return Noise(tuple(found.acf), found.between_sd, math.inf if found.between_df is None else found.between_df,
                 source)


def of_machine(results: Path, facts: dict, cpu: int) -> Noise:
    """The noise a run on `cpu` starting now is judged with: the host's calibration where one applies
    (harness/machine/calibrations.py says when), else ASSUMED with the reason none does."""
    record, why = calibrations.applying(results, facts, cpu)
    if record:
        page = clean(str(record.get("page")))
        # Read by the same declaration as the record it came in (harness/records/calibration.py): it is sound.
        return from_record(record["noise"], f"measured by `burtbench calibrate` of "
                                            f"{clean(str(record.get('created_at')))[:16]} ({page})")
    return replace(ASSUMED, source=f"assumed: {why}; `burtbench calibrate` measures it")


def log_ratios(a: dict, b: dict) -> tuple[list, np.ndarray]:
    common = sorted(set(a) & set(b))
    return common, np.log([b[r] for r in common]) - np.log([a[r] for r in common])


def measure(runs: list[dict], window: int, source: str = "") -> Noise:
    """The noise of the runs' pairs ({pair: (one engine's time by round, the other's)} a run): lag
    correlations pooled over every pair and run, then the run-to-run variance beyond each run's own (its
    rounds' variance of the mean, inflated by those correlations), and the spread of windows of `window`
    rounds (a claim's planned trials) beyond their own rounds'."""
    products, squares, lengths = np.zeros(LAGS), 0.0, []
    for run in runs:
        for a, b in run.values():
            _, d = log_ratios(a, b)
            d = d - d.mean()
            squares += float(d @ d) / len(d)
            products += [float(d[:-k] @ d[k:]) / len(d) if k < len(d) else 0.0 for k in range(1, LAGS + 1)]
            lengths.append(len(d))
    acf, plain_acf = (), ()
    if squares:
        seen = np.clip(products / squares, 0.0, None)
        # Centred on its own run's mean, a sample autocorrelation reads low by about (1 + 2Σρ)/m over m rounds;
        # one standard error more (1/√ of every round seen), and no lag below what lag 1 implies for an AR(1):
        # a correlation read too low narrows every interval, one read too high only widens them.
        unbiased = seen + (1 + 2 * seen.sum()) / float(np.mean(lengths))
        plain_acf = tuple(float(x) for x in np.clip(unbiased, 0.0, 1.0))
        lifted = unbiased + 1 / math.sqrt(sum(lengths))
        lifted = np.maximum(lifted, lifted[0] ** np.arange(1, LAGS + 1))
        acf = tuple(float(x) for x in np.clip(lifted, 0.0, 1.0))
    rounds_only = Noise(acf=acf)
    between, windows = [], []
    for pair in set().union(*runs):
        seen = [run[pair] for run in runs if pair in run]
        if len(seen) < 2:
            continue
        means, variances = [], []
        for a, b in seen:
            common, d = log_ratios(a, b)
            means.append(float(d.mean()))
            variances.append(float(d.var(ddof=1)) / len(d) * rounds_only.inflation(common)[0])
        between.append(float(np.var(means, ddof=1)) - float(np.mean(variances)))
    for run in runs:
        for a, b in run.values():
            windows += _window_excess(a, b, Noise(acf=plain_acf), window)
    # A state that lasts a few rounds moves a claim's few rounds together more than the correlations show:
    # what windows of window rounds spread beyond their own rounds' variance is added to the run's shift.
    extra = max(float(np.mean(between)), 0.0) if between else 0.0
    extra += max(float(np.mean(windows)), 0.0) if windows else 0.0
    return Noise(acf, math.sqrt(extra), float(max(len(runs) - 1, 1)), source)


def _window_excess(a: dict, b: dict, rounds_only: Noise, window: int) -> list[float]:
    """One run's windows of window rounds: their means' variance beyond what each window's rounds give."""
    common, d = log_ratios(a, b)
    cut = len(d) // window * window
    if cut < 2 * window:
        return []
    blocks = d[:cut].reshape(-1, window)
    inflation = rounds_only.inflation(list(range(window)))[0]
    return [float(blocks.mean(axis=1).var(ddof=1)) - float(blocks.var(axis=1, ddof=1).mean()) / window * inflation]


def satterthwaite(parts: list[tuple[float, float]]) -> float:
    """Degrees of freedom of a sum of variance estimates [(variance, its df)] (Welch-Satterthwaite)."""
    total = sum(v for v, _ in parts)
    spread = sum(v * v / df for v, df in parts if v > 0 and not math.isinf(df))
    return total * total / spread if spread > 0 else math.inf
