"""Save and load of the small graph's seven activations (workloads/catalog/save_load.py), per framework.

Each Program computes the activations once with its framework (forward and backward, FP64),
then every step() writes the seven to one file and reads them back, timing the two halves apart.
Each save starts from the seven activation tensors and each load ends with seven tensors again,
so packing them into one file is part of what is timed.

The paper names no serializer; its file sizes are the clue, and where they say nothing we take
the framework's plain tensor-to-file path (`--timing lean`, and `paper` where the authors' script
does the same):
- torch eager: torch.save / torch.load of the list of seven 0-dim tensors. The paper's 2,564
  bytes fit that archive as torch 2.5 wrote it.
- torch TorchScript: the activations come from the traced graph and are saved the same way: the
  paper prints the same 2,564 bytes for both rows (torch.jit.save of a module holding the seven
  would write a larger file).
- torch → NumPy → bytes (engine torch/numpy/python/cpu): each tensor's .numpy().tobytes(),
  concatenated and written raw, 56 bytes; read back with np.frombuffer and torch.from_numpy.
- TensorFlow eager and graph: tf.io.serialize_tensor of the seven stacked into one tensor,
  written with tf.io.write_file; read back with tf.io.read_file, tf.io.parse_tensor and unstacked.
  Graph mode runs the same ops inside tf.functions.

Under `--timing paper` (paper_step) two rows use the authors' serializers instead
(workloads/timed_regions.csv):
- torch → NumPy → bytes: the save detaches each tensor before .numpy() and extends a bytearray;
  the load reads 8 bytes per tensor and rebinds each tensor's .data to a copy of them.
- TensorFlow: Python pickle of the 7-tuple to an open file, and pickle.load back. In eager mode
  the leaves are tf.Variables (pickled as Variables, loaded as new ones); graph mode pickles
  the seven tensors a tf.function returns: 635 and 330 bytes with TF 2.21, the paper's 634 and 329.
"""
from __future__ import annotations

import pickle
import tempfile
import time
from pathlib import Path
from typing import Callable, NamedTuple

from workloads.catalog.save_load import ACTIVATIONS


class Serializer(NamedTuple):
    """save(file) writes the seven; load(file) returns them; file_arg(path) is the file as both
    take it, made once so that no conversion is timed."""
    save: Callable[[object], None]
    load: Callable[[object], object]
    suffix: str
    file_arg: Callable[[Path], object] = lambda path: path


class SaveLoadProgram:
    """step(): one save and one load of the activations; extra: their totals and the file's size.

    paper_step(), where a `paper` serializer is given, does the same with it (the worker steps with
    it under `--timing paper`). Building does one untimed round trip with each serializer, so the
    totals cover the timed loop alone (the workload runs no warm-up steps) and the first timed step
    finds the serializer ready. Each step deletes the file after loading it, untimed, so that every
    save writes a new file (workloads/catalog/save_load.py says why).
    """

    def __init__(self, lean: Serializer, to_floats: Callable[[object], list[float]], version: str,
                 paper: Serializer | None = None):
        self._folder = tempfile.TemporaryDirectory(prefix="burtbench-save-load-")  # removed with the program
        self._to_floats = to_floats
        self.version = version
        self._save_ns = self._load_ns = 0
        self._lean = self._prepared(lean)
        self._round_trip(*self._lean)
        if paper is None:
            self.paper_step = None
        else:
            self._paper = self._prepared(paper)
            self._round_trip(*self._paper)
        self._save_ns = self._load_ns = 0

    def _prepared(self, serializer: Serializer) -> tuple:
        path = Path(self._folder.name) / f"activations{serializer.suffix}"
        return serializer.save, serializer.load, path, serializer.file_arg(path)

    def step(self) -> None:
        self._round_trip(*self._lean)

    def paper_step(self) -> None:
        self._round_trip(*self._paper)

    def _round_trip(self, save, load, path: Path, file) -> None:
        clock = time.perf_counter_ns
        start = clock()
        save(file)
        saved = clock()
        self._loaded = load(file)
        done = clock()
        self._save_ns += saved - start
        self._load_ns += done - saved
        self._file_size = path.stat().st_size
        path.unlink()

    def outputs(self) -> dict[str, float]:
        return dict(zip(ACTIVATIONS, self._to_floats(self._loaded)))

    @property
    def extra(self) -> dict:
        return {"save_s": self._save_ns / 1e9, "load_s": self._load_ns / 1e9,
                "file_size_bytes": self._file_size, "save_load_dir": self._folder.name}


# ---- PyTorch ------------------------------------------------------------------------------

def torch_activations(torch, mode: str, activations, params: dict) -> list:
    """The seven as the graph holds them: the leaves require grad, the others have a grad_fn."""
    a = torch.tensor(params["a"], dtype=torch.float64, requires_grad=True)
    b = torch.tensor(params["b"], dtype=torch.float64, requires_grad=True)

    def nodes(a, b):
        return activations(a, b, torch.relu)

    if mode == "torchscript":
        nodes = torch.jit.trace(nodes, (a, b))
    c, d, e, f, g = nodes(a, b)
    g.backward()
    return [a, b, c, d, e, f, g]


def torch_program(torch, mode: str, workload, params: dict) -> SaveLoadProgram:
    graph = torch_activations(torch, "eager" if mode == "numpy" else mode, workload.graph, params)
    tensors = [t.detach() for t in graph]

    def to_floats(loaded) -> list[float]:
        return [t.item() for t in loaded]

    if mode == "numpy":
        return SaveLoadProgram(numpy_bytes(torch, tensors), to_floats, torch.__version__,
                               paper=numpy_bytes_as_authors(torch, graph))

    def save(path: Path) -> None:
        torch.save(tensors, path)

    return SaveLoadProgram(Serializer(save, torch.load, ".pt"), to_floats, torch.__version__)


def numpy_bytes(torch, tensors: list) -> Serializer:
    import numpy as np

    def save(path: Path) -> None:
        path.write_bytes(b"".join(t.numpy().tobytes() for t in tensors))

    def load(path: Path):
        # A bytearray, not bytes: torch.from_numpy wants a writable array.
        return torch.from_numpy(np.frombuffer(bytearray(path.read_bytes()), dtype=np.float64)).unbind()

    return Serializer(save, load, ".bin")


def numpy_bytes_as_authors(torch, graph: list) -> Serializer:
    """The same bytes, as the authors' scripts write and read them: tensor by tensor."""
    import numpy as np

    # Fresh tensors to load into, so that the check sees only what was read back.
    loaded = [torch.zeros((), dtype=torch.float64) for _ in graph]

    def save(path: Path) -> None:
        data = bytearray()
        for t in graph:
            data.extend(t.detach().numpy().tobytes())
        with open(path, "wb") as file:
            file.write(data)

    def load(path: Path) -> list:
        with open(path, "rb") as file:
            for t in loaded:
                t.data = torch.from_numpy(np.frombuffer(file.read(8), dtype=np.float64).copy())  # 8: one FP64
        return loaded

    return Serializer(save, load, ".bin")


# ---- TensorFlow ---------------------------------------------------------------------------

def pickle_serializer(state: tuple) -> Serializer:
    """The authors' TensorFlow serializer: pickle of the tuple to a file opened for each save and load."""
    def save(path: Path) -> None:
        with open(path, "wb") as file:
            pickle.dump(state, file)

    def load(path: Path):
        with open(path, "rb") as file:
            return pickle.load(file)

    return Serializer(save, load, ".pkl")


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
    # The authors' leaves are tf.Variables: eager mode pickles them as Variables; a tf.function
    # returns the values it read.
    state = activations(tf.Variable(params["a"], dtype=tf.float64), tf.Variable(params["b"], dtype=tf.float64))

    def to_floats(loaded) -> list[float]:
        return [float(t) for t in loaded]

    # The path goes in as a string tensor, so that graph mode traces each function once.
    lean = Serializer(lambda path: save(tensors, path), load, ".tfpb", file_arg=lambda path: tf.constant(str(path)))
    return SaveLoadProgram(lean, to_floats, tf.__version__, paper=pickle_serializer(tuple(state)))
