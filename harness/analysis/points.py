"""Trials grouped into points — one engine at one workload point — and a point's statistics.

The one place where trials are grouped and where a point's figures are defined: the terminal
summary, the report, compare and the adaptive orchestrator all read points from here.
Every trial that carries a measure contributes it, whatever its status or check: a failed check
is marked, not dropped. Trials that carry nothing (timeout, oom, unavailable) are counted and
their reasons kept for the notes.
"""
from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import NamedTuple

from engines import all_engines
from engines.base import split_id
from engines.none import FLOOR
from harness.analysis.stats import coefficient_of_variation, relative_half_width
from harness.store.results import params_key
from harness.store.run_plan import DEFAULT_NOISE_THRESHOLD
from harness.units import count


class PointKey(NamedTuple):
    engine: str
    workload: str
    params: str  # params_key() of the point's parameters

    @classmethod
    def of(cls, trial: dict) -> "PointKey":
        return cls(trial["engine"], trial["workload"], params_key(trial.get("params")))


def number(value) -> float | None:
    """A finite measure, or None: booleans, strings and missing values are not measures."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if value == value and abs(value) != float("inf") else None


def measure(trial: dict, name: str) -> float | None:
    """A measure at the top level of the trial or, for workload-specific ones, in its `extra`."""
    value = trial.get(name)
    if value is None:
        value = (trial.get("extra") or {}).get(name)
    return number(value)


# A trial's time per iteration, read by every table, figure, claim and compare: robust to a stall in one
# step (BenchmarkTools.jl's estimator for heavy right tails). Programs that print only a total give their mean.
STATISTIC = "median of the trial's timed blocks"


def trial_time(trial: dict) -> float | None:
    """Seconds per iteration of one trial (STATISTIC), else the mean over its blocks, else loop time / iterations."""
    per_iter = trial.get("per_iter_s")
    for name in ("median", "mean"):
        value = number(per_iter.get(name)) if isinstance(per_iter, dict) else None
        if value is not None:
            return value
    loop, iterations = number(trial.get("loop_time_s")), number(trial.get("iterations"))
    return loop / iterations if loop is not None and iterations else None


# A point's time, on every surface (progress line, summary, report tables, versions, compare, closing lines):
# the geometric mean of its trials' times, the estimate the interval rule (effect.py) gives a ratio of.
POINT_STATISTIC = "geometric mean over trials"
POINT_SHORT = "geo. mean of trials"  # in a column's title
# The line under a table of points' times: what its numbers are.
TIME_READING = f"time per iteration: the {POINT_STATISTIC} (a trial's time: the {STATISTIC})"


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def geometric_mean(values: list[float]) -> float | None:
    """Of the positive values; None where there is none."""
    positive = [v for v in values if v > 0]
    return math.exp(statistics.fmean(map(math.log, positive))) if positive else None


@dataclass
class Point:
    key: PointKey
    trials: list[dict] = field(default_factory=list)
    noise_threshold: float = DEFAULT_NOISE_THRESHOLD

    @property
    def engine(self) -> str:
        return self.key.engine

    @property
    def workload(self) -> str:
        return self.key.workload

    @property
    def params(self) -> dict:
        return json.loads(self.key.params)

    def values(self, name: str) -> list[float]:
        return [v for v in (measure(t, name) for t in self.trials) if v is not None]

    def mean(self, name: str) -> float | None:
        return _mean(self.values(name))

    def per_iteration(self, name: str) -> float | None:
        """A per-trial total (CPU clocks, save time) divided by that trial's iterations, averaged."""
        return _mean([measure(t, name) / measure(t, "iterations") for t in self.trials
                      if measure(t, name) is not None and measure(t, "iterations")])

    # Time per iteration: one value per trial (process), the unit of replication.
    def time_values(self) -> list[float]:
        return [v for v in map(trial_time, self.trials) if v is not None]

    def time_mean(self) -> float | None:
        """The point's time per iteration (POINT_STATISTIC)."""
        return geometric_mean(self.time_values())

    def time_std_over_trials(self) -> float | None:
        values = self.time_values()
        return statistics.stdev(values) if len(values) > 1 else None

    def time_min(self) -> float | None:
        return min(self.time_values(), default=None)

    def time_std_within(self) -> float | None:
        """Spread of the per-iteration time inside a run (over timing blocks), averaged over trials."""
        stds = [number((t.get("per_iter_s") or {}).get("std")) for t in self.trials if isinstance(t.get("per_iter_s"), dict)]
        return _mean([s for s in stds if s is not None])

    def time_cv(self) -> float | None:
        return coefficient_of_variation(self.time_values())

    def noisy(self) -> bool:
        cv = self.time_cv()
        return cv is not None and cv > self.noise_threshold

    def time_half_width(self) -> float | None:
        """The 95% interval of the mean time's half-width, relative to the mean."""
        return relative_half_width(self.time_values())

    def version(self) -> str | None:
        return next((t["framework_version"] for t in self.trials if t.get("framework_version")), None)

    def iterations(self) -> int | None:
        counts = self.values("iterations")
        return int(max(counts)) if counts else None

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
        errors = [e for e in (number(c.get("max_rel_err")) for c in checks) if e is not None]
        # A check whose ok is None could not decide (its program's outputs are not comparable with
        # the reference, or printed too coarsely): it neither passes nor fails (check_status says why).
        decided = [c for c in checks if c.get("ok") is not None]
        if not decided:
            return None, max(errors, default=None) if checks else None
        return all(c.get("ok") is True for c in decided), max(errors, default=None)

    def failed(self) -> bool:
        """A decided check failed: the point's numbers are a wrong program's, never an answer. The one
        predicate every surface that ranks, divides or plots points asks before it does."""
        return self.check()[0] is False

    def check_status(self) -> str | None:
        """What the undecided checks say ("not comparable", "agrees to printed digits"), where none decided."""
        checks = [t["check"] for t in self.trials if isinstance(t.get("check"), dict)]
        if not checks or any(c.get("ok") is not None for c in checks):
            return None
        statuses = sorted({str(c.get("status") or "undecided").replace("_", " ") for c in checks})
        return ", ".join(statuses)

    def outputs(self) -> dict | None:
        """What the engine computed (its first checked trial's outputs, `check.got`), or None."""
        for trial in self.trials:
            got = (trial.get("check") or {}).get("got") if isinstance(trial.get("check"), dict) else None
            if isinstance(got, dict) and got:
                return got
        return None

    def sources(self, name: str) -> set[str]:
        return {str(t[name]) for t in self.trials if t.get(name)}

    def notes(self) -> list[str]:
        """What a reader must know about this point whatever the table: failures, failed checks, noise."""
        notes = []
        total = len(self.trials)
        for status, n in sorted(self.status_counts().items()):
            if status != "ok":
                reasons = sorted({str(t.get("reason") or "") for t in self.trials if t.get("status") == status} - {""})
                why = f": {'; '.join(reasons)}" if reasons else ""
                notes.append(f"{n} of {count(total, 'trial')} {status}{why}")
        ok, worst = self.check()
        if ok is False:
            failed = sum(1 for t in self.trials if isinstance(t.get("check"), dict) and t["check"].get("ok") is False)
            err = f", max rel. error {worst:.3g}" if worst is not None else ""
            notes.append(f"numerical check FAILED in {failed} of {count(total, 'trial')}{err}")
        if self.noisy():
            notes.append(f"noisy: trials vary by {self.time_cv():.1%} "
                         f"(coefficient of variation > {self.noise_threshold:.0%})")
        return notes


FAILED = "check FAILED"  # how a surface marks a failed point where it shows it


def failed_sides(**points: "Point") -> str | None:
    """'check FAILED in B' for the named points (A=..., B=...) that failed, else None: no ratio between them."""
    sides = [name for name, point in points.items() if point.failed()]
    return f"no answer: {FAILED} in {' and '.join(sides)}" if sides else None


def group(trials: list[dict], noise_threshold: float = DEFAULT_NOISE_THRESHOLD) -> dict[PointKey, Point]:
    """Points in the order their first trial appears."""
    points: dict[PointKey, Point] = {}
    for trial in trials:
        key = PointKey.of(trial)
        points.setdefault(key, Point(key, noise_threshold=noise_threshold)).trials.append(trial)
    return points


def in_order(points: dict[PointKey, Point]) -> list[Point]:
    """Points as a table lists them: workloads and their points as they first ran, and at each point the
    engines in the registry's order (`burtbench list`'s), an environment's after its engine's, never in
    the random order of a round."""
    registry = {eid: k for k, eid in enumerate(all_engines())}
    workloads = {w: k for k, w in enumerate(dict.fromkeys(key.workload for key in points))}
    at = {p: k for k, p in enumerate(dict.fromkeys(key.params for key in points))}
    return sorted(points.values(), key=lambda p: (workloads[p.workload], at[p.key.params],
                                                  registry.get(split_id(p.engine)[0], len(registry)), p.engine))


def best_peer(at_point: list[Point], engine: str) -> Point | None:
    """The fastest of one point's engines whose framework (an id's first part) is not `engine`'s: the best
    framework beside ours there, as `make perf-grid` and the roofline figure set it; the floor is none."""
    peers = [p for p in at_point if p.engine.split("/")[0] != engine.split("/")[0] and p.engine != FLOOR]
    return min(peers, key=Point.time_mean, default=None)


_grouped: tuple = (None, {})  # (the run last grouped, its points): a report groups its run once


def run_points(run) -> dict[PointKey, Point]:
    """A run's points (a store.runs.Run), grouped with its own --noise-threshold: every part of its
    report (tables, claims, versions, the authors' page, the closing lines) reads these."""
    global _grouped
    if _grouped[0] is not run:
        _grouped = (run, group(run.trials, run.plan.noise_threshold))
    return _grouped[1]
