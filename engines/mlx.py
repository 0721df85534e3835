"""Apple MLX: value_and_grad op by op (eager) and under mx.compile, on the CPU.

MLX computes lazily: every step evaluates the value and the gradients (or the new parameters),
or nothing would be timed. MLX has float64 on its CPU device (not on the GPU), so the scalar
graphs run in FP64 as in every other engine; training runs in FP32 with the workload's own
numpy-style model over mlx.core. Only mlx.core is used: mlx.nn's activations are themselves
compiled functions, which would make the eager mode partly compiled.
"""
from __future__ import annotations

from pathlib import Path

from engines.base import EngineSpec
from engines.programs import GradientProgram

ENGINES = [
    EngineSpec("mlx", "eager", "python", "cpu", kinds=("graph", "training"), module=__name__, requires=("mlx",),
               paper_row=("mlx", "eager", "python", "cpu")),
    EngineSpec("mlx", "compile", "python", "cpu", kinds=("graph", "training"), module=__name__, requires=("mlx",)),
]


def _import_mlx():
    import mlx.core as mx

    mx.set_default_device(mx.cpu)
    return mx


def graph_program(spec: EngineSpec, workload, params: dict, inputs: Path | None = None) -> GradientProgram:
    mx = _import_mlx()
    fn = workload.graph

    def g_of(a, b):
        return fn(a, b, lambda x: mx.maximum(x, 0.0))

    value_and_grad = mx.value_and_grad(g_of, argnums=(0, 1))
    if spec.mode == "compile":
        value_and_grad = mx.compile(value_and_grad)
    a = mx.array(params["a"], dtype=mx.float64)
    b = mx.array(params["b"], dtype=mx.float64)

    def compute():
        g, (dg_da, dg_db) = value_and_grad(a, b)
        mx.eval(g, dg_da, dg_db)
        return g, dg_da, dg_db

    return GradientProgram(compute, mx.__version__)


def array_ops(mx):
    from workloads.array_ops import ArrayOps  # numpy's ops: only trials that train pay its memory

    def pick(z, ids):
        return mx.take_along_axis(z, mx.expand_dims(ids, -1), axis=-1).squeeze(-1)

    return ArrayOps(mx, logsumexp=lambda z: mx.logsumexp(z, axis=-1), pick=pick,
                    softmax=lambda z: mx.softmax(z, axis=-1), layer_norm=mx.fast.layer_norm)


def training_program(spec: EngineSpec, workload, params: dict, inputs: Path | None = None):
    from engines.training import functional_sgd  # training only: a graph trial's memory stays lean

    mx = _import_mlx()

    def to_batch(x, y):
        batch = mx.array(x, dtype=mx.int32), mx.array(y, dtype=mx.int32)
        mx.eval(*batch)
        return batch

    return functional_sgd(workload, inputs, array_ops(mx), value_and_grad=mx.value_and_grad,
                          compile_step=mx.compile if spec.mode == "compile" else None, to_array=mx.array,
                          wait=mx.eval, to_batch=to_batch, version=mx.__version__)


BUILDERS = {"graph": graph_program, "training": training_program}
