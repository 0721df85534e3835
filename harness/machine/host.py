"""What machine the numbers came from: the CPU and the settings that move timings (manifest.json).

describe() returns plain data. A figure this OS does not expose is None and its `<key>_source`
says why; a figure that was read says where from. Sysfs/proc roots are injectable so tests
can use a fake tree.
"""
from __future__ import annotations

import os
import platform
import re
import sys
from pathlib import Path

from harness.machine.other_os import macos_facts, windows_facts
from harness.measure.affinity import parse_cpus

CPU_DIR = "devices/system/cpu"


def describe(sys_root: str | Path = "/sys", proc_root: str | Path = "/proc") -> dict:
    facts = {"os": platform.system(), "platform": platform.platform(),
             "kernel": platform.release(), "arch": platform.machine()}
    if sys.platform.startswith("linux"):
        facts.update(linux_facts(Path(sys_root), Path(proc_root)))
    elif sys.platform == "darwin":
        facts.update(macos_facts())
    elif sys.platform == "win32":
        facts.update(windows_facts())
    else:
        facts["cpu_model"] = platform.processor() or None
        facts["cpu_model_source"] = "platform.processor()"
    return facts


# ---- Linux --------------------------------------------------------------------------------

def linux_facts(sys_root: Path, proc_root: Path) -> dict:
    cpuinfo = parse_cpuinfo(read(proc_root / "cpuinfo") or "")
    cpu_dir = sys_root / CPU_DIR
    facts: dict = {}
    facts.update(cpu_model(cpuinfo))
    facts["cpu_mhz"] = linux_frequency(cpu_dir, cpuinfo)
    facts.update(core_counts(cpu_dir, cpuinfo))
    facts.update(governor_summary(governors(sys_root)))
    facts.update(linux_turbo(cpu_dir))
    facts.update(linux_smt(cpu_dir))
    facts.update(isolated_cores(sys_root))
    facts.update(linux_virtualization(sys_root, cpuinfo))
    facts.update(linux_memory(proc_root))
    facts.update(linux_load(proc_root))
    return facts


def parse_cpuinfo(text: str) -> list[dict[str, str]]:
    """One dict per blank-line-separated block of /proc/cpuinfo."""
    blocks = []
    for chunk in text.strip().split("\n\n"):
        block = {}
        for line in chunk.splitlines():
            key, sep, value = line.partition(":")
            if sep:
                block[key.strip()] = value.strip()
        if block:
            blocks.append(block)
    return blocks


def cpu_model(cpuinfo: list[dict]) -> dict:
    # x86 says "model name"; some ARM and RISC-V kernels only give "Hardware", "Processor" or "uarch".
    for key in ("model name", "Hardware", "Processor", "uarch", "cpu model"):
        for block in cpuinfo:
            if block.get(key):
                return {"cpu_model": block[key], "cpu_model_source": f"/proc/cpuinfo {key}"}
    fallback = platform.processor()
    if fallback:
        return {"cpu_model": fallback, "cpu_model_source": "platform.processor()"}
    return {"cpu_model": None, "cpu_model_source": "no model name in /proc/cpuinfo"}


def linux_frequency(cpu_dir: Path, cpuinfo: list[dict]) -> dict:
    """MHz of the first core: cpufreq where the kernel exposes it, else cpuinfo's current figure."""
    policies = sorted(cpu_dir.glob("cpu[0-9]*/cpufreq"), key=lambda path: _cpu_number(path.parent))
    if policies:
        policy = policies[0]
        return {"current": _khz_to_mhz(read(policy / "scaling_cur_freq")),
                "nominal": _khz_to_mhz(read(policy / "base_frequency")),
                "max": _khz_to_mhz(read(policy / "cpuinfo_max_freq")),
                "source": f"sysfs {policy.parent.name}/cpufreq (scaling_cur_freq, base_frequency, "
                          "cpuinfo_max_freq)"}
    current = next((block["cpu MHz"] for block in cpuinfo if "cpu MHz" in block), None)
    return {"current": float(current) if current else None, "nominal": None, "max": None,
            "source": "/proc/cpuinfo cpu MHz; no cpufreq in sysfs, so no nominal or max"
            if current else "no cpufreq in sysfs and no cpu MHz in /proc/cpuinfo"}


def core_counts(cpu_dir: Path, cpuinfo: list[dict]) -> dict:
    online = read(cpu_dir / "online")
    logical = len(parse_cpus(online)) if online else (len(cpuinfo) or os.cpu_count())
    cores = {(block.get("physical id"), block.get("core id")) for block in cpuinfo
             if "core id" in block}
    if cores:
        return {"logical_cores": logical, "physical_cores": len(cores),
                "physical_cores_source": "/proc/cpuinfo (physical id, core id) pairs"}
    siblings = {read(path) for path in cpu_dir.glob("cpu[0-9]*/topology/thread_siblings_list")}
    siblings.discard(None)
    if siblings:
        return {"logical_cores": logical, "physical_cores": len(siblings),
                "physical_cores_source": "sysfs topology/thread_siblings_list"}
    return {"logical_cores": logical, "physical_cores": None,
            "physical_cores_source": "no core ids in /proc/cpuinfo or sysfs topology"}


def governors(sys_root: str | Path = "/sys") -> dict[int, str]:
    """cpufreq governor of each core that has one."""
    found = {}
    for path in (Path(sys_root) / CPU_DIR).glob("cpu[0-9]*/cpufreq/scaling_governor"):
        value = read(path)
        if value:
            found[_cpu_number(path.parent.parent)] = value
    return dict(sorted(found.items()))


def governor_summary(per_cpu: dict[int, str]) -> dict:
    if not per_cpu:
        return {"governor": None, "governor_source": "no cpu*/cpufreq in sysfs: frequency scaling "
                "is not exposed (typical in a VM, where the host sets the clock)"}
    names = set(per_cpu.values())
    if len(names) == 1:
        return {"governor": names.pop(), "governor_source": "sysfs cpufreq/scaling_governor"}
    mixed = ", ".join(f"cpu{cpu}={name}" for cpu, name in per_cpu.items())
    return {"governor": f"mixed: {mixed}", "governor_source": "sysfs cpufreq/scaling_governor"}


def linux_turbo(cpu_dir: Path) -> dict:
    no_turbo = read(cpu_dir / "intel_pstate/no_turbo")
    if no_turbo in ("0", "1"):
        return {"turbo": no_turbo == "0", "turbo_source": f"intel_pstate/no_turbo={no_turbo}"}
    for path in [cpu_dir / "cpufreq/boost", *sorted(cpu_dir.glob("cpufreq/policy*/boost"))]:
        boost = read(path)
        if boost in ("0", "1"):
            return {"turbo": boost == "1",
                    "turbo_source": f"{path.relative_to(cpu_dir)}={boost}"}
    return {"turbo": None, "turbo_source": "no intel_pstate/no_turbo or cpufreq boost in sysfs"}


def linux_smt(cpu_dir: Path) -> dict:
    active = read(cpu_dir / "smt/active")
    if active in ("0", "1"):
        control = read(cpu_dir / "smt/control")
        return {"smt": active == "1", "smt_source": f"smt/active={active}, smt/control={control}"}
    siblings = [read(path) for path in cpu_dir.glob("cpu[0-9]*/topology/thread_siblings_list")]
    siblings = [text for text in siblings if text]
    if siblings:
        shared = any(len(parse_cpus(text)) > 1 for text in siblings)
        return {"smt": shared, "smt_source": "topology/thread_siblings_list"}
    return {"smt": None, "smt_source": "no smt/active or topology in sysfs"}


def isolated_cores(sys_root: str | Path = "/sys") -> dict:
    text = read(Path(sys_root) / CPU_DIR / "isolated")
    if text is None:
        return {"isolated_cores": None, "isolated_cores_source": "no cpu/isolated in sysfs"}
    return {"isolated_cores": parse_cpus(text), "isolated_cores_source": "sysfs cpu/isolated"}


def linux_virtualization(sys_root: Path, cpuinfo: list[dict]) -> dict:
    flags = cpuinfo[0].get("flags", "").split() if cpuinfo else []
    kind = read(sys_root / "hypervisor/type")
    vendor = read(sys_root / "class/dmi/id/sys_vendor")
    if "hypervisor" in flags or kind:
        hints = ["hypervisor flag in /proc/cpuinfo" if "hypervisor" in flags else None,
                 f"/sys/hypervisor/type={kind}" if kind else None,
                 f"dmi sys_vendor={vendor}" if vendor else None]
        return {"virtualized": True, "virtualized_source": "; ".join(h for h in hints if h)}
    if flags:
        return {"virtualized": False, "virtualized_source": "no hypervisor flag in /proc/cpuinfo"}
    return {"virtualized": None, "virtualized_source": "no cpu flags in /proc/cpuinfo"}


def linux_memory(proc_root: Path) -> dict:
    match = re.search(r"^MemTotal:\s+(\d+) kB", read(proc_root / "meminfo") or "", re.M)
    if match:
        return {"memory_total_bytes": int(match.group(1)) * 1024,
                "memory_total_source": "/proc/meminfo MemTotal"}
    return {"memory_total_bytes": None, "memory_total_source": "no MemTotal in /proc/meminfo"}


def linux_load(proc_root: Path) -> dict:
    fields = (read(proc_root / "loadavg") or "").split()
    if len(fields) >= 3:
        return {"load_average": [float(value) for value in fields[:3]],
                "load_average_source": "/proc/loadavg (1, 5, 15 min)"}
    return {"load_average": None, "load_average_source": "no /proc/loadavg"}


# ---- helpers ------------------------------------------------------------------------------

def read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _cpu_number(path: Path) -> int:
    return int(path.name[3:])


def _khz_to_mhz(text: str | None) -> float | None:
    return int(text) / 1e3 if text and text.isdigit() else None


# How long a core is watched for the share of it other processes use, before a machine fact is measured on it.
BUSY_WINDOW_S = 0.2
# Busier than this, a core's probe is kept for the run that needs it but never cached: it would stand, for
# every later run on this CPU model, as a roof measured under load.
BUSY = 0.25


def core_busy(cpu: int) -> float | None:
    """The share of core `cpu` in use by anything over BUSY_WINDOW_S (0 idle, 1 saturated); None where
    the OS does not say."""
    import psutil  # only where a probe is about to run

    try:
        shares = psutil.cpu_percent(interval=BUSY_WINDOW_S, percpu=True)
    except (OSError, RuntimeError, AttributeError):
        return None
    return shares[cpu] / 100 if 0 <= cpu < len(shares) else None
