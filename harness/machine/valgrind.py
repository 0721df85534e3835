"""Whether this machine can count instructions (valgrind), and how to make it able to."""
from __future__ import annotations

import shutil

VALGRIND = "valgrind"
# N of the two counted children of a trial (N and 2N iterations, after the same warm-up): the
# workload's smoke-profile counts, fixed, so that every run counts the same loop. Measured: a count
# per iteration depends on N (a full garbage collection is amortized over the loop), so N taken from
# a noisy timing moved micrograd's count by 1.4% between runs; with N = 10 one-off events moved counts
# by up to 4%, with the smoke counts (tiny 200, small 100) they repeat to within 0.06%.
COUNTED_PROFILE = "smoke"


def counted_iterations(workload) -> tuple[int, int]:
    """(N, warm-up) of a workload's counted children."""
    return workload.iterations[COUNTED_PROFILE], workload.warmup[COUNTED_PROFILE]


INSTALL_HINT = "install it (Debian/Ubuntu: apt-get install valgrind; Fedora: dnf install valgrind)"


def missing_valgrind() -> str | None:
    """Why instructions cannot be counted here (burtbench run --instructions), or None."""
    if shutil.which(VALGRIND) is None:
        return f"valgrind is not installed: {INSTALL_HINT}"
    return None


# valgrind (every release up to 3.24) emulates no AVX-512: a program using it dies with SIGILL.
NOT_EMULATED = {"avx512f": "AVX-512"}


def cpu_flags() -> set[str]:
    """The CPU's feature flags as Linux names them (/proc/cpuinfo); empty elsewhere."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("flags"):
                    return set(line.partition(":")[2].split())
    except OSError:
        pass
    return set()


def uncountable_isa(flags: set[str] | None = None) -> str | None:
    """The host's instruction set valgrind cannot run (a build for this CPU uses it), or None."""
    flags = cpu_flags() if flags is None else flags
    return next((name for flag, name in NOT_EMULATED.items() if flag in flags), None)
