"""A character-level mini-GPT, FP32 training by plain SGD (paper Tables 7/14/18).

Decoder-only transformer: token + position embeddings, 6 pre-LayerNorm blocks, a final
LayerNorm and a linear head over the 65 symbols of tiny-shakespeare; context (block size) 8,
d_model 24, 6 causal self-attention heads of size 4, a 4x ReLU feed-forward.

    x = wte[tokens] + wpe[positions]
    for each block:  x = x + proj(attention(ln1(x)));  x = x + ff2(relu(ff1(ln2(x))))
    logits = head(ln_f(x));  loss = mean over batch and positions of cross_entropy(logits, next token)

Attention: q, k, v = wq h, wk h, wv h (24 -> 24, no bias); head j uses features 4j..4j+3;
scores q.k / sqrt(4), causal mask, softmax, concatenation of the heads, then proj (24 -> 24 + bias).
LayerNorm: biased variance, eps 1e-5, gain and bias of 24.

Parameters: 46,337. The paper states 46,289 = 46,337 - 48, exactly one LayerNorm's 24 gains
and 24 biases: its count fits this model without the final LayerNorm, which its text does not
mention (the last block's output goes "finally" to the affine head). The final LayerNorm is
kept here as in Karpathy's gpt.py, the paper's PyTorch baseline.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

import numpy as np

from workloads import data, mlp, training
from workloads.base import TOLERANCE, Workload
from workloads.mlp import logsumexp

LAYERS, HEADS, BLOCK_SIZE, D_MODEL = 6, 6, 8, 24
HEAD_SIZE = D_MODEL // HEADS
VOCAB = len(data.TEXT_ALPHABET)
LN_EPS = 1e-5
# One SGD step size and one check for both workloads and every engine (see mlp.py); measured
# here the GPT's FP32 losses stay within 5e-7 of the reference (its LayerNorms keep logits small).
LEARNING_RATE = mlp.LEARNING_RATE
FP32_TOLERANCE = mlp.FP32_TOLERANCE

BLOCK_TENSORS = ("ln1_g", "ln1_b", "wq", "wk", "wv", "proj_w", "proj_b", "ln2_g", "ln2_b",
                 "ff1_w", "ff1_b", "ff2_w", "ff2_b")


def param_shapes() -> list[tuple[str, tuple[int, ...]]]:
    d, f = D_MODEL, 4 * D_MODEL
    block = {"ln1_g": (d,), "ln1_b": (d,), "wq": (d, d), "wk": (d, d), "wv": (d, d), "proj_w": (d, d),
             "proj_b": (d,), "ln2_g": (d,), "ln2_b": (d,), "ff1_w": (f, d), "ff1_b": (f,), "ff2_w": (d, f),
             "ff2_b": (d,)}
    shapes = [("wte", (VOCAB, d)), ("wpe", (BLOCK_SIZE, d))]
    for layer in range(LAYERS):
        shapes += [(f"h{layer}.{name}", block[name]) for name in BLOCK_TENSORS]
    return shapes + [("lnf_g", (d,)), ("lnf_b", (d,)), ("head_w", (VOCAB, d)), ("head_b", (VOCAB,))]


def param_count() -> int:
    return sum(int(np.prod(shape)) for _, shape in param_shapes())


def unpack(params: list) -> tuple:
    """(wte, wpe, [13 tensors per block], (lnf_g, lnf_b, head_w, head_b)) of the flat tensor list."""
    n = len(BLOCK_TENSORS)
    blocks = [params[2 + n * i: 2 + n * (i + 1)] for i in range(LAYERS)]
    return params[0], params[1], blocks, params[2 + n * LAYERS:]


def samples(corpus_text: str) -> np.ndarray:
    """Every window of 9 consecutive token ids: inputs are the first 8, targets the last 8."""
    return np.lib.stride_tricks.sliding_window_view(data.encode(corpus_text, data.TEXT_ALPHABET), BLOCK_SIZE + 1)


def split_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return rows[:, :BLOCK_SIZE], rows[:, 1:]


def layer_norm(x, g, b):
    import autograd.numpy as anp

    mu = anp.mean(x, axis=-1, keepdims=True)
    var = anp.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return (x - mu) / anp.sqrt(var + LN_EPS) * g + b


def attention(h, wq, wk, wv):
    import autograd.numpy as anp

    b, t, _ = h.shape

    def heads(w):  # (b, t, d) -> (b, heads, t, head_size)
        return anp.transpose((h @ w.T).reshape(b, t, HEADS, HEAD_SIZE), (0, 2, 1, 3))

    q, k, v = heads(wq), heads(wk), heads(wv)
    scores = q @ anp.transpose(k, (0, 1, 3, 2)) / np.sqrt(HEAD_SIZE)
    scores = anp.where(np.tril(np.ones((t, t), dtype=bool)), scores, -np.inf)
    weights = anp.exp(scores - anp.max(scores, axis=-1, keepdims=True))
    weights = weights / anp.sum(weights, axis=-1, keepdims=True)
    return anp.transpose(weights @ v, (0, 2, 1, 3)).reshape(b, t, D_MODEL)


def loss(params, x, y):
    """The model in (autograd) numpy: the specification every engine implements."""
    import autograd.numpy as anp

    wte, wpe, blocks, (lnf_g, lnf_b, head_w, head_b) = unpack(params)
    h = wte[x] + wpe[np.arange(x.shape[1])]
    for ln1_g, ln1_b, wq, wk, wv, proj_w, proj_b, ln2_g, ln2_b, ff1_w, ff1_b, ff2_w, ff2_b in blocks:
        h = h + attention(layer_norm(h, ln1_g, ln1_b), wq, wk, wv) @ proj_w.T + proj_b
        h = h + anp.maximum(layer_norm(h, ln2_g, ln2_b) @ ff1_w.T + ff1_b, 0.0) @ ff2_w.T + ff2_b
    logits = layer_norm(h, lnf_g, lnf_b) @ head_w.T + head_b
    b, t = y.shape
    picked = logits[np.arange(b)[:, None], np.arange(t)[None, :], y]
    return anp.mean(logsumexp(logits) - picked)


def prepare(params: Mapping, steps: int, folder: Path) -> None:
    corpus = data.text_corpus()
    config = {"workload": "gpt", "learning_rate": LEARNING_RATE, "layers": LAYERS, "heads": HEADS,
              "block_size": BLOCK_SIZE, "d_model": D_MODEL, "vocab": VOCAB}
    training.prepare_run(Path(folder), config, param_shapes(), samples(corpus.text), steps,
                         int(params["batch"]), corpus, loss, split_rows)


WORKLOAD = Workload(
    name="gpt",
    title="mini-GPT, 6 blocks x 6 heads, block size 8, d_model 24 (paper Tables 7/14/18)",
    precision="fp32",
    grid={"batch": (1, 2, 4, 8, 16, 32, 64)},
    profile_grid={"quick": {"batch": (1, 8, 64)}},
    iterations={"smoke": 4, "quick": 20, "paper": 3_000},
    # As for the MLP: the paper's spread is over the steps of one run.
    trials={"smoke": 1, "quick": 1, "paper": 1},
    warmup={"smoke": 1, "quick": 2, "paper": 10},
    timeout_s={"smoke": 300, "quick": 600, "paper": 7200},
    blocks=None,
    reference=training.reference,
    prepare=prepare,
    tolerance={**TOLERANCE, "fp32": FP32_TOLERANCE},
    error_floor=mlp.ERROR_FLOOR,
)
