"""A workload defined outside the catalog (a plug-in named in BURTBENCH_WORKLOAD_MODULES): the tests
show that this module alone gives it a plan, trials on every Python graph engine, a table and a figure."""
from workloads.base import PaperTable, Workload


def graph(a, b, relu):
    return a * a * b + relu(b - a)


def reference(params, inputs=None):
    a, b = params["a"], params["b"]
    step = 1.0 if b > a else 0.0
    return {"g": a * a * b + max(b - a, 0.0), "dg_da": 2 * a * b - step, "dg_db": a * a + step}


WORKLOAD = Workload(
    name="toy", title="Toy graph a²b + relu(b − a)", kind="graph", graph=graph, precision="fp64",
    grid={"a": (3.0,), "b": (5.0,)}, iterations={"smoke": 50, "quick": 500, "paper": 5_000},
    trials={"smoke": 1, "quick": 2, "paper": 5}, warmup={"smoke": 2, "quick": 5, "paper": 20},
    timeout_s={"smoke": 120, "quick": 300, "paper": 600}, reference=reference,
    paper=PaperTable(csv_name="toy", title="Toy graph: time per iteration", metrics=("time", "peak_resident"),
                     figure="bars"),
)
