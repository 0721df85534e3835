"""micrograd's 32-node example (paper Fig. 2, Table 3), FP64, rebuilt and differentiated every iteration.

    c = a + b;  d = a*b + b**3
    c += c + 1;  c += 1 + c + (-a)
    d += d*2 + relu(b + a);  d += 3*d + relu(b - a)
    e = c - d;  f = e**2;  g = f / 2;  g += 10 / f          (a = -4, b = 2)

`x += y` makes a new node (micrograd and PyTorch semantics), which is what makes
dg/da = 138.8338 rather than the 104.125 of a ReLU whose backward multiplies by its output.
"""
from workloads import graphs
from workloads.base import PaperTable, Workload

# Exact rational results of the graph at the default point, computed once with fractions.Fraction:
# g = 2421/98, dg/da = 47620/343, dg/db = 221433/343.
_REFERENCE = {
    (-4.0, 2.0): {"g": 2421 / 98, "dg_da": 47620 / 343, "dg_db": 221433 / 343},
}
GRID = {"a": (-4.0,), "b": (2.0,)}


def reference(params, inputs=None):
    return dict(_REFERENCE[(params["a"], params["b"])])


WORKLOAD = Workload(
    name="small",
    title="Small graph (micrograd example, paper Fig. 2, Table 3)",
    kind="graph",
    graph=graphs.small,
    precision="fp64",
    grid=GRID,
    iterations={"smoke": 100, "quick": 1_000, "paper": 20_000},
    trials={"smoke": 1, "quick": 2, "paper": 5},
    warmup={"smoke": 5, "quick": 20, "paper": 20},
    timeout_s={"smoke": 120, "quick": 300, "paper": 1800},
    reference=reference,
    paper=PaperTable(csv_name="small", title="Small graph (paper Fig. 2): compute time, CPU clocks, memory",
                     metrics=("time", "min_time", "cpu_clocks", "peak_private", "peak_resident"),
                     iterations=20_000, figure="bars", theory_bound=True,
                     differences=("tflite-fp32", "graph-modes", "timed-regions")),
)
