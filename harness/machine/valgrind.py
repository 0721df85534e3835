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
