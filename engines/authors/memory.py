"""The memory peaks (and the core) of a program we run but did not write, from inside it.

A Linux child's ru_maxrss (wait4) starts at its spawner's resident size, since the high-water mark
survives fork and exec: the parent cannot learn a 3 MiB child's peak from it. VmHWM and VmPeak in
/proc/self/status start afresh at exec, but the child is gone by the time the parent could read
them. So a tiny library (peak_memory.c) is preloaded into the child: at exit it writes its
process's VmHWM, VmPeak, the core it last ran on and its allowed cores to a file.

    env = child_env(out_file)            # add to the child's environment (LD_PRELOAD, ...)
    ... run the child, let it exit ...
    read_peak(out_file, executable)      # -> dict of peak_resident_bytes, peak_virtual_bytes, ...

The library is compiled on first use with the system C compiler ($CC, else cc/gcc/clang) into
build/authors/preload/<hash>/ and reused. A statically linked program ignores LD_PRELOAD, and a
process killed by a signal writes nothing: read_peak then says why its values are null.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path
from typing import Mapping

from engines import children
from engines.authors.source import PROJECT_ROOT
from engines.file_lock import exclusive

C_SOURCE = Path(__file__).resolve().parent / "peak_memory.c"
OUT_VAR = "BURTBENCH_PEAK_OUT"
LINEBUF_VAR = "BURTBENCH_STDOUT_LINEBUF"
LIB_NAME = "libburtbench_peak.so"


class PreloadUnavailable(Exception):
    """The preload library cannot be had here; str(error) is one line."""


def _compiler() -> str | None:
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def preload_library(project_root: Path = PROJECT_ROOT) -> Path:
    """The compiled library (built on first use, cached by source and compiler). Linux only."""
    if not sys.platform.startswith("linux"):
        raise PreloadUnavailable(f"the peak-memory preload library is Linux-only (this is {sys.platform})")
    cc = _compiler()
    if cc is None:
        raise PreloadUnavailable("no C compiler found ($CC, cc, gcc, clang) to build the peak-memory library")
    digest = hashlib.sha256(C_SOURCE.read_bytes() + cc.encode()).hexdigest()[:16]
    folder = Path(project_root) / "build" / "authors" / "preload" / digest
    lib = folder / LIB_NAME
    if lib.is_file():
        return lib
    with exclusive(folder.parent / "preload.lock", "burtbench: waiting for another process to build the preload library"):
        if lib.is_file():
            return lib
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{LIB_NAME}.{os.getpid()}"
        cmd = [cc, "-O2", "-shared", "-fPIC", "-Wall", "-o", str(tmp), str(C_SOURCE)]
        proc = children.run(cmd, "building the peak-memory library", 120, capture_output=True, text=True)
        if proc.returncode != 0:
            tmp.unlink(missing_ok=True)
            first = next((line for line in proc.stderr.splitlines() if "error" in line), proc.stderr.strip()[:300])
            raise PreloadUnavailable(f"cannot build the peak-memory library: {first}")
        os.replace(tmp, lib)
    return lib


def child_env(out_file: str | os.PathLike, base: Mapping[str, str] | None = None, line_buffered: bool = False,
              project_root: Path = PROJECT_ROOT) -> dict[str, str]:
    """The variables to add to a child's environment so that it reports its peaks into out_file.

    An LD_PRELOAD already in `base` (default: os.environ) is kept after ours. With line_buffered,
    the child's C stdout is made line-buffered, so a program killed at its timeout has printed its
    lines (use it for programs whose printing is outside their timed region).
    """
    base = os.environ if base is None else base
    lib = str(preload_library(project_root))
    existing = base.get("LD_PRELOAD", "").strip()
    env = {"LD_PRELOAD": f"{lib}:{existing}" if existing else lib, OUT_VAR: str(out_file)}
    if line_buffered:
        env[LINEBUF_VAR] = "1"
    return env


def is_dynamic_elf(executable: str | os.PathLike) -> bool | None:
    """True when the ELF file asks for a program interpreter (so LD_PRELOAD applies), None if not ELF."""
    import struct

    try:
        with open(executable, "rb") as handle:
            head = handle.read(64)
            if head[:4] != b"\x7fELF":
                return None
            is64 = head[4] == 2
            endian = "<" if head[5] == 1 else ">"
            if is64:
                phoff, = struct.unpack_from(endian + "Q", head, 0x20)
                phentsize, phnum = struct.unpack_from(endian + "HH", head, 0x36)
            else:
                phoff, = struct.unpack_from(endian + "I", head, 0x1C)
                phentsize, phnum = struct.unpack_from(endian + "HH", head, 0x2A)
            handle.seek(phoff)
            table = handle.read(phentsize * phnum)
    except OSError:
        return None
    PT_INTERP = 3
    for i in range(phnum):
        p_type, = struct.unpack_from(endian + "I", table, i * phentsize)
        if p_type == PT_INTERP:
            return True
    return False


def read_peak(out_file: str | os.PathLike, executable: str | os.PathLike | None = None) -> dict:
    """The child's report, as the worker's fields: bytes, each with its source; null with the reason."""
    path = Path(out_file)
    values: dict[str, str] = {}
    try:
        for line in path.read_text().splitlines():
            if "=" in line:
                name, value = line.split("=", 1)
                values[name.strip()] = value.strip()
    except OSError:
        values = {}
    if not values:
        if executable is not None and is_dynamic_elf(executable) is False:
            why = "no report: the program is statically linked, so LD_PRELOAD does not apply"
        else:
            why = ("no report from the preloaded library (the process was killed, ended in _exit,"
                   " or did not load it)")
        return {"peak_resident_bytes": None, "peak_resident_source": why,
                "peak_virtual_bytes": None, "peak_virtual_source": why,
                "ran_on_cpu": None, "cpus_allowed": None, "cpu_source": why}

    def kb(name: str) -> int | None:
        try:
            return int(values[name]) * 1024
        except (KeyError, ValueError):
            return None

    def cpu() -> int | None:
        try:
            value = int(values["cpu"])
        except (KeyError, ValueError):
            return None
        return value if value >= 0 else None

    source = "/proc/self/status {} read at exit by the preloaded peak-memory library"
    return {
        "peak_resident_bytes": kb("VmHWM_kB"), "peak_resident_source": source.format("VmHWM"),
        "peak_virtual_bytes": kb("VmPeak_kB"), "peak_virtual_source": source.format("VmPeak"),
        "ran_on_cpu": cpu(), "cpus_allowed": values.get("Cpus_allowed_list"),
        "cpu_source": "sched_getcpu() and /proc/self/status Cpus_allowed_list at exit (preloaded library)",
    }
