"""HIPS autograd on the scalar graphs: value_and_grad over the pair (a, b), Python floats (FP64)."""
from __future__ import annotations

from engines.base import EngineSpec
from engines.programs import GradientProgram, distribution_version

ENGINES = [
    EngineSpec("autograd", "eager", "python", "cpu", kinds=("graph",), module=__name__, requires=("autograd",),
               paper_row=("autograd", "eager", "python", "cpu")),
]


def graph_program(spec: EngineSpec, workload, params: dict, inputs=None) -> GradientProgram:
    import autograd
    import autograd.numpy as anp

    fn = workload.graph

    def relu(x):
        return anp.maximum(x, 0.0)

    # autograd differentiates with respect to one argument; a tuple argument gives both gradients at once.
    value_and_grad = autograd.value_and_grad(lambda ab: fn(ab[0], ab[1], relu))
    leaves = (float(params["a"]), float(params["b"]))

    def compute():
        g, (dg_da, dg_db) = value_and_grad(leaves)
        return g, dg_da, dg_db

    # The authors' script: arrays made per iteration, g from a plain call, then one grad per
    # argument (3 forward and 2 backward passes per iteration).
    def g_of(a, b):
        return fn(a, b, relu)

    grad_a, grad_b = autograd.grad(g_of, 0), autograd.grad(g_of, 1)

    def paper_compute():
        a = anp.array(leaves[0], dtype=anp.float64)
        b = anp.array(leaves[1], dtype=anp.float64)
        return g_of(a, b), grad_a(a, b), grad_b(a, b)

    return GradientProgram(compute, lambda: distribution_version("autograd"), paper_compute=paper_compute)


BUILDERS = {"graph": graph_program}
