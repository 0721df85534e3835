"""The in-child loop timer: a monotonic clock read once per block, never per iteration.

Reading the clock every iteration would add its own cost to loops of tens of nanoseconds, so
the loop is cut into blocks; each block's time divided by its size is one per-iteration sample.
"""
from __future__ import annotations

import time


def block_sizes(iterations: int, blocks: int) -> list[int]:
    blocks = max(1, min(blocks, iterations))
    base, extra = divmod(iterations, blocks)
    return [base + (1 if i < extra else 0) for i in range(blocks)]


def timed_blocks(step, iterations: int, blocks: int, sync=None, prepare=None) -> tuple[float, list[float]]:
    """Run `step` `iterations` times; return (total seconds, per-iteration seconds of each block).

    `prepare` runs before each block, outside the timed region (batch preparation in training);
    `sync` after each block, inside it. (No typing import: this runs in the lean worker child.)
    """
    clock = time.perf_counter_ns
    samples = []
    total_ns = 0
    for size in block_sizes(iterations, blocks):
        if prepare is not None:
            prepare()
        start = clock()
        for _ in range(size):
            step()
        if sync is not None:
            sync()
        elapsed = clock() - start
        total_ns += elapsed
        samples.append(elapsed / size / 1e9)
    return total_ns / 1e9, samples
