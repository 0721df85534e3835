"""`burtbench compare RUN_A RUN_B`: did B get faster or slower than A, and is the change real?

For each (engine, workload, params) measured in both runs: the ratio B/A of the per-iteration
time, of the instructions per iteration (--instructions: a proxy for time, shown beside it) and of
the peak resident memory, each with its 95% interval, and one answer per row from the rule every
surface uses (harness/analysis/effect.py: faster / slower / same within the floor / undecided, and
what decided it):
- two variants of one run (RUN@A RUN@B of the same RUN): paired by round, since the plan ran them
  once each per round, with the noise floor the run's A/A pairs measured (a versions run's default);
- two runs: unpaired, Welch's t on the log values of the trials, with no floor.
An answer without a floor says so and why, whatever its kind.
The unit of replication is the trial (one process): the timing blocks inside a trial are never
counted as independent samples, and a side with fewer than 3 trials gives a ratio and no interval.
The times shown are the geometric means the ratio is computed from.

Memory changes under 1% are no change (peak memory repeats to within a few pages).
A workload's geometric-mean row compares, per trial, the geometric mean over its rows (the
harness's floor row excluded: a floor change is no engine's), paired or not as its rows are.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from engines.base import AA_COPY, split_id
from engines.none import FLOOR
from harness.analysis import change, effect
from harness.analysis.compare_view import format_comparison  # noqa: F401 - the command's one door to compare
from harness.analysis.points import Point, failed_sides, geometric_mean, group, measure, trial_time
from harness.analysis.stats import CONFIDENCE
from harness.errors import UsageError
from harness.store.results import identity
from harness.store.run_plan import read_plan
from harness.store.runs import load_run

MANIFEST_CHECKS = (("machine", "cpu_model", "CPU model"), ("machine", "governor", "CPU governor"))
# Peak memory repeats to within a few pages, so a tiny but consistent difference is
# "significant" without meaning anything: memory changes under 1% are no change.
MEMORY_TOLERANCE = 0.01


# ----------------------------------------------------------------------------- per row

def by_round(point: Point, value) -> dict[int, float]:
    """{trial index: value} of a point's trials that carry the value."""
    found = {}
    for trial in point.trials:
        v = value(trial)
        if v is not None and isinstance(trial.get("trial"), int):
            found[trial["trial"]] = v
    return found


def effect_of(a: Point, b: Point, value, pair: bool) -> effect.Effect:
    """B/A of one measure (value: trial -> float or None), paired by round or not."""
    return effect.effect(by_round(a, value), by_round(b, value), paired=pair)


def geo(point: Point, value) -> float | None:
    return geometric_mean(list(by_round(point, value).values()))


def effect_text(e: effect.Effect) -> str:
    if e.estimate is None:
        return "n/a"
    return f"{e.estimate:.3f}" + (f" [{e.low:.3f}, {e.high:.3f}]" if e.low is not None else "")


def memory_answer(e: effect.Effect) -> str:
    """Memory: no change under 1%, else smaller or larger where the whole interval says so."""
    if e.estimate is None:
        return "not measured"
    if abs(e.estimate - 1) < MEMORY_TOLERANCE and (e.low is None or (1 - MEMORY_TOLERANCE < e.low
                                                                      and e.high < 1 + MEMORY_TOLERANCE)):
        return "same within 1%"
    answer = change.time_answer(e, None, MEMORY_TOLERANCE)
    return answer.text.replace("faster", "smaller").replace("slower", "larger")


def fields(name: str, e: effect.Effect, a: float | None, b: float | None, verdict_text: str) -> dict:
    return {f"{name}_a": a, f"{name}_b": b, f"{name}_ratio": e.estimate,
            f"{name}_ci": [e.low, e.high] if e.low is not None else None, f"{name}_n": e.n,
            f"{name}_note": e.why, f"{name}_verdict": verdict_text}


def checked_answer(a: Point, b: Point, answer: change.Answer) -> change.Answer:
    """The answer, unless a side's check failed: a wrong program's time answers nothing (kind "failed")."""
    why = failed_sides(A=a, B=b)
    return change.Answer("failed", why) if why else answer


def compare_row(a: Point, b: Point, pair: bool, floor: change.Floor | None, threshold: float, without: str):
    """Every measure of one row, and the row's one answer (time, then instructions where time cannot tell;
    `without`: why it has no floor, where it has none), and its time's Effect."""
    time = effect_of(a, b, trial_time, pair)
    instr = effect_of(a, b, lambda t: measure(t, "instructions_per_iter"), pair)
    memory = effect_of(a, b, lambda t: measure(t, "peak_resident_bytes"), pair)
    answer = checked_answer(a, b, change.change_answer(time, floor, threshold,
                                                       instr if instr.estimate is not None else None, without))
    row = {**fields("time", time, a.time_mean(), b.time_mean(),
                    change.time_answer(time, floor, threshold, without).text),
           **fields("instr", instr, geo(a, lambda t: measure(t, "instructions_per_iter")),
                    geo(b, lambda t: measure(t, "instructions_per_iter")), "counted" if instr.estimate else "not counted"),
           **fields("mem", memory, geo(a, lambda t: measure(t, "peak_resident_bytes")),
                    geo(b, lambda t: measure(t, "peak_resident_bytes")), memory_answer(memory)),
           "answer": answer.kind, "answer_text": answer.text, "decided_by": answer.decided_by,
           "decide_with": answer.trials,
           "floor": floor.factor if floor else None, "floor_pair": floor.pair if floor else None}
    return row, time


# ----------------------------------------------------------------------------- two runs

def _describe(keys: set) -> list[dict]:
    return [{"workload": k.workload, "engine": k.engine, "params": json.loads(k.params)}
            for k in sorted(keys, key=lambda k: (k.workload, k.engine, k.params))]


def _manifest_warnings(a: dict, b: dict) -> list[str]:
    warnings = []
    profile_a, profile_b = read_plan(a).profile, read_plan(b).profile
    if profile_a != profile_b:
        warnings.append(f"profile differs: A has {profile_a!r}, B has {profile_b!r}; the comparison may not be fair")
    for section, name, label in MANIFEST_CHECKS:
        value_a = (a.get(section) or {}).get(name) if section else a.get(name)
        value_b = (b.get(section) or {}).get(name) if section else b.get(name)
        if value_a != value_b:
            warnings.append(f"{label} differs: A has {value_a!r}, B has {value_b!r}; the comparison may not be fair")
    return warnings


def _run_info(run, env: str | None) -> dict:
    return {"run_id": run.run_id + (f"@{env}" if env else ""), "profile": run.plan.profile,
            "cpu_model": _value(run.manifest, "machine", "cpu_model"),
            "timing": run.timing, "created_at": run.manifest.get("created_at"), "git_commit": run.manifest.get("git_commit"),
            "frameworks": _env_freeze(run.manifest, env) if env else run.manifest.get("frameworks") or {}}


def _env_freeze(manifest: dict, env: str) -> dict:
    """What an environment of the run held (a damaged manifest may hold anything here)."""
    made = manifest.get("environments")
    record = made.get(env) if isinstance(made, dict) else None
    return (record.get("freeze") if isinstance(record, dict) else None) or {}


def aa_floors(points: dict[str, Point]) -> dict[str, change.Floor]:
    """The noise floor each A/A pair of one point measured (an environment against its copy), by environment."""
    floors = {}
    for env, copy in points.items():
        original = env.removesuffix(AA_COPY)
        if env.endswith(AA_COPY) and original in points:
            floor = change.floor_of(effect_of(points[original], copy, trial_time, pair=True), original or "no environment")
            if floor is not None:
                floors[original] = floor
    return floors


def _geometric_means(rows_by_workload: dict[str, list[tuple[Point, Point, change.Floor | None]]], pair: bool,
                     threshold: float, without: str) -> dict[str, dict]:
    """Per workload: B/A of the per-trial geometric mean over its rows (the trial indices every row
    has), paired or not as the rows are, answered against the widest of its rows' floors."""
    means = {}
    for workload, rows in rows_by_workload.items():
        sides = []
        for side in (0, 1):
            times = [by_round(p[side], trial_time) for p in rows]
            common = set.intersection(*(set(t) for t in times))
            sides.append({r: math.exp(sum(math.log(t[r]) for t in times) / len(times)) for r in common
                          if all(t[r] > 0 for t in times)})
        e = effect.effect(*sides, paired=pair)
        answer = change.time_answer(e, change.wider(*(row[2] for row in rows)), threshold, without)
        means[workload] = {"ratio": e.estimate, "ci": [e.low, e.high] if e.low is not None else None,
                           "answer_text": answer.text, "decided_by": answer.decided_by, "n": len(rows)}
    return means


def in_env(points: dict, env: str) -> dict:
    """The points of one environment of a run, keyed by their engine ids without it."""
    return {key._replace(engine=split_id(key.engine)[0]): point for key, point in points.items()
            if split_id(key.engine)[1] == env}


def _floors(points: dict, env_a: str, env_b: str) -> dict:
    """{point key without environment: the wider floor of the two environments' A/A pairs}."""
    by_point: dict = {}
    for key, point in points.items():
        base, env = split_id(key.engine)
        by_point.setdefault(key._replace(engine=base), {})[env or ""] = point
    found = {}
    for key, envs in by_point.items():
        floors = aa_floors(envs)
        found[key] = change.wider(floors.get(env_a), floors.get(env_b))
    return found


def sort_key(key) -> tuple:
    """Rows by workload, then their parameters' values (numbers as numbers), then engine."""
    params = json.loads(key.params)
    return (key.workload, [(isinstance(v, str), v if not isinstance(v, str) else 0, str(v)) for v in params.values()],
            key.engine)


def compare_runs(run_a: Path, run_b: Path, env_a: str | None = None, env_b: str | None = None,
                 threshold: float = change.ASKED_CHANGE) -> dict:
    """A plain, JSON-ready comparison of two runs (see the module docstring), or of two
    environments (--env SPEC) of one run or two; `threshold`: the change asked about (--change)."""
    a, b = load_run(Path(run_a)), load_run(Path(run_b))
    if a.timing != b.timing:
        raise UsageError(f"run A was timed with --timing {a.timing}, run B with --timing {b.timing}: their "
                         "timed regions differ (workloads/timed_regions.csv); compare runs of one --timing")
    same = Path(run_a).resolve() == Path(run_b).resolve()
    pair = same and (env_a or "") != (env_b or "")
    shared = not same and len({identity(t) for t in a.trials} & {identity(t) for t in b.trials})
    if shared:  # Welch's interval takes its two sides for independent samples
        raise UsageError(f"{a.run_id} and {b.run_id} share {shared} trials (a merged run holds its shards'): "
                         "they are not independent samples; compare runs measured apart")
    points_a, points_b = group(a.trials), group(b.trials)
    floors = _floors(points_a, env_a or "", env_b or "") if pair else {}
    copies = any(split_id(key.engine)[1].endswith(AA_COPY) for key in points_a)
    without = change.no_floor(copies) if pair else change.TWO_RUNS
    if env_a or env_b:  # a side without one: the engines that ran in the runner's own environment
        points_a, points_b = in_env(points_a, env_a or ""), in_env(points_b, env_b or "")
    common = set(points_a) & set(points_b)
    if not common:
        raise UsageError(f"{a.run_id}{'@' + env_a if env_a else ''} and {b.run_id}{'@' + env_b if env_b else ''} "
                         "have no (engine, workload, point) in common: nothing to compare")
    rows, by_workload = [], {}
    for key in sorted(common, key=sort_key):
        pa, pb = points_a[key], points_b[key]
        row, time = compare_row(pa, pb, pair, floors.get(key), threshold, without)
        if key.engine != FLOOR and time.estimate is not None and row["answer"] != "failed":
            by_workload.setdefault(key.workload, []).append((pa, pb, floors.get(key)))
        rows.append({"workload": key.workload, "engine": key.engine, "params": json.loads(key.params),
                     "trials_a": len(pa.trials), "trials_b": len(pb.trials), **row})
    how = ("paired by round (one run: every variant once per round): a t interval on the per-round log ratios"
           if pair else "unpaired (two runs): Welch's t interval on the log values")
    return {
        "run_a": _run_info(a, env_a), "run_b": _run_info(b, env_b), "paired": pair, "threshold": threshold,
        "method": f"B/A of time per iteration, of instructions per iteration (a proxy, --instructions) and of peak "
                  f"resident memory over trials (one value per process), {CONFIDENCE:.0%} interval {how}; "
                  f"times shown are the geometric means the ratio comes from",
        "warnings": _manifest_warnings(a.manifest, b.manifest),
        "mixed_cpu": _value(a.manifest, "machine", "cpu_model") != _value(b.manifest, "machine", "cpu_model"),
        "rows": rows,
        "geomean": _geometric_means(by_workload, pair, threshold, without),
        "only_in_a": _describe(set(points_a) - set(points_b)),
        "only_in_b": _describe(set(points_b) - set(points_a)),
    }


def _value(manifest: dict, section: str, name: str):
    part = manifest.get(section)
    return part.get(name) if isinstance(part, dict) else None
