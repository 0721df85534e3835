"""Paired comparison of two variants of one run: per-round ratios, a signed-rank test, a bootstrap
interval, the noise floor an A/A pair measures, and the verdict that decides.

The plan runs every variant once per round (harness/planning/plan.py), so round i of A and round i of
B saw the same machine state; their ratio B_i/A_i cancels what drifts between rounds (the VM's
speed moves 1.6-4x from day to day). The unit is the trial (one process): each trial's time per
iteration (its loop time over its iterations) is one value; the timing blocks inside a trial are
never counted as independent samples.

- ratio: the geometric mean of the per-round ratios, which is also the ratio of the two sides'
  geometric means over the same rounds: the times shown beside it are those geometric means.
- interval: 95% bootstrap (BCa, scipy.stats.bootstrap) of the mean log ratio; p: Wilcoxon signed-rank
  (scipy.stats.wilcoxon) of the log ratios. A change needs both (interval excluding 1 and p < 0.05):
  with fewer than 6 rounds the signed-rank test cannot reach p < 0.05, and nothing is decided.
- noise floor: an A/A pair (--aa: one variant against an exact copy of itself) gives the reach of its
  interval, max(|low - 1|, |high - 1|): the smallest change this machine detects now with as many
  rounds. A change inside the floor is "within noise", whatever its interval says.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

from harness.analysis.stats import CONFIDENCE

# Instruction counts repeat to within this share (measured: 0.03%): a smaller difference is none.
INSTRUCTIONS_TOLERANCE = 0.005
ALPHA = 1 - CONFIDENCE
# Below this many rounds a two-sided signed-rank test cannot reach p < 0.05 (2 / 2**5 = 0.0625).
MIN_ROUNDS = 6
# The bootstrap's own randomness is seeded: the same trials give the same interval.
BOOTSTRAP_SEED = 0
BOOTSTRAP_RESAMPLES = 9999


@dataclass(frozen=True)
class Ratio:
    """B/A over paired rounds (or over unpaired trials: Welch), and what can be said of it."""
    ratio: float | None
    ci: tuple[float, float] | None
    p: float | None
    n: int  # rounds paired (or the smaller side's trials)
    a: float | None  # the geometric mean time of A over those rounds: ratio == b / a
    b: float | None
    degenerate: str | None = None  # "identical samples", "1 round": no test could run

    def significant(self) -> bool:
        return (self.ci is not None and (self.ci[0] > 1 or self.ci[1] < 1)
                and self.p is not None and self.p < ALPHA)

    def half_width(self) -> float | None:
        """How far the interval reaches from the ratio, relative to it."""
        return max(self.ci[1] - self.ratio, self.ratio - self.ci[0]) / self.ratio if self.ci else None

    def reach(self) -> float | None:
        """How far from 1 the interval reaches: max(|low - 1|, |high - 1|)."""
        return max(abs(self.ci[0] - 1), abs(self.ci[1] - 1)) if self.ci else None


def pairs(a: dict[int, float], b: dict[int, float]) -> list[tuple[float, float]]:
    """(A, B) of every round both measured, with positive values: {round: value} each."""
    return [(a[r], b[r]) for r in sorted(set(a) & set(b)) if a[r] > 0 and b[r] > 0]


def paired(rounds: list[tuple[float, float]]) -> Ratio:
    """B/A from (A, B) per round."""
    import numpy as np
    from scipy import stats

    n = len(rounds)
    if n == 0:
        return Ratio(None, None, None, 0, None, None, "no round measured both")
    log_a, log_b = np.log([a for a, _ in rounds]), np.log([b for _, b in rounds])
    diffs = log_b - log_a
    a, b = math.exp(log_a.mean()), math.exp(log_b.mean())
    ratio = math.exp(diffs.mean())
    if n < 3:
        return Ratio(ratio, None, None, n, a, b, f"{n} round{'s' if n > 1 else ''} (3 or more give an interval)")
    if np.ptp(diffs) == 0:
        return Ratio(ratio, (ratio, ratio), None, n, a, b, "identical samples")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a near-degenerate sample is judged by its result, not a warning
        p = float(stats.wilcoxon(diffs).pvalue)
        boot = stats.bootstrap((diffs,), np.mean, confidence_level=CONFIDENCE, method="BCa",
                               n_resamples=BOOTSTRAP_RESAMPLES, rng=np.random.default_rng(BOOTSTRAP_SEED))
    low, high = boot.confidence_interval
    if not (math.isfinite(low) and math.isfinite(high)):
        return Ratio(ratio, None, p, n, a, b, "no bootstrap interval (too few distinct rounds)")
    return Ratio(ratio, (math.exp(low), math.exp(high)), p, n, a, b)


def unpaired(a: list[float], b: list[float]) -> Ratio:
    """B/A of two independent sets of trials (two runs): Welch's t on the log values, as
    compare has always done; the p-value is Welch's."""
    import numpy as np
    from scipy import stats

    a = [v for v in a if v > 0]
    b = [v for v in b if v > 0]
    if not a or not b:
        return Ratio(None, None, None, 0, None, None, "not measured on both sides")
    log_a, log_b = np.log(a), np.log(b)
    mean_a, mean_b = math.exp(log_a.mean()), math.exp(log_b.mean())
    n = min(len(a), len(b))
    if n < 2:
        return Ratio(mean_b / mean_a, None, None, n, mean_a, mean_b, "1 trial on a side (2 or more give an interval)")
    if np.ptp(log_a) == 0 and np.ptp(log_b) == 0:
        return Ratio(mean_b / mean_a, (mean_b / mean_a,) * 2, None, n, mean_a, mean_b, "identical samples")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        test = stats.ttest_ind(log_b, log_a, equal_var=False)
        low, high = test.confidence_interval(CONFIDENCE)
    return Ratio(mean_b / mean_a, (math.exp(low), math.exp(high)), float(test.pvalue), n, mean_a, mean_b)


def log_spread(rounds: list[tuple[float, float]]) -> float | None:
    """The standard deviation of the per-round log ratios: how much one round's ratio scatters."""
    import numpy as np

    if len(rounds) < 2:
        return None
    return float(np.std(np.log([b / a for a, b in rounds]), ddof=1))


def floor_of(aa: Ratio | None) -> float | None:
    """The noise floor an A/A pair measured (see the module docstring); None: not measured."""
    return aa.reach() if aa is not None else None


@dataclass(frozen=True)
class Verdict:
    text: str
    decided_by: str  # "wall time", "instructions", "wall time and instructions", "nothing"


def percent(x: float) -> str:
    return f"{x * 100:.1f}%"


def decide(time: Ratio, floor: float | None, instructions: Ratio | None = None) -> Verdict:
    """One verdict per comparison (see the module docstring): a change in wall time beyond the floor,
    else instructions that differ beyond their repeat spread, else the same within noise."""
    noise = floor if floor is not None else time.reach()
    noise_text = f"±{percent(noise)}" + ("" if floor is not None else " interval, no A/A floor") \
        if noise is not None else "not measured"
    if time.ratio is None:
        return Verdict(f"not measured ({time.degenerate})", "nothing")
    if time.significant() and (floor is None or abs(time.ratio - 1) > floor):
        word = "slower" if time.ratio > 1 else "faster"
        return Verdict(f"{word} by {percent(abs(time.ratio - 1))}", "wall time")
    if instructions is not None and instructions.ratio is not None:
        spread = max(instructions.half_width() or 0.0, INSTRUCTIONS_TOLERANCE)
        change = instructions.ratio - 1
        if abs(change) > spread:
            return Verdict(f"instructions differ by {change * 100:+.1f}% (±{percent(spread)}) while wall time is "
                           f"within noise ({noise_text})", "instructions")
        if time.ci is None and time.degenerate != "identical samples":
            return Verdict(f"instructions same within ±{percent(spread)}; wall time: {time.degenerate}",
                           "instructions")
        return Verdict(f"same within noise ({noise_text}); instructions within ±{percent(spread)}",
                       "wall time and instructions")
    if time.ci is None and time.degenerate != "identical samples":
        return Verdict(f"undecided: {time.degenerate}", "nothing")
    if time.degenerate == "identical samples":
        return Verdict("identical samples", "wall time")
    if time.n < MIN_ROUNDS:
        return Verdict(f"undecided: {time.n} round{'' if time.n == 1 else 's'} ({MIN_ROUNDS} or more let the signed-rank "
                       "test decide)", "nothing")
    return Verdict(f"same within noise ({noise_text})", "wall time")
