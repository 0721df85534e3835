"""The measures a report table can show, by id: how to read ours from a point and the paper's from its row.

A workload's PaperTable names its metrics by these ids. Values are in SI units (seconds, bytes,
joules, clocks; a share as a fraction of 1); `scale` turns them into the unit shown. The id "paper_memory" stands for the
memory the paper reports on the run's OS (VmPeak on Linux, private bytes on Windows, resident
on macOS), with peak resident beside it where that is another measure.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from engines.base import BASELINE
from engines.none import FLOOR
from harness.analysis.points import POINT_STATISTIC, STATISTIC, Point
from harness.machine import roofs
from harness.store.results import params_key
from harness.units import MIB, MIB_LABEL
from workloads import load

MWH = 3.6  # joules per mWh


@dataclass(frozen=True)
class Metric:
    # The table's field of our value and the CSV's header: named with the unit of its raw value (…_s, …_bytes,
    # …_j, …_fraction: a share of 1, which `unit` shows as %), not the unit shown; paper_<key>, rel_<key> ... hold
    # the rest.
    key: str
    title: str
    unit: str
    scale: float  # shown value = SI value * scale
    ours: Callable[[Point], float | None]
    ours_std: Callable[[Point], float | None] | None = None
    # The paper's CSV metric, and the factor that turns it into SI units.
    paper: str | None = None
    paper_to_si: float = 1.0
    # The paper prints a total over its iterations (Tables 2-4, 19): divided by them per iteration.
    paper_per_iteration: bool = False
    # The paper's printed relative factor, where it prints one; otherwise it is computed.
    paper_rel: str | None = None
    # Trial field saying why this measure is missing on this machine (or that it is an estimate).
    source_field: str | None = None
    # What a reader must know to read the column; {paper_iterations}, {our_iterations} and
    # {os} are filled in. Notes shared by several metrics are written once.
    note: str | None = None
    # Shown with its factor over BurTorch's at the same point; a rate already reads as one.
    relative: bool = True
    # A word shown after our value, kept in the table's `<key>_kind` field (the roofline bound's kind).
    kind: Callable[[Point], str | None] | None = None
    # What one reading is known to, in SI units (0: as exact as a float): a peak of memory is whole pages.
    resolution: float = 0.0


PAGE = 4096  # bytes: the least a process's peak of memory moves by (it maps whole pages)
PER_ITERATION_NOTE = (f"Times are per iteration: ours = the {POINT_STATISTIC} of each trial's time, the {STATISTIC} "
                      "({our_iterations} iterations per trial); paper = its total over {paper_iterations} "
                      "iterations / {paper_iterations}.")
SMALL_NOTE = ("Min = the fastest trial. CPU clocks per iteration: ours = cpu_clocks / iterations, ≈ marks an "
              "estimate (CPU time × TSC rate); paper = its total clocks / {paper_iterations}.")
MEMORY_NOTE = "MiB = 2^20 bytes. Peak private and resident memory as the paper's Table 3 (Windows) defines them."
ENERGY_NOTE = ("Totals for the whole process, not per iteration: ours {our_iterations} iterations, "
               "paper {paper_iterations}. 1 mWh = 3.6 J.")


def _resident(point: Point):
    return point.mean("peak_resident_bytes")


def step_rate(point: Point) -> float | None:
    """FLOP/s of a training step: its workload's count (Workload.step_flops) over the mean step time; none
    for the harness's floor row, whose empty step computes nothing."""
    if point.engine == FLOOR:
        return None
    try:
        workload = load(point.workload)
    except KeyError:  # a plug-in workload this process does not know
        return None
    return workload.step_rate(point.params, point.time_mean())


GFLOPS_NOTE = ("GFLOP/s = one step's FLOPs (workloads/flops.py: the matrix products' multiply-adds, forward and "
               "both gradients; the same count for every engine) / its mean time: an effective rate where an "
               "engine multiplies less than the count.")


def peak_share(peak_gflops: float, source: str) -> Metric:
    """GFLOP/s as a share of the core's peak FP32 rate measured at the run's start."""
    def share(point: Point) -> float | None:
        rate = step_rate(point)
        return rate / (peak_gflops * 1e9) if rate else None

    return Metric("peak_share_fraction", "Share of FP32 peak", "%", 100.0, share, relative=False,
                  note=f"Share of FP32 peak = GFLOP/s / this core's peak, {peak_gflops:.1f} GFLOP/s ({source}, at "
                       "the run's start): near 100% a step is bound by compute, far below it by overheads.")


def library_share(ceilings: list[dict]) -> Metric:
    """GFLOP/s as a share of the best library SGEMM at the point's own products (machine/ceiling.py)."""
    rates = {(c["workload"], params_key(c["params"])): c["gflops"] for c in ceilings}

    def share(point: Point) -> float | None:
        rate, ceiling = step_rate(point), rates.get((point.workload, point.key.params))
        return rate / (ceiling * 1e9) if rate and ceiling else None

    measured = ", ".join(sorted({c["library"] for c in ceilings if c.get("gflops")}))
    missing = "; ".join(sorted({c["reason"] for c in ceilings if not c.get("gflops")}))
    where = "; ".join(filter(None, (measured, missing and f"n/a: {missing}")))
    return Metric("library_share_fraction", "Share of library SGEMM", "%", 100.0, share, relative=False,
                  note="Share of library SGEMM = GFLOP/s / the best single-thread SGEMM at the step's own products "
                       f"on the run's core ({where}): the practical ceiling; at 100% a step runs at library speed.")


def products_share(ceilings: list[dict]) -> Metric:
    """Our block products alone at the point's products, as a share of the library ceiling; on our native row."""
    rates = {(c["workload"], params_key(c["params"])): c for c in ceilings}

    def share(point: Point) -> float | None:
        c = rates.get((point.workload, point.key.params)) or {}
        return c["ours_gflops"] / c["gflops"] if point.engine == BASELINE and c.get("ours_gflops") and c.get("gflops") else None

    built = "; ".join(sorted({c["ours_build"] for c in ceilings if c.get("ours_gflops")} |
                             {f"n/a: {c['ours_reason']}" for c in ceilings if "ours_reason" in c}))
    return Metric("products_share_fraction", "Our products alone, share of library SGEMM", "%", 100.0, share, relative=False,
                  note="Our products alone = our block products (burtorch-bench --products, C = A B) timed at the "
                       f"step's own products, as the library is ({built}), over the library's rate: the products "
                       "apart from the rest of a step (graph, activations, update); on our native row.")


def point_bound(point: Point, machine: roofs.Roofs | None) -> roofs.Bound | None:
    """The point's roofline bound in the precision its trials computed in; none for the floor row."""
    if machine is None or point.engine == FLOOR:
        return None
    try:
        workload = load(point.workload)
    except KeyError:  # a plug-in workload this process does not know
        return None
    precision = next((t["precision"] for t in point.trials if t.get("precision")), workload.precision)
    return roofs.bound(workload, point.params, precision, machine)


def roofline_share(native: dict | None) -> Metric:
    """The point's roofline bound as a share of its time (machine/roofs.py), with the bound's kind; n/a with
    the reason where the run measured no bandwidth."""
    machine, why = roofs.roofs(native)
    bounds: dict[tuple, roofs.Bound | None] = {}  # a point's bound, computed once for its share and its kind

    def bound_of(point: Point) -> roofs.Bound | None:
        key = (point.engine, point.workload, params_key(point.params))
        if key not in bounds:
            bounds[key] = point_bound(point, machine)
        return bounds[key]

    def share(point: Point) -> float | None:
        bound = bound_of(point)
        return roofs.share(bound and bound.seconds, point.time_mean())

    def kind(point: Point) -> str | None:
        bound = bound_of(point)
        return bound.label if bound else None

    how = f"measured: {machine.source}" if machine else f"n/a: {why}"
    return Metric("roofline_share_fraction", "Share of roofline", "%", 100.0, share, relative=False, kind=kind,
                  note="Share of roofline = the point's roofline bound / its time (100%: at the roof), the bound "
                       "= max(FLOPs / the core's FP32 peak, the least bytes a step moves (workloads/flops.py), each "
                       "byte at the fastest level that can hold it at its reuse, over that level's best rate); its "
                       f"kind, compute or memory and the level its working set fits in, beside it ({how}).")


METRICS = {
    "time": Metric("time_per_iter_s", "Time / iteration", "µs", 1e6, Point.time_mean, Point.time_std_over_trials,
                   paper="compute_time_s", paper_per_iteration=True, paper_rel="relative_to_burtorch",
                   note=PER_ITERATION_NOTE),
    "min_time": Metric("min_time_per_iter_s", "Min time / iteration", "µs", 1e6, Point.time_min,
                       paper="min_compute_time_s", paper_per_iteration=True, paper_rel="relative_min_compute_time",
                       note=SMALL_NOTE),
    "cpu_clocks": Metric("cpu_clocks_per_iter", "CPU clocks / iteration", "clocks", 1.0,
                         lambda p: p.per_iteration("cpu_clocks"), paper="cpu_clocks_mticks", paper_to_si=1e6,
                         paper_per_iteration=True, paper_rel="relative_cpu_clocks", source_field="cpu_clocks_source",
                         note=SMALL_NOTE),
    "peak_private": Metric("peak_private_bytes", "Peak private", MIB_LABEL, 1 / MIB, lambda p: p.mean("peak_private_bytes"),
                           paper="peak_private_mb", paper_to_si=MIB, paper_rel="relative_peak_private",
                           source_field="peak_private_source", note=MEMORY_NOTE),
    "peak_resident": Metric("peak_resident_bytes", "Peak resident", MIB_LABEL, 1 / MIB, _resident,
                            paper="peak_resident_mb", paper_to_si=MIB, paper_rel="relative_peak_resident",
                            note=MEMORY_NOTE),
    "save_time": Metric("save_per_iter_s", "Save / iteration", "µs", 1e6, lambda p: p.per_iteration("save_s"),
                        paper="save_s", paper_per_iteration=True,
                        note="Save and load times are per iteration: ours = the trial's save_s / load_s totals / "
                             "iterations; paper = its total over {paper_iterations} iterations / {paper_iterations}."),
    "load_time": Metric("load_per_iter_s", "Load / iteration", "µs", 1e6, lambda p: p.per_iteration("load_s"),
                        paper="load_s", paper_per_iteration=True),
    "file_size": Metric("file_size_bytes", "File size", "bytes", 1.0, lambda p: p.mean("file_size_bytes"),
                        paper="file_size_bytes"),
    "init": Metric("init_time_s", "Init", "ms", 1e3, lambda p: p.mean("init_time_s"), paper="init_ms",
                   paper_to_si=1e-3, note="Init = end-to-end time of a 1-step run."),
    "gflops": Metric("flops_per_s", "Step rate", "GFLOP/s", 1e-9, step_rate, relative=False, note=GFLOPS_NOTE),
    "step_time": Metric("time_per_step_s", "Compute / step", "ms", 1e3, Point.time_mean, Point.time_std_within,
                        paper="compute_ms_per_iter", paper_to_si=1e-3,
                        note=f"Compute / step, ours: the {POINT_STATISTIC} of each trial's time, the {STATISTIC}."),
    "wall_time": Metric("wall_time_s", "Time incl. init", "s", 1.0, lambda p: p.mean("wall_time_s"),
                        paper="time_with_init_s", note=ENERGY_NOTE),
    **{f"energy_{part}": Metric(f"energy_{part}_j", f"Energy {title}", "mWh", 1 / MWH,
                                lambda p, part=part: p.mean(f"energy_{part}_j"), paper=f"energy_{part}_mwh",
                                paper_to_si=MWH, source_field="energy_source")
       for part, title in (("total", "total"), ("task", "task"), ("os", "OS"))},
}

# The trial field holding the memory the paper reports for MLP/GPT on each OS (paper_workloads.md).
PAPER_MEMORY = {
    "linux": Metric("peak_virtual_bytes", "Peak virtual (VmPeak)", MIB_LABEL, 1 / MIB,
                    lambda p: p.mean("peak_virtual_bytes"), paper="peak_mem_mb", paper_to_si=MIB, resolution=PAGE),
    "windows": Metric("peak_private_bytes", "Peak private", MIB_LABEL, 1 / MIB, lambda p: p.mean("peak_private_bytes"),
                      paper="peak_mem_mb", paper_to_si=MIB, source_field="peak_private_source", resolution=PAGE),
    "macos": Metric("peak_resident_bytes", "Peak resident", MIB_LABEL, 1 / MIB, _resident, paper="peak_mem_mb",
                    paper_to_si=MIB, resolution=PAGE),
}
# --instructions: beside time in any table whose run counted them, labelled a proxy.
INSTRUCTIONS = Metric("instructions_per_iter", "Instructions / iteration (a proxy)", "instr.", 1.0,
                      lambda p: p.mean("instructions_per_iter"), source_field="instructions_reason",
                      note="Instructions per iteration of the timed loop, counted under valgrind (burtbench run "
                           "--instructions): a proxy for time that repeats where time is noisy, never a time.")
RESIDENT_BESIDE = Metric("peak_resident_bytes", "Peak resident", MIB_LABEL, 1 / MIB, _resident)


def resolve(ids: tuple[str, ...], os_name: str, native: dict | None = None,
            ceilings: list | None = None) -> list[Metric]:
    """The metrics of a table on a run's OS, in order; GFLOP/s with their share of the core's peak and
    the time's share of the roofline bound where the run measured the peak (manifest.json's "native"; the
    bound n/a where it has no bandwidth), and of the library ceiling ("ceiling")."""
    metrics = []
    for metric_id in ids:
        if metric_id == "gflops":
            metrics.append(METRICS[metric_id])
            if (native or {}).get("peak_gflops_fp32"):
                metrics.append(peak_share(native["peak_gflops_fp32"], native["peak_source"]))
                metrics.append(roofline_share(native))
            if ceilings:
                metrics.append(library_share(ceilings))
                if any("ours_gflops" in c for c in ceilings):
                    metrics.append(products_share(ceilings))
        elif metric_id == "paper_memory":
            memory = PAPER_MEMORY[os_name]
            metrics.append(memory)
            if memory.key != RESIDENT_BESIDE.key:
                metrics.append(RESIDENT_BESIDE)
        else:
            metrics.append(METRICS[metric_id])
    return metrics


def memory_note(os_name: str, os_label: str) -> str:
    return f"{PAPER_MEMORY[os_name].title}: the memory the paper reports on {os_label}; MiB = 2^20 bytes."
