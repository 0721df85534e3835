"""A per-trial memory cap on Windows: a job object that limits the child's committed memory.

POSIX children get RLIMIT_AS from the runner's preexec_fn; Windows has no rlimits, so the child
is put in a job object right after it starts (it has done no real work by then: the Python
interpreter or the native driver is still loading).
"""
from __future__ import annotations

import ctypes

JOB_OBJECT_LIMIT_PROCESS_MEMORY = 0x100
JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE = 0x2000
JOB_OBJECT_EXTENDED_LIMIT_INFORMATION_CLASS = 9
PROCESS_SET_QUOTA, PROCESS_TERMINATE = 0x0100, 0x0001


class IoCounters(ctypes.Structure):
    _fields_ = [(name, ctypes.c_ulonglong) for name in (
        "ReadOperationCount", "WriteOperationCount", "OtherOperationCount",
        "ReadTransferCount", "WriteTransferCount", "OtherTransferCount")]


class BasicLimits(ctypes.Structure):
    _fields_ = [("PerProcessUserTimeLimit", ctypes.c_longlong), ("PerJobUserTimeLimit", ctypes.c_longlong),
                ("LimitFlags", ctypes.c_uint32), ("MinimumWorkingSetSize", ctypes.c_size_t),
                ("MaximumWorkingSetSize", ctypes.c_size_t), ("ActiveProcessLimit", ctypes.c_uint32),
                ("Affinity", ctypes.c_size_t), ("PriorityClass", ctypes.c_uint32),
                ("SchedulingClass", ctypes.c_uint32)]


class ExtendedLimits(ctypes.Structure):
    _fields_ = [("BasicLimitInformation", BasicLimits), ("IoInfo", IoCounters),
                ("ProcessMemoryLimit", ctypes.c_size_t), ("JobMemoryLimit", ctypes.c_size_t),
                ("PeakProcessMemoryUsed", ctypes.c_size_t), ("PeakJobMemoryUsed", ctypes.c_size_t)]


def _last_error() -> int:
    """Windows' GetLastError as ctypes kept it (ctypes has it only on Windows)."""
    return getattr(ctypes, "get_last_error", lambda: 0)()


def memory_limits(limit_bytes: int) -> ExtendedLimits:
    info = ExtendedLimits()
    info.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_PROCESS_MEMORY | JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
    info.ProcessMemoryLimit = limit_bytes
    return info


def cap_process_memory(pid: int, limit_bytes: int, kernel32=None):
    """Put process `pid` in a new job capped at `limit_bytes`. Returns the job handle (keep it
    open for the child's life: closing it kills the child) or raises OSError."""
    kernel32 = kernel32 or ctypes.WinDLL("kernel32", use_last_error=True)
    job = kernel32.CreateJobObjectW(None, None)
    if not job:
        raise OSError(_last_error(), "CreateJobObjectW failed")
    info = memory_limits(limit_bytes)
    if not kernel32.SetInformationJobObject(job, JOB_OBJECT_EXTENDED_LIMIT_INFORMATION_CLASS,
                                            ctypes.byref(info), ctypes.sizeof(info)):
        raise OSError(_last_error(), "SetInformationJobObject failed")
    process = kernel32.OpenProcess(PROCESS_SET_QUOTA | PROCESS_TERMINATE, False, pid)
    if not process:
        raise OSError(_last_error(), f"OpenProcess({pid}) failed")
    try:
        if not kernel32.AssignProcessToJobObject(job, process):
            raise OSError(_last_error(), "AssignProcessToJobObject failed")
    finally:
        kernel32.CloseHandle(process)
    return job
