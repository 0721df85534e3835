"""The end-of-run summary on the terminal: one row per engine and workload point."""
from __future__ import annotations

import json
import math
from collections import defaultdict

from rich.table import Table

from harness.stats import coefficient_of_variation

BASELINES = ("burtorch/eager/cpp/cpu", "micrograd/eager/python/cpu")


def group(trials: list[dict]) -> dict[tuple, list[dict]]:
    groups: dict[tuple, list[dict]] = defaultdict(list)  # in the order trials ran
    for t in trials:
        groups[(t["workload"], json.dumps(t.get("params") or {}, sort_keys=True), t["engine"])].append(t)
    return groups


def per_trial_means(trials: list[dict]) -> list[float]:
    """Each ok trial's mean time per iteration."""
    return [t["per_iter_s"]["mean"] for t in trials
            if t.get("status") == "ok" and (t.get("per_iter_s") or {}).get("mean") is not None]


def per_iteration(trials: list[dict]) -> tuple[float | None, float | None]:
    """Mean over ok trials of each trial's mean time per iteration, and its spread across trials."""
    means = per_trial_means(trials)
    if not means:
        return None, None
    mean = math.fsum(means) / len(means)
    std = math.sqrt(math.fsum((m - mean) ** 2 for m in means) / (len(means) - 1)) if len(means) > 1 else 0.0
    return mean, std


def format_seconds(s: float | None) -> str:
    if s is None:
        return "—"
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def summary_table(trials: list[dict], noise_threshold: float = 0.05) -> Table:
    table = Table(title="Time per iteration (mean over trials)", title_justify="left")
    for column in ("workload", "engine", "ok", "time/iter", "CV", "×BurTorch", "×micrograd", "check", "peak RSS"):
        table.add_column(column, justify="left" if column in ("workload", "engine", "check") else "right")
    groups = group(trials)
    for (workload, params, engine), items in groups.items():
        mean, std = per_iteration(items)
        ratios = []
        for base in BASELINES:
            base_mean, _ = per_iteration(groups.get((workload, params, base), []))
            ratios.append(f"{mean / base_mean:.3g}" if mean and base_mean else "—")
        statuses = {t.get("status") for t in items} - {"ok"}
        checks = [t.get("check") or {} for t in items if t.get("status") == "ok"]
        check = "wrong" if any(not c.get("ok") for c in checks) else ("ok" if checks else "—")
        rss = [t.get("peak_resident_bytes") for t in items if t.get("peak_resident_bytes")]
        ok_count = sum(t.get("status") == "ok" for t in items)
        table.add_row(workload + _point(params), engine, f"{ok_count}/{len(items)}" + (f" ({', '.join(sorted(statuses))})" if statuses else ""),
                      format_seconds(mean), _cv(items, noise_threshold), *ratios, check,
                      f"{max(rss) / 2**20:.1f} MiB" if rss else "—")
    return table


def _cv(trials: list[dict], threshold: float) -> str:
    cv = coefficient_of_variation(per_trial_means(trials))
    if cv is None:
        return "—"
    return f"{cv:.1%}" + (" [yellow]noisy[/]" if cv > threshold else "")


def _point(params_json: str) -> str:
    params = json.loads(params_json)
    shown = {k: v for k, v in params.items() if k not in ("a", "b")}
    return " " + " ".join(f"{k}={v}" for k, v in shown.items()) if shown else ""
