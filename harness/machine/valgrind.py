"""Whether this machine can count instructions (valgrind), and how to make it able to."""
from __future__ import annotations

import shutil

VALGRIND = "valgrind"
# N of the two counted children of a trial (N and 2N iterations, each after the same warm-up):
# small and fixed, since under valgrind an iteration runs ~100x slower (harness/running/instructions.py).
COUNTED_ITERATIONS = 10
COUNTED_WARMUP = 2
INSTALL_HINT = "install it (Debian/Ubuntu: apt-get install valgrind; Fedora: dnf install valgrind)"


def missing_valgrind() -> str | None:
    """Why instructions cannot be counted here (burtbench run --instructions), or None."""
    if shutil.which(VALGRIND) is None:
        return f"valgrind is not installed: {INSTALL_HINT}"
    return None
