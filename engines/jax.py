"""JAX: value_and_grad op by op (eager) and under jax.jit, on the CPU.

Scalar graphs in FP64; training in FP32 with the workload's own numpy-style model over jax.numpy.
Every step blocks until the value and gradients are computed: JAX dispatches asynchronously,
and a loop that did not wait would time the dispatch, not the work.
"""
from __future__ import annotations

import os
from pathlib import Path

from engines.base import EngineSpec
from engines.programs import GradientProgram

PAPER_MODES = {"eager": ("jax", "eager", "python", "cpu"), "jit": ("jax", "graph", "semi_python", "cpu")}
ENGINES = [
    EngineSpec("jax", mode, "python", "cpu", kinds=("graph", "training"), module=__name__, requires=("jax",),
               paper_row=row)
    for mode, row in PAPER_MODES.items()
]


def _import_jax(x64: bool):
    # Read by JAX when it first picks its backends: a CPU engine must not land on a visible GPU.
    os.environ["JAX_PLATFORMS"] = "cpu"
    import jax

    jax.config.update("jax_enable_x64", x64)
    return jax


def graph_program(spec: EngineSpec, workload, params: dict, inputs: Path | None = None) -> GradientProgram:
    jax = _import_jax(x64=True)
    import jax.numpy as jnp

    fn = workload.graph
    value_and_grad = jax.value_and_grad(lambda a, b: fn(a, b, jax.nn.relu), argnums=(0, 1))
    if spec.mode == "jit":
        value_and_grad = jax.jit(value_and_grad)
    a = jnp.asarray(params["a"], dtype=jnp.float64)
    b = jnp.asarray(params["b"], dtype=jnp.float64)

    def compute():
        g, (dg_da, dg_db) = value_and_grad(a, b)
        return jax.block_until_ready((g, dg_da, dg_db))

    a0, b0 = float(params["a"]), float(params["b"])

    def paper_compute():
        # The authors' scripts make the inputs in the timed loop (jnp.float64); they do not wait
        # for the result, which would time the dispatch only: we still do.
        g, (dg_da, dg_db) = value_and_grad(jnp.float64(a0), jnp.float64(b0))
        return jax.block_until_ready((g, dg_da, dg_db))

    return GradientProgram(compute, jax.__version__, paper_compute=paper_compute)


def array_ops():
    import jax
    import jax.numpy as jnp

    from workloads.array_ops import ArrayOps  # numpy's ops: only trials that train pay its memory

    return ArrayOps(jnp, logsumexp=lambda z: jax.nn.logsumexp(z, axis=-1),
                    pick=lambda z, ids: jnp.take_along_axis(z, ids[..., None], axis=-1)[..., 0],
                    softmax=lambda z: jax.nn.softmax(z, axis=-1))


def training_program(spec: EngineSpec, workload, params: dict, inputs: Path | None = None):
    from engines.training import functional_sgd  # training only: a graph trial's memory stays lean

    jax = _import_jax(x64=False)
    import jax.numpy as jnp

    def to_batch(x, y):
        return jnp.asarray(x, dtype=jnp.int32), jnp.asarray(y, dtype=jnp.int32)

    return functional_sgd(workload, inputs, array_ops(), value_and_grad=jax.value_and_grad,
                          compile_step=jax.jit if spec.mode == "jit" else None, to_array=jnp.asarray,
                          wait=lambda loss, params: jax.block_until_ready(params), to_batch=to_batch,
                          version=jax.__version__)


BUILDERS = {"graph": graph_program, "training": training_program}
