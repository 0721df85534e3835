"""A run from the user's request to its results: the plan, the engines made ready, the run folder
and its lock, the manifest, the energy meter, the trials, the summary.

The request comes checked (harness/running/ask.py, checked by harness/commands/request.py); this module
does the work of `burtbench run`.
"""
from __future__ import annotations

import functools
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from rich.console import Console

from engines import all_engines
from engines.base import split_id
from harness.analysis import noise, summary
from harness.analysis.effect import MIN_TRIALS
from harness.envs import specs as envs
from harness.envs.install import make_all
from harness.envs.revisions import check_resumed
from harness.errors import UsageError
from harness.measure import affinity, energy, tsc
from harness.planning import preview, shard
from harness.planning.claim_points import NO_CLAIM_JUDGED, UNREPEATED_PROFILES, judges_any, with_claim_points
from harness.planning.estimate import Estimator, engine_builds
from harness.planning.plan import make_plan as plan_of
from harness.planning.preview import NOTHING_TO_RUN
from harness.planning.resume import resumable_manifest, with_added
from harness.running import orchestrator
from harness.running import upstream as upstream_source
from harness.running.ask import RunRequest
from harness.running.orchestrator import pending
from harness.running.probe import probe_floor
from harness.running.spawn import RunOptions
from harness.store import manifest as manifest_mod
from harness.store import results
from harness.store.lock import RunLock
from harness.store.results import ResultsUnwritable
from harness.store.run_plan import RunPlan
from harness.text import clean, clean_data
from harness.units import count
from workloads import load


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
    if not asked.trials and asked.profile not in UNREPEATED_PROFILES and any(split_id(e)[1] for e in asked.engines):
        plan = with_interval_trials(engines, workloads, asked, narrow)
    # --param: the user chose the points (the claims' repetitions still reach those a claim reads).
    plan = with_claim_points(plan, engines, workloads, asked.profile, asked.trials, asked.timeout_s,
                             add_points=not narrow)
    if asked.shard:

        plan = shard.only(plan, asked.shard["points"])
    return plan


def with_interval_trials(engines: list, workloads: list, asked: RunPlan, narrow: dict) -> list:
    """A versions run (--env, --aa) answers at every point it measures, and an answer needs an interval:
    each workload gets at least MIN_TRIALS rounds, round by round as make_plan orders them."""
    plan = []
    for workload in workloads:
        profile = workload.trials[asked.profile]
        plan += [replace(pt, why=preview.INTERVAL) if pt.trial >= profile else pt
                 for pt in plan_of(engines, [workload], asked.profile, narrow, max(profile, MIN_TRIALS),
                                   asked.timeout_s, asked.round_seed)]
    return sorted(plan, key=lambda pt: pt.trial)  # stable: each round's workloads in their order


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
    if req.run_dir is not None and complete(req.run_dir):
        console.print(f"burtbench: nothing to resume: {req.run_dir} is complete, every planned trial recorded "
                      f"(burtbench report {req.run_dir} renders its report again)", highlight=False)
        return Outcome(0, None)
    # The environments stay locked (no prune, no remake) until the run's last trial.
    with ExitStack() as held:
        return _run(req, console, make_all(req.plan, req.python, planned_workloads(req.plan), console, held), extend)


def complete(run_dir: Path) -> bool:
    """A run that finished with every planned trial (and every added round) recorded: a resume has nothing to do."""
    manifest, plan = resumable_manifest(run_dir)
    return manifest.get("status") == "complete" and not pending(with_added(make_plan(plan), run_dir), run_dir)


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
        # What this machine adds beyond the run's rounds, as it stood when the run began: every claim's
        # interval carries it, the same on every re-render (harness/analysis/noise.py).
        manifest["noise"] = noise.of_machine(run_dir.parent, manifest.get("machine") or {}, req.cpu).record()
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
