"""micrograd (the PyPI package) on the scalar graphs: Karpathy's scalar Value, Python floats (FP64)."""
from __future__ import annotations

from engines.base import EngineSpec
from engines.programs import GradientProgram, distribution_version

ENGINES = [
    EngineSpec("micrograd", "eager", "python", "cpu", kinds=("graph",), module=__name__, requires=("micrograd",),
               paper_row=("micrograd", "eager", "python", "cpu")),
]


def graph_program(spec: EngineSpec, workload, params: dict, inputs=None) -> GradientProgram:
    from micrograd.engine import Value

    fn = workload.graph
    a0, b0 = float(params["a"]), float(params["b"])
    a, b = Value(a0), Value(b0)

    def compute():
        # backward() accumulates into the leaves, which outlive the step: start them from zero.
        a.grad = 0.0
        b.grad = 0.0
        g = fn(a, b, Value.relu)
        g.backward()
        return g.data, a.grad, b.grad

    def paper_compute():
        # The authors' script makes both leaves inside its timed loop (fresh gradients).
        a, b = Value(a0), Value(b0)
        g = fn(a, b, Value.relu)
        g.backward()
        return g.data, a.grad, b.grad

    return GradientProgram(compute, lambda: distribution_version("micrograd"), paper_compute=paper_compute)


BUILDERS = {"graph": graph_program}
