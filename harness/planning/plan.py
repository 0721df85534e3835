"""The plan of a run: every (engine, workload point, trial) in the order it will execute.

Trials are interleaved: all engines run trial 0 of a workload point before any runs trial 1,
so slow drift of the machine (heat, background load) hits every engine alike.
"""
from __future__ import annotations

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
    for_claims: bool = False  # added for the paper's claims beyond the profile's grid (claim_points.py)

    def key(self) -> tuple:
        return trial_key(self.engine.id, self.workload.name, self.params, self.trial)

    def point_key(self) -> PointKey:
        return PointKey(self.engine.id, self.workload.name, params_key(self.params))

    def label(self) -> str:
        point = ",".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in self.params.items())
        return f"{self.engine.id} · {self.workload.name}[{point}] · trial {self.trial + 1}"


def make_plan(engines: list[EngineSpec], workloads: list[Workload], profile: str,
              narrow: dict[str, tuple] | None = None, trials: int | None = None,
              timeout_s: float | None = None) -> list[PlannedTrial]:
    plan = []
    rounds = max((trials or w.trials[profile]) for w in workloads) if workloads else 0
    for index in range(rounds):
        for workload in workloads:
            if index >= (trials or workload.trials[profile]):
                continue
            for params in workload.points(narrow_for(workload, narrow), profile):
                for engine in engines:
                    if engine.runs(workload):
                        plan.append(PlannedTrial(
                            engine=engine, workload=workload, params=params, trial=index,
                            iterations=workload.iterations[profile], warmup=workload.warmup[profile],
                            timeout_s=timeout_s or workload.timeout_s[profile],
                            with_init=profile == "paper" or index == 0))
    return plan


def narrow_for(workload: Workload, narrow: dict[str, tuple] | None) -> dict[str, tuple]:
    return {name: values for name, values in (narrow or {}).items() if name in workload.grid}
