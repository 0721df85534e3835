"""TF Lite on the scalar graphs: a tf.function returning the value and both gradients, converted
once with TFLiteConverter and run by the TF Lite interpreter, one thread.

TF Lite's built-in ops have no FP64, so this engine computes in FP32 (checked with the FP32
tolerance and labelled so). ReLU is written as maximum(x, 0): the gradient of tf.nn.relu is
ReluGrad, which is not a built-in op; the two differ only at exactly 0, which these graphs never hit.
"""
from __future__ import annotations

import warnings

from engines.base import EngineSpec

NOTE = "TF Lite built-in ops have no FP64: FP32"

ENGINES = [
    EngineSpec("tflite", "graph", "interpreter", "cpu", kinds=("graph",), module=__name__, requires=("tensorflow",),
               distribution="tensorflow", precision="fp32", note=NOTE, paper_row=("tflite", "graph", "tflite_interpreter", "cpu")),
]

OUTPUTS = ("g", "dg_da", "dg_db")


def convert(tf, fn) -> bytes:
    """The flatbuffer of a model with inputs a, b and outputs g, dg_da, dg_db (FP32 scalars)."""
    def value_and_gradients(a, b):
        with tf.GradientTape() as tape:
            tape.watch(a)
            tape.watch(b)
            g = fn(a, b, lambda x: tf.maximum(x, 0.0))
        dg_da, dg_db = tape.gradient(g, (a, b))
        return {"g": g, "dg_da": dg_da, "dg_db": dg_db}

    module = tf.Module()
    module.run = tf.function(value_and_gradients, autograph=False, input_signature=(
        tf.TensorSpec((), tf.float32, name="a"), tf.TensorSpec((), tf.float32, name="b")))
    converter = tf.lite.TFLiteConverter.from_concrete_functions([module.run.get_concrete_function()], module)
    return converter.convert()


def interpreter_class(tf):
    """tf.lite.Interpreter, as in the paper; its successor package ai_edge_litert once TF drops it."""
    if hasattr(tf.lite, "Interpreter"):
        return tf.lite.Interpreter, "tf.lite.Interpreter"
    from ai_edge_litert.interpreter import Interpreter

    return Interpreter, "ai_edge_litert.interpreter.Interpreter"


class InterpreterProgram:
    """Each step writes both inputs and invokes; the outputs stay in the interpreter until read.
    The authors' script (paper_step) sets the inputs once and copies the three outputs out at each step."""

    def __init__(self, interpreter, a, b, version: str, extra: dict):
        signature = interpreter.get_signature_runner()
        inputs = signature.get_input_details()
        outputs = signature.get_output_details()
        self._interpreter = interpreter
        self._feeds = ((inputs["a"]["index"], a), (inputs["b"]["index"], b))
        self._fetches = {name: outputs[name]["index"] for name in OUTPUTS}
        self.version = version
        self.extra = extra
        for index, value in self._feeds:
            interpreter.set_tensor(index, value)

    def step(self) -> None:
        for index, value in self._feeds:
            self._interpreter.set_tensor(index, value)
        self._interpreter.invoke()

    def paper_step(self) -> None:
        self._interpreter.invoke()
        for index in self._fetches.values():
            self._interpreter.get_tensor(index)

    def outputs(self) -> dict[str, float]:
        return {name: float(self._interpreter.get_tensor(index)) for name, index in self._fetches.items()}


def graph_program(spec: EngineSpec, workload, params: dict, inputs=None) -> InterpreterProgram:
    import numpy as np

    from engines.tf_runtime import single_threaded_tensorflow  # with TensorFlow, inside the builder as it is

    tf = single_threaded_tensorflow()
    model = convert(tf, workload.graph)
    cls, name = interpreter_class(tf)
    with warnings.catch_warnings():
        # tf.lite.Interpreter warns that it is deprecated in favour of ai_edge_litert: known, and
        # recorded in the result's "interpreter" field instead of cluttering every trial's stderr.
        warnings.filterwarnings("ignore", message=".*tf.lite.Interpreter is deprecated", category=UserWarning)
        interpreter = cls(model_content=model, num_threads=1)
    interpreter.allocate_tensors()
    a = np.array(params["a"], dtype=np.float32)
    b = np.array(params["b"], dtype=np.float32)
    return InterpreterProgram(interpreter, a, b, tf.__version__, {"precision_note": NOTE, "interpreter": name})


BUILDERS = {"graph": graph_program}
