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
with the reason, never a guess. The sysfs root and the PowerShell query are injectable for tests.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

KINDS = ("auto", "battery", "rapl", "none")
UWH_TO_J = 3600 / 1e6
MWH_TO_J = 3.6
# The kernel's ACPI battery driver re-reads the battery at most once a second (its cache_time);
# the paper's battery tool read once a second too. Some batteries update less often still.
BATTERY_UPDATE_PERIOD_S = 1.0
RAPL_UPDATE_PERIOD_S = 0.001
# BATTERY_CAPACITY_RELATIVE in batclass.h: capacities are unitless, not mWh.
BATTERY_CAPACITY_RELATIVE = 0x40000000


class Rejected(Exception):
    """A counter reading that cannot be used now (a charging battery); the message says why."""


class Unusable(Rejected):
    """A source that can never be read here (no battery, no counter); the message says why."""


# ---- Linux battery ------------------------------------------------------------------------

@dataclass(frozen=True)
class BatterySample:
    energy_j: float | None  # energy_now batteries
    charge_c: float | None  # charge_now batteries: coulombs ...
    volts: float | None  # ... and the voltage they were read at


class LinuxBattery:
    """Every /sys/class/power_supply/BAT* battery, summed (laptops with two batteries drain both)."""

    update_period_s = BATTERY_UPDATE_PERIOD_S

    def __init__(self, folders: list[Path]):
        self.folders = folders
        self.name = f"battery {'+'.join(f.name for f in folders)} ({self._unit()})"

    def _unit(self) -> str:
        return "energy_now" if (self.folders[0] / "energy_now").is_file() else "charge_now x voltage_now"

    def read(self) -> list[BatterySample]:
        for folder in self.folders:
            status = _read(folder / "status")
            if status == "Charging":
                raise Rejected(f"battery {folder.name} was charging")
            if status != "Discharging":
                raise Rejected(f"battery {folder.name} status is '{status}': not running on battery")
        return [self._sample(folder) for folder in self.folders]

    def _sample(self, folder: Path) -> BatterySample:
        energy = _read_number(folder / "energy_now")
        if energy is not None:
            return BatterySample(energy * UWH_TO_J, None, None)
        charge, volts = _read_number(folder / "charge_now"), _read_number(folder / "voltage_now")
        if charge is None or volts is None:
            raise Unusable(f"battery {folder.name} has neither energy_now nor charge_now and voltage_now")
        return BatterySample(None, charge * 3600 / 1e6, volts / 1e6)

    def used_j(self, before: list[BatterySample], after: list[BatterySample]) -> float:
        """Energy drawn from the batteries between two samples."""
        total = 0.0
        for b, a in zip(before, after):
            if b.energy_j is not None:
                total += b.energy_j - a.energy_j
            else:
                # Charge drawn times the mean voltage over the interval: the voltage sags under load.
                total += (b.charge_c - a.charge_c) * (b.volts + a.volts) / 2
        return total


def find_linux_batteries(sys_root: str | Path) -> list[Path]:
    folder = Path(sys_root) / "class" / "power_supply"
    found = sorted(folder.glob("BAT*"))
    return [f for f in found if (_read(f / "type") or "Battery") == "Battery"]


# ---- Linux RAPL ---------------------------------------------------------------------------

@dataclass(frozen=True)
class RaplDomain:
    folder: Path
    max_range_uj: int


class Rapl:
    """The RAPL package domains (intel-rapl:0, intel-rapl:1, ...), summed; sub-domains are parts of them."""

    update_period_s = RAPL_UPDATE_PERIOD_S

    def __init__(self, domains: list[RaplDomain]):
        self.domains = domains
        names = [_read(d.folder / "name") or d.folder.name for d in domains]
        self.name = f"rapl {'+'.join(names)}"

    def read(self) -> list[int]:
        values = []
        for domain in self.domains:
            try:
                values.append(int((domain.folder / "energy_uj").read_text()))
            except (OSError, ValueError) as exc:
                raise Rejected(f"cannot read {domain.folder / 'energy_uj'}: {exc}") from exc
        return values

    def used_j(self, before: list[int], after: list[int]) -> float:
        total_uj = 0
        for domain, b, a in zip(self.domains, before, after):
            # The counter runs from 0 to max_energy_range_uj and starts again at 0.
            total_uj += a - b if a >= b else domain.max_range_uj - b + a
        return total_uj / 1e6

    def max_range_j(self) -> float:
        return min(d.max_range_uj for d in self.domains) / 1e6


def find_rapl_domains(sys_root: str | Path) -> tuple[list[RaplDomain], str | None]:
    """(package domains, why none is usable)."""
    folder = Path(sys_root) / "class" / "powercap"
    packages = sorted(p for p in folder.glob("intel-rapl:*") if p.name.count(":") == 1)
    if not packages:
        return [], f"no RAPL package domain in {folder}"
    domains = []
    for package in packages:
        try:
            int((package / "energy_uj").read_text())
            domains.append(RaplDomain(package, int((package / "max_energy_range_uj").read_text())))
        except PermissionError:
            return [], (f"{package / 'energy_uj'} is readable by root only (Linux restricts it since "
                        "CVE-2020-8694): run as root or grant read access to it")
        except (OSError, ValueError) as exc:
            return [], f"cannot read {package}: {exc}"
    return domains, None


# ---- Windows battery ----------------------------------------------------------------------

# One JSON object: every battery's remaining capacity and flags, and their static capabilities.
WMI_QUERY = (
    "$s = @(Get-CimInstance -Namespace root/wmi -ClassName BatteryStatus | "
    "Select-Object RemainingCapacity, Charging, Discharging, PowerOnline); "
    "$c = @(Get-CimInstance -Namespace root/wmi -ClassName BatteryStaticData -ErrorAction SilentlyContinue | "
    "Select-Object -ExpandProperty Capabilities); "
    "ConvertTo-Json -Compress -Depth 3 @{status = $s; capabilities = $c}"
)


def powershell_battery() -> dict:
    """Runs WMI_QUERY; no dependency beyond the PowerShell every Windows has."""
    try:
        out = subprocess.run(["powershell", "-NoProfile", "-NonInteractive", "-Command", WMI_QUERY],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        raise Unusable(f"PowerShell WMI query failed: {exc}") from exc
    if out.returncode != 0:
        raise Unusable(f"PowerShell WMI query failed: {out.stderr.strip()[:200]}")
    try:
        return json.loads(out.stdout)
    except ValueError as exc:
        raise Unusable(f"PowerShell WMI query returned no JSON: {out.stdout[:200]!r}") from exc


class WindowsBattery:
    update_period_s = BATTERY_UPDATE_PERIOD_S
    name = "battery (WMI root\\wmi BatteryStatus.RemainingCapacity)"

    def __init__(self, query: Callable[[], dict] = powershell_battery):
        self.query = query

    def read(self) -> float:
        """Remaining energy of all batteries, in joules."""
        data = self.query()
        batteries = data.get("status") or []
        if not batteries:
            raise Unusable("WMI lists no battery (BatteryStatus is empty)")
        if any(int(c or 0) & BATTERY_CAPACITY_RELATIVE for c in data.get("capabilities") or []):
            raise Unusable("the battery reports its capacity in relative units, not mWh")
        for battery in batteries:
            if battery.get("Charging"):
                raise Rejected("the battery was charging")
            if battery.get("PowerOnline") or not battery.get("Discharging"):
                raise Rejected("on AC power: the battery is not discharging")
        return sum(float(b["RemainingCapacity"]) for b in batteries) * MWH_TO_J

    def used_j(self, before: float, after: float) -> float:
        return before - after


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

def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _read_number(path: Path) -> float | None:
    text = _read(path)
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None
