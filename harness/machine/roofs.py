"""A training point's roofline bound: the least time the machine's roofs allow one step.

bound = max(FLOPs ÷ the core's peak (machine/peak.py), the memory time), from a run's manifest ("native":
"peak_gflops_fp32" and "bandwidth", machine/bandwidth.py) and the workload's own counts (Workload.step_flops,
step_bytes: workloads/flops.py). The memory time is a floor: every byte is charged to the fastest level
that can hold it at its reuse. A step touches its working set W again at each sweep, and a cache of C bytes
can hold at most C of it between two touches, so of each sweep's bytes the share min(W, C_k) - min(W, C_k-1)
over W is charged to level k (the smallest caches first) and the rest to DRAM; each share's read-only bytes
at that level's read rate, its read-and-written bytes at its read-modify-write rate. A level's rates are the
best the probe measured there or at any farther level (a nearer cache serves at least as fast), so a probe's
noise never makes the bound exceed a step that runs at the machine's best. The level shown is where the
whole working set fits (the smallest cache that holds it, else DRAM). A time shown as a share of the bound
says how near a step runs to what the machine can do: 100% is at the roof. A run whose manifest lacks a roof
has no bound, and the reason says which.

The bound is no looser than LEAST_STREAM_SHARE for a stream: the probe's own sweep over a level's working
set, run at that level's rate, has at most 1 - LEAST_STREAM_SHARE of its bytes charged to the faster caches
below (machine/bandwidth.py sizes each working set past the level below by PAST_BELOW, where the level
allows it, and the DRAM set past the last cache), so it lands within 80-100% of its bound; `doctor
--remeasure` times such a stream at each level again and shows its share (machine/bandwidth.py's streams).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

COMPUTE, MEMORY = "compute", "memory"
# The least share of its bound a stream at a level's own best rate lands at (the module's docstring).
LEAST_STREAM_SHARE = 0.8


@dataclass(frozen=True)
class Memory:
    """The memory roofs alone: machine/bandwidth.py's record of each level, size_bytes (None for DRAM) and
    read/rmw_bytes_per_s."""
    levels: list[dict]

    def level_for(self, working_set: int) -> dict:
        """The smallest level whose size holds `working_set` bytes; the last (DRAM) where none does."""
        return next((lv for lv in self.levels if lv["size_bytes"] is not None and working_set <= lv["size_bytes"]),
                    self.levels[-1])

    def served(self, working_set: int) -> list[tuple[float, float, float]]:
        """(share of the bytes, read rate, read-modify-write rate) of each level that serves a sweep over
        `working_set` bytes, at the least: its capacity's share, at its best rates (the module's docstring)."""
        shares, held = [], 0
        for k, level in enumerate(self.levels):
            size = level["size_bytes"]
            reach = working_set if size is None else min(working_set, size)
            if reach > held:
                farther = self.levels[k:]
                shares.append(((reach - held) / working_set, max(lv["read_bytes_per_s"] for lv in farther),
                               max(lv["rmw_bytes_per_s"] for lv in farther)))
                held = reach
        return shares

    def memory_seconds(self, read: int, updated: int, working_set: int) -> float:
        """The least time to move `read` bytes read only and `updated` read and written back, over a working set
        of `working_set` bytes."""
        return sum(share * (read / read_rate + updated / rmw_rate)
                   for share, read_rate, rmw_rate in self.served(max(working_set, 1)))

    def stream_shares(self, working_set: int, read_rate: float, rmw_rate: float) -> tuple[float, float]:
        """A stream of known bytes as the probe runs it, a read sweep over `working_set` bytes at `read_rate` and
        an in-place update at `rmw_rate` (bytes read plus written per second): each one's bound over its time."""
        return (share(self.memory_seconds(working_set, 0, working_set), working_set / read_rate),
                share(self.memory_seconds(0, 2 * working_set, working_set), 2 * working_set / rmw_rate))


@dataclass(frozen=True)
class Roofs(Memory):
    peak_gflops: float
    source: str  # how both were measured


@dataclass(frozen=True)
class Bound:
    seconds: float
    kind: str  # COMPUTE or MEMORY: the larger of the two times
    level: str  # where the working set fits
    flops: int
    moved: int  # the least bytes a step moves (StepBytes.total)
    compute_s: float
    memory_s: float

    @property
    def intensity(self) -> float:
        """FLOPs per byte: the roofline figure's x."""
        return self.flops / self.moved

    @property
    def label(self) -> str:
        return COMPUTE if self.kind == COMPUTE else f"{MEMORY}, {self.level}"


def roofs(native: Mapping | None) -> tuple[Roofs | None, str]:
    """The run's roofs from its manifest's "native", or (None, why there are none)."""
    native = native or {}
    peak = native.get("peak_gflops_fp32")
    if not peak:
        return None, f"no FP32 peak in this run ({native.get('peak_source') or 'no burtorch-bench when it ran'})"
    measured = native.get("bandwidth")
    if measured is None:
        return None, "no memory bandwidth in this run (its manifest predates burtorch-bench --bandwidth)"
    if not measured.get("levels"):
        return None, f"no memory bandwidth in this run: {measured.get('reason')}"
    return Roofs(measured["levels"], float(peak),
                 f"peak {peak:.1f} GFLOP/s ({native.get('peak_source')}); bandwidth {measured.get('source')}, "
                 f"cache sizes: {measured.get('sizes_source')}"), ""


def bound(workload, params: Mapping, precision: str, machine: Roofs) -> Bound | None:
    """The point's bound under `machine`'s roofs; None where the workload declares no FLOPs or bytes."""
    if not (workload.step_flops and workload.step_bytes):
        return None
    flops = workload.step_flops(params)
    moved = workload.step_bytes(params, precision)
    level = machine.level_for(moved.working_set)
    compute_s = flops / (machine.peak_gflops * 1e9)
    memory_s = machine.memory_seconds(moved.read, moved.updated, moved.working_set)
    return Bound(max(compute_s, memory_s), COMPUTE if compute_s >= memory_s else MEMORY, level["level"], flops,
                 moved.total, compute_s, memory_s)


def share(bound_s: float | None, seconds: float | None) -> float | None:
    """The bound as a share of a measured time (1.0: at the roof); None where either is missing."""
    return bound_s / seconds if bound_s and seconds else None
