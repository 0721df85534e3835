"""Save and load of the small graph's seven activations (workloads/catalog/save_load.py), per framework.

Each Program computes the activations once with its framework (forward and backward, FP64),
then every step() writes the seven to one file and reads them back, timing the two halves apart.
Each save starts from the seven activation tensors and each load ends with seven tensors again,
so packing them into one file is part of what is timed.

The paper names no serializer; its file sizes are the clue, and where they say nothing we take
the framework's plain tensor-to-file path:
- torch eager: torch.save / torch.load of the list of seven 0-dim tensors. The paper's 2,564
  bytes fit that archive as torch 2.5 wrote it.
- torch TorchScript: the activations come from the traced graph and are saved the same way: the
  paper prints the same 2,564 bytes for both rows (torch.jit.save of a module holding the seven
  would write a larger file).
- torch → NumPy → bytes (engine torch/numpy/python/cpu): each tensor's .numpy().tobytes(),
  concatenated and written raw, 56 bytes; read back with np.frombuffer and torch.from_numpy.
- TensorFlow eager and graph: tf.io.serialize_tensor of the seven stacked into one tensor,
  written with tf.io.write_file; read back with tf.io.read_file, tf.io.parse_tensor and unstacked.
  Graph mode runs the same ops inside tf.functions. (The paper's 634 and 329 bytes point to two
  other containers, which it does not name.)
"""
from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Callable

from workloads.catalog.save_load import ACTIVATIONS


class SaveLoadProgram:
    """step(): one save and one load of the activations; extra: their totals and the file's size.

    Building does one untimed round trip, so the totals cover the timed loop alone (the workload
    runs no warm-up steps) and the first timed step finds the serializer ready. Each step deletes
    the file after loading it, untimed, so that every save writes a new file (workloads/catalog/save_load.py
    says why).
    """

    def __init__(self, save: Callable[[object], None], load: Callable[[object], object],
                 to_floats: Callable[[object], list[float]], suffix: str, version: str,
                 file_arg: Callable[[Path], object] = lambda path: path):
        self._folder = tempfile.TemporaryDirectory(prefix="burtbench-save-load-")  # removed with the program
        self._path = Path(self._folder.name) / f"activations{suffix}"
        # The file as the serializer takes it, made once so that no conversion is timed.
        self._file = file_arg(self._path)
        self._save, self._load, self._to_floats = save, load, to_floats
        self.version = version
        self._save_ns = self._load_ns = 0
        self.step()  # the untimed round trip
        self._save_ns = self._load_ns = 0

    def step(self) -> None:
        clock = time.perf_counter_ns
        start = clock()
        self._save(self._file)
        saved = clock()
        self._loaded = self._load(self._file)
        done = clock()
        self._save_ns += saved - start
        self._load_ns += done - saved
        self._file_size = self._path.stat().st_size
        self._path.unlink()

    def outputs(self) -> dict[str, float]:
        return dict(zip(ACTIVATIONS, self._to_floats(self._loaded)))

    @property
    def extra(self) -> dict:
        return {"save_s": self._save_ns / 1e9, "load_s": self._load_ns / 1e9,
                "file_size_bytes": self._file_size, "save_load_dir": self._folder.name}


# ---- PyTorch ------------------------------------------------------------------------------

def torch_activations(torch, mode: str, activations, params: dict) -> list:
    a = torch.tensor(params["a"], dtype=torch.float64, requires_grad=True)
    b = torch.tensor(params["b"], dtype=torch.float64, requires_grad=True)

    def nodes(a, b):
        return activations(a, b, torch.relu)

    if mode == "torchscript":
        nodes = torch.jit.trace(nodes, (a, b))
    c, d, e, f, g = nodes(a, b)
    g.backward()
    return [t.detach() for t in (a, b, c, d, e, f, g)]


def torch_program(torch, mode: str, workload, params: dict) -> SaveLoadProgram:
    tensors = torch_activations(torch, "eager" if mode == "numpy" else mode, workload.graph, params)

    def to_floats(loaded) -> list[float]:
        return [t.item() for t in loaded]

    if mode == "numpy":
        import numpy as np

        def save_bytes(path: Path) -> None:
            path.write_bytes(b"".join(t.numpy().tobytes() for t in tensors))

        def load_bytes(path: Path):
            # A bytearray, not bytes: torch.from_numpy wants a writable array.
            return torch.from_numpy(np.frombuffer(bytearray(path.read_bytes()), dtype=np.float64)).unbind()

        return SaveLoadProgram(save_bytes, load_bytes, to_floats, ".bin", torch.__version__)

    def save(path: Path) -> None:
        torch.save(tensors, path)

    return SaveLoadProgram(save, torch.load, to_floats, ".pt", torch.__version__)


# ---- TensorFlow ---------------------------------------------------------------------------

def tensorflow_program(tf, mode: str, workload, params: dict) -> SaveLoadProgram:
    def activations(a, b):
        with tf.GradientTape() as tape:
            tape.watch(a)
            tape.watch(b)
            nodes = workload.graph(a, b, tf.nn.relu)
        tape.gradient(nodes[-1], (a, b))
        return [a, b, *nodes]

    def save(tensors, path):
        tf.io.write_file(path, tf.io.serialize_tensor(tf.stack(tensors)))

    def load(path):
        return tf.unstack(tf.io.parse_tensor(tf.io.read_file(path), out_type=tf.float64), num=len(ACTIVATIONS))

    if mode == "graph":
        activations, save, load = (tf.function(fn, autograph=False) for fn in (activations, save, load))
    tensors = activations(tf.constant(params["a"], tf.float64), tf.constant(params["b"], tf.float64))

    def to_floats(loaded) -> list[float]:
        return [float(t) for t in loaded]

    # The path goes in as a string tensor, so that graph mode traces each function once.
    return SaveLoadProgram(lambda path: save(tensors, path), load, to_floats, ".tfpb", tf.__version__,
                           file_arg=lambda path: tf.constant(str(path)))
