"""A training point's roofline bound: the least time the machine's roofs allow one step.

bound = max(FLOPs ÷ the core's peak (machine/peak.py), bytes ÷ the bandwidth of the level its working set
fits in (machine/bandwidth.py)), from a run's manifest ("native": "peak_gflops_fp32" and "bandwidth") and
the workload's own counts (Workload.step_flops, step_bytes: workloads/flops.py). The memory time is the
step's read-only bytes at the level's read rate plus its read-and-written bytes at its read-modify-write
rate. The level is the smallest cache whose size holds the working set, else DRAM. A time shown as a
share of the bound says how near a step runs to what the machine can do: 100% is at the roof.
A run whose manifest lacks a roof has no bound, and the reason says which.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

COMPUTE, MEMORY = "compute", "memory"


@dataclass(frozen=True)
class Roofs:
    peak_gflops: float
    levels: list[dict]  # machine/bandwidth.py's record: size_bytes (None for DRAM), read/rmw_bytes_per_s
    source: str  # how both were measured

    def level_for(self, working_set: int) -> dict:
        """The smallest level whose size holds `working_set` bytes; the last (DRAM) where none does."""
        return next((lv for lv in self.levels if lv["size_bytes"] is not None and working_set <= lv["size_bytes"]),
                    self.levels[-1])


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
    return Roofs(float(peak), measured["levels"],
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
    memory_s = moved.read / level["read_bytes_per_s"] + moved.updated / level["rmw_bytes_per_s"]
    return Bound(max(compute_s, memory_s), COMPUTE if compute_s >= memory_s else MEMORY, level["level"], flops,
                 moved.total, compute_s, memory_s)


def share(bound_s: float | None, seconds: float | None) -> float | None:
    """The bound as a share of a measured time (1.0: at the roof); None where either is missing."""
    return bound_s / seconds if bound_s and seconds else None
