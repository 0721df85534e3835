"""The machine facts of macOS and Windows (harness/machine/host.py has Linux's and the common part).

Written with care and tested with mocks only: nobody here could run them.
"""
from __future__ import annotations

import os
import platform
import re
import subprocess

from engines import children

# ---- macOS --------------------------------------------------------------------------------

def macos_facts() -> dict:
    logical = _int(sysctl("hw.logicalcpu"))
    physical = _int(sysctl("hw.physicalcpu"))
    nominal_hz = _int(sysctl("hw.cpufrequency"))  # Intel Macs only
    vmm = sysctl("kern.hv_vmm_present")
    return {
        "cpu_model": sysctl("machdep.cpu.brand_string"),
        "cpu_model_source": "sysctl machdep.cpu.brand_string",
        "cpu_mhz": {"current": None, "nominal": nominal_hz / 1e6 if nominal_hz else None,
                    "max": None,
                    "source": "sysctl hw.cpufrequency (nominal)" if nominal_hz
                    else "macOS exposes no CPU frequency on this machine (Apple silicon)"},
        "logical_cores": logical or os.cpu_count(),
        "physical_cores": physical,
        "physical_cores_source": "sysctl hw.physicalcpu",
        "governor": None,
        "governor_source": "macOS sets the CPU frequency itself; there is no governor to read",
        "turbo": None,
        "turbo_source": "macOS exposes no turbo switch",
        "smt": None if not (logical and physical) else logical > physical,
        "smt_source": "sysctl hw.logicalcpu vs hw.physicalcpu",
        "isolated_cores": None,
        "isolated_cores_source": "macOS cannot isolate cores",
        "virtualized": None if vmm is None else vmm == "1",
        "virtualized_source": "sysctl kern.hv_vmm_present",
        "memory_total_bytes": _int(sysctl("hw.memsize")),
        "memory_total_source": "sysctl hw.memsize",
        **posix_load(),
    }


def sysctl(name: str) -> str | None:
    return command(["sysctl", "-n", name])


def posix_load() -> dict:
    try:
        return {"load_average": list(os.getloadavg()), "load_average_source": "os.getloadavg()"}
    except (AttributeError, OSError):
        return {"load_average": None, "load_average_source": "os.getloadavg() unavailable"}


# ---- Windows ------------------------------------------------------------------------------

def windows_facts() -> dict:
    name, registry_mhz = windows_registry_cpu()
    plan = windows_power_plan()
    facts = {
        "cpu_model": name or platform.processor() or None,
        "cpu_model_source": "registry ProcessorNameString" if name else "platform.processor()",
        "governor": plan,
        "governor_source": "powercfg /getactivescheme (Windows power plan)" if plan
        else "powercfg /getactivescheme gave no power plan",
        "turbo": None,
        "turbo_source": "Windows exposes no turbo switch to read",
        "isolated_cores": None,
        "isolated_cores_source": "Windows cannot isolate cores",
        "virtualized": None,
        "virtualized_source": "not checked on Windows",
        "load_average": None,
        "load_average_source": "Windows has no load average",
    }
    try:
        import psutil
    except ImportError:
        reason = "psutil is not installed"
        return {**facts, "cpu_mhz": {"current": None, "nominal": registry_mhz, "max": None,
                                     "source": "registry ~MHz"},
                "logical_cores": os.cpu_count(), "physical_cores": None,
                "physical_cores_source": reason, "smt": None, "smt_source": reason,
                "memory_total_bytes": None, "memory_total_source": reason}
    logical = psutil.cpu_count(logical=True)
    physical = psutil.cpu_count(logical=False)
    freq = psutil.cpu_freq()
    return {**facts,
            "cpu_mhz": {"current": freq.current if freq else None, "nominal": registry_mhz,
                        "max": freq.max if freq else None,
                        "source": "psutil.cpu_freq (current, max), registry ~MHz (nominal)"},
            "logical_cores": logical, "physical_cores": physical,
            "physical_cores_source": "psutil.cpu_count(logical=False)",
            "smt": None if not (logical and physical) else logical > physical,
            "smt_source": "psutil logical vs physical core count",
            "memory_total_bytes": psutil.virtual_memory().total,
            "memory_total_source": "psutil.virtual_memory().total"}


def windows_registry_cpu() -> tuple[str | None, float | None]:
    """(ProcessorNameString, ~MHz) of core 0 from the registry."""
    try:
        import winreg
        path = r"HARDWARE\DESCRIPTION\System\CentralProcessor\0"
        with winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE, path) as key:
            name = winreg.QueryValueEx(key, "ProcessorNameString")[0].strip()
            mhz = winreg.QueryValueEx(key, "~MHz")[0]
    except (ImportError, OSError):
        return None, None
    return name, float(mhz)


def windows_power_plan() -> str | None:
    """The active power plan's name, e.g. 'High performance'."""
    match = re.search(r"\((.+)\)\s*$", command(["powercfg", "/getactivescheme"]) or "")
    return match.group(1) if match else None


# ---- helpers ------------------------------------------------------------------------------

def command(args: list[str]) -> str | None:
    """Stripped stdout of a short command, or None if it fails."""
    try:
        done = children.run(args, f"asking {args[0]}", 5, capture_output=True, text=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _int(text: str | None) -> int | None:
    return int(text) if text and text.isdigit() else None
