"""Summary statistics of timing samples. Plain Python: the runner imports no numeric library."""
from __future__ import annotations

import math
import statistics
from functools import lru_cache


def summarize(samples: list[float]) -> dict:
    n = len(samples)
    if n == 0:
        return {"mean": None, "std": None, "min": None, "median": None, "n": 0}
    mean = math.fsum(samples) / n
    return {
        "mean": mean,
        "std": statistics.stdev(samples) if n > 1 else 0.0,
        "min": min(samples),
        "median": statistics.median(samples),
        "n": n,
    }


def coefficient_of_variation(values: list[float]) -> float | None:
    if len(values) < 2:
        return None
    mean = math.fsum(values) / len(values)
    return statistics.stdev(values) / mean if mean else None


@lru_cache(maxsize=256)
def t_quantile(p: float, df: float) -> float:
    """Quantile of Student's t (p > 0.5): bisection on its CDF, integrated numerically."""
    if df > 1e4:
        return statistics.NormalDist().inv_cdf(p)
    import numpy as np

    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)

    def cdf(x: float) -> float:
        grid = np.linspace(0.0, x, 4001)
        density = np.exp(log_norm - (df + 1) / 2 * np.log1p(grid**2 / df))
        return 0.5 + float(np.trapezoid(density, grid))

    low, high = 0.0, 1.0
    while cdf(high) < p:
        low, high = high, high * 2
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if cdf(middle) < p else (low, middle)
    return (low + high) / 2


def relative_half_width(values: list[float], confidence: float = 0.95) -> float | None:
    """Half-width of the confidence interval of the mean, relative to the mean (Student's t)."""
    n = len(values)
    if n < 2:
        return None
    mean = math.fsum(values) / n
    if not mean:
        return None
    return t_quantile((1 + confidence) / 2, n - 1) * statistics.stdev(values) / math.sqrt(n) / abs(mean)
