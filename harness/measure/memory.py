"""Peak memory of the current process, per OS (docs/measuring.md, "Measures on each OS").

The child calls peak_memory() just before it exits. Every figure comes with a `*_source`
saying where it was read, or why it is null on this OS. The child imports this module before
its peaks are read, so it imports only what a bare script has (no pathlib, no threading).
The private-memory sampler runs in the parent, on the child's /proc entry.
"""
from __future__ import annotations

import ctypes
import os
import sys

# A sampler shares the pinned core (and, for Python engines, the GIL) with the benchmark, so it
# wakes rarely; peaks shorter than this are missed, which its source string says.
SAMPLE_INTERVAL_S = 0.02


def read_kb_fields(path) -> dict[str, int]:
    """The `Name:  N kB` lines of a /proc file, in bytes."""
    fields: dict[str, int] = {}
    try:
        with open(path) as file:
            text = file.read()
    except OSError:
        return fields
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if len(parts) == 2 and parts[1] == "kB" and parts[0].isdigit():
            fields[key] = int(parts[0]) * 1024
    return fields


def read_proc_status(proc_root="/proc", pid: str = "self") -> dict[str, int]:
    """The kB fields of /proc/<pid>/status, in bytes."""
    return read_kb_fields(os.path.join(proc_root, pid, "status"))


def read_private_bytes(proc_root="/proc", pid: str = "self") -> tuple[int | None, str]:
    """Private memory now: smaps_rollup Private_Clean + Private_Dirty + Swap, else RssAnon + VmSwap."""
    rollup = read_kb_fields(os.path.join(proc_root, pid, "smaps_rollup"))
    if "Private_Clean" in rollup and "Private_Dirty" in rollup:
        total = rollup["Private_Clean"] + rollup["Private_Dirty"] + rollup.get("Swap", 0)
        return total, "smaps_rollup Private_Clean+Private_Dirty+Swap"
    status = read_proc_status(proc_root, pid)
    if "RssAnon" in status:
        return status["RssAnon"] + status.get("VmSwap", 0), "status RssAnon+VmSwap"
    return None, f"neither /proc/{pid}/smaps_rollup nor RssAnon in /proc/{pid}/status is readable"


class PrivateSampler:
    """A daemon thread that keeps the peak of a process's private memory (Linux).

    Only used with --sample-private, in the parent, on the child's pid: a thread in the child
    would share its pinned core and add its own stack to the child's peak virtual size.
    start(), then stop() -> (peak bytes or None, source).
    """

    def __init__(self, interval_s: float = SAMPLE_INTERVAL_S, proc_root="/proc", pid: str = "self"):
        import threading

        self.interval_s = interval_s
        self.proc_root = proc_root
        self.pid = str(pid)
        self.peak: int | None = None
        self.source = "not sampled"
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self) -> None:
        value, source = read_private_bytes(self.proc_root, self.pid)
        if value is None and self.peak is not None:
            return  # the child has exited: keep the peak and how it was read
        self.source = source
        if value is not None and (self.peak is None or value > self.peak):
            self.peak = value

    def start(self) -> None:
        import threading

        self.sample()
        self._thread = threading.Thread(target=self._run, name="private-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> tuple[int | None, str]:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
        self.sample()
        if self.peak is None:
            return None, self.source
        return self.peak, f"{self.source}, peak of samples every {self.interval_s * 1e3:g} ms"

    def _run(self) -> None:
        while not self._stopping.wait(self.interval_s):
            self.sample()


def peak_memory(proc_root="/proc",
                private: tuple[int | None, str] | None = None) -> dict:
    """Peak resident, virtual and private bytes of this process, each with its source.

    `private` is a PrivateSampler's (peak, source) on Linux; without it Linux has no peak
    private figure (the kernel keeps no high-water mark for it).
    """
    if sys.platform.startswith("linux"):
        return linux_peaks(proc_root, private)
    if sys.platform == "win32":
        return windows_peaks()
    if sys.platform == "darwin":
        return macos_peaks()
    return _peaks(None, f"not implemented on {sys.platform}", None, f"not implemented on {sys.platform}",
                  None, f"not implemented on {sys.platform}")


def linux_peaks(proc_root, private: tuple[int | None, str] | None) -> dict:
    status = read_proc_status(proc_root)

    def source(field: str) -> str:
        return f"/proc/self/status {field}" if field in status else f"no {field} in /proc/self/status"

    private_bytes, private_source = private or (None, "not sampled (Linux: only with --sample-private, by the runner)")
    return _peaks(status.get("VmHWM"), source("VmHWM"), status.get("VmPeak"), source("VmPeak"),
                  private_bytes, private_source)


def windows_peaks() -> dict:
    try:
        import psutil
        info = psutil.Process().memory_info()
    except (ImportError, OSError) as exc:
        reason = f"psutil unavailable ({type(exc).__name__}: {exc})"
        return _peaks(None, reason, None, reason, None, reason)
    no_virtual = "Windows keeps no peak virtual size per process; see peak_private_bytes"
    return _peaks(getattr(info, "peak_wset", None), "PeakWorkingSetSize (psutil peak_wset)",
                  None, no_virtual,
                  getattr(info, "peak_pagefile", None), "PeakPagefileUsage (psutil peak_pagefile)")


def macos_peaks() -> dict:
    import resource

    # ru_maxrss is in bytes on macOS (kilobytes on Linux).
    resident = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    footprint, footprint_source = macos_lifetime_max_footprint()
    return _peaks(resident, "getrusage ru_maxrss (bytes on macOS)",
                  None, "macOS keeps no peak virtual size per process",
                  footprint, footprint_source)


RUSAGE_INFO_V4 = 4
_RUSAGE_V4_COUNTERS = (
    "user_time system_time pkg_idle_wkups interrupt_wkups pageins wired_size resident_size "
    "phys_footprint proc_start_abstime proc_exit_abstime child_user_time child_system_time "
    "child_pkg_idle_wkups child_interrupt_wkups child_pageins child_elapsed_abstime "
    "diskio_bytesread diskio_byteswritten cpu_time_qos_default cpu_time_qos_maintenance "
    "cpu_time_qos_background cpu_time_qos_utility cpu_time_qos_legacy "
    "cpu_time_qos_user_initiated cpu_time_qos_user_interactive billed_system_time "
    "serviced_system_time logical_writes lifetime_max_phys_footprint instructions cycles "
    "billed_energy serviced_energy interval_max_phys_footprint runnable_time"
).split()


class RusageInfoV4(ctypes.Structure):
    """struct rusage_info_v4 of <sys/resource.h> (macOS 10.14+)."""
    _fields_ = [("ri_uuid", ctypes.c_uint8 * 16)] + [(f"ri_{name}", ctypes.c_uint64)
                                                      for name in _RUSAGE_V4_COUNTERS]


def macos_lifetime_max_footprint(libproc=None) -> tuple[int | None, str]:
    """Peak phys_footprint (what Activity Monitor calls Memory) via proc_pid_rusage."""
    try:
        libproc = libproc or ctypes.CDLL("/usr/lib/libproc.dylib")
        info = RusageInfoV4()
        failed = libproc.proc_pid_rusage(os.getpid(), RUSAGE_INFO_V4, ctypes.pointer(info))
    except (OSError, AttributeError) as exc:
        return None, f"proc_pid_rusage unavailable ({exc})"
    if failed:
        return None, f"proc_pid_rusage(RUSAGE_INFO_V4) failed ({failed})"
    return info.ri_lifetime_max_phys_footprint, "proc_pid_rusage ri_lifetime_max_phys_footprint"


def _peaks(resident, resident_source, virtual, virtual_source, private, private_source) -> dict:
    return {"peak_resident_bytes": resident, "peak_resident_source": resident_source,
            "peak_virtual_bytes": virtual, "peak_virtual_source": virtual_source,
            "peak_private_bytes": private, "peak_private_source": private_source}
