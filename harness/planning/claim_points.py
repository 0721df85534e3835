"""The points the paper's claims read, added to a run's plan where the profile's grid skips them.

Each claim (workloads/claims.csv) reads some points of some workloads (its `points` over the
workload's full grid) for the engines it compares: both BurTorch subjects (ours and the authors')
and the claim's own engines. A profile that covers a sweep in part (quick: MLP e = 4, 128, 1024)
would leave claims such as Table 1's d ≈ 6e4 unanswered; these points join the plan for the
selected engines among those, with the profile's trials, iterations and timeouts.

A run narrowed with --param runs what was asked and nothing more: the user chose its points.
Points already in the plan are not added twice.
"""
from __future__ import annotations

from engines.base import AUTHORS, BASELINE
from harness.planning.plan import PlannedTrial
from workloads.claims import load_claims

SUBJECT_ENGINES = (BASELINE, AUTHORS)


def wanted(engines: list, workloads: list) -> list[tuple]:
    """(engine, workload, params) of every point a claim reads, for the selected engines and workloads."""
    selected = {e.id: e for e in engines}
    found = []
    for claim in load_claims():
        for workload in workloads:
            if workload.paper is None or workload.paper.csv_name not in claim.tables:
                continue
            narrow = {k: v for k, v in claim.points.items() if k in workload.grid}
            compared = selected if claim.engines == ("*",) else {
                e: selected[e] for e in (*SUBJECT_ENGINES, *claim.engines) if e in selected}
            for params in workload.points(narrow):
                found += [(engine, workload, params) for engine in compared.values() if engine.runs(workload)]
    return found


def with_claim_points(plan: list[PlannedTrial], engines: list, workloads: list, profile: str,
                      trials: int | None, timeout_s: float | None) -> list[PlannedTrial]:
    """The plan with the claims' points it lacks, each round's added trials after that round's own."""
    have = {(pt.engine.id, pt.workload.name, _key(pt.params)) for pt in plan}
    added, seen = [], set()
    for engine, workload, params in wanted(engines, workloads):
        key = (engine.id, workload.name, _key(params))
        if key in have or key in seen:
            continue
        seen.add(key)
        for index in range(trials or workload.trials[profile]):
            added.append(PlannedTrial(engine=engine, workload=workload, params=params, trial=index,
                                      iterations=workload.iterations[profile], warmup=workload.warmup[profile],
                                      timeout_s=timeout_s or workload.timeout_s[profile],
                                      with_init=profile == "paper" or index == 0, for_claims=True))
    if not added:
        return plan
    rounds = max(pt.trial for pt in [*plan, *added]) + 1
    return [pt for index in range(rounds) for pt in (*[p for p in plan if p.trial == index],
                                                      *[p for p in added if p.trial == index])]


def _key(params: dict) -> tuple:
    return tuple(sorted(params.items()))


def added_points(plan: list[PlannedTrial]) -> list[str]:
    """'mlp hidden_dim=16 batch=1 (3 engines)': the points the claims added, for --dry-run."""
    by_point: dict[str, set] = {}
    for pt in plan:
        if pt.for_claims:
            point = " ".join([pt.workload.name, *(f"{k}={v}" for k, v in pt.params.items())])
            by_point.setdefault(point, set()).add(pt.engine.id)
    return [f"{point} ({len(ids)} engine{'s' if len(ids) > 1 else ''})" for point, ids in by_point.items()]

