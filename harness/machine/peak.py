"""This core's peak FP32 multiply-add rate: the ceiling a training step's GFLOP/s are held to.

`burtorch-bench --peak` runs independent chains of the same vector multiply-adds as the native
engine's block products, on the measured core, and prints the best rate of many short timings.
It is our driver's measure, so it exists where the native engine is built. Each run measures it
again (it takes a moment) and its manifest keeps it, with when, on which core and how busy that core was
("peak_provenance").
"""
from __future__ import annotations

import subprocess
from datetime import datetime, timezone

from engines import children
from engines.base import find_executable
from harness.machine import host
from harness.measure import affinity
from harness.records.base import Damaged, parse, validate
from harness.records.machine import PeakProbe

DRIVER = "burtorch-bench"


def fp32_peak(cpu: int) -> tuple[float | None, str]:
    """(peak GFLOP/s, how, when and under what load it was measured), or (None, why not)."""
    driver = find_executable(DRIVER)
    if driver is None:
        return None, f"no {DRIVER}: build the project (make setup) to measure the core's peak"
    try:
        # Linux pins the child from its first instruction; elsewhere it runs where the OS puts it.
        with affinity.pinned_spawning(cpu):
            out = children.run([driver, "--peak"], f"measuring the core's peak ({DRIVER} --peak)", timeout=60,
                               capture_output=True, text=True)
        line = validate(parse(out.stdout), PeakProbe, f"{DRIVER} --peak") if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        return None, f"{DRIVER} --peak failed: {exc}"
    if line is None:
        return None, f"{DRIVER} --peak failed: {(out.stderr.strip().splitlines() or [f'exit {out.returncode}'])[-1]}"
    if isinstance(line, Damaged):
        return None, f"{DRIVER} --peak failed: {line.field}: {line.why}"
    return line.peak_gflops_fp32, f"{DRIVER} --peak on core {cpu}"


def provenance(cpu: int) -> dict:
    """When a probe on `cpu` runs and how busy the core was just before (records/run.py's Provenance)."""
    return {"measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "cpu": cpu,
            "busy": host.core_busy(cpu)}
