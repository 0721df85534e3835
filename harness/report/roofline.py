"""The roofline figure of each training workload: where every engine's steps stand under the machine's roofs.

x: a step's arithmetic intensity, its FLOPs over the least bytes it moves (workloads/flops.py); y: the
GFLOP/s it achieved (the same count over its time); both log. The roofs are the run's own (manifest.json's
"native": the core's FP32 peak, a flat line, and the bandwidth of each level, machine/bandwidth.py: a read
line, solid, and a read-modify-write line, dashed, each bandwidth × intensity up to the peak). A point
under its roof by a factor runs at 1/factor of its bound (the tables' share of roofline). A run without
both roofs gets no figure: its tables say why.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.analysis.points import in_order, run_points
from harness.machine import roofs
from harness.report.figures import Figure, _emphasis, _pyplot, _save, engine_style
from harness.analysis.metrics import point_bound
from workloads import all_workloads

# One colour per level, the same in every figure; the compute roof in black.
LEVEL_COLORS = {"L1": "#08519c", "L2": "#3182bd", "L3": "#6baed6", "DRAM": "#9e9ac8"}


def draw_all(run, folder: Path) -> list[Figure]:
    """One figure per training workload of the run that declares its FLOPs and bytes."""
    machine, _ = roofs.roofs(run.manifest.get("native"))
    if machine is None:
        return []
    known = all_workloads()
    by_workload: dict[str, list] = {}
    for point in in_order(run_points(run)):
        bound = point_bound(point, machine) if point.workload in known and not point.failed() else None
        if bound is not None and point.time_mean():
            by_workload.setdefault(point.workload, []).append((point.engine, bound, point.time_mean()))
    return [figure(name, known[name].title, marks, machine, folder) for name, marks in by_workload.items()]


def figure(workload: str, title: str, marks: list[tuple], machine: roofs.Roofs, folder: Path) -> Figure:
    """marks: (engine, its point's Bound, its time) per point."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9.5, 6))
    xs = [bound.intensity for _, bound, _ in marks]
    low, high = min(xs) / 3, max(xs) * 3
    _roofs(ax, machine, low, high)
    shown = set()
    for engine, bound, seconds in sorted(marks, key=lambda m: m[0]):
        color, marker = engine_style(engine)
        style = {k: v for k, v in _emphasis(engine).items() if k != "linewidth"}
        ax.plot([bound.intensity], [bound.flops / seconds / 1e9], linestyle="none", marker=marker, color=color,
                label=None if engine in shown else engine, **style)
        shown.add(engine)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(low, high)
    ax.set_xlabel("arithmetic intensity (FLOP per byte a step must move, workloads/flops.py)")
    ax.set_ylabel("achieved GFLOP/s (the model's FLOPs / the step's time)")
    name = title.split(",")[0].split("(")[0].strip()
    ax.set_title(f"{name}: every point under this core's roofs\n(solid: read, dashed: read-modify-write bandwidth; "
                 "flat: FP32 peak)", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    return _save(fig, folder, f"fig_roofline_{workload}", f"{name}: roofline")


def _roofs(ax, machine: roofs.Roofs, low: float, high: float) -> None:
    """The compute roof and, per level, its read and read-modify-write roofs, each up to the peak."""
    x = np.geomspace(low, high, 200)
    ax.plot(x, np.full_like(x, machine.peak_gflops), color="black", linewidth=1.5,
            label=f"FP32 peak {machine.peak_gflops:.0f} GFLOP/s")
    for level in machine.levels:
        color = LEVEL_COLORS.get(level["level"], "#969696")
        for kind, style in (("read", "-"), ("rmw", "--")):
            rate = level[f"{kind}_bytes_per_s"] / 1e9
            ax.plot(x, np.minimum(x * rate, machine.peak_gflops), color=color, linestyle=style, linewidth=1.1,
                    label=f"{level['level']} {kind} {rate:.0f} GB/s")
