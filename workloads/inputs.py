"""The shared-inputs folder of an MLP or GPT run: what every engine, Python or native, loads.

prepare() writes one folder per run and workload point; every engine reads the same initial
parameters and the same batches from it, so their losses can be compared step by step.

Folder layout
-------------
    config.txt    the run's settings and the FP64 reference losses, text
    params.bin    the initial parameters, float32, all tensors one after another
    samples.bin   the (context, target) samples the run uses, uint8 token ids
    batches.bin   for every step, the rows of samples.bin that form its batch, int32

config.txt
    ASCII, one `key=value` per line, no spaces around '=', lines in no particular order.
    A value is an integer, a float written so that it reads back exactly (Python repr, e.g.
    `0.01`, `3.2958368660043291`), or a string without newlines. Keys:
      workload        mlp | gpt
      format          1 (this layout's version)
      seed            the seed every array below was drawn from
      corpus          where the samples came from: `synthetic` or the real file's name
      corpus_sha256   sha256 of the corpus text, hex
      corpus_path     the real file's absolute path (absent for the synthetic corpus)
      learning_rate   the SGD step size: every engine updates p <- p - learning_rate * dloss/dp
      steps           number of steps the batches cover (warm-up steps included)
      batch           samples per step
      param_count     number of float32 values in params.bin
      params          the tensors of params.bin in order, comma-separated `name:d0xd1[x...]`,
                      e.g. `wte:27x64,w1:4x1024,b1:4,w2:27x4,b2:27`
      loss_0 .. loss_{k-1}  the FP64 reference loss of step i, evaluated BEFORE step i's update
                      (loss_0 is the loss of the initial parameters on batch 0); k = min(3, steps)
      plus the workload's model sizes (MLP: hidden_dim, context, embedding, vocab;
      GPT: layers, heads, block_size, d_model, vocab).

The .bin files
    Each is one array: a 48-byte header, then the elements in row-major (C) order, little-endian.
      bytes  0..7   magic b"BBARRAY1"
      bytes  8..11  uint32 dtype code: 1 = float32 (IEEE 754), 2 = int32, 3 = uint8
      bytes 12..15  uint32 ndim, 1..4
      bytes 16..47  uint64 dims[4]; dims past ndim are 1
    Payload size = product(dims) * element size; the file ends right after it.

    params.bin   float32, shape (param_count,). The tensors named in config `params`, each
                 row-major, concatenated in that order. Every linear layer's weight is stored
                 (out_features, in_features), so y = W x + b and each output is a contiguous
                 inner product. Values are uniform(-1, 1): numpy.random.default_rng([seed, 0])
                 .uniform(-1.0, 1.0, param_count) in float64, rounded to float32.
                 The same seed gives the same parameters at every batch size.
    samples.bin  uint8, shape (rows, width): one sample per row, token ids.
                 MLP: width 17 = 16 context ids (oldest first) then the target id.
                 GPT: width 9 = a window of 9 consecutive ids; the inputs are columns 0..7 and
                 the targets columns 1..8 (next token at every position).
    batches.bin  int32, shape (steps, batch): row i lists the samples.bin rows of step i, in
                 the order they are stacked in the batch.

Parameter order (config `params` spells it out; shapes (out, in) for weights)
    MLP (e hidden units): wte 27x64, w1 e x 1024, b1 e, w2 27 x e, b2 27.
        The hidden layer's input is the 16 embeddings concatenated, oldest character first:
        input[p*64 + j] = wte[context[p], j].
    GPT: wte 65x24, wpe 8x24, then for each block h0..h5: ln1_g 24, ln1_b 24, wq 24x24,
        wk 24x24, wv 24x24, proj_w 24x24, proj_b 24, ln2_g 24, ln2_b 24, ff1_w 96x24, ff1_b 96,
        ff2_w 24x96, ff2_b 24; then lnf_g 24, lnf_b 24, head_w 65x24, head_b 65.
        Head j of a block uses rows 4j..4j+3 of wq, wk and wv; the heads' outputs are
        concatenated in head order before proj_w. (workloads/gpt.py is the model's definition.)

Token ids: MLP '.' = 0, 'a'..'z' = 1..26; GPT the index in workloads.data.TEXT_ALPHABET.
The loss of a step is the mean cross-entropy over its samples (GPT: over samples x 8 positions).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MAGIC = b"BBARRAY1"
HEADER = struct.Struct("<8sII4Q")
DTYPES = {1: np.dtype("<f4"), 2: np.dtype("<i4"), 3: np.dtype("u1")}
CODES = {dtype: code for code, dtype in DTYPES.items()}
FORMAT_VERSION = 1
CONFIG, PARAMS, SAMPLES, BATCHES = "config.txt", "params.bin", "samples.bin", "batches.bin"


class InputsError(ValueError):
    """A shared-inputs folder that is missing, truncated or not in this format."""


@dataclass
class Inputs:
    config: dict
    params: np.ndarray   # float32, flat
    samples: np.ndarray  # uint8, (rows, width)
    batches: np.ndarray  # int32, (steps, batch)

    def param_shapes(self) -> list[tuple[str, tuple[int, ...]]]:
        return parse_shapes(self.config["params"])

    def tensors(self) -> list[np.ndarray]:
        """params.bin cut into its tensors, in file order (views, float32)."""
        return split(self.params, [shape for _, shape in self.param_shapes()])

    def batch_rows(self, step: int) -> np.ndarray:
        """The samples of step `step`, stacked: (batch, width) uint8."""
        if not 0 <= step < len(self.batches):
            raise InputsError(f"step {step} is outside the {len(self.batches)} steps the inputs were prepared for")
        return self.samples[self.batches[step]]


def reference_losses(config: dict) -> dict[str, float]:
    return {k: float(v) for k, v in config.items() if k.startswith("loss_")}


def write_array(path: Path, array: np.ndarray) -> None:
    dtype = array.dtype.newbyteorder("<") if array.dtype.itemsize > 1 else array.dtype
    if dtype not in CODES or not 1 <= array.ndim <= 4:
        raise InputsError(f"cannot store a {array.dtype} array of {array.ndim} dimensions")
    dims = list(array.shape) + [1] * (4 - array.ndim)
    with open(path, "wb") as f:
        f.write(HEADER.pack(MAGIC, CODES[dtype], array.ndim, *dims))
        f.write(np.ascontiguousarray(array, dtype=dtype).tobytes())


def read_array(path: Path) -> np.ndarray:
    data = Path(path).read_bytes()
    if len(data) < HEADER.size:
        raise InputsError(f"{path}: shorter than the {HEADER.size}-byte header")
    magic, code, ndim, *dims = HEADER.unpack_from(data)
    if magic != MAGIC or code not in DTYPES or not 1 <= ndim <= 4:
        raise InputsError(f"{path}: not a burtbench array (magic {magic!r}, dtype {code}, ndim {ndim})")
    shape = tuple(dims[:ndim])
    dtype = DTYPES[code]
    expected = HEADER.size + int(np.prod(shape)) * dtype.itemsize
    if len(data) != expected:
        raise InputsError(f"{path}: {len(data)} bytes, the header says {expected}")
    return np.frombuffer(data, dtype=dtype, offset=HEADER.size).reshape(shape).astype(dtype.newbyteorder("="))


def format_shapes(shapes: list[tuple[str, tuple[int, ...]]]) -> str:
    return ",".join(f"{name}:{'x'.join(map(str, shape))}" for name, shape in shapes)


def parse_shapes(text: str) -> list[tuple[str, tuple[int, ...]]]:
    out = []
    for item in text.split(","):
        name, dims = item.split(":")
        out.append((name, tuple(int(d) for d in dims.split("x"))))
    return out


def split(flat: np.ndarray, shapes: list[tuple[int, ...]]) -> list[np.ndarray]:
    sizes = [int(np.prod(s)) for s in shapes]
    if sum(sizes) != flat.size:
        raise InputsError(f"{flat.size} parameters, the tensors need {sum(sizes)}")
    ends = np.cumsum(sizes)
    return [flat[end - size:end].reshape(shape) for size, end, shape in zip(sizes, ends, shapes)]


def write_config(path: Path, config: dict) -> None:
    lines = []
    for key, value in config.items():
        text = repr(value) if isinstance(value, float) else str(value)
        if "=" in key or "\n" in text:
            raise InputsError(f"config entry {key!r} cannot be written as one key=value line")
        lines.append(f"{key}={text}\n")
    Path(path).write_text("".join(lines), encoding="ascii")


def read_config(path: Path) -> dict:
    config = {}
    for line in Path(path).read_text(encoding="ascii").splitlines():
        if line:
            key, _, text = line.partition("=")
            config[key] = _value(text)
    return config


def _value(text: str):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def write(folder: Path, config: dict, params: np.ndarray, samples: np.ndarray, batches: np.ndarray) -> None:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    write_array(folder / PARAMS, params.astype(np.float32))
    write_array(folder / SAMPLES, samples.astype(np.uint8))
    write_array(folder / BATCHES, batches.astype(np.int32))
    write_config(folder / CONFIG, {"format": FORMAT_VERSION, **config})


def read(folder: Path) -> Inputs:
    folder = Path(folder)
    if not (folder / CONFIG).is_file():
        raise InputsError(f"{folder}: no {CONFIG}; not a shared-inputs folder")
    config = read_config(folder / CONFIG)
    if config.get("format") != FORMAT_VERSION:
        raise InputsError(f"{folder}: inputs format {config.get('format')!r}, this reader knows {FORMAT_VERSION}")
    inputs = Inputs(config, read_array(folder / PARAMS), read_array(folder / SAMPLES), read_array(folder / BATCHES))
    if inputs.params.size != config["param_count"] or inputs.batches.shape != (config["steps"], config["batch"]):
        raise InputsError(f"{folder}: arrays do not match {CONFIG}")
    return inputs
