"""What an engine is, and the small contract between an engine module and the worker.

An engine is (framework, mode, language, device). A Python engine module declares its engines in
`ENGINES` and, in `BUILDERS`, one function per workload kind (workloads/base.py):
`builder(spec, workload, params, inputs) -> Program`. It imports its framework only inside a
builder, so that listing engines and planning runs never imports one.

The worker child imports this module (through the engine's own), so it imports nothing a bare
script would not: no dataclasses (with inspect, ~2.7 MiB of every row's peak memory), no typing,
no pathlib.
"""
from __future__ import annotations

import math
import os
import sys

# The engine every relative factor is taken against, as in the paper.
BASELINE = "burtorch/eager/cpp/cpu"
# The authors' own published BurTorch programs (engines/burtorch_authors.py): the code the paper measured.
AUTHORS = "burtorch-authors/eager/cpp/cpu"


class Program:
    """One prepared workload inside a worker process (an interface: engines' programs only match it).

    Required: step() -- one iteration: rebuild the graph (or run one SGD step) and compute
    gradients; outputs() -> dict of plain floats read back after the loop, checked against the
    workload's reference. Optional: prepare() (before each timed block, untimed), sync() (after
    each block, timed), version (a string, or a callable the worker calls after reading the
    peak memory: a version lookup costs megabytes), extra (a dict of fields).
    """


class EngineSpec:
    """An engine's declaration: immutable, compared and hashed by its fields."""

    FIELDS = ("framework", "mode", "language", "device", "kinds", "workloads", "kind", "module", "requires",
              "executable", "precision", "note", "condition", "paper_row", "paper_variant", "label", "distribution",
              "env", "python", "counted_as")

    def __init__(self, framework: str, mode: str, language: str, device: str, *,
                 # What it runs: every workload of these kinds (its builder works from the workload's own
                 # declaration: a graph, a model), and the named workloads (code of its own per workload:
                 # a native driver's compiled-in programs, a framework's hand-written model).
                 kinds: tuple[str, ...] = (), workloads: tuple[str, ...] = (),
                 # "python": run by harness/running/worker.py importing `module`; "native": an executable speaking
                 # the same protocol; "program": a program that prints its own text: the spec gives the
                 # command of a trial and turns what the finished child printed (and left in its scratch
                 # folder) into the payload (command(pt, iterations, inputs, workdir) -> (argv, env);
                 # payload(pt, iterations, stdout, workdir, inputs) -> dict; engines/burtorch_authors.py).
                 kind: str = "python", module: str = "",
                 # Top-level Python modules that must be importable for the engine to be available.
                 requires: tuple[str, ...] = (), executable: str = "",
                 # Precision the engine computes in when it cannot use the workload's (TF Lite has no FP64 ops).
                 precision: str | None = None, note: str = "",
                 # An extra availability condition beyond `requires`: returns None when fine, else the reason.
                 condition=None,
                 # The paper's row for this engine: (framework, mode, language, device) as paper_results.csv
                 # spells them, and the serialization path where the paper ran one framework two ways.
                 paper_row: tuple[str, str, str, str] | None = None, paper_variant: str | None = None,
                 # The name the report gives its rows where several engines stand for one paper row.
                 label: str = "",
                 # The framework's distribution on the package index, where it is not named like the
                 # framework: what a `burtbench run --env SPEC` must name for this engine to run there.
                 distribution: str = "",
                 # Set only on an engine run in a managed environment (harness/envs/specs.py): the
                 # environment's SPEC, which its id carries, and the interpreter of that environment.
                 env: str = "", python: str = "",
                 # The engine whose instructions are counted in this one's place (--instructions) where
                 # valgrind cannot run this one's build (AVX-512): the same code built without it; its
                 # `note` says so wherever the counts are shown. It is never timed.
                 counted_as: "EngineSpec | None" = None):
        values = locals()
        for name in EngineSpec.FIELDS:  # a subclass sets the fields it adds
            object.__setattr__(self, name, values[name])

    def __setattr__(self, name, value):
        raise AttributeError(f"EngineSpec is immutable (cannot set {name})")

    def _key(self) -> tuple:
        return tuple(getattr(self, name) for name in self.FIELDS)

    def __eq__(self, other):
        return type(other) is type(self) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return f"EngineSpec({self.id!r})"

    def replace(self, **changes) -> "EngineSpec":
        """A copy with some fields changed (the spec itself never changes), of the same class: an
        engine's behaviour (what it runs, how it is prepared) lives in its subclass's methods."""
        values = {name: getattr(self, name) for name in self.FIELDS}
        values.update(changes)
        return type(self)(**values)

    @property
    def base_id(self) -> str:
        return f"{self.framework}/{self.mode}/{self.language}/{self.device}"

    @property
    def id(self) -> str:
        return f"{self.base_id}@{self.env}" if self.env else self.base_id

    @property
    def dist_name(self) -> str:
        return self.distribution or self.framework

    def runs(self, workload) -> bool:
        return workload.name in self.workloads or workload.kind in self.kinds

    def unavailable_reason(self) -> str | None:
        """Why this engine cannot run here, or None. Never imports the framework."""
        import importlib.util

        # In a managed environment the framework is that environment's, not this interpreter's.
        for name in () if self.env else self.requires:
            if importlib.util.find_spec(name) is None:
                return f"python module '{name}' is not installed"
        if self.kind == "native" and find_executable(self.executable) is None:
            return f"executable '{self.executable}' not found (build the project: make setup)"
        if self.condition is not None:
            return self.condition()
        return None


class BuiltOnFirstUse(EngineSpec):
    """A native engine whose driver is built by prepare() (the session calls it once, before the
    engine's first trial) rather than installed with the package: `condition` says why it cannot be
    built here (or None), `build` builds it if needed and returns why it could not (or None)."""

    FIELDS = EngineSpec.FIELDS + ("build",)

    def __init__(self, *args, build, **fields):
        super().__init__(*args, **fields)
        object.__setattr__(self, "build", build)

    def unavailable_reason(self) -> str | None:
        return self.condition()  # not EngineSpec's: the executable is what prepare() makes

    def prepare(self, planned=()) -> str | None:
        return self.build()


def find_executable(name: str) -> str | None:
    """A native driver installed beside this interpreter (the venv's bin/) or on PATH."""
    import shutil

    scripts = os.path.dirname(sys.executable)
    for candidate in (os.path.join(scripts, name), os.path.join(scripts, f"{name}.exe")):
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which(name)


# The mark of an A/A copy (--aa): `<id>@<SPEC>#copy` runs exactly as `<id>@<SPEC>`, `<id>@#copy` as `<id>`,
# as a variant of its own, so that the noise floor is measured as any comparison is.
AA_COPY = "#copy"


def split_id(engine_id: str) -> tuple[str, str]:
    """(engine id without its environment, the environment's SPEC or '')."""
    base, _, env = engine_id.partition("@")
    return base, env


def finite(value, non_finite):
    """`value` with every NaN or infinity (at any depth) replaced by non_finite(x): JSON has neither,
    and the readers here reject them."""
    if isinstance(value, dict):
        return {k: finite(v, non_finite) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v, non_finite) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return non_finite(value)
    return value
