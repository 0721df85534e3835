"""`burtbench merge`: the runs of one plan's shards (--shard K/N, on N machines) joined into one run.

Trials are only ever copied, never changed. What would make the joined numbers incomparable
refuses the merge: runs of different plans, a trial present twice (a merged run given with one of its
shards is named as such: trials keep the run that measured them), machines of different CPU
models, different profiles or framework versions (the last three pass with --allow-mixed, and the
merged manifest then lists them, for the report to say). A partial run (a shard missing or cut
short, planned trials absent) is refused too, naming the points it lacks, unless --allow-partial.
"""
from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

from harness.errors import UsageError
from harness.store import manifest as manifest_mod
from harness.store import results
from harness.store.run_plan import RunPlan, read_plan


def comparable(manifest: dict) -> dict:
    """What must be equal across the merged runs for their numbers to sit in one table."""
    return {"CPU model": (manifest.get("machine") or {}).get("cpu_model"), "profile": read_plan(manifest).profile,
            "framework versions": manifest.get("frameworks")}


def base_plan(manifest: dict) -> RunPlan:
    """The plan the shards split (every shard's plan is it, plus its own points)."""
    return dataclasses.replace(read_plan(manifest), shard=None)


def differences(manifests: dict[Path, dict]) -> list[str]:
    (first, head), *rest = manifests.items()
    found = []
    for name, value in comparable(head).items():
        for run, manifest in rest:
            other = comparable(manifest)[name]
            if other != value:
                if isinstance(value, dict) and isinstance(other, dict):
                    keys = sorted(k for k in set(value) | set(other) if value.get(k) != other.get(k))
                    shown = ", ".join(f"{k} {value.get(k)} vs {other.get(k)}" for k in keys)
                else:
                    shown = f"{value} vs {other}"
                found.append(f"{name}: {first.name} and {run.name} differ ({shown})")
    return found


def merge(runs: list[Path], out: Path, allow_mixed: bool, allow_partial: bool = False, planned=None) -> Path:
    """`planned(plan)`: the trial keys a run of the plan records (from the layer that expands plans)."""
    if len(set(map(os.path.realpath, runs))) != len(runs):
        raise UsageError("merge: a run is named twice")
    try:
        manifests = {run: results.read_manifest(run) for run in runs}
    except results.ManifestDamaged as exc:
        raise UsageError(f"merge: {exc}") from None
    for run, manifest in manifests.items():  # a damaged plan is refused before anything is compared or written
        read_plan(manifest, f"merge: {run}")
    read = {run: results.read_trials(run) for run in runs}
    refuse_remerge(read, manifests)
    first = runs[0]
    for run in runs[1:]:
        if base_plan(manifests[run]) != base_plan(manifests[first]):
            raise UsageError(f"merge: {first} and {run} are runs of different plans (engines, workloads, points, "
                             f"counts): only the shards of one plan merge")
    mixed = differences(manifests)
    if mixed and not allow_mixed:
        raise UsageError(f"merge: {'; '.join(mixed)}; their numbers do not belong in one table "
                         f"(--allow-mixed merges them anyway, and the report says so)")
    shards = [read_plan(manifests[r]).shard or {} for r in runs]
    counts = {s.get("count") for s in shards}
    if len(counts) > 1:
        raise UsageError(f"merge: the runs split the plan differently ({', '.join(sorted(map(str, counts)))} shards)")
    indices = [s.get("index") for s in shards if s]
    if len(set(indices)) != len(indices):
        raise UsageError("merge: a shard is given twice")
    trials = merged_trials(read)
    manifest = merged_manifest(out, runs, manifests, mixed, counts.pop(), indices)
    lacking = missing(trials, expected(planned, base_plan(manifests[first])), manifest["unavailable"])
    if lacking:
        manifest["status"] = ("partial: " if manifest["status"] == "complete" else manifest["status"] + "; ") + lacking
    if manifest["status"] != "complete" and not allow_partial:
        raise UsageError(f"merge: the merged run would be {manifest['status']} (--allow-partial merges it "
                         f"anyway, and the report says so)")
    _check_out(out)
    write_run(out, trials, manifest)
    return out


def refuse_remerge(read: dict[Path, list[dict]], manifests: dict[Path, dict]) -> None:
    """A merged run holds copies of its shards' trials: merged again with one of them, each of that shard's
    trials would be in the result twice. Named here, before the checks it would otherwise trip."""
    runs = list(read)
    for i, a in enumerate(runs):
        for b in runs[i + 1:]:
            why = merged_from((a.name, manifests[a]), (b.name, manifests[b]))
            if why:
                keys = [{results.trial_key(t["engine"], t["workload"], t["params"], t["trial"]) for t in read[r]}
                        for r in (a, b)]
                raise UsageError(f"merge: {a} and {b} share {len(keys[0] & keys[1])} trials ({why}): "
                                 f"merge the shards of one plan, each once")


def merged_from(a: tuple[str, dict], b: tuple[str, dict]) -> str:
    """'M was merged from S' where one of two runs ((name, manifest) each) names the other as a source, else ''."""
    for (merged, by), (shard, of) in ((a, b), (b, a)):
        if (of.get("run_id") or shard) in {m.get("run_id") for m in by.get("merged_from") or () if isinstance(m, dict)}:
            return f"{merged} was merged from {shard}"
    return ""


def merged_trials(read: dict[Path, list[dict]]) -> list[dict]:
    seen: dict[tuple, Path] = {}
    trials = []
    for run, found in read.items():
        for t in found:
            key = results.trial_key(t["engine"], t["workload"], t["params"], t["trial"])
            if key in seen:
                raise UsageError(f"merge: trial {t['trial'] + 1} of {t['engine']} · {t['workload']} {t['params']} "
                                 f"is in both {seen[key]} and {run}")
            seen[key] = run
            trials.append(t)
    return trials


def expected(planned, plan: RunPlan) -> list[tuple]:
    """The plan's trial keys; none where this installation cannot expand the plan (an engine or a
    workload it lacks): the shards' statuses alone then say what is missing."""
    try:
        return planned(plan) if planned else []
    except UsageError:
        return []


def missing(trials: list[dict], planned: list[tuple], unavailable: dict) -> str:
    """The planned points without all their trials, in words ('' when none)."""
    have = {results.trial_key(t["engine"], t["workload"], t["params"], t["trial"]) for t in trials}
    absent = [key for key in planned if key not in have and key[0] not in unavailable]
    points = list(dict.fromkeys(f"{engine} · {workload} {params}" for engine, workload, params, _ in absent))
    if not points:
        return ""
    shown = "; ".join(points[:5]) + (f"; and {len(points) - 5} more" if len(points) > 5 else "")
    return f"{len(absent)} planned trials missing, at {len(points)} points: {shown}"


def merged_manifest(out: Path, runs: list[Path], manifests: dict, mixed: list[str], count, indices) -> dict:
    head = manifests[runs[0]]
    missing = sorted(set(range(1, count + 1)) - set(indices)) if count else []
    unfinished = [r.name for r in runs if manifests[r].get("status") != "complete"]
    status = "complete"
    if missing or unfinished:
        status = "partial: " + "; ".join(
            ([f"shards {', '.join(map(str, missing))} of {count} not merged"] if missing else [])
            + ([f"{', '.join(unfinished)} not complete"] if unfinished else []))
    unavailable = {}
    for run in runs:
        unavailable.update(manifests[run].get("unavailable") or {})
    return {**head, "run_id": out.name, "created_at": manifest_mod.now(), "finished_at": manifest_mod.now(),
            "status": status, "plan": base_plan(head).to_record(), "cpu": None, "cpus": None,
            "unavailable": unavailable, "mixed": mixed,
            "merged_from": [{"run_id": manifests[r].get("run_id") or r.name, "path": str(r),
                             "shard": shard_label(read_plan(manifests[r]).shard),
                             "status": manifests[r].get("status"), "cpus": manifests[r].get("cpus"),
                             **comparable(manifests[r])} for r in runs]}


def shard_label(shard: dict | None) -> str | None:
    return shard and f"{shard['index']}/{shard['count']}"


def _check_out(out: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"merge --out {out}: exists and is not an empty folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"merge --out {out}: cannot create it ({exc.strerror or exc})") from None


def write_run(out: Path, trials: list[dict], manifest: dict) -> None:
    path = out / results.TRIALS_FILE
    try:
        with open(path, "w", encoding="utf-8") as fh:
            for t in trials:
                fh.write(json.dumps(t) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        raise results.ResultsUnwritable(f"cannot write {path}: {exc.strerror or exc}") from None
    manifest_mod.save(out, manifest)
