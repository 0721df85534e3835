"""Statistics of timing samples.

`summarize` runs in the worker, after its timed loop, and uses the standard library only (a worker
must not pay scipy's memory). The interval estimates run in the parent and come from scipy.stats.
"""
from __future__ import annotations

import math
import statistics

CONFIDENCE = 0.95


def summarize(samples: list[float]) -> dict:
    n = len(samples)
    if n == 0:
        return {"mean": None, "std": None, "min": None, "median": None, "n": 0}
    return {
        "mean": math.fsum(samples) / n,
        "std": statistics.stdev(samples) if n > 1 else 0.0,
        "min": min(samples),
        "median": statistics.median(samples),
        "n": n,
    }


def coefficient_of_variation(values: list[float]) -> float | None:
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    return statistics.stdev(values) / mean if mean else None


def relative_half_width(values: list[float], confidence: float = CONFIDENCE) -> float | None:
    """Half-width of the confidence interval of the mean, relative to the mean (Student's t)."""
    n = len(values)
    if n < 2:
        return None
    mean = statistics.fmean(values)
    if not mean:
        return None
    from scipy import stats

    return float(stats.sem(values) * stats.t.ppf((1 + confidence) / 2, n - 1) / abs(mean))
