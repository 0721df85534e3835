"""How long planned trials will take: from the per-iteration times of a previous run on this
machine, else from rough built-in figures, each estimate saying where it came from.

A trial is modelled as a start-up cost (process start, imports, building the program) plus its
iterations at the point's time per iteration; the init run (one iteration) pays the start-up once
more. Both numbers are taken from the previous run's trials of the same point, else of the same
engine and workload at other points, else from the committed reference run (another machine,
maybe: rough), else from one constant pair (rough).

A machine's speed drifts (this project's 2-core VM ran the same plan in 1,876 s and in 1,291 s on
one afternoon, and 2.2x slower than two days before), and a trial's cost is mostly its start-up.
So where the previous run has the harness's floor row (a worker that imports no framework), that
trial is run again here first and the previous run's figures are scaled by now / then.
"""
from __future__ import annotations

import heapq
import statistics
from dataclasses import dataclass
from pathlib import Path

from engines.none import FLOOR
from harness.machine.host import describe
from harness.machine.valgrind import counted_iterations
from harness.paths import ROOT
from harness.planning.plan import PlannedTrial
from harness.store import results
from harness.store.results import params_key
from harness.units import count
from workloads import all_workloads

REFERENCE_RUN = ROOT / "results" / "reference"
# The last resort for an engine no run has measured: a Python framework's start-up, and a slow
# small-graph iteration. Labelled rough wherever used.
ROUGH_STARTUP_S = 1.0
ROUGH_PER_ITER_S = 1e-4
# --instructions: two more children per trial under valgrind (N and 2N iterations, see
# harness/running/instructions.py). Measured here: a child's start-up runs ~20x slower under
# valgrind plus ~1 s of its own, an iteration ~100x slower (autograd tiny: 18 s per trial counted;
# micrograd tiny: 7 s). A previous run's own counting cost, where it has one, is used instead.
VALGRIND_OWN_S = 1.0
VALGRIND_STARTUP_FACTOR = 20.0
VALGRIND_SLOWDOWN = 100.0


@dataclass(frozen=True)
class Cost:
    startup_s: float
    per_iter_s: float

    def trial_s(self, pt: PlannedTrial) -> float:
        init = self.startup_s + self.per_iter_s if pt.with_init else 0.0
        return init + self.startup_s + self.per_iter_s * (pt.iterations + pt.warmup)


def trials_of(run_dir: Path) -> list[dict]:
    """A run's trials, read once for all the figures taken from it; its damaged lines only go unused."""
    return results.read_trials(run_dir, warn=lambda _: None)


def costs_of(trials: list[dict]) -> dict[tuple, Cost]:
    """Each measured point's cost, keyed (engine, workload, params JSON), and (engine, workload)
    for the same pair at any point."""
    samples: dict[tuple, list[tuple[float, float]]] = {}
    for t in trials:
        per_iter = (t.get("per_iter_s") or {}).get("mean")
        wall = t.get("wall_time_s")
        if not isinstance(wall, (int, float)):
            continue
        if t.get("status", "ok") == "ok" and isinstance(per_iter, (int, float)) and t.get("iterations"):
            startup = max(wall - per_iter * (t["iterations"] + (t.get("warmup") or 0)), 0.0)
        else:  # a failed trial costs what it took, whatever its counts
            startup, per_iter = wall, 0.0
        point = (t["engine"], t["workload"], params_key(t["params"]))
        samples.setdefault(point, []).append((startup, per_iter))
        samples.setdefault(point[:2], []).append((startup, per_iter))
    return {key: Cost(statistics.median(s for s, _ in pairs), statistics.median(p for _, p in pairs))
            for key, pairs in samples.items()}


def floor_trials(trials: list[dict]) -> list[dict]:
    """The finished trials of the harness's floor row on workloads that need no inputs folder."""

    workloads = all_workloads()
    return [t for t in trials
            if t.get("engine") == FLOOR and t.get("status", "ok") == "ok" and isinstance(t.get("wall_time_s"), float)
            and (w := workloads.get(t.get("workload"))) is not None and w.kind == "graph" and not w.measures_energy
            and isinstance(t.get("iterations"), int) and isinstance(t.get("params"), dict)]


def counted_s(cost: Cost, pt: PlannedTrial) -> float:
    """What counting a trial's instructions costs (both counted children), from its native cost."""

    per_child = VALGRIND_OWN_S + cost.startup_s * VALGRIND_STARTUP_FACTOR
    n, warmup = counted_iterations(pt.workload)
    return 2 * per_child + (3 * n + 2 * warmup) * cost.per_iter_s * VALGRIND_SLOWDOWN


def counting_costs(trials: list[dict]) -> dict[tuple, float]:
    """A previous run's own counting cost per point (and per engine and workload)."""
    samples: dict[tuple, list[float]] = {}
    for t in trials:
        cost = t.get("instructions_cost_s")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            point = (t["engine"], t["workload"], params_key(t["params"]))
            samples.setdefault(point, []).append(cost)
            samples.setdefault(point[:2], []).append(cost)
    return {key: statistics.median(values) for key, values in samples.items()}


class Estimator:
    """Seconds per planned trial; `source(pt)` says which figures it used. `probe(trial)` gauges the
    machine's speed now by running a floor trial again (harness/running/probe.py: the running stage
    spawns children, planning does not); None: the figures as measured, unscaled."""

    def __init__(self, run_dir: Path | None, probe=None, instructions: bool = False):
        self.run_dir, self.instructions = run_dir, instructions
        previous = trials_of(run_dir) if run_dir is not None else []
        self.measured = costs_of(previous)
        self.counting = counting_costs(previous) if instructions else {}
        self.reference = costs_of(trials_of(REFERENCE_RUN)) if results.is_run_dir(REFERENCE_RUN) else {}
        self.speed, self.speed_note = 1.0, ""
        floors = floor_trials(previous) if probe else []
        now = probe(floors[0]) if floors else None
        if now:
            then = statistics.median(t["wall_time_s"] for t in floors)
            self.speed = now / then
            self.speed_note = (f"; scaled x{self.speed:.2f} to this machine's speed now (the harness's floor trial "
                               f"takes {now * 1e3:.0f} ms, {then * 1e3:.0f} ms in that run)")

    def _lookup(self, pt: PlannedTrial) -> tuple[Cost, str]:
        point = (pt.engine.id, pt.workload.name, params_key(pt.params))
        for table, name in ((self.measured, "run"), (self.reference, "rough")):
            for key in (point, point[:2]):
                if key in table:
                    cost = table[key]
                    if name == "run":
                        cost = Cost(cost.startup_s * self.speed, cost.per_iter_s * self.speed)
                    return cost, name
        return Cost(ROUGH_STARTUP_S, ROUGH_PER_ITER_S), "rough"

    def trial_s(self, pt: PlannedTrial) -> float:
        cost = self._lookup(pt)[0]
        return cost.trial_s(pt) + (self.counted_s(pt, cost) if self.instructions else 0.0)

    def counted_s(self, pt: PlannedTrial, cost: Cost) -> float:
        point = (pt.engine.id, pt.workload.name, params_key(pt.params))
        for key in (point, point[:2]):
            if key in self.counting:
                return self.counting[key] * self.speed
        return counted_s(cost, pt)

    def source(self, pt: PlannedTrial) -> str:
        """"run": the previous run on this machine; "rough": the built-in figures."""
        return self._lookup(pt)[1]

    def describe(self, plan: list[PlannedTrial]) -> str:
        counting = ""
        if self.instructions and plan:
            each = [self.counted_s(pt, self._lookup(pt)[0]) for pt in plan]
            counting = (f"; --instructions included: {statistics.fmean(each):.0f} s per trial on average under "
                        f"valgrind ({min(each):.0f}-{max(each):.0f} s)")
        return self._describe(plan) + counting

    def _describe(self, plan: list[PlannedTrial]) -> str:
        rough = sum(self.source(pt) == "rough" for pt in plan)
        if self.run_dir is None:
            return ("estimates: rough built-in figures (the committed reference run, then a constant), "
                    "no previous run on this machine")
        head = f"estimates: from the per-iteration times of {self.run_dir}"
        made = results.sane_manifest(self.run_dir, warn=lambda _: None).get("created_at")
        if isinstance(made, str) and made[:10]:
            # A shared (cloud) machine has run the same trials 2x slower on one day than on another.
            head += f" (made {made[:10]}: a machine's speed can change from day to day)"
        head += self.speed_note
        return head + (f"; {rough} of {count(len(plan), 'trial')} from rough built-in figures (not in that run)" if rough else "")


def wall_s(plan: list[PlannedTrial], estimator: Estimator, workers: int) -> float:
    """Wall time of the plan on `workers` cores, each taking the next trial in plan order as it frees."""
    free = [0.0] * max(workers, 1)
    for pt in plan:
        if pt.workload.measures_energy:  # runs alone: every core waits for it
            free = [max(free) + estimator.trial_s(pt)] * len(free)
        else:
            heapq.heappush(free, heapq.heappop(free) + estimator.trial_s(pt))
    return max(free)


def newest_compatible_run(out: Path) -> Path | None:
    """The newest run under `out` made on a CPU of this machine's model, with trials."""

    model = describe().get("cpu_model")
    found = []
    for folder in Path(out).iterdir() if Path(out).is_dir() else ():
        if not (results.is_run_dir(folder) and (folder / results.TRIALS_FILE).is_file()):
            continue
        manifest = results.sane_manifest(folder, warn=lambda _: None)
        if (manifest.get("machine") or {}).get("cpu_model") == model and model:
            found.append((manifest.get("created_at") or "", folder.name, folder))
    return max(found)[2] if found else None
