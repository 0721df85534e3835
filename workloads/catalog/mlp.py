"""makemore's character-level MLP (Bengio et al. 2003), FP32 training by plain SGD (paper Tables 5/6/12/13/16/17).

    x   = the 16 previous characters (token ids, '.' pads the start of a name)
    emb = concat(wte[x_0], ..., wte[x_15])           16 * 64 = 1024 values
    h   = tanh(w1 emb + b1)                          e hidden units
    out = w2 h + b2                                  27 logits, a linear head
    loss = mean over the batch of cross_entropy(softmax(out), target)

Parameters: wte 27x64, w1 e x 1024, b1 e, w2 27 x e, b2 27: 1755 + 1052 e, the paper's
5,963 / 18,587 / 35,419 / 69,083 / 136,411 / 540,379 / 1,079,003 for e = 4 ... 1024.
A batch of b is b (context, target) samples; one step is forward + backward + update.
"""
from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Mapping, NamedTuple

import numpy as np

from workloads import data, flops, training
from workloads.array_ops import autograd_ops
from workloads.base import PaperTable

CONTEXT, EMBEDDING, VOCAB = 16, 64, len(data.NAMES_ALPHABET)
class Params(NamedTuple):
    """The MLP's tensors, in the order of params.bin."""
    wte: object
    w1: object
    b1: object
    w2: object
    b2: object


def param_shapes(hidden_dim: int) -> list[tuple[str, tuple[int, ...]]]:
    shapes = {"wte": (VOCAB, EMBEDDING), "w1": (hidden_dim, CONTEXT * EMBEDDING), "b1": (hidden_dim,),
              "w2": (VOCAB, hidden_dim), "b2": (VOCAB,)}
    return [(name, shapes[name]) for name in Params._fields]


def param_count(hidden_dim: int) -> int:
    return sum(int(np.prod(shape)) for _, shape in param_shapes(hidden_dim))


def step_flops(params: Mapping) -> int:
    """FLOPs of one SGD step at a point (workloads/flops.py's rules)."""
    return flops.step_flops(flops.linear_macs_per_row(param_shapes(int(params["hidden_dim"]))), int(params["batch"]))


def step_products(params: Mapping) -> list[tuple[int, int, int]]:
    """(m, k, n) of one SGD step's matrix products at a point, the batch as one block (workloads/flops.py)."""
    return flops.linear_products(param_shapes(int(params["hidden_dim"])), int(params["batch"]))


def kept_activations(params: Mapping) -> int:
    """Values backward needs from forward, over the batch: w1's input (the 16 embeddings), the hidden
    units (tanh's output and w2's input) and the logits (the softmax's input)."""
    return int(params["batch"]) * (CONTEXT * EMBEDDING + int(params["hidden_dim"]) + VOCAB)


def step_bytes(params: Mapping, precision: str) -> flops.StepBytes:
    """The least one SGD step moves at a point, in `precision` (workloads/flops.py's rule)."""
    return flops.step_bytes(param_count(int(params["hidden_dim"])), kept_activations(params), precision)


def samples(corpus_text: str) -> np.ndarray:
    """Every (context, target) sample of the names, one per row: 16 context ids, then the target id.

    Each name yields len(name) + 1 samples: its letters, then '.' as the end; the context
    starts as 16 '.' and slides. Built as windows over '.'*16 + name + '.'*16 + name ...
    """
    words = corpus_text.split()
    pad = "." * CONTEXT
    stream = data.encode(pad + pad.join(words) + pad, data.NAMES_ALPHABET)
    lengths = np.array([len(w) for w in words])
    first = CONTEXT * np.arange(len(words)) + np.cumsum(lengths) - lengths  # each name's first window
    per_word = lengths + 1
    within = np.arange(per_word.sum()) - np.repeat(np.cumsum(per_word) - per_word, per_word)
    starts = np.repeat(first, per_word) + within
    return np.lib.stride_tricks.sliding_window_view(stream, CONTEXT + 1)[starts]


def check_data(data_dir: str | None) -> None:
    corpus = data.names_corpus(data_dir)
    if not len(samples(corpus.text)):
        raise data.DataError(f"{corpus.name} has no names to train on")


def split_rows(rows) -> tuple:
    """(contexts (b, 16), targets (b,)) of a batch of sample rows."""
    return rows[:, :CONTEXT], rows[:, CONTEXT]


def loss(ops, params, x, y):
    """The model in numpy style (workloads/array_ops.py): the specification every engine implements."""
    p = Params(*params)
    emb = p.wte[x].reshape(x.shape[0], CONTEXT * EMBEDDING)
    h = ops.np.tanh(emb @ p.w1.T + p.b1)
    logits = h @ p.w2.T + p.b2
    return ops.np.mean(ops.logsumexp(logits) - ops.pick(logits, y))


def prepare(params: Mapping, steps: int, folder: Path, data_dir: str | None) -> None:
    corpus = data.names_corpus(data_dir)
    hidden = int(params["hidden_dim"])
    config = {"workload": "mlp", "learning_rate": training.LEARNING_RATE, "hidden_dim": hidden, "context": CONTEXT,
              "embedding": EMBEDDING, "vocab": VOCAB}
    training.prepare_run(Path(folder), config, param_shapes(hidden), samples(corpus.text), steps,
                         int(params["batch"]), corpus, partial(loss, autograd_ops()), split_rows)


WORKLOAD = training.training_workload(
    name="mlp",
    title="makemore MLP, context 16, embedding 64, hidden e (paper Tables 5/6/12/13/16/17)",
    grid={"hidden_dim": (4, 16, 32, 64, 128, 512, 1024), "batch": (1, 64)},
    # quick covers the ends and the middle of the sweep: each point costs every framework's start-up.
    profile_grid={"quick": {"hidden_dim": (4, 128, 1024)}},
    iterations={"smoke": 4, "quick": 20, "paper": 4_000},
    # The paper reports the spread over the steps of one run and does not say how many runs.
    trials={"smoke": 1, "quick": 1, "paper": 1},
    # torch.compile, jax.jit and tf.function compile in the first step: never timed.
    warmup={"smoke": 1, "quick": 2, "paper": 10},
    timeout_s={"smoke": 300, "quick": 600, "paper": 7200},
    prepare=prepare,
    check_data=check_data,
    model=loss,
    split_rows=split_rows,
    step_flops=step_flops,
    step_products=step_products,
    step_bytes=step_bytes,
    paper=PaperTable(
        name="mlp_b{batch}", point_titles={"hidden_dim": "Hidden e"},
        csv_name="mlp", title="MLP (makemore), batch {batch}: init, compute per SGD step, memory",
        metrics=("init", "step_time", "gflops", "paper_memory"), point=("hidden_dim", "batch"),
        split_by="batch", figure="lines", figure_x="param_count",
        notes=("Compute ± std per step; ours: std over timing blocks averaged over trials, "
               "paper: std over its 4,000 steps.",),
        differences=("output-head", "batch", "learning-rate", "timed", "data", "launches", "timed-regions")),
)
