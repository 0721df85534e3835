"""The paper's Figure 1 graph: ten scalar nodes, FP64, rebuilt and differentiated every iteration.

    c = a + b;  d = a*b + b^3;  e = c - d;  f = e^2;  g = f / 2      (a = -41, b = 2)
"""
from workloads import graphs
from workloads.base import PaperTable, Workload


def reference(params, inputs=None):
    a, b = params["a"], params["b"]
    e = (a + b) - (a * b + b**3)
    # dg/de = e; de/da = 1 - b; de/db = 1 - a - 3 b^2
    return {"g": e * e / 2, "dg_da": e * (1 - b), "dg_db": e * (1 - a - 3 * b * b)}


WORKLOAD = Workload(
    name="tiny",
    title="Tiny graph (paper Fig. 1, Tables 2/11/15)",
    kind="graph",
    graph=graphs.tiny,
    precision="fp64",
    grid={"a": (-41.0,), "b": (2.0,)},
    iterations={"smoke": 200, "quick": 2_000, "paper": 100_000},
    trials={"smoke": 1, "quick": 2, "paper": 5},
    warmup={"smoke": 5, "quick": 20, "paper": 20},
    timeout_s={"smoke": 120, "quick": 300, "paper": 1800},
    reference=reference,
    paper=PaperTable(csv_name="tiny", title="Tiny graph (paper Fig. 1): compute time ± std over trials",
                     metrics=("time",), iterations=100_000, figure="bars", theory_bound=True,
                     differences=("tflite-fp32", "graph-modes", "timed-regions")),
)
