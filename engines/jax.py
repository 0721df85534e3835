"""JAX: value_and_grad op by op (eager) and under jax.jit, on the CPU.

Tiny and small graphs in FP64; MLP and GPT training in FP32 (engines/models_jax.py).
Every step blocks until the value and gradients are computed: JAX dispatches asynchronously,
and a loop that did not wait would time the dispatch, not the work.
"""
from __future__ import annotations

import os
from pathlib import Path

from engines.base import EngineSpec
from engines.graphs import GRAPHS, GradientProgram

ENGINES = [
    EngineSpec("jax", mode, "python", "cpu", workloads=("tiny", "small", "mlp", "gpt", "energy"), module="engines.jax",
               requires=("jax",))
    for mode in ("eager", "jit")
]


def build(spec: EngineSpec, workload: str, params: dict, inputs: Path | None = None):
    # Read by JAX when it first picks its backends: a CPU engine must not land on a visible GPU.
    os.environ["JAX_PLATFORMS"] = "cpu"
    if workload in ("mlp", "gpt"):
        from engines import models_jax

        return models_jax.build(spec.mode, workload, inputs)
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    fn = GRAPHS[workload]
    value_and_grad = jax.value_and_grad(lambda a, b: fn(a, b, jax.nn.relu), argnums=(0, 1))
    if spec.mode == "jit":
        value_and_grad = jax.jit(value_and_grad)
    a = jnp.asarray(params["a"], dtype=jnp.float64)
    b = jnp.asarray(params["b"], dtype=jnp.float64)

    def compute():
        g, (dg_da, dg_db) = value_and_grad(a, b)
        return jax.block_until_ready((g, dg_da, dg_db))

    return GradientProgram(compute, jax.__version__)
