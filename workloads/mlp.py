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

from pathlib import Path
from typing import Mapping

import numpy as np

from workloads import data, training
from workloads.base import TOLERANCE, Workload

CONTEXT, EMBEDDING, VOCAB = 16, 64, len(data.NAMES_ALPHABET)
# One SGD step size for every engine and both workloads. Not the paper's BurTorch 0.1: from the
# uniform(-1, 1) start, 0.1 makes the e = 1024 MLP diverge (at b = 1 its loss climbs from 28 to
# over 100 in 4,000 steps), and logit gaps beyond 87 push softmax into FP32 subnormals, whose
# cost can differ from kernel to kernel. At 0.01 the loss falls at every corner of both grids
# (mean of the last 100 steps against the first 100, torch eager, paper step counts).
LEARNING_RATE = 0.01
# The check compares the first steps' losses with errors relative to max(|loss|, 1): a single
# sample's loss can be near zero (from this start the logits reach +-60) while its FP32 rounding is
# that of the logits, so a plain relative error would fail correct engines. Measured here (torch
# eager, 40 batch draws each at e = 128, 512, 1024, b = 1; every Python engine at the grid's
# corners) the error stays below 1.1e-5; 1e-4 leaves a tenfold margin for other kernels'
# summation orders, yet a 1% error in the step size fails at e = 1024, b = 64 (1.5e-3). Three
# losses cannot see every wrong gradient: they check that the engines train the same model from
# the same start, not each gradient.
FP32_TOLERANCE = 1e-4
ERROR_FLOOR = 1.0


def param_shapes(hidden_dim: int) -> list[tuple[str, tuple[int, ...]]]:
    return [("wte", (VOCAB, EMBEDDING)), ("w1", (hidden_dim, CONTEXT * EMBEDDING)), ("b1", (hidden_dim,)),
            ("w2", (VOCAB, hidden_dim)), ("b2", (VOCAB,))]


def param_count(hidden_dim: int) -> int:
    return sum(int(np.prod(shape)) for _, shape in param_shapes(hidden_dim))


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


def split_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(contexts (b, 16), targets (b,)) of a batch of sample rows."""
    return rows[:, :CONTEXT], rows[:, CONTEXT]


def loss(params, x, y):
    """The model in (autograd) numpy: the specification every engine implements."""
    import autograd.numpy as anp

    wte, w1, b1, w2, b2 = params
    emb = wte[x].reshape(x.shape[0], CONTEXT * EMBEDDING)
    h = anp.tanh(emb @ w1.T + b1)
    logits = h @ w2.T + b2
    return anp.mean(logsumexp(logits) - logits[np.arange(len(y)), y])


def logsumexp(z):
    import autograd.numpy as anp

    top = anp.max(z, axis=-1, keepdims=True)
    return (top + anp.log(anp.sum(anp.exp(z - top), axis=-1, keepdims=True)))[..., 0]


def prepare(params: Mapping, steps: int, folder: Path) -> None:
    corpus = data.names_corpus()
    hidden = int(params["hidden_dim"])
    config = {"workload": "mlp", "learning_rate": LEARNING_RATE, "hidden_dim": hidden, "context": CONTEXT,
              "embedding": EMBEDDING, "vocab": VOCAB}
    training.prepare_run(Path(folder), config, param_shapes(hidden), samples(corpus.text), steps,
                         int(params["batch"]), corpus, loss, split_rows)


WORKLOAD = Workload(
    name="mlp",
    title="makemore MLP, context 16, embedding 64, hidden e (paper Tables 5/6/12/13/16/17)",
    precision="fp32",
    grid={"hidden_dim": (4, 16, 32, 64, 128, 512, 1024), "batch": (1, 64)},
    # quick covers the ends and the middle of the sweep: each point costs every framework's start-up.
    profile_grid={"quick": {"hidden_dim": (4, 128, 1024)}},
    iterations={"smoke": 4, "quick": 20, "paper": 4_000},
    # The paper reports the spread over the steps of one run and does not say how many runs.
    trials={"smoke": 1, "quick": 1, "paper": 1},
    # torch.compile, jax.jit and tf.function compile in the first step: never timed.
    warmup={"smoke": 1, "quick": 2, "paper": 10},
    timeout_s={"smoke": 300, "quick": 600, "paper": 7200},
    blocks=None,
    reference=training.reference,
    prepare=prepare,
    tolerance={**TOLERANCE, "fp32": FP32_TOLERANCE},
    error_floor=ERROR_FLOOR,
)
