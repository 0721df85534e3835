"""Apple MLX: value_and_grad op by op (eager) and under mx.compile, on the CPU.

MLX computes lazily: every step evaluates the value and both gradients, or nothing would be timed.
MLX has float64 on its CPU device (not on the GPU), so the tiny and small graphs run in FP64 as in
every other engine; MLP and GPT training runs in FP32 (engines/models_mlx.py).
"""
from __future__ import annotations

from pathlib import Path

from engines.base import EngineSpec
from engines.graphs import GRAPHS, GradientProgram

ENGINES = [
    EngineSpec("mlx", mode, "python", "cpu", workloads=("tiny", "small", "mlp", "gpt", "energy"), module="engines.mlx",
               requires=("mlx",))
    for mode in ("eager", "compile")
]


def build(spec: EngineSpec, workload: str, params: dict, inputs: Path | None = None):
    if workload in ("mlp", "gpt"):
        from engines import models_mlx

        return models_mlx.build(spec.mode, workload, inputs)
    import mlx.core as mx

    mx.set_default_device(mx.cpu)
    fn = GRAPHS[workload]

    # mx.maximum rather than mlx.nn.relu: the latter is itself an mx.compile'd function, which
    # would make the eager mode partly compiled.
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
