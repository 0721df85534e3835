"""A run from the user's request to its results: the plan, the engines made ready, the run folder
and its lock, the manifest, the energy meter, the trials, the summary.

cli.py parses the command line and reports errors; this module does the work of `burtbench run`.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import secrets
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from rich.console import Console

from engines import all_engines, burn
from engines.base import split_id
from harness.analysis import summary
from harness.envs import specs as envs
from harness.envs.install import make_all
from harness.envs.revisions import check_resumed
from harness.errors import UsageError
from harness.machine.valgrind import missing_valgrind
from harness.measure import affinity, energy, tsc
from harness.planning import preview, selection, shard
from harness.planning.claim_points import NO_CLAIM_JUDGED, UNREPEATED_PROFILES, judges_any, with_claim_points
from harness.planning.estimate import Estimator, covering_run, engine_builds
from harness.planning.plan import make_plan as plan_of
from harness.planning.plan import narrow_for
from harness.planning.preview import NOTHING_TO_RUN
from harness.planning.resume import resumable_manifest, with_added
from harness.running import orchestrator
from harness.running import upstream as upstream_source
from harness.running.orchestrator import pending
from harness.running.probe import probe_floor
from harness.running.spawn import RunOptions
from harness.store import manifest as manifest_mod
from harness.store import results
from harness.store.lock import RunLock
from harness.store.results import ResultsUnwritable
from harness.store.run_plan import DEFAULT_MAX_TRIALS, DEFAULT_PROFILE, DEFAULT_TIMING, RunPlan
from harness.store.runs import check_out_dir, existing_run
from harness.text import clean, clean_data
from harness.units import count
from workloads import all_workloads, load
from workloads.base import PROFILES

# What a resumed run takes from its manifest: giving any of these again is an error (--claims-budget: a
# default, so not here).
PLAN_OPTIONS = ("workload", "engine", "param", "profile", "trials", "timeout", "data_dir", "upstream", "env", "env_dir",
                "pip_arg", "shard", "timing", "seed", "aa", "no_aa", "instructions")


@dataclass(frozen=True)
class RunRequest:
    """Everything `burtbench run` was asked, checked."""
    plan: RunPlan
    run_dir: Path | None  # the folder of a resumed run; None: a new folder under `out`
    out: Path
    cpu: int
    python: str
    mem_limit_bytes: int | None
    sample_private: bool
    energy: str
    idle_seconds: float
    cpus: tuple[int, ...] = ()  # --cpus: the worker cores, one trial on each at once; () = `cpu` alone
    dry_run: bool = False  # print the plan and its estimated time, run nothing
    estimate_from: Path | None = None  # the previous run the time estimates come from; None: rough figures


def new_plan(args) -> RunPlan:
    """The plan of a new run from the parsed options, every value checked."""
    profile = args.profile or DEFAULT_PROFILE
    if profile not in PROFILES:
        raise UsageError(f"--profile: unknown profile '{profile}'{selection.did_you_mean(profile, PROFILES)} "
                         f"(choose {', '.join(PROFILES)})")
    workloads = selection.resolve_workloads(args.workload, all_workloads())
    chosen = selection.resolve_engines(args.engine, all_engines())
    for line in selection.not_run(chosen, workloads, args.engine.strip() != "all", args.workload.strip() != "all"):
        print(f"burtbench: note: {line}", file=sys.stderr)
    engines = selection.with_floor(chosen, workloads, all_engines())
    if getattr(args, "no_upstream", False):  # the authors' programs left out, their source not looked for
        if getattr(args, "upstream", None):
            raise UsageError("--upstream and --no-upstream: give one")
        engines = [e for e in engines if not upstream_source.is_authors(e.id)]
    environments = envs.plan_options(args)
    if environments["envs"]:
        engines = envs.variants(engines, [envs.parse_spec(text) for text in environments["envs"]],
                                args.engine.strip() != "all")
    aa = envs.aa_planned(args, engines)
    if aa:
        engines = envs.aa_copies(engines)
    narrow = selection.parse_params(args.param, workloads)
    usable = [w for w in workloads if any(e.runs(w) for e in engines)]
    if not usable:
        raise UsageError("no selected engine implements any selected workload (burtbench list shows who does what)")
    data_dir = str(Path(args.data_dir).resolve()) if args.data_dir else None
    selection.check_data_dir(data_dir, usable)
    upstream = str(Path(args.upstream).expanduser().resolve()) if getattr(args, "upstream", None) else None
    check_upstream(upstream)
    if getattr(args, "cargo_vendor", None):
        vendor = Path(args.cargo_vendor).expanduser().resolve()
        if not vendor.is_dir():
            raise UsageError(f"--cargo-vendor {args.cargo_vendor}: no such folder")
        os.environ[burn.VENDOR_ENV] = str(vendor)  # where engines/burn.py's build looks
    if args.max_trials is not None and not args.adaptive:
        raise UsageError("--max-trials only applies with --adaptive (add it, or drop --max-trials)")
    max_trials = args.max_trials or DEFAULT_MAX_TRIALS
    if args.adaptive and args.trials and max_trials < args.trials:
        raise UsageError(f"--max-trials {max_trials} is below --trials {args.trials}")

    per_point = max_trials if args.adaptive else None
    selection.check_plan_size(sum((per_point or args.trials or w.trials[profile])
                                  * len(w.points(narrow_for(w, narrow), profile)) * sum(e.runs(w) for e in engines)
                                  for w in usable))
    plan = RunPlan(profile=profile, engines=tuple(e.id for e in engines), workloads=tuple(w.name for w in usable),
                   narrow=narrow, trials=args.trials, timeout_s=args.timeout,
                   explicit_engines=args.engine.strip() != "all", noise_threshold=args.noise_threshold / 100,
                   adaptive_max_trials=per_point, data_dir=data_dir,
                   upstream=upstream, timing=args.timing or DEFAULT_TIMING, envs=tuple(environments["envs"]),
                   env_dir=environments["env_dir"], pip_args=tuple(environments["pip_args"]),
                   claims_budget_min=args.claims_budget, **rounds_and_counts(args, aa))
    if args.shard:
        if args.seed is None:  # every machine must draw the same rounds' order
            plan = dataclasses.replace(plan, round_seed=plan_seed(plan))
        plan = dataclasses.replace(plan, shard=shard_of(plan, args))
    return plan


def rounds_and_counts(args, aa: bool) -> dict:
    """The plan's fields of paired rounds and instruction counts: the seed of the rounds' order
    (--seed, else drawn now), whether A/A copies run (envs.aa_planned), whether instructions are counted."""
    if args.instructions and missing_valgrind():
        raise UsageError(f"--instructions: {missing_valgrind()}")
    seed = secrets.randbelow(2**32) if args.seed is None else args.seed
    return {"round_seed": seed, "aa": aa, "instructions": bool(args.instructions)}


def plan_seed(plan: RunPlan) -> int:
    """A seed every machine computes alike from the plan itself (the shards of one plan; else --seed)."""
    record = {k: v for k, v in plan.to_record().items() if k not in ("round_seed", "shard")}
    return int(hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()[:8], 16)


def shard_of(plan: RunPlan, args) -> dict:
    """--shard K/N: this shard's points. The split is balanced by estimates every machine computes
    alike: --estimate-from's run (give every machine the same one), else the built-in figures."""
    source = existing_run(args.estimate_from, "--estimate-from") if args.estimate_from else None
    return shard.spec(make_plan(plan), args.shard, source)


def request(args) -> RunRequest:
    python = selection.check_python(args.python)
    selection.check_mem_limit(args.mem_limit)
    if args.resume:
        run_dir = existing_run(args.resume, "--resume")
        given = [o for o in PLAN_OPTIONS if getattr(args, o) not in ("all", [], None)]
        if given:
            raise UsageError("--resume runs the folder's own plan; drop "
                             + ", ".join(f"--{o.replace('_', '-')}" for o in given))
        manifest, plan = resumable_manifest(run_dir)
        selection.check_data_dir(plan.data_dir, planned_workloads(plan))
        check_upstream(plan.upstream)
        cpu = selection.check_cpu(args.cpu if args.cpu is not None else manifest.get("cpu"))
        cpus = ()  # the run's own cores, unless --cpu or --cpus says otherwise
        if args.cpus or (args.cpu is None and manifest.get("cpus")):
            cpus = selection.check_cpus(args.cpus or ",".join(map(str, manifest["cpus"])))
    else:
        run_dir, plan = None, new_plan(args)
        cpu = selection.check_cpu(args.cpu)
        cpus = selection.check_cpus(args.cpus) if args.cpus else ()
        if not args.dry_run:
            check_out_dir(Path(args.out))
    if args.cpus and args.cpu is not None:
        raise UsageError("--cpu and --cpus: give one (--cpus 3 pins every trial to core 3 too)")
    estimate_from = existing_run(args.estimate_from, "--estimate-from") if args.estimate_from else None
    if estimate_from is None:

        estimate_from = covering_run(Path(args.out), plan)
    return RunRequest(plan, run_dir, Path(args.out), cpus[0] if cpus else cpu, python, args.mem_limit,
                      args.sample_private, args.energy, args.idle_seconds,
                      cpus=tuple(cpus), dry_run=args.dry_run, estimate_from=estimate_from)


def check_upstream(path: str | None) -> None:
    """--upstream: the authors' BurTorch source is there (the plan keeps it; make_plan gives it to their engines)."""
    if path is not None and not Path(path).exists():
        raise UsageError(f"--upstream {path}: no such file or folder (a checkout or a `git archive` tarball;"
                         f" burtbench fetch-upstream makes one)")


def planned_workloads(plan: RunPlan) -> list:
    try:
        return [load(w) for w in plan.workloads]
    except KeyError as exc:
        raise UsageError(f"the run names a workload this installation does not know: {exc}") from None


def make_plan(asked: RunPlan, environments: dict | None = None) -> list:
    registry = all_engines()
    # An engine run in an environment: the registry's engine, bound to the environment's interpreter.
    for eid in asked.engines:
        base, env = split_id(eid)
        if env and base in registry:
            registry[eid] = registry[base].replace(env=env)
    registry = envs.bind(registry, environments or {})
    if asked.upstream:  # the authors' engines build from the run's --upstream (at a commit: that commit's)
        registry = {eid: e.replace(source=asked.upstream) if upstream_source.is_authors(eid) and not e.env else e
                    for eid, e in registry.items()}
    missing = [e for e in asked.engines if e not in registry]
    if missing:
        raise UsageError(f"the run names engines this installation does not know: {', '.join(missing)}")
    workloads = planned_workloads(asked)
    narrow = {k: tuple(v) for k, v in asked.narrow.items()}
    for name, values in narrow.items():
        grid = {v for w in workloads for v in w.grid.get(name, ())}
        if not set(values) <= grid:
            raise UsageError(f"the run's plan narrows '{name}' to values outside its grid: "
                             f"{', '.join(map(str, sorted(set(values) - grid, key=str)))}")
    engines = [registry[e] for e in asked.engines]
    plan = plan_of(engines, workloads, asked.profile, narrow, asked.trials, asked.timeout_s, asked.round_seed)
    # --param: the user chose the points (the claims' repetitions still reach those a claim reads).
    plan = with_claim_points(plan, engines, workloads, asked.profile, asked.trials, asked.timeout_s,
                             add_points=not narrow)
    if asked.shard:

        plan = shard.only(plan, asked.shard["points"])
    return plan


def planned_keys(plan: RunPlan) -> list[tuple]:
    """Every trial a run of this plan records: what a merge of its shards must hold."""
    return [pt.key() for pt in make_plan(plan)]


def ready_engines(plan: list, console: Console, builds: list) -> tuple[list, dict]:
    """The plan without engines that cannot run here, and why each cannot. An engine built on first
    use (the LibTorch driver, the authors' programs) is built here, before the first trial, for the
    trials planned for it; `builds` gets what each build took (the next dry run's ETA counts them)."""
    unavailable = {}
    for pt in plan:
        if pt.engine.id not in unavailable:
            prepare = getattr(pt.engine, "prepare", None)
            mine = [p for p in plan if p.engine.id == pt.engine.id]
            needed, started = engine_builds(mine), time.monotonic()
            unavailable[pt.engine.id] = pt.engine.unavailable_reason() or (prepare(mine) if prepare else None)
            builds += [made.record(time.monotonic() - started) for made in needed if not unavailable[pt.engine.id]]
    unavailable = {k: v for k, v in unavailable.items() if v}
    for eid, reason in unavailable.items():
        print(f"burtbench: skipping {clean(eid)}: unavailable: {clean(reason)}", file=sys.stderr)
    plan = [pt for pt in plan if pt.engine.id not in unavailable]
    if not plan:

        raise UsageError(NOTHING_TO_RUN)
    return plan, unavailable


def new_run_dir(out: Path, profile: str) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir = out / f"{stamp}-{profile}"
    suffix = 1
    while run_dir.exists():
        suffix += 1
        run_dir = out / f"{stamp}-{profile}-{suffix}"
    return run_dir


@dataclass(frozen=True)
class Outcome:
    code: int  # the process's exit code
    run_dir: Path | None  # the run's folder; None: a dry run


def run(req: RunRequest, console: Console, extend=None) -> Outcome:
    """`extend(plan, run_dir, budget_s)`, where given, makes the follow-up that adds rounds for undecided
    claims once the plan is done (it judges the claims: the report's stage, which the command passes in)."""
    if req.dry_run:

        plan = make_plan(req.plan)
        if req.run_dir is None:
            return Outcome(preview.show(plan, req, estimator(req), console), None)

        plan = with_added(plan, req.run_dir)
        left = pending(plan, req.run_dir)
        console.print(f"resuming {req.run_dir}: {len(plan) - len(left)} of {len(plan)} planned trials are done; "
                      f"the rest:", highlight=False)
        return Outcome(preview.show(left, req, estimator(req), console), None)
    # The environments stay locked (no prune, no remake) until the run's last trial.
    with ExitStack() as held:
        return _run(req, console, make_all(req.plan, req.python, planned_workloads(req.plan), console, held), extend)


def _run(req: RunRequest, console: Console, environments: dict, extend) -> Outcome:
    if req.run_dir is not None:
        check_resumed(resumable_manifest(req.run_dir)[0], environments)
    plan, no_source = upstream_source.provide(make_plan(req.plan, environments), console)
    builds: list = []
    plan, unavailable = ready_engines(plan, console, builds)
    unavailable = {**no_source, **unavailable}
    if req.run_dir is not None:
        with RunLock(req.run_dir):
            return Outcome(_run_locked(req, console, req.run_dir, plan, unavailable, environments, extend, builds),
                           req.run_dir)
    run_dir = new_run_dir(req.out, req.plan.profile)
    try:
        run_dir.mkdir(parents=True)
    except OSError as exc:
        raise ResultsUnwritable(f"cannot create {run_dir}: {exc.strerror or exc}") from None
    with RunLock(run_dir):
        return Outcome(_run_locked(req, console, run_dir, plan, unavailable, environments, extend, builds), run_dir)


def _run_locked(req: RunRequest, console: Console, run_dir: Path, plan: list, unavailable: dict,
                environments: dict, extend=None, build_times: list = ()) -> int:

    if req.run_dir is not None:
        manifest, _ = resumable_manifest(run_dir)
        plan = with_added(plan, run_dir)
        manifest["status"] = "running"
        manifest.setdefault("resumed_at", []).append(manifest_mod.now())
    else:
        manifest = manifest_mod.build(run_dir.name, req.plan, req.cpu, req.python, sys.argv)
    # What is unavailable now: a resumed run checked every engine again, and one whose cause is gone
    # (an environment made again, a source found) runs its missing trials.
    manifest["unavailable"] = dict(unavailable)
    if environments:
        manifest["environments"] = {**manifest.get("environments", {}),
                                    **{text: env.manifest_record() for text, env in environments.items()}}
    # What engines built for this run (the authors' programs and their variants' changes).
    engines = {pt.engine.id: pt.engine for pt in plan}
    manifest["builds"] = [*(manifest.get("builds") if isinstance(manifest.get("builds"), list) else []), *build_times]
    builds = {eid: e.manifest_record() for eid, e in engines.items() if hasattr(e, "manifest_record")}
    if builds:
        manifest["engine_builds"] = {**manifest.get("engine_builds", {}), **builds}
    manifest["options"] = {"mem_limit_bytes": req.mem_limit_bytes, "python": req.python,
                           "sample_private": req.sample_private}
    cores = list(req.cpus or [req.cpu])
    manifest["cpus"] = cores
    if len(cores) > 1:
        manifest["runner_cpus"] = orchestrator.runner_cores(cores) or "shared with the workers (no core to spare)"
    manifest_mod.save(run_dir, manifest)
    noisy = [f["topic"] for f in manifest.get("doctor", []) if f.get("level") == "warn"]
    if noisy:
        console.print(f"[yellow]warning[/]: machine not quiet ({', '.join(noisy)}): see burtbench doctor",
                      highlight=False)
    options = RunOptions(cpu=req.cpu, python=req.python, mem_limit_bytes=req.mem_limit_bytes,
                         sample_private=req.sample_private, timing=req.plan.timing, instructions=req.plan.instructions,
                         timeout_s=req.plan.timeout_s)
    where = f"pinned to core {req.cpu}" if len(cores) == 1 else \
        f"{len(cores)} at a time, each pinned to one of cores {affinity.format_cpus(cores)}"
    trials = count(len(plan), "trial") if req.run_dir is None else \
        f"resuming: {len(orchestrator.pending(plan, run_dir))} of {count(len(plan), 'trial')} missing"
    console.print(f"burtbench: {trials} ({req.plan.profile} profile, {options.timing} timing) {where} → {run_dir}",
                  highlight=False)
    meter = energy_meter(req, plan, run_dir, manifest, console)
    adaptive = req.plan.adaptive_max_trials and orchestrator.Adaptive(req.plan.adaptive_max_trials, req.plan.noise_threshold)
    budget_s = req.plan.claims_budget_min * 60
    # A smoke run's claims stay undecided by design (planning/claim_points.py): no rounds to decide them.
    judged = judges_any([pt.engine for pt in plan])
    if not judged:
        console.print(f"burtbench: {NO_CLAIM_JUDGED}", highlight=False)
    decides = extend is not None and budget_s > 0 and req.plan.profile not in UNREPEATED_PROFILES and judged
    follow_up = extend(plan, run_dir, budget_s) if decides else None
    job = orchestrator.Job(run_dir, manifest, options, tsc.tsc_rate_hz(), console, cores, adaptive or None, meter,
                           estimator(req), req.plan.data_dir, follow_up)
    code = orchestrator.execute(plan, job)
    console.print(summary.summary_table(clean_data(results.read_trials(run_dir)), req.plan.noise_threshold))
    console.print(f"results: {run_dir}  (burtbench report {run_dir})", highlight=False)
    return code


def estimator(req: RunRequest):
    """The plan's time estimates, scaled to this machine's speed now by re-running a floor trial."""

    return Estimator(req.estimate_from, probe=functools.partial(probe_floor, cpu=req.cpu, mem_limit_bytes=req.mem_limit_bytes),
                     instructions=req.plan.instructions)


def energy_meter(req: RunRequest, plan: list, run_dir: Path, manifest: dict, console: Console):
    """The suite's energy meter, its idle power measured now, where a planned workload measures energy."""
    if not any(pt.workload.measures_energy for pt in plan):
        return None

    meter, manifest["energy"] = energy.suite_meter(req.energy, req.idle_seconds)
    manifest_mod.save(run_dir, manifest)
    found = manifest["energy"]
    if found["energy_source"]:
        console.print(f"energy: {found['energy_source']}, idle power {found.get('idle_w')} W "
                      f"over {req.idle_seconds:g} s", highlight=False)
    else:
        console.print(f"energy: not measured ({found['energy_source_reason']})", highlight=False)
    return meter
