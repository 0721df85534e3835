"""How long a planned run will take: its builds, then its trials, from what a previous run on this
machine measured, else from rough built-in figures, each estimate saying where it came from.

A trial is modelled as a start-up cost (process start, imports, building the program) plus its
iterations at the point's time per iteration; the init run (one iteration) pays the start-up once
more. Both numbers are taken from the source run's trials of the same point (the same engine, else
the same engine in another environment or as an A/A copy: a `#copy` runs exactly as its original),
else of the same engine and workload at other points, else from the committed reference run
(another machine, maybe: rough), else from one constant pair (rough). The source run is the run on
this CPU model that covers most of the plan's points, the newest of equals: the newest alone may
have measured a handful of them.

Builds run before the first trial, one after another: each revision of ours not yet built (and its
counting build where valgrind cannot run the host's), each --env environment not installed yet, the authors'
programs not yet built, Burn's driver where cargo has not built it. Each costs what the newest run on this
CPU that made one took (manifest.json: `builds`, and `setup_s` in `environments`), else a labelled constant.

A machine's speed drifts (this project's 2-core VM ran the same plan in 1,876 s and in 1,291 s on
one afternoon, and 2.2x slower than two days before), and a trial's cost is mostly its start-up.
So where the previous run has the harness's floor row (a worker that imports no framework), that
trial is run again here first and the previous run's figures are scaled by now / then.
"""
from __future__ import annotations

import heapq
import statistics
from dataclasses import dataclass
from pathlib import Path

from engines import all_engines, burn, libtorch
from engines.authors import build as authors_build
from engines.authors.programs import PROGRAMS, knob_values
from engines.base import AA_COPY, split_id
from engines.burtorch_authors import AuthorsEngine, ProgramUnavailable, source_tree
from engines.none import FLOOR
from harness.envs import install, revisions
from harness.envs.cache import default_env_dir, read_record
from harness.errors import UsageError
from harness.machine.host import describe
from harness.machine.valgrind import counted_iterations, uncountable_isa
from harness.paths import ROOT
from harness.planning.plan import PlannedTrial, narrow_for
from harness.store import results
from harness.store.results import params_key
from harness.units import count
from workloads import all_workloads

REFERENCE_RUN = ROOT / "results" / "reference"
# The last resort for an engine no run has measured: a Python framework's start-up, and a slow
# small-graph iteration. Labelled rough wherever used.
ROUGH_STARTUP_S = 1.0
ROUGH_PER_ITER_S = 1e-4
# --instructions: two more children per trial under valgrind (N and 2N iterations, see
# harness/running/instructions.py). Measured here: a child's start-up runs ~20x slower under
# valgrind plus ~1 s of its own, an iteration ~100x slower (autograd tiny: 18 s per trial counted;
# micrograd tiny: 7 s). A previous run's own counting cost, where it has one, is used instead.
VALGRIND_OWN_S = 1.0
VALGRIND_STARTUP_FACTOR = 20.0
VALGRIND_SLOWDOWN = 100.0
VALGRIND_ROUGH = f"rough: x{VALGRIND_STARTUP_FACTOR:.0f} start-up, x{VALGRIND_SLOWDOWN:.0f} an iteration"
# What a build costs where no run on this CPU made one, on this project's 2-core VM: a revision of
# ours (CMake, the driver and the module) ~35 s (two revisions with their counting builds: 140 s);
# one of the authors' programs ~10 s (their libraries once, then a main file each); Burn with cargo
# from nothing, minutes; an --env environment's install 5-6 s with pip's cache warm (cold: longer, as runs record).
REVISION_BUILD, AUTHORS_BUILD, BURN_BUILD, LIBTORCH_BUILD, ENV_BUILD = "revision", "authors", "burn", "libtorch", "env"
# Measured on the 2-core VM: LibTorch's first-use build took about 4 minutes (a dry run that left it out
# predicted 4 min for a run that took 7 min 46 s).
ROUGH_BUILD_S = {REVISION_BUILD: 35.0, AUTHORS_BUILD: 10.0, BURN_BUILD: 300.0, LIBTORCH_BUILD: 240.0, ENV_BUILD: 6.0}


@dataclass(frozen=True)
class Build:
    """A build the run makes before its first trial (`count` programs of one kind, one for the rest)."""
    kind: str
    what: str
    count: int = 1

    def record(self, seconds: float) -> dict:
        """What manifest.json's `builds` keeps of it, once made."""
        return {"kind": self.kind, "what": self.what, "count": self.count, "seconds": round(seconds, 1)}


def engine_builds(trials: list[PlannedTrial]) -> list[Build]:
    """What making these trials' engines ready will build (the authors' programs, Burn's driver); an engine
    that cannot be made ready builds nothing."""
    found = []
    for engine in {pt.engine.id: pt.engine for pt in trials}.values():
        mine = [pt for pt in trials if pt.engine.id == engine.id]
        if isinstance(engine, AuthorsEngine) and engine.unavailable_reason() is None:
            left = _authors_left(engine, mine)
            if left:
                found.append(Build(AUTHORS_BUILD, f"the authors' programs ({left})", left))
        elif getattr(engine, "build", None) is burn.build_driver and burn.build_blocker() is None and not burn.is_built():
            found.append(Build(BURN_BUILD, "Burn's driver (cargo)"))
        elif getattr(engine, "build", None) is libtorch.build_driver and libtorch.build_blocker() is None \
                and not _libtorch_built():
            found.append(Build(LIBTORCH_BUILD, "the LibTorch driver (CMake, first use with this torch)"))
    return found


def _libtorch_built() -> bool:
    """The LibTorch driver configured for the installed torch and built (engines/libtorch.py's state)."""
    configured = {"torch": libtorch.torch_version(), "prefix": str(libtorch.torch_cmake_prefix())}
    return libtorch.read_state().get("configured") == configured and libtorch.EXECUTABLE.is_file()


def _authors_left(engine, trials: list[PlannedTrial]) -> int:
    """How many of the programs their engine's prepare() builds for these trials are not built yet."""
    try:
        tree = source_tree(engine.source)
    except ProgramUnavailable:
        return 0
    programs = set()
    for pt in trials:
        for iterations in {pt.iterations, *((1,) if pt.with_init else ())}:
            values = knob_values(pt.workload.name, pt.params, iterations)
            for step in PROGRAMS[pt.workload.name].steps:
                try:
                    programs.add((step.target, authors_build.plan_changes(tree, step, values[step.target])))
                except ValueError:  # no such variant: the engine's prepare() says so, building nothing
                    continue
    return sum(not authors_build.is_built(tree, target, changes) for target, changes in programs)


def revision_builds(asked) -> list[Build]:
    """The builds of our revisions a run of `asked` (a RunPlan) makes, those not in the environments'
    folder yet: each revision's, its counting build where valgrind cannot run the host's ISA, and the
    checkout's counting build for our rows in no environment (harness/envs/revisions.py, make_all)."""
    isas = (revisions.HOST, *((revisions.COUNTING,) if asked.instructions and uncountable_isa() else ()))
    wanted = [(text, revisions.parse(text).rev) for text in asked.envs
              if revisions.is_revision(text) and revisions.parse(text).project == revisions.OURS]
    plain = any(split_id(eid)[0].split("/")[0] == revisions.OURS and not split_id(eid)[1].removesuffix(AA_COPY)
                for eid in asked.engines)
    found = []
    root = Path(asked.env_dir) if asked.env_dir else default_env_dir()
    made = [read_record(folder) for folder in root.iterdir() if folder.is_dir()] if root.is_dir() else []
    for text, rev, isa in [*((t, r, i) for t, r in wanted for i in isas),
                           *([(revisions.CHECKOUT, revisions.WORKTREE, revisions.COUNTING)] if len(isas) > 1 and plain else [])]:
        try:
            revision = revisions.resolve(rev)
        except UsageError:  # its engines cannot run: nothing built
            continue
        source = revision.fingerprint if revision.dirty else revision.tree
        if not any(r.get("ready") and (r.get("identity") or {}).get("recipe") == revisions.RECIPE
                   and (r.get("identity") or {}).get("source") == source and r["identity"].get("isa") == isa
                   and Path(r.get("driver") or "").is_file() for r in made):
            found.append(Build(REVISION_BUILD, f"{text} ({isa} build)"))
    return found


def env_builds(asked, python: str) -> list[Build]:
    """The --env environments a run of `asked` (a RunPlan) installs with the interpreter `python`."""
    return [Build(ENV_BUILD, f"environment {text} (installed)") for text in install.to_install(asked, python)]


def measured_builds(runs: list[Path]) -> dict[str, tuple[float, Path]]:
    """{kind: (seconds a build, per program for the authors', the run that measured it)}: from the newest
    of `runs` that made a build of that kind."""
    found: dict[str, tuple[float, Path]] = {}
    for run in runs:
        manifest = results.sane_manifest(run, warn=lambda _: None)
        samples: dict[str, list[float]] = {}
        for made in manifest.get("builds") or []:
            if isinstance(made, dict) and _number(made.get("seconds")) and _number(made.get("count")) and made["count"] > 0:
                samples.setdefault(str(made.get("kind")), []).append(made["seconds"] / made["count"])
        for env in (e for e in (manifest.get("environments") or {}).values() if isinstance(e, dict)):
            # A revision's builds, or an install (install.Environment: its record has an installer); theirs: none.
            kind, made = ((REVISION_BUILD, (env.get("host"), env.get("counting"))) if env.get("kind") == "revision"
                          else (ENV_BUILD, (env,) if env.get("installer") else ()))
            for one in made:
                if isinstance(one, dict) and not one.get("reused") and not one.get("problem") and _number(one.get("setup_s")):
                    samples.setdefault(kind, []).append(one["setup_s"])
        for kind, seconds in samples.items():
            found.setdefault(kind, (statistics.median(seconds), run))
    return found


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0


def _ids(engine_id: str) -> tuple[str, ...]:
    """The ids a trial of this engine is priced as, best first: itself (an A/A copy: its original), then
    the same engine in no environment."""
    base, env = split_id(engine_id)
    env = env.removesuffix(AA_COPY)
    return tuple(dict.fromkeys((f"{base}@{env}" if env else base, base)))


@dataclass(frozen=True)
class Cost:
    startup_s: float
    per_iter_s: float

    def trial_s(self, pt: PlannedTrial) -> float:
        init = self.startup_s + self.per_iter_s if pt.with_init else 0.0
        return init + self.startup_s + self.per_iter_s * (pt.iterations + pt.warmup)


def trials_of(run_dir: Path) -> list[dict]:
    """A run's trials, read once for all the figures taken from it; its damaged lines only go unused."""
    return results.read_trials(run_dir, warn=lambda _: None)


def _indexed(samples_of, trials: list[dict]) -> dict[tuple, list]:
    """Each trial's sample keyed (engine, workload, params JSON) and (engine, workload), under its own id
    and ("any", its id in no environment) for the same engine in another environment."""
    samples: dict[tuple, list] = {}
    for t in trials:
        sample = samples_of(t)
        if sample is None or not isinstance(t.get("engine"), str):
            continue
        own, base = _ids(t["engine"])[0], split_id(t["engine"])[0]
        for engine in (own, ("any", base)):
            point = (engine, t["workload"], params_key(t["params"]))
            samples.setdefault(point, []).append(sample)
            samples.setdefault(point[:2], []).append(sample)
    return samples


def _keys(pt: PlannedTrial) -> list[tuple]:
    """A planned trial's keys into _indexed's tables, best first: its point, the same point of the engine in
    no environment, then the pair at any point, the same way."""
    own, base = _ids(pt.engine.id)[0], split_id(pt.engine.id)[0]
    points = [(engine, pt.workload.name, params_key(pt.params)) for engine in (own, ("any", base))]
    return [*points, *(p[:2] for p in points)]


def _startup_and_per_iter(t: dict) -> tuple[float, float] | None:
    per_iter = (t.get("per_iter_s") or {}).get("mean")
    wall = t.get("wall_time_s")
    if not isinstance(wall, (int, float)):
        return None
    if t.get("status", "ok") == "ok" and isinstance(per_iter, (int, float)) and t.get("iterations"):
        return max(wall - per_iter * (t["iterations"] + (t.get("warmup") or 0)), 0.0), per_iter
    return wall, 0.0  # a failed trial costs what it took, whatever its counts


def costs_of(trials: list[dict]) -> dict[tuple, Cost]:
    """Each measured point's cost (keys: _indexed's)."""
    return {key: Cost(statistics.median(s for s, _ in pairs), statistics.median(p for _, p in pairs))
            for key, pairs in _indexed(_startup_and_per_iter, trials).items()}


def counting_costs(trials: list[dict]) -> dict[tuple, float]:
    """A previous run's own counting cost (instructions_cost_s) per point (keys: _indexed's)."""
    cost_of = (lambda t: t.get("instructions_cost_s") if _number(t.get("instructions_cost_s")) else None)
    return {key: statistics.median(values) for key, values in _indexed(cost_of, trials).items()}


def floor_trials(trials: list[dict]) -> list[dict]:
    """The finished trials of the harness's floor row on workloads that need no inputs folder."""

    workloads = all_workloads()
    return [t for t in trials
            if t.get("engine") == FLOOR and t.get("status", "ok") == "ok" and isinstance(t.get("wall_time_s"), float)
            and (w := workloads.get(t.get("workload"))) is not None and w.kind == "graph" and not w.measures_energy
            and isinstance(t.get("iterations"), int) and isinstance(t.get("params"), dict)]


def counted_s(cost: Cost, pt: PlannedTrial) -> float:
    """What counting a trial's instructions costs (both counted children), from its native cost."""

    per_child = VALGRIND_OWN_S + cost.startup_s * VALGRIND_STARTUP_FACTOR
    n, warmup = counted_iterations(pt.workload)
    return 2 * per_child + (3 * n + 2 * warmup) * cost.per_iter_s * VALGRIND_SLOWDOWN


class Estimator:
    """Seconds per planned trial and per build; `source(pt)` says which figures it used. `probe(trial)`
    gauges the machine's speed now by running a floor trial again (harness/running/probe.py: the running
    stage spawns children, planning does not); None: the figures as measured, unscaled."""

    def __init__(self, run_dir: Path | None, probe=None, instructions: bool = False):
        self.run_dir, self.instructions = run_dir, instructions
        previous = trials_of(run_dir) if run_dir is not None else []
        self.measured = costs_of(previous)
        self.counting = counting_costs(previous) if instructions else {}
        reference = trials_of(REFERENCE_RUN) if results.is_run_dir(REFERENCE_RUN) else []
        self.reference = costs_of(reference)
        self.reference_counting = counting_costs(reference) if instructions else {}
        self.built = measured_builds(compatible_runs(run_dir.parent)) if run_dir is not None else {}
        self.speed, self.speed_note = 1.0, ""
        floors = floor_trials(previous) if probe else []
        now = probe(floors[0]) if floors else None
        if now:
            then = statistics.median(t["wall_time_s"] for t in floors)
            self.speed = now / then
            self.speed_note = (f"; scaled ×{self.speed:.2f} to this machine's speed now (the harness's floor trial "
                               f"takes {now * 1e3:.0f} ms, {then * 1e3:.0f} ms in that run)")

    def _lookup(self, pt: PlannedTrial) -> tuple[Cost, str]:
        for table, name in ((self.measured, "run"), (self.reference, "rough")):
            for key in _keys(pt):
                if key in table:
                    cost = table[key]
                    if name == "run":
                        cost = Cost(cost.startup_s * self.speed, cost.per_iter_s * self.speed)
                    return cost, name
        return Cost(ROUGH_STARTUP_S, ROUGH_PER_ITER_S), "rough"

    def trial_s(self, pt: PlannedTrial) -> float:
        cost = self._lookup(pt)[0]
        return cost.trial_s(pt) + (self.counted_s(pt, cost)[0] if self.instructions else 0.0)

    def counted_s(self, pt: PlannedTrial, cost: Cost) -> tuple[float, str]:
        """(seconds counting the trial's instructions takes, "run" / "reference" / "rough": who measured it)."""
        for table, name, scale in ((self.counting, "run", self.speed), (self.reference_counting, "reference", 1.0)):
            for key in _keys(pt):
                if key in table:
                    return table[key] * scale, name
        return counted_s(cost, pt), "rough"

    def source(self, pt: PlannedTrial) -> str:
        """"run": the previous run on this machine; "rough": the built-in figures."""
        return self._lookup(pt)[1]

    def builds(self, builds: list[Build]) -> list[tuple[Build, float, str]]:
        """Each build with its seconds and where they come from."""
        priced = []
        for made in builds:
            if made.kind in self.built:
                seconds, run = self.built[made.kind]
                priced.append((made, seconds * made.count * self.speed, f"as in {run.name}"))
            else:
                priced.append((made, ROUGH_BUILD_S[made.kind] * made.count, "rough: none measured on this CPU"))
        return priced

    def describe(self, plan: list[PlannedTrial]) -> str:
        counting = ""
        if self.instructions and plan:
            each = [self.counted_s(pt, self._lookup(pt)[0]) for pt in plan]
            seconds = [s for s, _ in each]
            sources = {"run": "measured in that run", "reference": "as the committed reference run measured it",
                       "rough": VALGRIND_ROUGH}
            where = ", ".join(f"{count(n, 'trial')} {sources[name]}" for name in sources
                              if (n := sum(source == name for _, source in each)))
            counting = (f"; --instructions included: {statistics.fmean(seconds):.0f} s per trial on average under "
                        f"valgrind ({min(seconds):.0f}-{max(seconds):.0f} s; {where})")
        return self._describe(plan) + counting

    def _describe(self, plan: list[PlannedTrial]) -> str:
        rough = sum(self.source(pt) == "rough" for pt in plan)
        if self.run_dir is None:
            return ("estimates: rough built-in figures (the committed reference run, then a constant), "
                    "no previous run on this machine")
        points = {(pt.engine.id, pt.workload.name, params_key(pt.params)): pt for pt in plan}
        covered = sum(any(key in self.measured for key in _keys(pt)[:2]) for pt in points.values())
        head = f"estimates: from the per-iteration times of {self.run_dir} ("
        made = results.sane_manifest(self.run_dir, warn=lambda _: None).get("created_at")
        if isinstance(made, str) and made[:10]:
            # A shared (cloud) machine has run the same trials 2x slower on one day than on another.
            head += f"made {made[:10]}: a machine's speed can change from day to day; "
        head += f"it measured {covered} of the plan's {count(len(points), 'point')})" + self.speed_note
        return head + (f"; {rough} of {count(len(plan), 'trial')} from rough built-in figures (not in that run)" if rough else "")


def wall_s(plan: list[PlannedTrial], estimator: Estimator, workers: int) -> float:
    """Wall time of the plan on `workers` cores, each taking the next trial in plan order as it frees."""
    free = [0.0] * max(workers, 1)
    for pt in plan:
        if pt.workload.measures_energy:  # runs alone: every core waits for it
            free = [max(free) + estimator.trial_s(pt)] * len(free)
        else:
            heapq.heappush(free, heapq.heappop(free) + estimator.trial_s(pt))
    return max(free)


def compatible_runs(out: Path) -> list[Path]:
    """The runs under `out` made on a CPU of this machine's model, newest first."""

    model = describe().get("cpu_model")
    found = []
    for folder in Path(out).iterdir() if Path(out).is_dir() and model else ():
        if results.is_run_dir(folder):
            manifest = results.sane_manifest(folder, warn=lambda _: None)
            if (manifest.get("machine") or {}).get("cpu_model") == model:
                found.append((str(manifest.get("created_at") or ""), folder.name, folder))
    return [folder for *_, folder in sorted(found, reverse=True)]


def covering_run(out: Path, asked) -> Path | None:
    """The run under `out` on this CPU model whose trials measured most of the points of `asked` (a
    RunPlan; an engine in any environment counts), the newest of equals; None: no run with trials."""
    registry, workloads = all_engines(), all_workloads()
    planned = set()
    for workload in (workloads[name] for name in asked.workloads if name in workloads):
        for params in workload.points(narrow_for(workload, dict(asked.narrow)), asked.profile):
            planned |= {(split_id(eid)[0], workload.name, params_key(params)) for eid in asked.engines
                        if split_id(eid)[0] in registry and registry[split_id(eid)[0]].runs(workload)}
    best = None
    for run in compatible_runs(out):  # newest first: a later run must cover more to win
        if not (run / results.TRIALS_FILE).is_file():
            continue
        covered = len(planned & {(split_id(t["engine"])[0], t["workload"], params_key(t["params"]))
                                 for t in trials_of(run) if isinstance(t.get("engine"), str)})
        if best is None or covered > best[0]:
            best = (covered, run)
    return best[1] if best else None
