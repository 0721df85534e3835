"""The TSC rate, and the labelled estimate of CPU clocks made from it where no counter could count.

Runs in the parent: a trial's CPU time × the rate is an estimate, marked `tsc_estimate`, never a reading.
"""
from __future__ import annotations

import sys
from pathlib import Path

from harness.measure.clocks import read_text


def tsc_rate_hz(sys_root: str | Path = "/sys", proc_root: str | Path = "/proc") -> tuple[float | None, str]:
    """(rate in Hz or None, where it came from or why there is none)."""
    if sys.platform.startswith("linux"):
        khz = read_text(Path(sys_root) / "devices/system/cpu/cpu0/tsc_freq_khz")
        if khz and khz.isdigit():
            return int(khz) * 1e3, "sysfs cpu0/tsc_freq_khz"
        mhz = cpuinfo_mhz(proc_root)
        if mhz is not None:
            return mhz * 1e6, "/proc/cpuinfo cpu MHz"
        return None, "no tsc_freq_khz in sysfs and no 'cpu MHz' in /proc/cpuinfo"
    try:
        import psutil
        freq = psutil.cpu_freq()
    except (ImportError, OSError, NotImplementedError, AttributeError) as exc:
        return None, f"psutil.cpu_freq unavailable ({exc})"
    if freq is None or not freq.max:
        return None, "psutil.cpu_freq reports no nominal frequency"
    return freq.max * 1e6, "psutil.cpu_freq().max (nominal)"


def cpuinfo_mhz(proc_root: str | Path = "/proc") -> float | None:
    for line in (read_text(Path(proc_root) / "cpuinfo") or "").splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "cpu MHz":
            try:
                return float(value)
            except ValueError:
                return None
    return None


def estimate_cycles(counted: dict, hz: float | None, hz_source: str) -> dict:
    """Fill a missing cpu_clocks with loop CPU time × rate, labelled `tsc_estimate`.

    A real count passes through unchanged. cpu_clocks_note keeps the rate used and why the
    counter was not available, so the estimate can be judged later.
    """
    if counted.get("cpu_clocks") is not None:
        return counted
    why = counted.get("cpu_clocks_source") or "no counter"
    cpu_s = counted.get("loop_cpu_time_s")
    if hz is None or cpu_s is None:
        return {**counted, "cpu_clocks": None,
                "cpu_clocks_source": f"{why}; no estimate: {hz_source if hz is None else 'no CPU time'}"}
    return {**counted, "cpu_clocks": round(cpu_s * hz), "cpu_clocks_source": "tsc_estimate",
            "cpu_clocks_note": f"loop CPU time x {hz / 1e6:.3f} MHz from {hz_source}; {why}"}
