"""Save and load seven activations of the small graph (paper Table 4), FP64, 56 bytes of payload.

The small graph is built once, with its gradients; its seven activations cover both kinds of node:

    leaves         a = -4, b = 2
    intermediate   c = -1, d = 6, e = -7, f = 49   (each node's final value)
    output         g = f/2 + 10/f = 2421/98

Each iteration writes the seven to one file with the engine's own serializer and reads them
back. Engines time the two halves apart: `save_s` and `load_s` are their totals over the timed
loop, `file_size_bytes` the size of the file written, and `save_load_dir` (optional) the folder
it was written in, since its file system sets much of the cost. The loaded values must equal
the saved ones exactly: the tolerance is 0.

Every save writes a new file: each step deletes the file after loading it, outside the save and
load timings. Overwriting one file would time the disk instead of the framework on Linux's
default file system: ext4 starts writing a file back to disk when it is truncated and rewritten
(its auto_da_alloc behaviour). On the machine this was written on that cost 0.2 to 3 ms per
save, depending on the disk's other traffic, against some 20 µs to write a new 56-byte file.

The totals cover every step after the engine built the program, so the workload runs no warm-up
steps: each engine does one untimed round trip while building instead (lazy initialization such
as TensorFlow's tracing is then done before the first timed step).
"""
from workloads import graphs
from workloads.base import PaperTable, Workload
from workloads.catalog import small

ACTIVATIONS = ("a", "b", "c", "d", "e", "f", "g")

# Small integers are exact in FP64. g is the FP64 sum f/2 + 10/f, which is the double nearest
# 2421/98 whether an engine divides 10 by f or multiplies 10 by 1/f (the two differ in the last
# bit of 10/49, which the sum with 24.5 rounds away).
_REFERENCE = {
    (-4.0, 2.0): {"a": -4.0, "b": 2.0, "c": -1.0, "d": 6.0, "e": -7.0, "f": 49.0, "g": 2421 / 98},
}


def reference(params, inputs=None):
    return dict(_REFERENCE[(params["a"], params["b"])])


WORKLOAD = Workload(
    name="save_load",
    title="Save and load of 7 activations of the small graph (paper Table 4)",
    kind="save_load",
    graph=graphs.small_activations,
    precision="fp64",
    grid=small.GRID,
    iterations={"smoke": 20, "quick": 500, "paper": 5_000},
    trials={"smoke": 1, "quick": 3, "paper": 5},
    warmup={"smoke": 0, "quick": 0, "paper": 0},
    timeout_s={"smoke": 120, "quick": 300, "paper": 1800},
    reference=reference,
    tolerance={"fp64": 0.0},
    paper=PaperTable(csv_name="save_load", title="Save and load of 7 activations (FP64)",
                     metrics=("save_time", "load_time", "file_size"), iterations=5_000,
                     differences=("tf-serializer", "graph-modes", "timed-regions")),
)
