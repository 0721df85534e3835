"""This core's peak FP32 multiply-add rate: the ceiling a training step's GFLOP/s are held to.

`burtorch-bench --peak` runs independent chains of the same vector multiply-adds as the native
engine's block products, on the measured core, and prints the best rate of many short timings.
It is our driver's measure, so it exists where the native engine is built.
"""
from __future__ import annotations

import json
import subprocess

from engines.base import find_executable
from harness.measure import affinity

DRIVER = "burtorch-bench"


def fp32_peak(cpu: int) -> tuple[float | None, str]:
    """(peak GFLOP/s, how it was measured), or (None, why not)."""
    driver = find_executable(DRIVER)
    if driver is None:
        return None, f"no {DRIVER}: build the project (make setup) to measure the core's peak"
    try:
        # Linux pins the child from its first instruction; elsewhere it runs where the OS puts it.
        with affinity.pinned_spawning(cpu):
            out = subprocess.run([driver, "--peak"], capture_output=True, text=True, timeout=60, check=True)
        return float(json.loads(out.stdout)["peak_gflops_fp32"]), f"{DRIVER} --peak on core {cpu}"
    except (OSError, subprocess.SubprocessError, ValueError, KeyError) as exc:
        return None, f"{DRIVER} --peak failed: {exc}"
