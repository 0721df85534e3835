"""2-D max pooling at the shape of Burn 0.20's release claim (burn.dev/blog/release-0.20.0), FP32.

The release names its input, a (2, 32, 512, 512) tensor, and the median time of one max_pool2d on
three Burn CPU backends: CubeCL's CPU backend 4.66 ms, LibTorch 16.96 ms, ndarray 851.3 ms
(workloads/claims_burn.csv judges them). The notes do not give the window; their numbers come from
burn-bench's max_pool2d benchmark, whose case at this shape ("unit_stride") is a 5×5 window, stride
1, padding 2, dilation 1, floor rounding, forward only, on an input drawn as (N, H, W, C) and
permuted to NCHW, so that it is channels-last in memory. This workload is that case: one step is
one forward max_pool2d of the prepared input, the output kept until the next step replaces it.
There is no backward: the release timed none.

The input is the same for every engine: prepare() draws it once per run and point, uniform(-1, 1)
in FP32 from the project's seed, and writes it as a .bin array (workloads/inputs.py's format) of
shape (N, H, W, C). Each engine reads it and views it as NCHW without a copy, as burn-bench does.
Max pooling only selects input values, so every engine's output is exact; the check compares two
FP64 sums of the output (plain, and weighted by each element's NCHW index mod 97, which a
transposed or shifted output fails) with numpy's own pooling of the same file.

The release ran each backend multi-threaded on its authors' machine; here each engine runs on one
pinned core with one thread, as every workload does (workloads/differences.py: `threads`).
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

from workloads import inputs as shared
from workloads.base import PaperTable, Workload
from workloads.data import SEED

INPUT = "input.bin"
# The weighted sum's modulus: prime, so that no shift by a row, a channel or an image keeps the weights.
WEIGHT_MODULUS = 97


def output_side(params) -> int:
    return (params["size"] + 2 * params["padding"] - params["kernel"]) // params["stride"] + 1


def prepare(params, steps, folder: Path, data_dir=None) -> None:
    shape = (params["batch"], params["size"], params["size"], params["channels"])
    drawn = np.random.default_rng([SEED, 5]).uniform(-1.0, 1.0, shape).astype(np.float32)
    shared.write_array(Path(folder) / INPUT, drawn)


def pooled(x: np.ndarray, params) -> np.ndarray:
    """numpy's max pooling of an (N, H, W, C) array, -inf padding, as (N, C, H', W')."""
    k, s, p, side = params["kernel"], params["stride"], params["padding"], output_side(params)
    n, h, w, c = x.shape
    padded = np.full((n, h + 2 * p, w + 2 * p, c), -np.inf, dtype=np.float32)
    padded[:, p:p + h, p:p + w] = x
    out = np.full((n, side, side, c), -np.inf, dtype=np.float32)
    for dy in range(k):
        for dx in range(k):
            np.maximum(out, padded[:, dy:dy + s * (side - 1) + 1:s, dx:dx + s * (side - 1) + 1:s], out=out)
    return out.transpose(0, 3, 1, 2)


def checksums(out_nchw: np.ndarray) -> dict:
    flat = np.ascontiguousarray(out_nchw, dtype=np.float64).ravel()
    weights = np.arange(flat.size, dtype=np.int64) % WEIGHT_MODULUS
    return {"sum": float(flat.sum()), "weighted_sum": float(flat @ weights)}


@lru_cache(maxsize=2)
def _reference(folder: str, window: tuple) -> dict:
    return checksums(pooled(shared.read_array(Path(folder) / INPUT), dict(window)))


def reference(params, inputs=None) -> dict:
    return dict(_reference(str(inputs), tuple(sorted(params.items()))))


WORKLOAD = Workload(
    name="max_pool2d",
    title="max_pool2d forward, (2, 32, 512, 512), 5×5 stride 1 (Burn 0.20's release claim)",
    kind="pool",
    precision="fp32",
    grid={"batch": (2,), "channels": (32,), "size": (512,), "kernel": (5,), "stride": (1,), "padding": (2,)},
    iterations={"smoke": 3, "quick": 20, "paper": 100},
    trials={"smoke": 1, "quick": 3, "paper": 5},
    warmup={"smoke": 1, "quick": 2, "paper": 5},
    timeout_s={"smoke": 300, "quick": 600, "paper": 1800},
    blocks=None,  # a step takes milliseconds: every step is a sample
    prepare=prepare,
    reference=reference,
    paper=PaperTable(csv_name="max_pool2d", title="max_pool2d forward at Burn 0.20's release shape (FP32)",
                     metrics=("time",), figure="bars",
                     notes=("Not in the BurTorch paper: Burn 0.20's release notes time this max_pool2d on "
                            "CubeCL's CPU backend (4.66 ms), LibTorch (16.96 ms) and ndarray (851.3 ms); "
                            "claims.md judges their ratios.",),
                     differences=("threads", "burn-libtorch")),
)
