"""TensorFlow: eager (GradientTape) and graph (tf.function), one thread.

Tiny and small graphs in FP64: both modes record the graph on a fresh GradientTape every step;
in graph mode that happens inside one traced tf.function (traced once, in the first step) that
returns the value and the gradients. MLP and GPT training in FP32: engines/models_tf.py.
"""
from __future__ import annotations

from pathlib import Path

from engines.base import EngineSpec
from engines.graphs import GRAPHS, GradientProgram

ENGINES = [
    EngineSpec("tensorflow", mode, "python", "cpu", workloads=("tiny", "small", "mlp", "gpt", "energy", "save_load"),
               module="engines.tensorflow", requires=("tensorflow",))
    for mode in ("eager", "graph")
]


def import_single_threaded():
    """Import TensorFlow on the CPU only, with one intra-op and one inter-op thread.

    Both are settable only before the first op; hiding the GPUs keeps a CPU engine on the CPU
    where TensorFlow would otherwise place ops on a visible GPU.
    """
    import tensorflow as tf

    try:
        tf.config.set_visible_devices([], "GPU")
        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    except RuntimeError:
        pass  # the runtime is already initialized in this process: its thread pools are fixed
    return tf


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


def build(spec: EngineSpec, workload: str, params: dict, inputs: Path | None = None):
    if workload in ("mlp", "gpt"):
        from engines import models_tf

        return models_tf.build(spec.mode, workload, inputs)
    tf = import_single_threaded()
    if workload == "save_load":
        from engines import save_load

        return save_load.tensorflow_program(tf, spec.mode, params)
    run = value_and_gradients(tf, GRAPHS[workload])
    if spec.mode == "graph":
        scalar = tf.TensorSpec(shape=(), dtype=tf.float64)
        run = tf.function(run, input_signature=(scalar, scalar), autograph=False)
    a = tf.constant(params["a"], dtype=tf.float64)
    b = tf.constant(params["b"], dtype=tf.float64)
    return GradientProgram(lambda: run(a, b), tf.__version__)
