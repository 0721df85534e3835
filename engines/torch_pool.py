"""PyTorch eager on the max_pool2d workload (workloads/catalog/max_pool2d.py): one forward
torch.nn.functional.max_pool2d per step, FP32, one thread, of the input the harness prepared,
viewed as NCHW over its channels-last (N, H, W, C) storage as burn-bench's input is. No autograd:
the input needs no gradient, as the release timed the forward alone."""
from __future__ import annotations

import ctypes
import struct

# workloads/inputs.py's array header: magic, dtype code (1 = float32), ndim, four dims.
HEADER = struct.Struct("<8sII4Q")
INPUT = "input.bin"  # workloads/catalog/max_pool2d.py's INPUT (the worker does not load the declaration)
WEIGHT_MODULUS = 97  # and its checksum's modulus


def read_input(torch, path: str, shape: tuple):
    """The prepared (N, H, W, C) float32 array, checked against its header and the point's shape, read
    straight into a tensor's own (aligned) storage: no second copy of it counts in the peak memory."""
    x = torch.empty(shape, dtype=torch.float32)
    with open(path, "rb") as f:
        magic, code, ndim, *dims = HEADER.unpack(f.read(HEADER.size))
        if magic != b"BBARRAY1" or code != 1 or ndim != 4 or tuple(dims) != shape:
            raise ValueError(f"{path}: not a float32 array of shape {shape} (header: {magic!r}, {code}, {dims[:ndim]})")
        size = x.numel() * x.element_size()
        if f.readinto((ctypes.c_char * size).from_address(x.data_ptr())) != size:
            raise ValueError(f"{path}: shorter than its header says")
    return x


class PoolProgram:
    def __init__(self, torch, params: dict, inputs):
        n, c, side = params["batch"], params["channels"], params["size"]
        nhwc = read_input(torch, str(inputs / INPUT) if inputs else "", (n, side, side, c))
        self.x = nhwc.permute(0, 3, 1, 2)
        self.window = (params["kernel"], params["stride"], params["padding"])
        self.pool = torch.nn.functional.max_pool2d
        self.torch = torch
        self.version = torch.__version__
        self.out = None

    def step(self) -> None:
        k, s, p = self.window
        self.out = self.pool(self.x, k, s, p)

    def outputs(self) -> dict[str, float]:
        """Two FP64 sums of the output in NCHW order (plain, and weighted by the index mod 97), one (H, W) plane
        at a time: the checksum adds no output-sized copy to the peak memory."""
        torch = self.torch
        n, c, h, w = self.out.shape
        offsets = torch.arange(h * w, dtype=torch.int64)
        total = weighted = 0.0
        for k in range(n * c):
            plane = self.out[k // c, k % c].reshape(-1).to(torch.float64)
            weights = ((offsets + k * h * w) % WEIGHT_MODULUS).to(torch.float64)
            total += float(plane.sum())
            weighted += float(plane @ weights)
        return {"sum": total, "weighted_sum": weighted}
