"""Energy of a whole trial process, read from the machine's own energy counters (paper Appendix I).

The parent reads a counter right before it spawns the measured child and right after the child
exits, so the energy covers the process's whole life. As in the paper, the idle ("cold state")
power is measured once before the suite; a trial's OS share is idle power × its duration and
its task share is total − OS.

Sources:
- Linux battery, /sys/class/power_supply/BAT*: energy_now (µWh), or charge_now (µAh) × voltage_now (µV).
  Only a discharging battery powers the machine: a reading taken while it charges, or while it is
  full on AC power, is rejected.
- Linux RAPL package domains, /sys/class/powercap/intel-rapl:N/energy_uj (Intel, and AMD Zen under
  the same name), summed over packages; a counter that wrapped is unwrapped with max_energy_range_uj.
- Windows battery, WMI root\\wmi BatteryStatus.RemainingCapacity (mWh), read with PowerShell;
  a battery that reports capacity in relative units (BatteryStaticData.Capabilities) is not used.
- macOS: none.

Counters update slowly (batteries every second or slower, RAPL every millisecond): a reading
shorter than the source's update period, or one over which the counter did not move, is null
with the reason, never a guess. The readers are in harness/measure/energy_sources.py.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Callable

from harness.measure.energy_sources import (LinuxBattery, Rapl, Rejected, Unusable, WindowsBattery,
                                            find_linux_batteries, find_rapl_domains, powershell_battery)

KINDS = ("auto", "battery", "rapl", "none")


# ---- choosing a source --------------------------------------------------------------------

def select_source(kind: str, sys_root: str | Path = "/sys", platform: str = sys.platform,
                  windows_query: Callable[[], dict] = powershell_battery):
    """(source, None), or (None, why there is none). `auto` prefers the battery when the machine
    runs on it (the paper's measure: the whole machine), else RAPL (the CPU packages only)."""
    if kind not in KINDS:
        raise ValueError(f"energy source must be one of {', '.join(KINDS)}, not {kind!r}")
    if kind == "none":
        return None, "energy not measured (--energy none)"
    reasons = []
    if kind in ("auto", "battery"):
        battery, why = _battery(sys_root, platform, windows_query)
        if battery is not None and (kind == "battery" or why is None):
            return battery, None
        reasons.append(why)
    if kind in ("auto", "rapl"):
        if not platform.startswith("linux"):
            reasons.append(f"RAPL is read from Linux powercap; none on {platform}")
        else:
            domains, why = find_rapl_domains(sys_root)
            if domains:
                return Rapl(domains), None
            reasons.append(why)
    return None, "; ".join(reasons)


def _battery(sys_root, platform: str, windows_query):
    """(battery source, None) when the machine runs on it; (source, why) when it does not right
    now (charging, on AC power); (None, why) when there is no battery to read."""
    if platform.startswith("linux"):
        folders = find_linux_batteries(sys_root)
        if not folders:
            return None, f"no battery in {Path(sys_root) / 'class' / 'power_supply'}"
        source = LinuxBattery(folders)
    elif platform == "win32":
        source = WindowsBattery(windows_query)
    elif platform == "darwin":
        return None, "macOS: no battery energy counter is read (not implemented)"
    else:
        return None, f"{platform}: no battery energy counter is read"
    try:
        source.read()
    except Unusable as exc:
        return None, str(exc)
    except Rejected as exc:
        return source, str(exc)
    return source, None


def describe(source, reason: str | None = None, sys_root: str | Path = "/sys", platform: str = sys.platform,
             windows_query: Callable[[], dict] = powershell_battery) -> dict:
    """What the manifest records: the source used (or why none), and whether the machine ran on battery."""
    battery, why = _battery(sys_root, platform, windows_query)
    return {"energy_source": source.name if source else None,
            "energy_source_reason": reason,
            "energy_update_period_s": source.update_period_s if source else None,
            "on_battery": None if battery is None else why is None,
            "on_battery_source": why}


# ---- idle baseline and the per-trial meter ------------------------------------------------

def idle_power_w(source, seconds: float, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.perf_counter) -> tuple[float | None, str | None]:
    """Mean power over `seconds` of doing nothing (the paper's cold state): (watts, None) or (None, why)."""
    meter = EnergyMeter(source, None, clock)
    meter.start()
    sleep(seconds)
    reading = meter.stop()
    if reading["energy_total_j"] is None:
        return None, f"idle baseline: {reading['energy_source']}"
    return reading["energy_total_j"] / reading["energy_window_s"], None


def null_reading(why: str, window_s: float | None = None) -> dict:
    return {"energy_total_j": None, "energy_task_j": None, "energy_os_j": None, "energy_source": why,
            "energy_window_s": window_s}


class EnergyMeter:
    """start() before spawning the measured child, stop() after it exited: its energy and the split.

    The OS share is idle power × the time between the two counter reads (each timed as it ends),
    the window that holds the child's whole life.
    """

    def __init__(self, source, idle_w: float | None, clock: Callable[[], float] = time.perf_counter):
        self.source, self.idle_w, self.clock = source, idle_w, clock

    def start(self) -> None:
        self.rejected = None
        try:
            self.before = self.source.read()
        except Rejected as exc:
            self.rejected = f"at the start: {exc}"
        self.t0 = self.clock()

    def stop(self) -> dict:
        name = self.source.name
        if self.rejected is None:
            try:
                after = self.source.read()
            except Rejected as exc:
                self.rejected = f"at the end: {exc}"
        window = self.clock() - self.t0
        if self.rejected is not None:
            return null_reading(f"{name}: reading rejected {self.rejected}", window)
        if window < self.source.update_period_s:
            return null_reading(f"{name}: the trial lasted {window:.3g} s, shorter than the counter's "
                                f"update period (~{self.source.update_period_s:g} s)", window)
        total = self.source.used_j(self.before, after)
        if total == 0:
            return null_reading(f"{name}: the counter did not change in {window:.3g} s", window)
        if total < 0:
            return null_reading(f"{name}: the battery gained {-total:.3g} J during the trial", window)
        if isinstance(self.source, Rapl) and self.idle_w and self.idle_w * window >= self.source.max_range_j():
            return null_reading(f"{name}: {window:.3g} s at the idle power alone exceeds the counter's range "
                                f"({self.source.max_range_j():.3g} J): it may have wrapped more than once", window)
        if self.idle_w is None:
            return {**null_reading(f"{name}; no idle baseline, so no OS/task split", window), "energy_total_j": total}
        os_j = self.idle_w * window
        return {"energy_total_j": total, "energy_task_j": total - os_j, "energy_os_j": os_j,
                "energy_source": name, "energy_window_s": window}


class NoMeter:
    """Stands in for EnergyMeter where there is no source: every reading is null, with the reason."""

    def __init__(self, reason: str):
        self.reason = reason

    def start(self) -> None:
        pass

    def stop(self) -> dict:
        return null_reading(self.reason)


def suite_meter(kind: str, idle_seconds: float, sys_root: str | Path = "/sys",
                sleep: Callable[[float], None] = time.sleep,
                clock: Callable[[], float] = time.perf_counter) -> tuple[EnergyMeter | NoMeter, dict]:
    """The suite's energy set-up: choose the source, measure the idle power (`idle_seconds` of
    sleep), and describe both for the manifest."""
    source, why = select_source(kind, sys_root)
    if source is None:
        return NoMeter(why), describe(None, why, sys_root)
    idle_w, idle_why = idle_power_w(source, idle_seconds, sleep, clock)
    described = {**describe(source, None, sys_root), "idle_w": idle_w, "idle_seconds": idle_seconds,
                 "idle_source": idle_why}
    return EnergyMeter(source, idle_w, clock), described


# ---- small readers ------------------------------------------------------------------------
