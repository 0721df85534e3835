"""BurTorch: our C++20 engine (burtorch_ext/), as the native driver and as the pybind11 module."""
from engines.base import EngineSpec

ENGINES = [
    # The driver has its workloads compiled in (burtorch_ext/src/driver/main.cpp).
    EngineSpec("burtorch", "eager", "cpp", "cpu", workloads=("tiny", "small", "save_load", "mlp", "gpt", "energy"),
               kind="native", executable="burtorch-bench", paper_row=("burtorch", "eager", "cpp", "cpu"),
               label="BurTorch (this project's engine)"),
    # Graphs from their declaration; the MLP and the GPT written with the module's layers (engines/burtorch_models.py).
    EngineSpec("burtorch", "eager", "python", "cpu", kinds=("graph",), workloads=("mlp", "gpt"), module=__name__,
               requires=("burtorch",)),
]


class GraphProgram:
    """The leaves a and b are made once, then the pool is marked. Every step rewinds the pool to
    that mark (dropping the previous graph, reusing its memory), zeroes the leaves' gradients,
    rebuilds the graph and backpropagates."""

    def __init__(self, burtorch, fn, a: float, b: float):
        self._a = burtorch.Value(a)
        self._b = burtorch.Value(b)
        self._mark = burtorch.mark()
        self._rewind = burtorch.rewind
        self._relu = burtorch.relu
        self._fn = fn
        self._g = None
        self.version = f"burtorch {burtorch.__version__}"

    def step(self) -> None:
        self._rewind(self._mark)
        a, b = self._a, self._b
        a.grad = 0.0
        b.grad = 0.0
        g = self._fn(a, b, self._relu)
        g.backward()
        self._g = g

    def outputs(self) -> dict[str, float]:
        return {"g": self._g.data, "dg_da": self._a.grad, "dg_db": self._b.grad}


def graph_program(spec, workload, params, inputs=None) -> GraphProgram:
    import burtorch

    return GraphProgram(burtorch, workload.graph, float(params["a"]), float(params["b"]))


def training_program(spec, workload, params, inputs=None):
    # The models (and numpy) only for training: graph trials stay lean. In a revision's environment
    # (--env burtorch@REV) that revision's model code lies beside its module, written to its API.
    import importlib.util

    burtorch_models = importlib.import_module(
        "burtorch_models" if importlib.util.find_spec("burtorch_models") else "engines.burtorch_models")
    return burtorch_models.build(workload, inputs)


BUILDERS = {"graph": graph_program, "training": training_program}
