"""What a workload is: everything about it, declared in one place.

A workload module (workloads/catalog/<name>.py) declares WHAT is run — its parameter grid,
iteration counts per profile, reference outputs and check, the data it prepares — and where the
paper reports it: the table(s), their metrics and notes, the figure. Engines say HOW. The
harness and the report read these declarations and never name a workload. Nothing here imports
a framework, the engines or the harness.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

PROFILES = ("smoke", "quick", "paper")

# Relative tolerance of the numerical check, per precision the engine computed in.
TOLERANCE = {"fp64": 1e-12, "fp32": 1e-5}

# What an engine must implement to run a workload:
#   graph      a scalar function g(a, b, relu) rebuilt and differentiated every iteration (`graph`)
#   save_load  the small graph's activations written to a file and read back every iteration
#   training   SGD steps of a model on batches the harness prepared (`model`, `split_rows`, `prepare`)
#   pool       2-D max pooling of a 4-D FP32 tensor the harness prepared (`prepare`), its window in the params
KINDS = ("graph", "save_load", "training", "pool")
# What a worker needs installed, beside the framework, to run a workload of each kind: a graph is
# plain Python; the others read and check arrays. A managed environment (--env) gets these.
WORKER_NEEDS = {"graph": (), "save_load": ("numpy",), "training": ("numpy",), "pool": ()}


@dataclass(frozen=True)
class Check:
    ok: bool
    max_rel_err: float | None
    expected: dict
    got: dict
    reason: str | None = None

    def as_dict(self) -> dict:
        out = {"ok": self.ok, "max_rel_err": self.max_rel_err, "expected": self.expected, "got": self.got}
        if self.reason:
            out["reason"] = self.reason
        return out


@dataclass(frozen=True)
class PaperTable:
    """Where the paper reports a workload, and how the report rebuilds its table and figure.

    Metric ids name the measures of harness/analysis/metrics.py; the report pairs our rows with the
    paper's (paper_results.csv) at the same point and engine.
    """
    csv_name: str  # the workload's name in paper_results.csv
    title: str  # may name the `split_by` parameter: "MLP, batch {batch}"
    metrics: tuple[str, ...]
    # The table's file name (default: the workload's), formatted like the title.
    name: str | None = None
    # The paper's iteration count behind its totals (its times are per loop); None where it
    # prints values per step already (MLP, GPT).
    iterations: int | None = None
    # Parameters that tell the paper's rows apart (matched with its columns of the same name).
    point: tuple[str, ...] = ()
    # Column titles of those parameters (default: their names).
    point_titles: Mapping[str, str] = field(default_factory=dict)
    # One table per value of this parameter (the paper's MLP tables: one per batch size).
    split_by: str | None = None
    # "bars": time per engine; "energy": energy per engine; "lines": time and memory against `figure_x`.
    figure: str | None = None
    figure_x: str | None = None  # a parameter, or "param_count"
    notes: tuple[str, ...] = ()
    # Ids of the setup differences from the paper that affect these numbers (workloads/differences.py):
    # printed under the workload's tables and listed in docs/workloads.md's table of differences.
    differences: tuple[str, ...] = ()
    # Add the "In theory, registers only" lower bound of the graph under the table (Tables 2, 3).
    theory_bound: bool = False


@dataclass(frozen=True)
class Workload:
    name: str
    title: str
    kind: str
    precision: str
    iterations: Mapping[str, int]
    trials: Mapping[str, int]
    warmup: Mapping[str, int]
    timeout_s: Mapping[str, float]
    # Each parameter's allowed values; a run covers their cartesian product unless --param narrows it.
    grid: Mapping[str, tuple] = field(default_factory=dict)
    # A profile may cover fewer values by default (quick: a representative subset of a long sweep);
    # --param can still pick any value of the full grid.
    profile_grid: Mapping[str, Mapping[str, tuple]] = field(default_factory=dict)
    # Timed blocks per loop: each block's time / its size is one per-iteration sample.
    # A workload whose steps are long (MLP, GPT) times every step: blocks = iterations.
    blocks: int | None = 100
    # reference(params, inputs) -> expected outputs; `inputs` is the folder prepare() wrote, or None.
    reference: Callable[[Mapping, Path | None], dict] | None = None
    # prepare(params, steps, folder, data_dir): writes what every engine loads (initial weights, batches) once
    # per run and point, so that all engines start from the same state and see the same data.
    prepare: Callable[[Mapping, int, Path, str | None], None] | None = None
    tolerance: Mapping[str, float] = field(default_factory=lambda: dict(TOLERANCE))
    # check() divides each error by max(|expected|, error_floor): with a floor of 1 a training loss
    # near zero is compared absolutely, since its FP32 rounding is set by the logits' scale, not by it.
    error_floor: float = 0.0
    # kind "graph": g(a, b, relu), written over operator overloading (workloads/graphs.py).
    graph: Callable | None = None
    # kind "training": loss(ops, params, x, y) in numpy style over an ArrayOps (workloads/array_ops.py),
    # and split_rows(rows) -> (x, y) of a batch of sample rows.
    model: Callable | None = None
    split_rows: Callable | None = None
    # check_data(data_dir) raises workloads.data.DataError (one line) when the data this workload reads
    # (the run's --data-dir, or None: synthetic) cannot serve it:
    # called before a run's first trial, so that bad --data-dir contents never stop a run midway.
    check_data: Callable[[str | None], None] | None = None
    # The runner reads the machine's energy counter around each measured process.
    measures_energy: bool = False
    # step_flops(params) -> FLOPs of one step (workloads/flops.py's rules), for workloads whose
    # step is matrix products: the report shows GFLOP/s and their share of the core's peak.
    step_flops: Callable[[Mapping], int] | None = None
    # step_products(params) -> (m, k, n) of one step's matrix products: the shapes at which
    # harness/machine/ceiling.py measures the best library SGEMM, the practical ceiling.
    step_products: Callable[[Mapping], list[tuple[int, int, int]]] | None = None
    # step_bytes(params, precision) -> the least bytes one step moves and its working set (workloads/flops.py's
    # StepBytes): with step_flops, the point's roofline bound (harness/machine/roofs.py).
    step_bytes: Callable[[Mapping, str], object] | None = None
    paper: PaperTable | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"workload {self.name}: kind {self.kind!r} is not one of {', '.join(KINDS)}")

    def step_rate(self, params: Mapping, seconds: float | None) -> float | None:
        """FLOP/s of a step of `seconds` at a point; None where the workload has no FLOP count."""
        return self.step_flops(params) / seconds if self.step_flops and seconds else None

    def timing_blocks(self, iterations: int) -> int:
        return iterations if self.blocks is None else self.blocks

    def points(self, narrow: Mapping[str, tuple] | None = None, profile: str | None = None) -> list[dict]:
        narrow = narrow or {}
        defaults = {**self.grid, **self.profile_grid.get(profile, {})}
        names = list(self.grid)
        values = [narrow.get(n, defaults[n]) for n in names]
        return [dict(zip(names, combo)) for combo in itertools.product(*values)]

    def check(self, params: Mapping, outputs: Mapping | None, precision: str, inputs: Path | None = None) -> Check:
        expected = self.reference(params, inputs) if self.reference else {}
        got = dict(outputs or {})
        if not expected:
            return Check(True, None, {}, got)
        missing = [k for k in expected if not isinstance(got.get(k), (int, float))]
        if missing:
            return Check(False, None, expected, got, f"missing outputs: {', '.join(missing)}")
        errors = [relative_error(got[k], v, self.error_floor) for k, v in expected.items()]
        worst = max(errors)
        limit = self.tolerance[precision]
        ok = worst <= limit
        return Check(ok, worst, expected, got, None if ok else f"relative error {worst:.3g} > {limit:g}")


def relative_error(got: float, want: float, floor: float = 0.0) -> float:
    if not math.isfinite(got):
        return math.inf
    return abs(got - want) / max(abs(want), floor, 1e-300)
