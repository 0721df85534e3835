"""Rounds that decide the paper's undecided claims, added once a run's plan is done (--claims-budget).

After the plan the claims are judged on the trials so far (claims.py). An undecided verdict names
the rows whose interval spans a boundary and how many more trials each would need to decide it at the
level the added rounds are judged at, with the spread seen so far and the machine's run-to-run
component (harness/analysis/effect.py, more_trials; where that component alone keeps the interval
across the boundary, more rounds of this run cannot decide it and none are added: another run can). A
round at a row is one more trial of the subject and of the other engine at that point, in the same
round, so that they pair. Rows go cheapest first for the trials they need (Kalibera & Jones: repeat
where the variance is, for its cost), those whose batch fits MAX_DECIDING_ROUNDS before those that need
more (they get that many: the spread of three trials is known only roughly); each point gets one batch,
the most its rows ask for, where it fits the budget left, as the design's one later look, and a point
that had its batch gets no other. The rows at one point share its rounds: a round there runs every engine
they read (PyTorch once beside both subjects, where a claim of each reads it). It runs in the runner's
process as the trial loop's follow-up (running/orchestrator.py).
"""
from __future__ import annotations

import statistics
import time
from dataclasses import replace
from pathlib import Path

from harness.analysis.points import measure
from harness.planning.plan import PlannedTrial
from harness.planning.resume import deciding_spent
from harness.judging import claims
from harness.analysis.tables import build_tables
from harness.store.results import params_key
from harness.store.run_plan import MAX_DECIDING_ROUNDS
from harness.store.runs import load_run


class Deciding:
    def __init__(self, plan: list[PlannedTrial], run_dir: Path, budget_s: float, clock=time.monotonic):
        self.plan, self.run_dir, self.budget_s, self.clock = plan, Path(run_dir), budget_s, clock
        self.started: float | None = None
        # The budget spent once the rounds last given have run, by their cost: the trial loop keeps it
        # with them (store/added.py). None: nothing to keep (the rounds ended before a resume).
        self.spent_s: float | None = None
        self.ended = False

    def __call__(self) -> list[PlannedTrial]:
        if self.started is None:
            # A resumed run goes on with the budget its rounds left, and adds none once they ended.
            spent = deciding_spent(self.run_dir)
            self.ended = spent is None
            self.started = self.clock() - (spent or 0.0)
        if self.ended:
            return []
        left = self.budget_s - (self.clock() - self.started)
        run = load_run(self.run_dir)
        batches = []
        for (workload, params), (engines, more, why) in self.undecided(run).items():
            batch = min(more, MAX_DECIDING_ROUNDS)
            cost = sum(self.trial_cost(run, engine, workload, params) for engine in engines) * batch
            batches.append((more > MAX_DECIDING_ROUNDS, cost, batch, workload, params, engines, why))
        added = []
        for _, cost, batch, workload, params, engines, why in sorted(batches, key=lambda b: b[:2]):
            if cost > left:
                continue
            trials = self.batch_at(run, workload, params, engines, why, batch)
            if trials:
                added += trials
                left -= cost
        self.spent_s = self.budget_s - left
        return added

    @staticmethod
    def undecided(run) -> dict[tuple, tuple[tuple, int, str]]:
        """{(workload, params key): (the engines, the most more trials a row there asks for, why)} of every
        point whose rows would decide an undecided claim with more trials. Rows at one point share its rounds:
        a round there runs every engine any of them reads, so that each pair of them pairs."""
        points: dict[tuple, tuple[tuple, int, list]] = {}
        for judged in claims.judge(run, build_tables(run)):
            for v in judged.verdicts():
                if v.verdict != claims.UNDECIDED:
                    continue
                for workload, params, engine, _, more in v.needs:
                    if more is None:
                        continue
                    key = (workload, params_key(params))
                    engines, most, why = points.get(key, ((), 0, []))
                    deciding = f"{judged.claim.id} ({claims.BY_KEY[v.subject].short})"
                    points[key] = (tuple(dict.fromkeys((*engines, v.engine, engine))), max(most, more),
                                   why if deciding in why else [*why, deciding])
        return {key: (engines, more, "deciding " + ", ".join(why)) for key, (engines, more, why) in points.items()}

    @staticmethod
    def trial_cost(run, engine: str, workload: str, params: str) -> float:
        """Seconds one more trial of the engine at the point takes: its trials' mean, end to end."""
        spent = [(measure(t, "wall_time_s") or 0.0) + (measure(t, "init_time_s") or 0.0) for t in run.trials
                 if t.get("engine") == engine and t.get("workload") == workload
                 and params_key(t.get("params")) == params]
        return statistics.fmean(spent) if spent else 0.0

    def batch_at(self, run, workload: str, params: str, engines: tuple, why: str, batch: int) -> list[PlannedTrial]:
        """`batch` new rounds at the point: in each, one trial of each engine, all with that round's index."""
        templates = {}
        for pt in self.plan:
            if pt.workload.name == workload and params_key(pt.params) == params and pt.engine.id in engines:
                kept = templates.get(pt.engine.id)
                templates[pt.engine.id] = pt if kept is None or (pt.with_init and not kept.with_init) else kept
        if set(templates) != set(engines):
            return []
        here = [t for t in run.trials if t.get("workload") == workload
                and params_key(t.get("params")) == params and t.get("engine") in engines]
        if any(t.get("added") for t in here):
            return []  # the design's later look is spent here: another would spend error it does not have
        done = [t.get("trial") for t in here]
        first = max([i for i in done if isinstance(i, int)] + [pt.trial for pt in templates.values()]) + 1
        return [replace(pt, trial=first + k, why=why, added=True) for k in range(batch) for pt in templates.values()]
