"""The roofline figure of each training workload: where every engine's steps stand under the machine's roofs.

x: a step's arithmetic intensity, its FLOPs over the least bytes it moves (workloads/flops.py); y: the
GFLOP/s it achieved (the same count over its time); both log. The roofs are the run's own (manifest.json's
"native": the core's FP32 peak, a flat line, and the bandwidth of each level, machine/bandwidth.py: a read
line, solid, and a read-modify-write line, dashed, each bandwidth × intensity up to the peak). A point
under its roof by a factor runs at 1/factor of its bound (the tables' share of roofline). At each point a
grey line runs from ours to the best other framework (analysis/points.py's best_peer, as `make perf-grid`
sets it) and one label names the point with both shares of its bound and of the peak, so the gap at each
point reads off the figure. A run without both roofs gets no figure: its tables say why.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engines.base import BASELINE
from harness.analysis.points import Point, best_peer, in_order, run_points
from harness.analysis.summary import shown_params
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
            by_workload.setdefault(point.workload, []).append(Mark(point, bound))
    return [figure(name, known[name].title, marks, machine, folder) for name, marks in by_workload.items()]


@dataclass(frozen=True)
class Mark:
    """One engine's step at one point (analysis/points.py's Point) under the roofs."""
    point: Point
    bound: roofs.Bound

    @property
    def engine(self) -> str:
        return self.point.engine

    @property
    def gflops(self) -> float:
        return self.bound.flops / self.point.time_mean() / 1e9

    @property
    def share(self) -> float:
        return roofs.share(self.bound.seconds, self.point.time_mean())


def figure(workload: str, title: str, marks: list[Mark], machine: roofs.Roofs, folder: Path) -> Figure:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9.5, 6))
    xs = [mark.bound.intensity for mark in marks]
    low, high = min(xs) / 3, max(xs) * 3
    _roofs(ax, machine, low, high)
    shown = set()
    for mark in sorted(marks, key=lambda m: m.engine):
        color, marker = engine_style(mark.engine)
        style = {k: v for k, v in _emphasis(mark.engine).items() if k != "linewidth"}
        ax.plot([mark.bound.intensity], [mark.gflops], linestyle="none", marker=marker, color=color,
                label=None if mark.engine in shown else mark.engine, **style)
        shown.add(mark.engine)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(low, high)
    _label(ax, workload, marks, machine.peak_gflops)
    ax.set_xlabel("arithmetic intensity (FLOP per byte a step must move, workloads/flops.py)")
    ax.set_ylabel("achieved GFLOP/s (the model's FLOPs / the step's time)")
    name = title.split(",")[0].split("(")[0].strip()
    ax.set_title(f"{name}: every point under this core's roofs (solid: read, dashed: read-modify-write bandwidth; "
                 f"flat: FP32 peak)\ngrey: {BASELINE} to the best other framework at a point, labelled with "
                 "both shares of its roofline bound and of the peak", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    return _save(fig, folder, f"fig_roofline_{workload}", f"{name}: roofline")


# A label's height (two lines) and the widest label's reach, as shares of the axes' log span: labels nearer
# than these are stacked apart. A label starts LABEL_OFFSET times its point's intensity away, clear of its marks.
LABEL_HEIGHT, LABEL_REACH, LABEL_OFFSET = 0.07, 0.3, 1.3


@dataclass(frozen=True)
class Label:
    """A point's label: where its point is drawn (ours, else the best framework's mark), its text (the point;
    ours' and the best other framework's share of the bound and of the peak), the gap's GFLOP/s (ours', the
    other's)."""
    x: float
    y: float
    text: str
    gap: tuple[float, float] | None


def labels(workload: str, marks: list[Mark], peak_gflops: float) -> list[Label]:
    """One label for each point of `marks`."""
    by_point: dict[str, list[Mark]] = {}
    for mark in marks:
        by_point.setdefault(mark.point.key.params, []).append(mark)
    out = []
    for at_point in by_point.values():
        ours = next((m for m in at_point if m.engine == BASELINE), None)
        best = best_peer([m.point for m in at_point], BASELINE)
        peer = next((m for m in at_point if best and m.point is best), None)
        text = shown_params(workload, at_point[0].point.params).strip()
        anchor = ours or peer or max(at_point, key=lambda m: m.gflops)
        both = ours is not None and peer is not None
        if both:
            text += (f"\nroof {ours.share:.0%} / {peer.share:.0%}, "
                     f"peak {ours.gflops / peak_gflops:.0%} / {peer.gflops / peak_gflops:.0%}")
        out.append(Label(anchor.bound.intensity, anchor.gflops, text, (ours.gflops, peer.gflops) if both else None))
    return out


def placed(x: np.ndarray, y: np.ndarray, x_span: tuple[float, float],
           y_span: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """Labels at log10 (x, y) in axes of these log10 spans: each label's log10 height, and whether it stands left
    of its point. Labels whose reach across the axes meets another's form a group; a group whose last point is
    in the axes' right third is labelled on the left, never over the legend. Labels that then meet form a stack,
    at least a label's height apart, centred on their points and kept inside the axes."""
    (x_low, x_high), (y_low, y_high) = x_span, y_span
    reach, offset = LABEL_REACH * (x_high - x_low), np.log10(LABEL_OFFSET)
    groups = _meeting(x + offset, reach)
    left = np.zeros(len(x), dtype=bool)
    for group in set(groups):
        left[groups == group] = x[groups == group].max() > x_low + 2 * (x_high - x_low) / 3
    stacks = _meeting(np.where(left, x - offset - reach, x + offset), reach)
    heights, gap = y.astype(float), LABEL_HEIGHT * (y_high - y_low)
    for stack in set(stacks):
        at = np.flatnonzero(stacks == stack)
        at = at[np.argsort(y[at])]
        steps = gap * np.arange(len(at))
        stacked = np.maximum.accumulate(y[at] - steps) + steps  # each at least `gap` above the one below
        stacked += y[at].mean() - stacked.mean()
        heights[at] = stacked + max(0.0, y_low + gap - stacked[0]) - max(0.0, stacked[-1] - (y_high - gap))
    return heights, left


def _meeting(start: np.ndarray, reach: float) -> np.ndarray:
    """Of spans [start, start + reach], which meet, directly or through others: a group number for each."""
    order = np.argsort(start)
    reached = np.maximum.accumulate(np.concatenate(([-np.inf], start[order][:-1] + reach)))
    groups = np.empty(len(start), dtype=int)
    groups[order] = np.cumsum(start[order] > reached)  # a new group where no span before reaches this one
    return groups


def _label(ax, workload: str, marks: list[Mark], peak_gflops: float) -> None:
    """Each point's gap, a grey line from ours to the best other framework, and its label with a leader."""
    found = labels(workload, marks, peak_gflops)
    for label in found:
        if label.gap:
            ax.plot([label.x] * 2, label.gap, color="#969696", linewidth=1.0, zorder=2)
    heights, left = placed(np.log10([lb.x for lb in found]), np.log10([lb.y for lb in found]),
                           tuple(np.log10(ax.get_xlim())), tuple(np.log10(ax.get_ylim())))
    for label, height, on_left in zip(found, heights, left):
        x = label.x / LABEL_OFFSET if on_left else label.x * LABEL_OFFSET
        ax.annotate(label.text, (label.x, label.y), xytext=(x, 10**height), fontsize=6.5, va="center",
                    ha="right" if on_left else "left", color="#252525",
                    arrowprops={"arrowstyle": "-", "color": "#bdbdbd", "linewidth": 0.6})


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
