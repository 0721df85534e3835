"""tinygrad on the CPU: its default lazy execution (eager) and TinyJit (jit).

eager: every step builds tinygrad's lazy graph, schedules it into fused kernels (compiled at the
first step, taken from tinygrad's in-process cache after) and runs them. jit: TinyJit compiles a
step's kernels at its first call, records them at its second and replays them from the third;
both calls are made in the builder, so that compiling and recording fall in the trial's init and
every timed step replays. Every step ends with tinygrad's wait for its device (Device.synchronize,
about 9 µs here, where the kernels run on the calling thread): no step returns before its work is done.

tinygrad's CPU device compiles each kernel with clang and runs it on the calling thread. It is
held to the trial's one core and one process: no kernel split across cores (NUM_CPU_THREADS=1),
and no pool of compiling processes (PARALLEL=0), whose work and memory would escape the trial's
measures; its disk cache of compiled kernels is off (CACHELEVEL=0), so every trial compiles in its
init, as a first run does. Scalar graphs in FP64 (the clang backend has float64); training in FP32
with the workload's own numpy-style model (engines/tinygrad_models.py).
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from engines.base import EngineSpec
from engines.programs import GradientProgram, distribution_version

DEVICE = "CPU"
# tinygrad takes its compiler from $CC, which may name the C++ build's (gcc): it is set to clang's.
COMPILER = "clang"


def clang_missing() -> str | None:
    """Why tinygrad's CPU device cannot compile here, judged without importing tinygrad."""
    if shutil.which(COMPILER):
        return None
    return f"tinygrad's CPU device compiles its kernels with {COMPILER}, which is not on PATH (make clang)"


ENGINES = [
    EngineSpec("tinygrad", mode, "python", "cpu", kinds=("graph", "training"), module=__name__,
               requires=("tinygrad",), condition=clang_missing)
    for mode in ("eager", "jit")
]


def import_tinygrad():
    # Read by tinygrad when it is imported: the CPU device (not an accelerator it may find), kernels
    # on one core compiled in this process, and no compiled kernels from an earlier process.
    os.environ.update(DEV=DEVICE, NUM_CPU_THREADS="1", PARALLEL="0", CACHELEVEL="0", CC=COMPILER)
    import tinygrad

    return tinygrad


def version() -> str:
    return distribution_version("tinygrad")  # tinygrad has no __version__


def captured(jitted, *example):
    """A TinyJit function made ready here, in init: it compiles at its first call and records its
    kernels at its second, so that every timed call replays them."""
    for _ in range(2):
        jitted(*example)
    return jitted


class TensorGradientProgram(GradientProgram):
    """A GradientProgram whose triple is tinygrad tensors: read back with item(), after the loop."""

    def outputs(self) -> dict[str, float]:
        g, dg_da, dg_db = self._last
        return {"g": g.item(), "dg_da": dg_da.item(), "dg_db": dg_db.item()}


def graph_program(spec: EngineSpec, workload, params: dict, inputs: Path | None = None) -> TensorGradientProgram:
    tinygrad = import_tinygrad()
    Tensor, dtypes = tinygrad.Tensor, tinygrad.dtypes
    fn = workload.graph

    def leaf(value):  # a buffer of its own: a Python number would be folded into the kernels as a constant
        return Tensor([value], device=DEVICE, dtype=dtypes.float64).reshape(()).realize()

    def value_and_gradients(a, b):
        g = fn(a, b, Tensor.relu)
        dg_da, dg_db = g.gradient(a, b)
        return g.realize(dg_da, dg_db), dg_da, dg_db

    a, b = leaf(params["a"]), leaf(params["b"])
    if spec.mode == "jit":
        value_and_gradients = captured(tinygrad.TinyJit(value_and_gradients), a, b)
    synchronize = tinygrad.Device[DEVICE].synchronize

    def compute():
        out = value_and_gradients(a, b)
        synchronize()
        return out

    return TensorGradientProgram(compute, version)


def training_program(spec: EngineSpec, workload, params: dict, inputs: Path | None = None):
    from engines import tinygrad_models  # the models (and numpy) only for training: graph trials stay lean

    return tinygrad_models.build(spec.mode, workload, inputs, import_tinygrad(), DEVICE, captured, version)


BUILDERS = {"graph": graph_program, "training": training_program}
