"""The end-of-run summary on the terminal: one row per point (engine at a workload point)."""
from __future__ import annotations

from rich.table import Table

from engines.base import BASELINE
from harness.analysis.points import PointKey, group
from harness.store.run_plan import DEFAULT_NOISE_THRESHOLD
from workloads import load
from harness.units import mib

# Relative columns: our engine, as the paper's tables, and micrograd, the smallest Python engine.
BASELINES = (BASELINE, "micrograd/eager/python/cpu")


def format_seconds(s: float | None, missing: str = "—") -> str:
    if s is None:
        return missing
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def summary_table(trials: list[dict], noise_threshold: float = DEFAULT_NOISE_THRESHOLD) -> Table:
    table = Table(title="Time per iteration (mean over trials)", title_justify="left")
    for column in ("workload", "engine", "ok", "time/iter", "CV", "×BurTorch", "×micrograd", "check", "peak RSS"):
        table.add_column(column, justify="left" if column in ("workload", "engine", "check") else "right")
    points = group(trials, noise_threshold)
    for key, point in points.items():
        mean = point.time_mean()
        ratios = []
        for base in BASELINES:
            base_point = points.get(PointKey(base, key.workload, key.params))
            base_mean = base_point.time_mean() if base_point else None
            ratios.append(f"{mean / base_mean:.3g}" if mean and base_mean else "—")
        statuses = set(point.status_counts()) - {"ok"}
        ok, _ = point.check()
        check = {True: "ok", False: "wrong", None: point.check_status() or "—"}[ok]
        rss = point.values("peak_resident_bytes")
        cv = point.time_cv()
        table.add_row(key.workload + _shown_params(key.workload, point.params), key.engine,
                      f"{point.trials_ok()}/{len(point.trials)}" + (f" ({', '.join(sorted(statuses))})" if statuses else ""),
                      format_seconds(mean), "—" if cv is None else f"{cv:.1%}" + (" [yellow]noisy[/]" if point.noisy() else ""),
                      *ratios, check, mib(max(rss) if rss else None, "—"))
    return table


def _shown_params(workload: str, params: dict) -> str:
    """The parameters that tell a workload's points apart: those of a one-value grid say nothing."""
    try:
        grid = load(workload).grid
    except KeyError:
        grid = {}
    shown = {k: v for k, v in params.items() if len(grid.get(k, (0, 1))) > 1}
    return " " + " ".join(f"{k}={v}" for k, v in shown.items()) if shown else ""
