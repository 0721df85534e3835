"""The authors' own BurTorch (github.com/burlachenkok/burtorch) as engines: their published example
programs, built from a copy the user has, run by the same runner with the same measures as ours.

An engine of kind "program": a program that prints its own text, not our JSON line. The runner asks
the spec for the command of a trial (`command`), runs it like every child (pinned, one thread,
memory cap, timeout, wait4 CPU time, init run and measured run) in a fresh scratch folder, and
asks the spec to turn what it printed and left in that folder into the payload (`payload`).

Where their source comes from: `--upstream DIR|ARCHIVE` on `burtbench run` (the run's plan keeps
it, and the planned engine carries it as its `source`), else $BURTBENCH_UPSTREAM, else the checkout
`burtbench fetch-upstream` makes by default (build/upstream/checkout). With none, the engine is unavailable
and says how to get one. Nothing of theirs is stored in this project (GPL v3).

prepare(planned) builds, before the first trial, every program the planned trials need: their
code unchanged where the point is theirs, else a variant with only the compile-time constants
changed (iterations, batch, hidden size, print interval; engines/authors/variants.py), and each
point's 1-iteration variant for its init run. A build failure makes the engine unavailable with
the compiler's first error line. Every change (file, line, old -> new) is in the trial's `extra`
and in the manifest (`engine_builds`).
"""
from __future__ import annotations

import os
import shlex
import shutil
import tarfile
import time
from pathlib import Path

from engines.authors import build as builder
from engines.authors import memory
from engines.authors.memory import LINEBUF_VAR, OUT_VAR
from engines.authors.programs import PROGRAMS, ParseError, knob_values, merge_measures
from engines.authors.source import ENV_VAR, SourceError, open_source
from engines.base import EngineSpec, finite
from workloads import inputs as shared

PROJECT_ROOT = Path(__file__).resolve().parent.parent
# Where `burtbench fetch-upstream` clones to when given no --dir, and where the engine looks last.
DEFAULT_CHECKOUT = PROJECT_ROOT / "build" / "upstream" / "checkout"
WORKLOADS = ("tiny", "small", "save_load", "energy", "mlp", "gpt")
# Between two programs of one trial (save_load: their saving, then their loading program).
STEP_MARK = "#burtbench: next program"
NO_CLOCKS = "the authors' programs read no cycle counter"


class ProgramUnavailable(RuntimeError):
    """One of their programs cannot be had here (no source, a failed build); str() is one line."""


def upstream_location(given: str = "") -> tuple[Path | None, str]:
    """(where their source is, how it was found): `given` (the run's --upstream), else the variable,
    else an earlier fetch; None where nothing was given or fetched."""
    if given:
        return Path(given), "--upstream"
    value = os.environ.get(ENV_VAR, "").strip()
    if value:
        return Path(value).expanduser(), f"${ENV_VAR}"
    if (DEFAULT_CHECKOUT / "burt" / "CMakeLists.txt").is_file():
        return DEFAULT_CHECKOUT, "the default checkout of `burtbench fetch-upstream`"
    return None, "none given"


_trees: dict[str, object] = {}     # location -> SourceTree, opened once per process
_builds: dict[tuple, object] = {}  # (location, target, changes) -> BuildResult


def source_tree(given: str = ""):
    where, how = upstream_location(given)
    if where is None:
        raise ProgramUnavailable(NO_SOURCE)
    key = str(where)
    if key not in _trees:
        try:
            _trees[key] = open_source(where)
        except SourceError as exc:
            raise ProgramUnavailable(f"{exc} (from {how})") from None
    return _trees[key]


NO_SOURCE = ("no copy of the authors' BurTorch: pass --upstream DIR|ARCHIVE (a checkout or a `git archive`"
             " tarball), set $BURTBENCH_UPSTREAM, or run `burtbench fetch-upstream`")


def executables(workload: str, params: dict, iterations: int, given: str = "", progress: str = "") -> list:
    """The BuildResult of each of the workload's programs at this point and iteration count (built if
    needed, announced after `progress`), from the source `given` (else upstream_location's)."""
    tree = source_tree(given)
    values = knob_values(workload, params, iterations)
    results = []
    steps = PROGRAMS[workload].steps
    for index, step in enumerate(steps):
        try:
            changes = builder.plan_changes(tree, step, values[step.target])
        except ValueError as exc:
            raise ProgramUnavailable(f"cannot make a variant of their {step.target}: {exc}") from None
        key = (str(tree.root), step.target, changes)
        if key not in _builds or not _builds[key].ok:
            # A point of several programs is one unit of the plan's count: each of its builds says which it is.
            of = f"program {index + 1} of {len(steps)}: " if len(steps) > 1 else ""
            _builds[key] = builder.build(tree, step.target, changes, progress=progress + of)
        built = _builds[key]
        if not built.ok:
            raise ProgramUnavailable(f"their {step.target} ({built.variant}) did not build: {built.reason}")
        results.append(built)
    return results


def _progress(done: int, total: int, elapsed_s: float) -> str:
    """"[4/36, about 2 min left] ": how far the builds of a plan are, from their pace so far."""
    if not done:
        return f"[1/{total}] "
    left_s = elapsed_s / done * (total - done)
    return f"[{done + 1}/{total}, about {f'{left_s:.0f} s' if left_s < 90 else f'{left_s / 60:.0f} min'} left] "


def data_path(step, inputs, given: str = "") -> Path | None:
    """The data file their program reads (argv[1]): the one the point's inputs were prepared from
    (the run's --data-dir, recorded in their config.txt), else their repository's copy."""
    if step.data_file is None:
        return None
    real = shared.read_config(Path(inputs) / shared.CONFIG).get("corpus_path") if inputs else None
    return Path(real) if real else source_tree(given).datasets_dir / step.data_file


def peak_file(workdir: Path, step) -> Path:
    return Path(workdir) / f".burtbench-peak-{step.target}.txt"


def _preload() -> tuple[str | None, str | None]:
    """(the peak-memory library, or None and why not)."""
    try:
        return str(memory.preload_library()), None
    except memory.PreloadUnavailable as exc:
        return None, str(exc)


class AuthorsEngine(EngineSpec):
    """Their programs, built on first use; see the module docstring."""

    FIELDS = EngineSpec.FIELDS + ("source",)

    def __init__(self, *args, source: str = "", **fields):
        super().__init__(*args, **fields)
        object.__setattr__(self, "source", source)  # the run's --upstream; "" : the variable, or a fetch
        # The builds this engine prepared, by variant: the process remembers others' too (_builds), which
        # a manifest must not list as this run's.
        object.__setattr__(self, "used", {})

    def unavailable_reason(self) -> str | None:
        if shutil.which("cmake") is None:
            return "cmake not found on PATH (needed to build the authors' BurTorch programs)"
        where, how = upstream_location(self.source)
        if where is None:
            return NO_SOURCE
        if not where.exists():
            return f"the authors' BurTorch source {where} (from {how}) does not exist"
        if where.is_file() and not tarfile.is_tarfile(where):
            return f"{where} (from {how}) is not a tar archive: not the authors' BurTorch source"
        if where.is_dir() and not (where / "burt" / "CMakeLists.txt").is_file() and not any(where.glob("*.tar*")):
            return f"{where} (from {how}) holds no burt/CMakeLists.txt nor an archive: not the authors' BurTorch source"
        return None

    def prepare(self, planned=()) -> str | None:
        """Open their source and build every program the planned trials need; None, or why not."""
        why = self.unavailable_reason()
        if why is not None:
            return why
        # Their iteration counts are compiled in: a program per point and count, each built once
        # and kept. The first run builds them all (seconds each), and says how far it is.
        variants = list(dict.fromkeys((pt.workload.name, tuple(sorted(pt.params.items())), iterations) for pt in planned
                                      for iterations in sorted({pt.iterations, *((1,) if pt.with_init else ())})))
        started = time.monotonic()
        try:
            source_tree(self.source)
            for done, (workload, params, iterations) in enumerate(variants):
                built = executables(workload, dict(params), iterations, self.source,
                                    _progress(done, len(variants), time.monotonic() - started))
                self.used.update((b.variant, b) for b in built)
        except ProgramUnavailable as exc:
            return str(exc)
        return None

    def command(self, pt, iterations: int, inputs, workdir: Path) -> tuple[list[str], dict]:
        """The child's argv and the variables to add to its environment (it runs in `workdir`)."""
        program = PROGRAMS[pt.workload.name]
        built = executables(pt.workload.name, pt.params, iterations, self.source)
        env: dict[str, str] = {}
        library, _ = _preload()
        if library:
            existing = os.environ.get("LD_PRELOAD", "").strip()
            env["LD_PRELOAD"] = f"{library}:{existing}" if existing else library
        if program.line_buffer_ok:
            env[LINEBUF_VAR] = "1"
        argvs = [step.argv(b.executable, data_path(step, inputs, self.source)) for step, b in zip(program.steps, built)]
        if len(argvs) == 1:
            env[OUT_VAR] = str(peak_file(workdir, program.steps[0]))
            return argvs[0], env
        # Several programs in one trial: a shell runs them in turn (the last one in its place), each
        # reporting its own peaks; the library in the shell itself has no file to write to.
        def run(step, argv, how: str = "") -> str:
            return f"{OUT_VAR}={shlex.quote(str(peak_file(workdir, step)))} {how}" + " ".join(map(shlex.quote, argv))

        lines = []
        for step, argv in zip(program.steps[:-1], argvs[:-1]):
            lines += [f"{run(step, argv)} || exit $?", f"echo '{STEP_MARK}'"]
        lines.append(run(program.steps[-1], argvs[-1], "exec "))
        return ["/bin/sh", "-c", "\n".join(lines)], env

    def payload(self, pt, iterations: int, stdout: str, workdir: Path, inputs) -> dict:
        """What the finished child printed and left in `workdir`, as the worker's JSON line would say it."""
        program = PROGRAMS[pt.workload.name]
        built = executables(pt.workload.name, pt.params, iterations, self.source)
        texts = stdout.split(STEP_MARK + "\n") if len(program.steps) > 1 else [stdout]
        if len(texts) != len(program.steps):
            return {"status": "failed", "reason": f"expected the output of {len(program.steps)} programs"}
        try:
            measures = [step.parse(text, Path(workdir)) for step, text in zip(program.steps, texts)]
        except ParseError as exc:
            return {"status": "failed", "reason": f"their program's output: {exc}"}
        _, no_preload = _preload()
        peaks = [memory.read_peak(peak_file(workdir, step), b.executable) for step, b in zip(program.steps, built)]
        if no_preload:
            peaks = [{k: (no_preload if k.endswith("_source") else None) for k in p} for p in peaks]
        merged = merge_measures(pt.workload.name, measures)
        reference = pt.workload.reference(pt.params, inputs) if pt.workload.reference and \
            pt.workload.kind != "training" else None
        cpus = [p.get("ran_on_cpu") for p in peaks]
        pinned = {s.pins_core for s in program.steps} - {None}
        payload = {
            "status": "ok", "outputs": merged.get("outputs") or {}, "precision": program.precision,
            "iterations": merged["iterations"], "warmup": 0, "loop_time_s": merged.get("loop_time_s"),
            "per_iter_s": merged["per_iter_s"], "samples_s": None, "loop_cpu_time_s": None,
            "framework_version": f"authors' {(built[0].commit or 'unknown commit')[:12]}",
            "cpu_clocks": None, "cpu_clocks_source": NO_CLOCKS, "instructions": None, "cpu_time_s": None,
            "peak_private_bytes": None, "peak_private_source": "not read from their process (Linux: VmHWM/VmPeak)",
            **_largest(peaks, "peak_resident"), **_largest(peaks, "peak_virtual"),
            "check": program.check(merged, reference),
            "ran_on_cpu": cpus[0] if len(cpus) == 1 else cpus,
            "cpus_allowed": [p.get("cpus_allowed") for p in peaks], "cpu_source": peaks[-1].get("cpu_source"),
            "pinned_itself_to": sorted(pinned)[0] if pinned else None,
            "program": [b.target for b in built], "variant": [b.variant for b in built],
            "changes": [c.as_record() for b in built for c in b.changes],
            "data_file": [str(data_path(s, inputs, self.source)) for s in program.steps if s.data_file] or None,
        }
        kept = ("timer", "timers_s", "printed", "outputs_source", "param_count", "records", "steps_planned",
                "save_s", "load_s", "save_per_iter_s", "load_per_iter_s", "file_size_bytes")
        payload.update({k: merged[k] for k in kept if k in merged})
        return finite(payload, str)  # a NaN or infinite loss they printed stays as text

    def manifest_record(self) -> dict:
        """Their source and every program built for this run, with each variant's changes."""
        where, how = upstream_location(self.source)
        record: dict = {"location": str(where) if where else None, "found_by": how}
        tree = _trees.get(str(where)) if where else None
        if tree is not None:
            from engines.authors.programs import PROGRAMS

            record["source"] = tree.as_record()
            record["builds"] = [b.as_record() for b in self.used.values()]
            # Whatever core the runner pins them to (each trial's extra.ran_on_cpu says where they ran).
            targets = {b["target"] for b in record["builds"]}
            record["pin_themselves_to"] = {s.target: s.pins_core for p in PROGRAMS.values() for s in p.steps
                                           if s.pins_core is not None and s.target in targets}
        library, why = _preload()
        record["peak_memory_library"] = library or why
        return record


def _largest(peaks: list[dict], name: str) -> dict:
    values = [p.get(f"{name}_bytes") for p in peaks]
    value = max(values) if values and all(v is not None for v in values) else None
    return {f"{name}_bytes": value, f"{name}_source": peaks[-1].get(f"{name}_source")}



ENGINES = [
    AuthorsEngine("burtorch-authors", "eager", "cpp", "cpu", workloads=WORKLOADS, kind="program",
                  paper_row=("burtorch", "eager", "cpp", "cpu"), label="BurTorch (authors' code)",
                  note="the authors' published programs, built from --upstream / $BURTBENCH_UPSTREAM"),
]
