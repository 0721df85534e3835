"""The plan of a run: every (engine, workload point, trial) in the order it will execute.

Trials are interleaved in rounds: a round is one trial index at one workload point, and in it every
engine (variant) runs once, so slow drift of the machine (heat, background load) hits every engine
alike and the trials of one round can be compared pairwise (harness/analysis/effect.py). With a seed
each round runs its engines in a fresh random order (RMIT: a fixed order lets a periodic disturbance
favour one side); the order is a function of the seed and the round alone, so a resumed run
re-makes the same plan.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from engines.base import EngineSpec
from harness.analysis.points import PointKey
from harness.store.results import params_key, trial_key
from workloads.base import Workload


@dataclass(frozen=True)
class PlannedTrial:
    engine: EngineSpec
    workload: Workload
    params: dict
    trial: int
    iterations: int
    warmup: int
    timeout_s: float
    # The init run (1 iteration, end to end) is a property of the point, not of the trial: it is
    # repeated for every trial only in the paper profile, where its spread is reported.
    with_init: bool = True
    # Why the trial joined the plan beyond the profile's counts ("" for the profile's own): the paper's claims'
    # points and repetitions (claim_points.py), or rounds that decide an undecided claim; shown in the progress.
    why: str = ""
    # A round added once the plan is done (deciding rounds, --adaptive's trials): a later look of the
    # sequential design its point's intervals are computed at (harness/analysis/effect.py, Looks).
    added: bool = False

    def key(self) -> tuple:
        return trial_key(self.engine.id, self.workload.name, self.params, self.trial)

    def point_key(self) -> PointKey:
        return PointKey(self.engine.id, self.workload.name, params_key(self.params))

    def label(self) -> str:
        point = ",".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in self.params.items())
        return f"{self.engine.id} · {self.workload.name}[{point}] · trial {self.trial + 1}" + \
            (f" · {self.why}" if self.why else "")


def make_plan(engines: list[EngineSpec], workloads: list[Workload], profile: str,
              narrow: dict[str, tuple] | None = None, trials: int | None = None,
              timeout_s: float | None = None, seed: int | None = None) -> list[PlannedTrial]:
    plan = []
    rounds = max((trials or w.trials[profile]) for w in workloads) if workloads else 0
    for index in range(rounds):
        for workload in workloads:
            if index >= (trials or workload.trials[profile]):
                continue
            for params in workload.points(narrow_for(workload, narrow), profile):
                for engine in round_order(engines, seed, index, workload.name, params):
                    if engine.runs(workload):
                        plan.append(PlannedTrial(
                            engine=engine, workload=workload, params=params, trial=index,
                            iterations=workload.iterations[profile], warmup=workload.warmup[profile],
                            timeout_s=timeout_s or workload.timeout_s[profile],
                            with_init=profile == "paper" or index == 0))
    return plan


def narrow_for(workload: Workload, narrow: dict[str, tuple] | None) -> dict[str, tuple]:
    return {name: values for name, values in (narrow or {}).items() if name in workload.grid}


def round_order(engines: list[EngineSpec], seed: int | None, index: int, workload: str, params: dict) -> list:
    """The engines of one round in the order they run: shuffled by a generator seeded with the
    run's seed and the round (a string seed hashes the same in every process); None: as given."""
    if seed is None:
        return list(engines)
    order = list(engines)
    random.Random(f"{seed}:{index}:{workload}:{params_key(params)}").shuffle(order)
    return order
