"""Whether this machine can count instructions (valgrind), and how to make it able to."""
from __future__ import annotations

import shutil

VALGRIND = "valgrind"
# N of the two counted children of a trial (N and 2N iterations, each after the same warm-up), from
# the trial's own time per iteration: as many as fill about VALGRIND_LOOP_S of the longer child's loop
# under valgrind (~100x slower), within [MIN, MAX]. What differs between the two children besides
# the N iterations (a full garbage collection landing in one, start-up that does not repeat exactly:
# TF Lite's import is ~10^10 instructions) is divided by N: with N = 10 counts moved by up to 4%
# between runs (micrograd), with N = 200 TF Lite's by 13%; a long loop makes it vanish.
MIN_COUNTED_ITERATIONS = 10
MAX_COUNTED_ITERATIONS = 20_000
VALGRIND_LOOP_S = 10.0
VALGRIND_SLOWDOWN = 100.0
COUNTED_WARMUP = 2


def counted_iterations(per_iter_s: float | None) -> int:
    """N for a point whose iteration takes per_iter_s natively (None: unknown, the least)."""
    if not per_iter_s or per_iter_s <= 0:
        return MIN_COUNTED_ITERATIONS
    n = int(VALGRIND_LOOP_S / (2 * per_iter_s * VALGRIND_SLOWDOWN))
    return max(MIN_COUNTED_ITERATIONS, min(MAX_COUNTED_ITERATIONS, n))
INSTALL_HINT = "install it (Debian/Ubuntu: apt-get install valgrind; Fedora: dnf install valgrind)"


def missing_valgrind() -> str | None:
    """Why instructions cannot be counted here (burtbench run --instructions), or None."""
    if shutil.which(VALGRIND) is None:
        return f"valgrind is not installed: {INSTALL_HINT}"
    return None
