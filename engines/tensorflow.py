"""TensorFlow: eager (GradientTape) and graph (tf.function), one thread.

Scalar graphs in FP64: both modes record the graph on a fresh GradientTape every step; in graph
mode that happens inside one traced tf.function (traced once, in the first step) that returns the
value and the gradients. Training in FP32: engines/tf_models.py. Save/load: engines/save_load.py.
"""
from __future__ import annotations

from pathlib import Path

from engines.base import EngineSpec
from engines.programs import GradientProgram
from engines.tf_runtime import single_threaded_tensorflow

# The workloads engines/tf_models.py has a model for.
TRAINING = ("mlp", "gpt")
PAPER_MODES = {"eager": ("tensorflow", "eager", "python", "cpu"), "graph": ("tensorflow", "graph", "semi_python", "cpu")}
ENGINES = [
    EngineSpec("tensorflow", mode, "python", "cpu", kinds=("graph", "save_load"), workloads=TRAINING,
               module=__name__, requires=("tensorflow",), paper_row=row)
    for mode, row in PAPER_MODES.items()
]


def value_and_gradients(tf, fn):
    """(g, dg/da, dg/db) of fn(a, b, relu), recorded on a new tape at each call."""
    def run(a, b):
        with tf.GradientTape() as tape:
            tape.watch(a)
            tape.watch(b)
            g = fn(a, b, tf.nn.relu)
        dg_da, dg_db = tape.gradient(g, (a, b))
        return g, dg_da, dg_db

    return run


def graph_program(spec: EngineSpec, workload, params: dict, inputs: Path | None = None) -> GradientProgram:
    tf = single_threaded_tensorflow()
    run = value_and_gradients(tf, workload.graph)
    if spec.mode == "graph":
        scalar = tf.TensorSpec(shape=(), dtype=tf.float64)
        run = tf.function(run, input_signature=(scalar, scalar), autograph=False)
    a = tf.constant(params["a"], dtype=tf.float64)
    b = tf.constant(params["b"], dtype=tf.float64)
    # The authors' scripts: the leaves are tf.Variables (a read at each use), and graph mode is a
    # tf.function with no signature, called with the Variables.
    paper_run = value_and_gradients(tf, workload.graph)
    if spec.mode == "graph":
        paper_run = tf.function(paper_run, autograph=False)
    a_var = tf.Variable(params["a"], dtype=tf.float64)
    b_var = tf.Variable(params["b"], dtype=tf.float64)
    return GradientProgram(lambda: run(a, b), tf.__version__, paper_compute=lambda: paper_run(a_var, b_var))


def training_program(spec: EngineSpec, workload, params: dict, inputs: Path | None = None):
    single_threaded_tensorflow()
    from engines import tf_models  # the models (and numpy) only for training: graph trials stay lean

    return tf_models.build(spec.mode, workload, inputs)


def save_load_program(spec: EngineSpec, workload, params: dict, inputs: Path | None = None):
    from engines import save_load  # save/load trials only: the others' memory stays lean

    return save_load.tensorflow_program(single_threaded_tensorflow(), spec.mode, workload, params)


BUILDERS = {"graph": graph_program, "training": training_program, "save_load": save_load_program}
