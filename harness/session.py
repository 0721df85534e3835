"""A run from the user's request to its results: the plan, the engines made ready, the run folder
and its lock, the manifest, the energy meter, the trials, the summary.

cli.py parses the command line and reports errors; this module does the work of `burtbench run`.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from rich.console import Console

from harness import selection
from harness.errors import UsageError
from harness.lock import RunLock
from harness.results import ResultsUnwritable
from workloads.base import PROFILES

# What a resumed run takes from its manifest: giving any of these again is an error.
PLAN_OPTIONS = ("workload", "engine", "param", "profile", "trials", "timeout", "data_dir", "upstream", "timing")


@dataclass(frozen=True)
class RunRequest:
    """Everything `burtbench run` was asked, checked."""
    spec: dict  # the plan as the manifest records it (see plan_spec)
    run_dir: Path | None  # the folder of a resumed run; None: a new folder under `out`
    out: Path
    cpu: int
    python: str
    mem_limit_bytes: int | None
    sample_private: bool
    energy: str
    idle_seconds: float
    report: bool = True  # render reports/<run-id>/ and print the claims summary at the end (--no-report: not)


def plan_spec(args) -> dict:
    """The plan of a new run from the parsed options, every value checked."""
    from engines import all_engines
    from workloads import all_workloads

    profile = args.profile or "quick"
    if profile not in PROFILES:
        raise UsageError(f"--profile: unknown profile '{profile}'{selection.did_you_mean(profile, PROFILES)} "
                         f"(choose {', '.join(PROFILES)})")
    workloads = selection.resolve_workloads(args.workload, all_workloads())
    engines = selection.with_floor(selection.resolve_engines(args.engine, all_engines()), workloads, all_engines())
    narrow = selection.parse_params(args.param, workloads)
    usable = [w for w in workloads if any(e.runs(w) for e in engines)]
    if not usable:
        raise UsageError("no selected engine implements any selected workload (burtbench list shows who does what)")
    data_dir = str(Path(args.data_dir).resolve()) if args.data_dir else None
    selection.use_data_dir(data_dir, usable)
    upstream = str(Path(args.upstream).expanduser().resolve()) if getattr(args, "upstream", None) else None
    use_upstream(upstream)
    if args.adaptive and args.trials and args.max_trials < args.trials:
        raise UsageError(f"--max-trials {args.max_trials} is below --trials {args.trials}")
    from harness.plan import narrow_for

    per_point = args.max_trials if args.adaptive else None
    selection.check_plan_size(sum((per_point or args.trials or w.trials[profile])
                                  * len(w.points(narrow_for(w, narrow), profile)) * sum(e.runs(w) for e in engines)
                                  for w in usable))
    return {"profile": profile, "engines": [e.id for e in engines], "workloads": [w.name for w in usable],
            "narrow": {k: list(v) for k, v in narrow.items()}, "trials": args.trials, "timeout_s": args.timeout,
            "explicit_engines": args.engine.strip() != "all", "noise_threshold": args.noise_threshold / 100,
            "adaptive": {"max_trials": args.max_trials} if args.adaptive else None, "data_dir": data_dir,
            "upstream": upstream, "timing": getattr(args, "timing", None) or "paper"}


def request(args) -> RunRequest:
    from harness import results

    python = selection.check_python(args.python)
    selection.check_mem_limit(args.mem_limit)
    if args.resume:
        run_dir = existing_run(args.resume, "--resume")
        given = [o for o in PLAN_OPTIONS if getattr(args, o) not in ("all", [], None)]
        if given:
            raise UsageError("--resume runs the folder's own plan; drop "
                             + "/".join(f"--{o.replace('_', '-')}" for o in PLAN_OPTIONS))
        manifest = resumable_manifest(run_dir)
        spec = manifest["plan"]
        if spec.get("timing", "lean") not in results.TIMINGS:
            raise UsageError(f"{run_dir}: its manifest's plan has timing {spec.get('timing')!r}, "
                             f"not one of {', '.join(results.TIMINGS)}: damaged")
        selection.use_data_dir(spec.get("data_dir"), planned_workloads(spec))
        use_upstream(spec.get("upstream"))
        cpu = selection.check_cpu(args.cpu if args.cpu is not None else manifest.get("cpu"))
    else:
        run_dir, spec = None, plan_spec(args)
        cpu = selection.check_cpu(args.cpu)
        selection.check_out_dir(Path(args.out))
    return RunRequest(spec, run_dir, Path(args.out), cpu, python, args.mem_limit, args.sample_private, args.energy,
                      args.idle_seconds, report=not getattr(args, "no_report", False))


def use_upstream(path: str | None) -> None:
    """--upstream: the authors' BurTorch source for the burtorch-authors engines (and their builds)."""
    if path is None:
        return
    from engines.authors.source import ENV_VAR

    if not Path(path).exists():
        raise UsageError(f"--upstream {path}: no such file or folder (a checkout or a `git archive` tarball;"
                         f" burtbench fetch-upstream makes one)")
    os.environ[ENV_VAR] = path


# A resumed run's plan, field by field: what type each must have.
PLAN_TYPES = {"profile": str, "engines": list, "workloads": list, "narrow": dict, "trials": (int, type(None)),
              "timeout_s": (int, float, type(None)), "noise_threshold": (int, float),
              "adaptive": (dict, type(None)), "data_dir": (str, type(None)), "upstream": (str, type(None))}


def resumable_manifest(run_dir: Path) -> dict:
    """The manifest of a run to resume, its plan checked: a damaged one is one UsageError line."""
    from harness import results

    try:
        manifest = results.read_manifest(run_dir)
    except results.ManifestDamaged as exc:
        raise UsageError(f"--resume: {exc}") from None
    plan = manifest.get("plan")
    wrong = [name for name, kind in PLAN_TYPES.items()
             if not isinstance(plan, dict) or not isinstance(plan.get(name), kind) or isinstance(plan.get(name), bool)]
    if wrong:
        raise UsageError(f"--resume: the plan in {run_dir}/manifest.json is damaged ({', '.join(wrong)}); "
                         f"start a new run")
    names = plan["engines"] + plan["workloads"]
    scalars = all(isinstance(v, list) and all(isinstance(x, (int, float, str)) and not isinstance(x, bool) for x in v)
                  for v in plan["narrow"].values())
    if (plan["profile"] not in PROFILES or not scalars
            or not all(isinstance(n, str) for n in names) or (plan["trials"] or 1) < 1 or (plan["timeout_s"] or 1) <= 0):
        raise UsageError(f"--resume: the plan in {run_dir}/manifest.json is damaged (profile, engines, workloads, "
                         f"narrow, trials or timeout); start a new run")
    return manifest


def existing_run(path: str, what: str) -> Path:
    from harness import results

    run_dir = Path(path)
    if not results.is_run_dir(run_dir):
        raise UsageError(f"{what} {path}: not a burtbench run folder (no manifest.json)")
    return run_dir


def planned_workloads(spec: dict) -> list:
    from workloads import load

    try:
        return [load(w) for w in spec["workloads"]]
    except KeyError as exc:
        raise UsageError(f"the run names a workload this installation does not know: {exc}") from None


def make_plan(spec: dict) -> list:
    from engines import all_engines
    from harness.plan import make_plan as plan_of

    registry = all_engines()
    missing = [e for e in spec["engines"] if e not in registry]
    if missing:
        raise UsageError(f"the run names engines this installation does not know: {', '.join(missing)}")
    workloads = planned_workloads(spec)
    narrow = {k: tuple(v) for k, v in spec["narrow"].items()}
    for name, values in narrow.items():
        grid = {v for w in workloads for v in w.grid.get(name, ())}
        if not set(values) <= grid:
            raise UsageError(f"the run's plan narrows '{name}' to values outside its grid: "
                             f"{', '.join(map(str, sorted(set(values) - grid, key=str)))}")
    return plan_of([registry[e] for e in spec["engines"]], workloads, spec["profile"], narrow, spec["trials"],
                   spec["timeout_s"])


def ready_engines(plan: list, console: Console) -> tuple[list, dict]:
    """The plan without engines that cannot run here, and why each cannot. An engine built on first
    use (the LibTorch driver, the authors' programs) is built here, before the first trial, for the
    trials planned for it."""
    unavailable = {}
    for pt in plan:
        if pt.engine.id not in unavailable:
            prepare = getattr(pt.engine, "prepare", None)
            mine = [p for p in plan if p.engine.id == pt.engine.id]
            unavailable[pt.engine.id] = pt.engine.unavailable_reason() or (prepare(mine) if prepare else None)
    unavailable = {k: v for k, v in unavailable.items() if v}
    for eid, reason in unavailable.items():
        console.print(f"[yellow]skipping[/] {eid}: unavailable: {reason}", highlight=False)
    plan = [pt for pt in plan if pt.engine.id not in unavailable]
    if not plan:
        raise UsageError("nothing to run: every selected engine is unavailable (burtbench list says why)")
    return plan, unavailable


def new_run_dir(out: Path, profile: str) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir = out / f"{stamp}-{profile}"
    suffix = 1
    while run_dir.exists():
        suffix += 1
        run_dir = out / f"{stamp}-{profile}-{suffix}"
    return run_dir


def worker_env(python: str) -> dict:
    """Another interpreter finds the harness through PYTHONPATH (it has only its own packages)."""
    if python == sys.executable:
        return {}
    root = str(Path(__file__).resolve().parent.parent)
    return {"PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}


def run(req: RunRequest, console: Console) -> int:
    plan, unavailable = ready_engines(make_plan(req.spec), console)
    if req.run_dir is not None:
        with RunLock(req.run_dir):
            return _run_locked(req, console, req.run_dir, plan, unavailable)
    run_dir = new_run_dir(req.out, req.spec["profile"])
    try:
        run_dir.mkdir(parents=True)
    except OSError as exc:
        raise ResultsUnwritable(f"cannot create {run_dir}: {exc.strerror or exc}") from None
    with RunLock(run_dir):
        return _run_locked(req, console, run_dir, plan, unavailable)


def _run_locked(req: RunRequest, console: Console, run_dir: Path, plan: list, unavailable: dict) -> int:
    from harness import manifest as manifest_mod
    from harness import orchestrator, results, summary
    from harness.measure import tsc
    from harness.spawn import RunOptions

    if req.run_dir is not None:
        manifest = resumable_manifest(run_dir)
        manifest["status"] = "running"
        manifest.setdefault("resumed_at", []).append(manifest_mod.now())
    else:
        manifest = manifest_mod.build(run_dir.name, req.spec, req.cpu, req.python, sys.argv)
    manifest["unavailable"] = {**manifest.get("unavailable", {}), **unavailable}
    # What engines built for this run (the authors' programs and their variants' changes).
    engines = {pt.engine.id: pt.engine for pt in plan}
    builds = {eid: e.manifest_record() for eid, e in engines.items() if hasattr(e, "manifest_record")}
    if builds:
        manifest["engine_builds"] = {**manifest.get("engine_builds", {}), **builds}
    manifest["options"] = {"mem_limit_bytes": req.mem_limit_bytes, "python": req.python,
                           "sample_private": req.sample_private}
    manifest_mod.save(run_dir, manifest)
    noisy = [f["topic"] for f in manifest.get("doctor", []) if f.get("level") == "warn"]
    if noisy:
        console.print(f"[yellow]warning[/]: machine not quiet ({', '.join(noisy)}): see burtbench doctor",
                      highlight=False)
    options = RunOptions(cpu=req.cpu, python=req.python, mem_limit_bytes=req.mem_limit_bytes,
                         sample_private=req.sample_private, timing=req.spec.get("timing", "lean"),
                         env=worker_env(req.python))
    console.print(f"burtbench: {len(plan)} trials ({req.spec['profile']} profile, {options.timing} timing) "
                  f"pinned to core {req.cpu} → {run_dir}",
                  highlight=False)
    meter = energy_meter(req, plan, run_dir, manifest, console)
    spec = req.spec
    adaptive = spec.get("adaptive") and orchestrator.Adaptive(spec["adaptive"]["max_trials"], spec["noise_threshold"])
    code = orchestrator.execute(plan, run_dir, manifest, options, tsc.tsc_rate_hz(), console, adaptive or None,
                                meter)
    console.print(summary.summary_table(results.read_trials(run_dir), spec.get("noise_threshold", 0.05)))
    console.print(f"results: {run_dir}  (burtbench report {run_dir})", highlight=False)
    if req.report:
        from harness.report.epilogue import after_run

        after_run(run_dir, console)
    return code


def energy_meter(req: RunRequest, plan: list, run_dir: Path, manifest: dict, console: Console):
    """The suite's energy meter, its idle power measured now, where a planned workload measures energy."""
    if not any(pt.workload.measures_energy for pt in plan):
        return None
    from harness import manifest as manifest_mod
    from harness.measure import energy

    meter, manifest["energy"] = energy.suite_meter(req.energy, req.idle_seconds)
    manifest_mod.save(run_dir, manifest)
    found = manifest["energy"]
    if found["energy_source"]:
        console.print(f"energy: {found['energy_source']}, idle power {found.get('idle_w')} W "
                      f"over {req.idle_seconds:g} s", highlight=False)
    else:
        console.print(f"energy: not measured ({found['energy_source_reason']})", highlight=False)
    return meter
