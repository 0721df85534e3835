"""The machine's energy counters, one class per source: Linux battery, Linux RAPL, Windows battery.

Each has read() -> joules so far (raising Rejected when the reading cannot be used now, Unusable
when it never can), a name and an update period. harness/measure/energy.py chooses one and
meters trials with it. The sysfs root and the PowerShell query are injectable for tests.
"""
from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from engines import children

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
        out = children.run(["powershell", "-NoProfile", "-NonInteractive", "-Command", WMI_QUERY],
                           "asking PowerShell the battery", 30, capture_output=True, text=True)
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
