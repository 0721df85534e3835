"""CPU time and CPU clocks (cycles) of the current process, per OS (docs/measuring.md, "Measures on each OS").

Linux counts the process's own user-mode cycles with perf_event_open; Windows asks
QueryProcessCycleTime; macOS has no per-process cycle counter we can read, so it says why.
Where no counter works, the runner multiplies CPU time by the TSC rate and labels the result
`tsc_estimate` (harness/measure/tsc.py), so an estimate is never mistaken for a reading.
The worker child imports this module before its peaks are read: no platform, no pathlib.
"""
from __future__ import annotations

import ctypes
import errno
import os
import struct
import sys
import time


def cpu_time_s() -> float:
    """User + system CPU time of this process."""
    return time.process_time()


# ---- Linux: perf_event_open -------------------------------------------------------------

# The syscall number differs per architecture; the generic table (aarch64, riscv64) shares 241.
PERF_EVENT_OPEN_SYSCALL = {"x86_64": 298, "amd64": 298, "aarch64": 241, "arm64": 241,
                           "riscv64": 241}

PERF_TYPE_HARDWARE = 0
PERF_COUNT_HW_CPU_CYCLES = 0
PERF_COUNT_HW_INSTRUCTIONS = 1
PERF_FORMAT_TOTAL_TIME_ENABLED = 1 << 0
PERF_FORMAT_TOTAL_TIME_RUNNING = 1 << 1
PERF_FLAG_FD_CLOEXEC = 1 << 3
# Bits of perf_event_attr's flag word (linux/perf_event.h, in declaration order).
ATTR_DISABLED = 1 << 0
ATTR_EXCLUDE_KERNEL = 1 << 5
ATTR_EXCLUDE_HV = 1 << 6
# _IO('$', n): enable, disable, reset.
PERF_EVENT_IOC_ENABLE = 0x2400
PERF_EVENT_IOC_DISABLE = 0x2401
PERF_EVENT_IOC_RESET = 0x2403


class PerfEventAttr(ctypes.Structure):
    """struct perf_event_attr up to its first published size (PERF_ATTR_SIZE_VER0, 64 bytes).

    The kernel accepts any published size and zero-fills the rest, and these fields are all
    counting needs.
    """
    _fields_ = [
        ("type", ctypes.c_uint32),
        ("size", ctypes.c_uint32),
        ("config", ctypes.c_uint64),
        ("sample_period", ctypes.c_uint64),
        ("sample_type", ctypes.c_uint64),
        ("read_format", ctypes.c_uint64),
        ("flags", ctypes.c_uint64),
        ("wakeup_events", ctypes.c_uint32),
        ("bp_type", ctypes.c_uint32),
        ("config1", ctypes.c_uint64),
    ]


def counting_attr(config: int) -> PerfEventAttr:
    """A disabled, user-mode-only hardware counter that also reports its enabled/running times."""
    attr = PerfEventAttr()
    attr.type = PERF_TYPE_HARDWARE
    attr.size = ctypes.sizeof(PerfEventAttr)
    attr.config = config
    attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING
    attr.flags = ATTR_DISABLED | ATTR_EXCLUDE_KERNEL | ATTR_EXCLUDE_HV
    return attr


class LinuxPerf:
    """The system calls a perf counter needs. Tests replace it with a fake."""

    def __init__(self, machine: str | None = None):
        self.machine = machine or os.uname().machine
        self.number = PERF_EVENT_OPEN_SYSCALL.get(self.machine.lower())

    def open(self, attr: PerfEventAttr, pid: int, cpu: int, group_fd: int, flags: int) -> int:
        if self.number is None:
            raise OSError(errno.ENOSYS, f"no known perf_event_open syscall number on {self.machine}")
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        fd = libc.syscall(ctypes.c_long(self.number), ctypes.byref(attr), ctypes.c_int(pid),
                          ctypes.c_int(cpu), ctypes.c_int(group_fd), ctypes.c_ulong(flags))
        if fd < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))
        return fd

    def ioctl(self, fd: int, request: int) -> None:
        import fcntl
        fcntl.ioctl(fd, request, 0)

    def read(self, fd: int, size: int) -> bytes:
        return os.read(fd, size)

    def close(self, fd: int) -> None:
        os.close(fd)


def perf_failure_reason(exc: OSError, proc_root="/proc") -> str:
    name = errno.errorcode.get(exc.errno, str(exc.errno))
    if exc.errno in (errno.EACCES, errno.EPERM):
        paranoid = read_text(os.path.join(proc_root, "sys/kernel/perf_event_paranoid")) or "?"
        why = (f"not permitted, kernel.perf_event_paranoid={paranoid}; own-process user-mode "
               "counting needs <= 2 or CAP_PERFMON")
    elif exc.errno in (errno.ENOENT, errno.ENODEV, errno.EOPNOTSUPP):
        why = "no hardware cycle counter exposed (typical in a VM without PMU passthrough)"
    elif exc.errno == errno.ENOSYS:
        why = exc.strerror or "kernel built without perf events"
    else:
        why = exc.strerror or "unexpected error"
    return f"perf_event_open: {name}: {why}"


class PerfCounters:
    """Cycles (required) and instructions (optional) of this process, user mode only, any CPU."""

    def __init__(self, perf=None, proc_root="/proc"):
        self.perf = perf or LinuxPerf()
        self.proc_root = proc_root
        self.fds: dict[str, int] = {}
        self.reason: str | None = None

    def start(self) -> None:
        try:
            self.fds["cycles"] = self._open(PERF_COUNT_HW_CPU_CYCLES)
        except OSError as exc:
            self.reason = perf_failure_reason(exc, self.proc_root)
            return
        try:
            self.fds["instructions"] = self._open(PERF_COUNT_HW_INSTRUCTIONS)
        except OSError:
            pass  # instructions are optional; cycles alone are the paper's measure
        for fd in self.fds.values():
            self.perf.ioctl(fd, PERF_EVENT_IOC_RESET)
            self.perf.ioctl(fd, PERF_EVENT_IOC_ENABLE)

    def stop(self) -> dict:
        if self.reason is not None:
            return {"cpu_clocks": None, "instructions": None, "cpu_clocks_source": self.reason}
        for fd in self.fds.values():
            self.perf.ioctl(fd, PERF_EVENT_IOC_DISABLE)
        counts = {name: self._read(fd) for name, fd in self.fds.items()}
        for fd in self.fds.values():
            self.perf.close(fd)
        cycles, note = counts["cycles"]
        instructions = counts.get("instructions", (None, None))[0]
        return {"cpu_clocks": cycles, "instructions": instructions,
                "cpu_clocks_source": "perf_event_open" + note}

    def _open(self, config: int) -> int:
        return self.perf.open(counting_attr(config), 0, -1, -1, PERF_FLAG_FD_CLOEXEC)

    def _read(self, fd: int) -> tuple[int | None, str]:
        """(count, source suffix). A counter the kernel multiplexed is scaled and labelled so."""
        value, enabled, running = struct.unpack("=QQQ", self.perf.read(fd, 24))
        if running == 0:
            return None, ": counter never scheduled on the PMU (time_running = 0)"
        if running < enabled:
            share = running / enabled
            return round(value / share), f" (scaled: counted {share:.0%} of the time, multiplexed)"
        return value, ""


# ---- Windows: QueryProcessCycleTime -----------------------------------------------------

def windows_kernel32():
    from ctypes import wintypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    kernel32.GetCurrentProcess.restype = wintypes.HANDLE
    kernel32.QueryProcessCycleTime.argtypes = [wintypes.HANDLE, ctypes.POINTER(ctypes.c_ulonglong)]
    kernel32.QueryProcessCycleTime.restype = wintypes.BOOL
    return kernel32


class ProcessCycleTime:
    """Cycles of all this process's threads (user and kernel mode), as Windows counts them."""

    def __init__(self, kernel32=None):
        self.kernel32 = kernel32 or windows_kernel32()
        self.reason: str | None = None

    def start(self) -> None:
        self.begin = self._query()

    def stop(self) -> dict:
        end = self._query()
        if self.reason is not None:
            return {"cpu_clocks": None, "instructions": None, "cpu_clocks_source": self.reason}
        return {"cpu_clocks": end - self.begin, "instructions": None,
                "cpu_clocks_source": "QueryProcessCycleTime"}

    def _query(self) -> int | None:
        cycles = ctypes.c_ulonglong(0)
        if not self.kernel32.QueryProcessCycleTime(self.kernel32.GetCurrentProcess(),
                                                   ctypes.pointer(cycles)):
            code = getattr(ctypes, "get_last_error", lambda: "unknown")()  # Windows-only function
            self.reason = f"QueryProcessCycleTime failed (Windows error {code})"
            return None
        return cycles.value


class NoCounter:
    def __init__(self, reason: str):
        self.reason = reason

    def start(self) -> None:
        pass

    def stop(self) -> dict:
        return {"cpu_clocks": None, "instructions": None, "cpu_clocks_source": self.reason}


def cycle_backend(perf=None, kernel32=None, proc_root="/proc"):
    if sys.platform.startswith("linux"):
        return PerfCounters(perf, proc_root)
    if sys.platform == "win32":
        return ProcessCycleTime(kernel32)
    if sys.platform == "darwin":
        return NoCounter("macOS: no per-process user-mode cycle counter readable without root")
    return NoCounter(f"{sys.platform}: no cycle counter implemented")


class CycleCounter:
    """Counts the process's own CPU cycles over the timed loop, or says why it cannot.

    start() right before the loop, stop() right after; stop() returns cpu_clocks,
    instructions (None where not counted), cpu_clocks_source and loop_cpu_time_s.
    """

    def __init__(self, perf=None, kernel32=None, proc_root="/proc"):
        self.backend = cycle_backend(perf, kernel32, proc_root)

    def start(self) -> None:
        self.backend.start()
        self.cpu0 = cpu_time_s()

    def stop(self) -> dict:
        loop_cpu_time_s = cpu_time_s() - self.cpu0
        return {**self.backend.stop(), "loop_cpu_time_s": loop_cpu_time_s}


def read_text(path) -> str | None:
    try:
        with open(path) as file:
            return file.read().strip()
    except OSError:
        return None
