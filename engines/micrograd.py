"""micrograd (the PyPI package) on the tiny and small graphs: Karpathy's scalar Value, Python floats (FP64)."""
from __future__ import annotations

from engines.base import EngineSpec
from engines.graphs import GRAPHS, GradientProgram

ENGINES = [
    EngineSpec("micrograd", "eager", "python", "cpu", workloads=("tiny", "small", "energy"), module="engines.micrograd",
               requires=("micrograd",)),
]


def build(spec: EngineSpec, workload: str, params: dict) -> GradientProgram:
    from importlib.metadata import version

    from micrograd.engine import Value

    fn = GRAPHS[workload]
    a = Value(float(params["a"]))
    b = Value(float(params["b"]))

    def compute():
        # backward() accumulates into the leaves, which outlive the step: start them from zero.
        a.grad = 0.0
        b.grad = 0.0
        g = fn(a, b, Value.relu)
        g.backward()
        return g.data, a.grad, b.grad

    return GradientProgram(compute, version("micrograd"))
