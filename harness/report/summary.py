"""A run read back and its trials folded into one summary per (engine, workload, params).

Every trial that carries a measure contributes it, whatever its status or check: a failed
check is marked in the report, not dropped. Trials that carry nothing (timeout, oom,
unavailable) are counted and their reasons kept for the notes.
"""
from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from harness.report import paper
from harness.results import read_manifest, read_trials
from harness.stats import coefficient_of_variation

# A point whose trials vary more than this (coefficient of variation) is marked noisy.
DEFAULT_NOISE_THRESHOLD = 0.05


@dataclass
class Run:
    run_id: str
    manifest: dict
    trials: list[dict]
    os: str  # 'linux', 'windows' or 'macos'


def load_run(run_dir: Path, warn=None) -> Run:
    run_dir = Path(run_dir)
    try:
        manifest = read_manifest(run_dir)
    except (OSError, ValueError):
        manifest = {}
    trials = [t for t in read_trials(run_dir, warn) if t.get("engine") and t.get("workload")]
    return Run(run_id=run_dir.name, manifest=manifest, trials=trials, os=paper.run_os(manifest))


def params_key(params: dict | None) -> str:
    return json.dumps(params or {}, sort_keys=True)


def per_iteration_s(trial: dict) -> float | None:
    """Seconds per iteration of one trial: the mean over its timed blocks, else loop time / iterations."""
    per_iter = trial.get("per_iter_s") or {}
    if isinstance(per_iter.get("mean"), (int, float)):
        return float(per_iter["mean"])
    loop, iterations = trial.get("loop_time_s"), trial.get("iterations")
    if isinstance(loop, (int, float)) and iterations:
        return loop / iterations
    return None


def measure(trial: dict, name: str):
    """A measure at the top level of the trial or, for workload-specific ones, in its `extra`."""
    value = trial.get(name)
    if value is None:
        value = (trial.get("extra") or {}).get(name)
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _mean(values: list[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def _stdev(values: list[float]) -> float | None:
    return statistics.stdev(values) if len(values) > 1 else None


@dataclass
class Summary:
    engine: str
    workload: str
    params: dict
    trials: list[dict] = field(default_factory=list)
    noise_threshold: float = DEFAULT_NOISE_THRESHOLD

    def values(self, name: str) -> list[float]:
        return [v for v in (measure(t, name) for t in self.trials) if v is not None]

    def mean(self, name: str) -> float | None:
        return _mean(self.values(name))

    # Time per iteration, over trials (launches).
    def time_values(self) -> list[float]:
        return [v for v in (per_iteration_s(t) for t in self.trials) if v is not None]

    def time_mean(self) -> float | None:
        return _mean(self.time_values())

    def time_std_over_trials(self) -> float | None:
        return _stdev(self.time_values())

    def time_min(self) -> float | None:
        values = self.time_values()
        return min(values) if values else None

    def time_std_within(self) -> float | None:
        """Spread of the per-iteration time inside a run (over timing blocks), averaged over trials."""
        stds = [(t.get("per_iter_s") or {}).get("std") for t in self.trials]
        return _mean([s for s in stds if isinstance(s, (int, float))])

    def per_iteration(self, name: str) -> float | None:
        """A per-trial total (CPU clocks, save time) divided by that trial's iterations, averaged."""
        values = [measure(t, name) / t["iterations"] for t in self.trials
                  if measure(t, name) is not None and t.get("iterations")]
        return _mean(values)

    def version(self) -> str | None:
        versions = [t.get("framework_version") for t in self.trials if t.get("framework_version")]
        return versions[0] if versions else None

    def iterations(self) -> int | None:
        counts = [t.get("iterations") for t in self.trials if t.get("iterations")]
        return max(counts) if counts else None

    def param_count(self) -> int | None:
        values = self.values("param_count")
        return int(values[0]) if values else None

    def status_counts(self) -> Counter:
        return Counter(t.get("status") or "ok" for t in self.trials)

    def trials_ok(self) -> int:
        return self.status_counts().get("ok", 0)

    def check(self) -> tuple[bool | None, float | None]:
        """(all checks passed, worst relative error); None when no trial carries a check."""
        checks = [t["check"] for t in self.trials if isinstance(t.get("check"), dict)]
        if not checks:
            return None, None
        errors = [c["max_rel_err"] for c in checks if isinstance(c.get("max_rel_err"), (int, float))]
        return all(c.get("ok") is True for c in checks), (max(errors) if errors else None)

    def sources(self, name: str) -> set[str]:
        return {t[name] for t in self.trials if t.get(name)}

    def notes(self) -> list[str]:
        """What a reader must know about this row whatever the table: failures and failed checks."""
        notes = []
        total = len(self.trials)
        for status, count in sorted(self.status_counts().items()):
            if status != "ok":
                reasons = sorted({t.get("reason") or "" for t in self.trials if t.get("status") == status} - {""})
                why = f": {'; '.join(reasons)}" if reasons else ""
                notes.append(f"{count} of {total} trials {status}{why}")
        ok, worst = self.check()
        if ok is False:
            failed = sum(1 for t in self.trials
                         if isinstance(t.get("check"), dict) and t["check"].get("ok") is not True)
            err = f", max rel. error {worst:.3g}" if worst is not None else ""
            notes.append(f"numerical check FAILED in {failed} of {total} trials{err}")
        cv = coefficient_of_variation(self.time_values())
        if cv is not None and cv > self.noise_threshold:
            notes.append(f"noisy: trials vary by {cv:.1%} (coefficient of variation > {self.noise_threshold:.0%})")
        return notes


def summarize_run(trials: list[dict], noise_threshold: float = DEFAULT_NOISE_THRESHOLD) -> dict[tuple, Summary]:
    """(engine, workload, params key) -> Summary, in the order trials first appear."""
    summaries: dict[tuple, Summary] = {}
    for trial in trials:
        key = (trial["engine"], trial["workload"], params_key(trial.get("params")))
        if key not in summaries:
            summaries[key] = Summary(trial["engine"], trial["workload"], dict(trial.get("params") or {}),
                                     noise_threshold=noise_threshold)
        summary = summaries[key]
        summary.trials.append(trial)
    return summaries
