"""Instructions per iteration (`burtbench run --instructions`): a proxy for time that a noisy machine
repeats exactly, counted by valgrind (cachegrind without its cache model: the cheapest tool that
counts every instruction).

Only the timed loop is counted, with no change to any child: the trial's child runs twice more under
valgrind, with N and with 2N iterations (the same warm-up), and (I(2N) - I(N)) / N is what one
iteration adds; start-up, imports, warm-up and exit cancel out. N is the workload's smoke-profile
count, fixed (harness/machine/valgrind.py: tiny 200, small 100), since an iteration under valgrind
runs ~100x slower and `import torch` alone takes about a minute.

What moves the counts between repeats is pinned: the hash seed (PYTHONHASHSEED, already every
child's), and the address layout (valgrind places the program itself).
"""
from __future__ import annotations

import re
import shutil
from dataclasses import dataclass

from harness.machine.valgrind import VALGRIND

# A counted child's time limit where the user set none (--timeout): valgrind's start-up of a heavy
# framework is tens of seconds.
TIMEOUT_S = 600.0
# A counted child times its loop as one block: with a block per iteration (tiny, small) the count
# would add each block's clock reads and the printing of each block's time, whose digits move it.
# Measured on our driver's tiny loop (~530 instructions an iteration, N = 200): a block per step,
# counts of one build 5.6% apart; one block, 1.6%; one block and SHORT_LOOP below: see docs/measuring.md.
COUNTED_BLOCKS = 1
# What a child does once (print its times, read its peaks) moves its count by ~1,000 instructions
# (our driver) to ~5,000 (our Python row) from run to run: a loop that adds fewer than SHORT_LOOP is
# counted again LONGER times as long, so that its count per iteration repeats within ~0.1%.
SHORT_LOOP = 5_000_000
LONGER = 10
TOOL_ARGS = ("--tool=cachegrind", "--cache-sim=no", "--branch-sim=no", "--cachegrind-out-file=/dev/null",
             "--trace-children=yes")
# cachegrind's summary line, once per process it followed: "==123== I   refs:      1,234,567"
REFS = re.compile(r"^==\d+==\s+I\s+refs:\s+([\d,]+)\s*$", re.MULTILINE)


def wrap(cmd: list[str]) -> list[str]:
    """A child's command line, run under valgrind."""
    return [shutil.which(VALGRIND) or VALGRIND, *TOOL_ARGS, *cmd]


def parse_refs(stderr: str) -> int | None:
    """The instructions valgrind counted, summed over the processes it followed; None if it said none."""
    found = REFS.findall(stderr)
    return sum(int(n.replace(",", "")) for n in found) if found else None


@dataclass(frozen=True)
class Count:
    per_iter: float | None
    reason: str | None  # why per_iter is None
    cost_s: float  # what counting took, both children


def per_iteration(short: int | None, long: int | None, iterations: int) -> float | None:
    """(I(2N) - I(N)) / N; None where a count is missing or the loop added nothing measurable."""
    if short is None or long is None or long <= short:
        return None
    return (long - short) / iterations


def timeout_s(given: float | None) -> float:
    """A counted child's time limit: the user's --timeout where given (it holds for every child)."""
    return TIMEOUT_S if given is None else given


def why_not(stderr: str, reason: str | None, timed_out: bool = False, limit_s: float = TIMEOUT_S) -> str:
    """Why a counted child gave no count, in the reader's terms."""
    if timed_out:
        return f"too slow under valgrind: a counted child ran past {limit_s:g} s (--timeout)"
    if "unhandled instruction" in stderr or "Illegal opcode" in stderr:
        return ("valgrind does not emulate an instruction of this program (SIGILL; a build for this CPU, "
                "e.g. -march=native with AVX-512, which valgrind cannot run)")
    return f"under valgrind: {reason}"
