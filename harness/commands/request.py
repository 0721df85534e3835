"""`burtbench run`'s request: built from its parsed arguments in one place (ask_of), checked whole in one
place (check) before any trial, build, install or fetch, and handed down as a RunRequest
(harness/running/ask.py): session.py runs it, cluster/submit.py submits it, calibrate.py makes its
own RunAsks and has them checked here. Nothing below the command layer reads the parsed arguments.
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import secrets
import sys
from pathlib import Path

from engines import all_engines, burn
from harness.cluster import slurm
from harness.commands.options import ASKED, shard_argv
from harness.envs import specs as envs
from harness.errors import UsageError
from harness.machine.valgrind import missing_valgrind
from harness.planning import selection, shard
from harness.planning.estimate import covering_run
from harness.planning.plan import narrow_for
from harness.planning.resume import resumable_manifest
from harness.running.ask import RunAsk, RunRequest, SlurmAsk
from harness.running.session import make_plan, planned_workloads
from harness.running.upstream import is_authors
from harness.store.run_plan import DEFAULT_MAX_TRIALS, DEFAULT_PROFILE, DEFAULT_TIMING, RunPlan
from harness.store.runs import check_out_dir, existing_run
from workloads import all_workloads
from workloads.base import PROFILES

# What a resumed run takes from its manifest: giving any of these again is an error.
PLAN_OPTIONS = ("workload", "engine", "param", "profile", "trials", "adaptive", "max_trials", "noise_threshold", "change",
                "claims_budget", "timeout", "data_dir", "upstream", "no_upstream", "env", "env_dir", "pip_arg", "shard",
                "timing", "seed", "aa", "no_aa", "instructions")
# Options of a one-core run that a task decides for itself, or that a SLURM run does otherwise.
NOT_WITH_SLURM = ("shard", "resume", "cpu", "cpus")


def ask_of(args: argparse.Namespace) -> RunAsk:
    """`run`'s parsed arguments as its request: every option, named as its field is."""
    given = {f.name: getattr(args, f.name) for f in dataclasses.fields(RunAsk) if f.name not in ("report_dir", "slurm")}
    cluster = SlurmAsk(args.slurm, args.wait, args.partition, args.account, args.constraint, tuple(args.sbatch_arg),
                       tuple(shard_argv(args.argv)) if args.slurm is not None else ())
    return RunAsk(**{name: tuple(v) if isinstance(v, list) else v for name, v in given.items()},
                  report_dir=None if args.no_report else args.report_dir, slurm=cluster)


def check(ask: RunAsk) -> RunRequest:
    """Every check of the request, the first problem one UsageError line: the options' combinations, each
    value, the files and folders it names, its engines, workloads, points and environments (revisions
    resolved to their commits), the plan's size, the folder to resume. The checked request."""
    combinations(ask)
    python = selection.check_python(ask.python)
    selection.check_mem_limit(ask.mem_limit)
    explicit = existing_run(ask.estimate_from, "--estimate-from") if ask.estimate_from else None
    vendor = Path(ask.cargo_vendor).expanduser().resolve() if ask.cargo_vendor else None
    if vendor is not None and not vendor.is_dir():
        raise UsageError(f"--cargo-vendor {ask.cargo_vendor}: no such folder")
    cluster = ask.slurm if ask.slurm.tasks is not None else None
    if cluster and not ask.dry_run:  # a dry run shows the shards and asks the cluster nothing
        slurm.require_sbatch()
        if cluster.partition:
            slurm.check_partition(cluster.partition)
    notes, cores = [], ask.cpus
    if ask.resume:
        run_dir = existing_run(ask.resume, "--resume")
        manifest, plan = resumable_manifest(run_dir)
        selection.check_data_dir(plan.data_dir, planned_workloads(plan))
        check_upstream(plan.upstream)
        cpu = selection.check_cpu(ask.cpu if ask.cpu is not None else manifest.get("cpu"))
        if not ask.cpus and ask.cpu is None and manifest.get("cpus"):  # the run's own cores
            cores = ",".join(map(str, manifest["cpus"]))
    else:
        run_dir, (plan, notes) = None, new_plan(ask, explicit)
        cpu = selection.check_cpu(ask.cpu)
        if not ask.dry_run:
            check_out_dir(Path(ask.out))
    cpus = selection.check_cpus(cores) if cores else ()
    if cluster and cluster.tasks:
        points = len({pt.point_key() for pt in make_plan(plan)})
        if cluster.tasks > points:
            raise UsageError(f"--slurm {cluster.tasks}: the plan has {points} points, and a point is never split; "
                             f"ask for {points} tasks at most")
    report_dir = Path(ask.report_dir) if ask.report_dir is not None and not ask.dry_run else None
    if report_dir is not None:  # found before the first trial, not after the last
        check_out_dir(report_dir, "reports folder", "--report-dir")
    # A SLURM run's shards split alike on every machine: from the run named, never from one found here.
    estimate_from = explicit or (None if cluster else covering_run(Path(ask.out), plan))
    for line in notes:
        print(f"burtbench: note: {line}", file=sys.stderr)
    if vendor is not None:
        os.environ[burn.VENDOR_ENV] = str(vendor)  # where engines/burn.py's build looks
    return RunRequest(plan, run_dir, Path(ask.out), cpus[0] if cpus else cpu, python, ask.mem_limit,
                      ask.sample_private, ask.energy, ask.idle_seconds, cpus=cpus, dry_run=ask.dry_run,
                      estimate_from=estimate_from, report_dir=report_dir, slurm=cluster)


def combinations(ask: RunAsk) -> None:
    """Options that do not go together, or one that needs another."""
    def given(names, within=ask, defaults=ASKED) -> list[str]:
        return [f"--{name.replace('_', '-')}" for name in names if getattr(within, name) != getattr(defaults, name)]

    if ask.slurm.tasks is None and (alone := given(("wait", "partition", "account", "constraint", "sbatch_arg"),
                                                   ask.slurm, ASKED.slurm)):
        raise UsageError(f"{alone[0]} is for a SLURM run: add --slurm")
    if ask.slurm.tasks is not None and (apart := given(NOT_WITH_SLURM)):
        raise UsageError(f"--slurm and {', '.join(apart)}: a SLURM run splits the plan, picks each task's core "
                         f"and resumes failed shards itself; drop {', '.join(apart)}")
    if ask.resume and (again := given(PLAN_OPTIONS)):
        raise UsageError(f"--resume runs the folder's own plan; drop {', '.join(again)}")
    if ask.resume and given(("out",)):
        raise UsageError(f"--resume writes into {ask.resume} itself; drop --out")
    if ask.cpus and ask.cpu is not None:
        raise UsageError("--cpu and --cpus: give one (--cpus 3 pins every trial to core 3 too)")
    if ask.upstream and ask.no_upstream:
        raise UsageError("--upstream and --no-upstream: give one")
    if not ask.env and (alone := given(("env_dir", "pip_arg"))):
        raise UsageError(f"{'/'.join(alone)} only apply with --env SPEC")
    if ask.max_trials is not None and not ask.adaptive:
        raise UsageError("--max-trials only applies with --adaptive (add it, or drop --max-trials)")
    if ask.adaptive and ask.trials and (ask.max_trials or DEFAULT_MAX_TRIALS) < ask.trials:
        raise UsageError(f"--max-trials {ask.max_trials or DEFAULT_MAX_TRIALS} is below --trials {ask.trials}")


def new_plan(ask: RunAsk, estimate_from: Path | None) -> tuple[RunPlan, list[str]]:
    """The plan of a new run, every name in it checked, and a note for each engine left out of a workload."""
    profile = ask.profile or DEFAULT_PROFILE
    if profile not in PROFILES:
        raise UsageError(f"--profile: unknown profile '{profile}'{selection.did_you_mean(profile, PROFILES)} "
                         f"(choose {', '.join(PROFILES)})")
    named = ask.engine.strip() != "all"
    workloads = selection.resolve_workloads(ask.workload, all_workloads())
    chosen = selection.resolve_engines(ask.engine, all_engines())
    notes = selection.not_run(chosen, workloads, named, ask.workload.strip() != "all")
    engines = selection.with_floor(chosen, workloads, all_engines())
    if ask.no_upstream:  # the authors' programs left out, their source not looked for
        engines = [e for e in engines if not is_authors(e.id)]
    upstream = str(Path(ask.upstream).expanduser().resolve()) if ask.upstream else None
    check_upstream(upstream)
    environments = envs.plan_options(ask.env, ask.env_dir, ask.pip_arg, ask.aa, upstream)
    if environments["envs"]:
        engines = envs.variants(engines, [envs.parse_spec(text) for text in environments["envs"]], named)
    aa = envs.aa_planned(ask.aa, ask.no_aa, engines)
    if aa:
        engines = envs.aa_copies(engines)
    narrow = selection.parse_params(list(ask.param), workloads)
    usable = [w for w in workloads if any(e.runs(w) for e in engines)]
    if not usable:
        raise UsageError("no selected engine implements any selected workload (burtbench list shows who does what)")
    data_dir = str(Path(ask.data_dir).resolve()) if ask.data_dir else None
    selection.check_data_dir(data_dir, usable)
    if ask.instructions and missing_valgrind():
        raise UsageError(f"--instructions: {missing_valgrind()}")
    per_point = (ask.max_trials or DEFAULT_MAX_TRIALS) if ask.adaptive else None
    selection.check_plan_size(sum((per_point or ask.trials or w.trials[profile])
                                  * len(w.points(narrow_for(w, narrow), profile)) * sum(e.runs(w) for e in engines)
                                  for w in usable))
    plan = RunPlan(profile=profile, engines=tuple(e.id for e in engines), workloads=tuple(w.name for w in usable),
                   narrow=narrow, trials=ask.trials, timeout_s=ask.timeout, explicit_engines=named,
                   noise_threshold=ask.noise_threshold / 100, adaptive_max_trials=per_point, data_dir=data_dir,
                   change=None if ask.change is None else ask.change / 100,
                   upstream=upstream, timing=ask.timing or DEFAULT_TIMING, envs=tuple(environments["envs"]),
                   env_dir=environments["env_dir"], pip_args=tuple(environments["pip_args"]),
                   claims_budget_min=ask.claims_budget, aa=aa, instructions=ask.instructions,
                   round_seed=secrets.randbelow(2**32) if ask.seed is None else ask.seed)
    if (ask.shard or ask.slurm.tasks is not None) and ask.seed is None:  # every machine draws the same order
        plan = dataclasses.replace(plan, round_seed=plan_seed(plan))
    if ask.shard:  # balanced by estimates every machine computes alike (give each the same --estimate-from)
        plan = dataclasses.replace(plan, shard=shard.spec(make_plan(plan), ask.shard, estimate_from))
    return plan, notes


def plan_seed(plan: RunPlan) -> int:
    """A seed every machine computes alike from the plan itself (the shards of one plan; else --seed)."""
    record = {k: v for k, v in plan.to_record().items() if k not in ("round_seed", "shard")}
    return int(hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()[:8], 16)


def check_upstream(path: str | None) -> None:
    """--upstream: the authors' BurTorch source is there (the plan keeps it; make_plan gives it to their engines)."""
    if path is not None and not Path(path).exists():
        raise UsageError(f"--upstream {path}: no such file or folder (a checkout or a `git archive` tarball;"
                         f" burtbench fetch-upstream makes one)")
