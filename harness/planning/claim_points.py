"""The points the paper's claims read, and enough trials at each of them to decide the claims.

Each claim (workloads/claims.csv) reads some points of some workloads (its `points` over the
workload's full grid) for the engines it compares: both BurTorch subjects (ours and the authors')
and the claim's own engines. Two things join the plan:
- the points a profile's grid skips (quick: MLP e = 4, 128, 1024 leaves Table 1's d ≈ 6e4
  unanswered), for the selected engines among those, with the profile's iterations and timeouts;
- repetitions: every point a claim reads gets at least MIN_TRIALS trials (processes), the fewest
  that give a factor its interval (harness/analysis/effect.py), each with its init run where an init
  claim reads the point (outside the paper profile the init run is otherwise measured once a point);
  not in the smoke profile, whose claims stay undecided.
A claim the profile cannot answer (a whole-process total at fewer iterations than the paper's) adds
nothing, nor does one the run's engines cannot judge: it needs a subject in no environment (a versions
run's variants of BurTorch are not the subjects) and, unless it reads BurTorch alone, an engine it
compares with, in no environment either, as the report reads them (harness/judging/rows.py). --trials N is the user's count and is kept; a run narrowed with --param runs the points
asked for, with the claims' repetitions at those of them a claim reads.
"""
from __future__ import annotations

from dataclasses import replace

from engines.base import AUTHORS, BASELINE
from harness.analysis.effect import MIN_TRIALS
from harness.planning.plan import PlannedTrial
from workloads.claims import load_claims

SUBJECT_ENGINES = (BASELINE, AUTHORS)
# Said by --dry-run and by the run where judged() holds for no claim: no trials, no deciding rounds.
NO_CLAIM_JUDGED = (f"no claim of the paper can be judged by these engines: they need {BASELINE} or "
                   f"{AUTHORS.split('/')[0]} beside another framework")
SKIPPED_POINT = "a claim's point the profile skips"
REPEATED = f"{MIN_TRIALS} trials for the claims"
# The smoke profile checks that everything runs, in seconds: its claims stay undecided, and say so.
UNREPEATED_PROFILES = ("smoke",)


def _answerable(claim, profile: str) -> bool:
    """A claim this profile can answer with a factor: outputs are compared bit for bit (one trial
    decides), and a whole-process total needs the paper's iterations."""
    return claim.rule != "same_outputs" and (claim.requires != "paper_iterations" or profile == "paper")


def _compares(claim, engine) -> bool:
    """The claim reads this engine's rows against a subject's ("*": any CPU row of another framework
    that the paper has)."""
    if engine.env:
        return False
    if claim.engines == ("*",):
        return engine.device == "cpu" and not engine.framework.startswith("burtorch") and engine.paper_row is not None
    return engine.id in claim.engines


def _judging(claim, engines: list, workload=None) -> tuple[list, list]:
    """(the subjects, the engines compared with them) among `engines` that can judge the claim (that run
    `workload`, where given); both empty where they cannot."""
    runs = [e for e in engines if workload is None or e.runs(workload)]
    subjects = [e for e in runs if e.id in SUBJECT_ENGINES]
    others = [e for e in runs if _compares(claim, e)]
    return (subjects, others) if subjects and (others or not claim.engines) else ([], [])


def judges_any(engines: list) -> bool:
    """Whether these engines can judge any claim of the paper (NO_CLAIM_JUDGED where not)."""
    engines = list({e.id: e for e in engines}.values())
    return any(_judging(claim, engines)[0] for claim in load_claims())


def wanted(engines: list, workloads: list, profile: str) -> dict[tuple, tuple]:
    """{(engine id, workload, params key): (engine, workload, params, an init claim reads it)} of every point a
    claim reads, for the selected engines and workloads that can judge it."""
    found: dict[tuple, tuple] = {}
    for claim in load_claims():
        if not _answerable(claim, profile):
            continue
        init = "init" in claim.metric.split("/")
        for workload in workloads:
            if workload.paper is None or workload.paper.csv_name not in claim.tables:
                continue
            narrow = {k: v for k, v in claim.points.items() if k in workload.grid}
            subjects, others = _judging(claim, engines, workload)
            for params in workload.points(narrow):
                for engine in (*subjects, *others):
                    key = (engine.id, workload.name, _key(params))
                    before = found.get(key)
                    found[key] = (engine, workload, params, init or bool(before and before[3]))
    return found


def with_claim_points(plan: list[PlannedTrial], engines: list, workloads: list, profile: str,
                      trials: int | None, timeout_s: float | None, add_points: bool = True) -> list[PlannedTrial]:
    """The plan with the claims' points it lacks (add_points) and their repetitions, each round's added
    trials after that round's own."""
    claimed = wanted(engines, workloads, profile)
    planned: dict[tuple, int] = {}
    for pt in plan:
        key = (pt.engine.id, pt.workload.name, _key(pt.params))
        planned[key] = planned.get(key, 0) + 1
    # An init claim's point measures its init run in every trial.
    plan = [replace(pt, with_init=True) if claimed.get((pt.engine.id, pt.workload.name, _key(pt.params)),
                                                       (None,) * 4)[3] else pt for pt in plan]
    added = []
    for key, (engine, workload, params, init) in claimed.items():
        have = planned.get(key, 0)
        if not have and not add_points:
            continue
        least = 1 if profile in UNREPEATED_PROFILES else MIN_TRIALS
        for index in range(have, trials or max(workload.trials[profile], least)):
            added.append(PlannedTrial(engine=engine, workload=workload, params=params, trial=index,
                                      iterations=workload.iterations[profile], warmup=workload.warmup[profile],
                                      timeout_s=timeout_s or workload.timeout_s[profile],
                                      with_init=profile == "paper" or index == 0 or init,
                                      why=REPEATED if have else SKIPPED_POINT))
    if not added:
        return plan
    rounds = max(pt.trial for pt in [*plan, *added]) + 1
    return [pt for index in range(rounds) for pt in (*[p for p in plan if p.trial == index],
                                                      *[p for p in added if p.trial == index])]


def _key(params: dict) -> tuple:
    return tuple(sorted(params.items()))


def added_trials(plan: list[PlannedTrial]) -> list[tuple[str, list[PlannedTrial]]]:
    """('12 trials (…) at 3 points: mlp hidden_dim=16 batch=1, …', those trials): what the claims added, for --dry-run."""
    found = []
    for why in (SKIPPED_POINT, REPEATED):
        mine = [pt for pt in plan if pt.why == why]
        if mine:
            points = list(dict.fromkeys(" ".join([pt.workload.name, *(f"{k}={v}" for k, v in pt.params.items())])
                                        for pt in mine))
            shown = ", ".join(points[:4]) + (f", and {len(points) - 4} more" if len(points) > 4 else "")
            found.append((f"{len(mine)} trials ({why}) at {len(points)} points: {shown}", mine))
    return found
