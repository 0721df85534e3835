"""`burtbench doctor`, the measures part: which measures this machine can take, and which it cannot and why."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from harness.machine import host as machine
from harness.measure import clocks, memory, tsc


@dataclass
class Finding:
    level: str  # "ok" | "warn" | "info"
    topic: str
    message: str
    fix: str | None = None


def measure_findings(perf, sys_root: Path, proc_root: Path) -> list[Finding]:
    return [clocks_finding(perf, sys_root, proc_root), *memory_findings(proc_root),
            *energy_findings(sys_root)]


def clocks_finding(perf, sys_root: Path, proc_root: Path) -> Finding:
    counter = clocks.CycleCounter(perf=perf, proc_root=proc_root)
    counter.start()
    counted = counter.stop()
    if counted["cpu_clocks"] is not None:
        extra = " and instructions" if counted["instructions"] is not None else " (no instructions counter)"
        return Finding("ok", "cpu_clocks", f"cycles{extra} counted by {counted['cpu_clocks_source']}")
    hz, source = tsc.tsc_rate_hz(sys_root, proc_root)
    if hz is None:
        return Finding("warn", "cpu_clocks", f"cpu_clocks will be null: {counted['cpu_clocks_source']}, "
                       f"and no rate to estimate from ({source})")
    fix = "sudo sysctl kernel.perf_event_paranoid=2" if "paranoid" in counted["cpu_clocks_source"] else None
    return Finding("info", "cpu_clocks", f"{counted['cpu_clocks_source']}; runs report loop CPU time x "
                   f"{hz / 1e6:.0f} MHz ({source}), labelled tsc_estimate", fix)


def memory_findings(proc_root: Path) -> list[Finding]:
    if sys.platform == "win32":
        return [Finding("ok", "memory", "peak private = PeakPagefileUsage, peak resident = PeakWorkingSetSize; "
                        "no peak virtual on Windows")]
    if sys.platform == "darwin":
        peaks = memory.macos_peaks()
        return [Finding("ok" if peaks["peak_private_bytes"] is not None else "info", "memory",
                        f"peak resident = ru_maxrss; peak private: {peaks['peak_private_source']}; "
                        "no peak virtual on macOS")]
    peaks = memory.linux_peaks(proc_root, None)
    missing = [key for key in ("peak_resident_bytes", "peak_virtual_bytes") if peaks[key] is None]
    if missing:
        readings = Finding("warn", "memory", f"{', '.join(missing)} will be null: "
                           f"{peaks['peak_resident_source']}; {peaks['peak_virtual_source']}")
    else:
        readings = Finding("ok", "memory", "peak resident (VmHWM) and peak virtual (VmPeak) readable")
    return [readings, Finding("info", "peak_private", "peak_private_bytes is null unless run with "
                              "--sample-private (a sampling thread then shares the pinned core)")]


def energy_findings(sys_root: Path) -> list[Finding]:
    if not sys.platform.startswith("linux"):
        return psutil_power_findings()
    found = []
    batteries = sorted((sys_root / "class/power_supply").glob("BAT*"))
    readable = [bat for bat in batteries if (bat / "energy_now").exists() or (bat / "charge_now").exists()]
    for bat in batteries:
        if machine.read(bat / "status") == "Discharging":
            found.append(Finding("warn", "power", f"running on battery ({bat.name} discharging): "
                                 "power saving may lower the clock", "plug in the power supply"))
    rapl = sorted((sys_root / "class/powercap").glob("intel-rapl*/energy_uj"))
    rapl_readable = [path for path in rapl if os.access(path, os.R_OK)]
    if rapl and not rapl_readable:
        found.append(Finding("warn", "rapl", "RAPL counters exist but are not readable by this user",
                             f"sudo chmod a+r {' '.join(str(path) for path in rapl)}"))
    sources = [f"battery {bat.name}" for bat in readable] + [f"RAPL {path.parent.name}" for path in rapl_readable]
    if sources:
        found.append(Finding("ok", "energy", f"energy sources: {', '.join(sources)}"))
    elif not rapl:
        found.append(Finding("info", "energy", "no battery and no RAPL counters in sysfs: energy_* will be null"))
    return found


def psutil_power_findings() -> list[Finding]:
    """Windows and macOS: only whether a battery powers the machine; energy readers live elsewhere."""
    source = ("battery via WMI BatteryStatus, where present" if sys.platform == "win32"
              else f"none read on {sys.platform}: energy_* will be null")
    found = [Finding("info", "energy", f"energy source: {source}")]
    try:
        import psutil
        battery = psutil.sensors_battery()
    except (ImportError, AttributeError, OSError):
        return found
    if battery is not None and not battery.power_plugged:
        found.insert(0, Finding("warn", "power", "running on battery: power saving may lower the clock",
                                "plug in the power supply"))
    return found
