"""Energy of the small graph run end to end (paper Table 19, Figure 7), FP64.

The same graph, point and reference as the small workload; what differs is what is measured.
The runner reads the machine's energy counter (harness/measure/energy.py) before it spawns the
trial's process and after the process exits, so the energy covers the whole process life:
interpreter start, imports, the loop and teardown. The paper ran 200,000 iterations once per
framework, on battery, and printed one number per row (no spread): hence one trial at the
paper profile, and no warm-up steps, so that the process runs exactly the stated iterations.
"""
from workloads import graphs
from workloads.base import PaperTable, Workload
from workloads.catalog import small

WORKLOAD = Workload(
    name="energy",
    title="Energy of the small graph, end to end (paper Table 19)",
    kind="graph",
    graph=graphs.small,
    precision="fp64",
    grid=small.GRID,
    iterations={"smoke": 100, "quick": 2_000, "paper": 200_000},
    trials={"smoke": 1, "quick": 1, "paper": 1},
    warmup={"smoke": 0, "quick": 0, "paper": 0},
    # JAX eager needs about 9 ms per iteration of this graph (paper Table 3): 200,000 take half an hour.
    timeout_s={"smoke": 120, "quick": 600, "paper": 3600},
    reference=small.reference,
    measures_energy=True,
    paper=PaperTable(csv_name="energy_small", title="Energy of the small graph, end to end",
                     metrics=("wall_time", "energy_total", "energy_task", "energy_os"), iterations=200_000,
                     figure="energy",
                     differences=("tflite-fp32", "graph-modes", "energy-meter", "timed-regions")),
)
