"""Pin a trial to one core, per OS.

Linux pins the child from its first instruction (pinned_spawning), so even its imports stay on
the core; Windows pins it right after start; macOS has no affinity API, which pin_process says.
"""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager


def allowed_cpus() -> list[int]:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    try:
        import psutil
        return sorted(psutil.Process().cpu_affinity())
    except (ImportError, AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def default_cpu() -> int:
    """The last allowed core: core 0 usually takes the most interrupts."""
    return allowed_cpus()[-1]


def format_cpus(cpus: list[int]) -> str:
    """[0, 1, 2, 5] -> '0-2,5' (the kernel's cpu-list format)."""
    spans: list[list[int]] = []
    for cpu in sorted(cpus):
        if spans and cpu == spans[-1][1] + 1:
            spans[-1][1] = cpu
        else:
            spans.append([cpu, cpu])
    return ",".join(str(low) if low == high else f"{low}-{high}" for low, high in spans)


def parse_cpus(text: str) -> list[int]:
    """'0-2,5' -> [0, 1, 2, 5]; an empty string is no core."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        cpus.extend(range(int(low), int(high or low) + 1))
    return cpus


def validate_cpu(cpu) -> str | None:
    """An error message for a core this process cannot be pinned to, else None."""
    if isinstance(cpu, bool) or not isinstance(cpu, int) or cpu < 0:
        return f"--cpu {cpu!r}: expected a core number >= 0"
    allowed = allowed_cpus()
    if cpu not in allowed:
        return f"--cpu {cpu}: this process may only run on cores {format_cpus(allowed)}"
    return None


def pin_process(pid: int, cpu: int) -> str | None:
    """Pin a running process to `cpu`. None on success, else the reason it is not pinned."""
    if hasattr(os, "sched_setaffinity"):
        try:
            os.sched_setaffinity(pid, {cpu})
        except OSError as exc:
            return f"sched_setaffinity failed: {exc.strerror}"
        return None
    if sys.platform == "darwin":
        return "macOS has no API to pin a process to a core (thread affinity tags are only hints)"
    try:
        import psutil
        psutil.Process(pid).cpu_affinity([cpu])
    except ImportError:
        return "psutil is not installed"
    except (AttributeError, OSError, ValueError) as exc:
        return f"psutil cpu_affinity failed: {exc}"
    return None


def pinned_spawning(cpu: int):
    """Pin the calling thread while it spawns a child, which inherits the mask at fork.

    Linux applies sched_setaffinity(0, …) to the calling thread only, so this pins the child
    from its first instruction without a preexec_fn (unsafe once the runner has threads).
    Elsewhere it does nothing: the caller pins the child after start with pin_process.
    """
    return confined({cpu})


@contextmanager
def confined(cpus: set[int]):
    """The calling thread (and what it starts meanwhile) on `cpus`, then back on its own cores;
    nothing where the OS has no sched_setaffinity."""
    if not hasattr(os, "sched_setaffinity"):
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)
