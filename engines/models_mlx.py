"""The MLP and the GPT in Apple MLX (FP32, CPU device), and their SGD training Program, eager or under mx.compile.

A step is value_and_grad of the loss plus the SGD update, returning the new parameters; MLX is
lazy, so every step evaluates the loss and the new parameters, or nothing would be timed.
mx.compile traces the whole step in the first (warm-up) step. Only mlx.core is used: mlx.nn's
activations are themselves compiled functions, which would make the eager mode partly compiled.
"""
from __future__ import annotations

from pathlib import Path

import mlx.core as mx

from engines.training import TrainingProgram, functional_sgd
from workloads import gpt

mx.set_default_device(mx.cpu)
CAUSAL = mx.tril(mx.ones((gpt.BLOCK_SIZE, gpt.BLOCK_SIZE), dtype=mx.bool_))


def cross_entropy(logits, y):
    picked = mx.take_along_axis(logits, mx.expand_dims(y, -1), axis=-1).squeeze(-1)
    return mx.mean(mx.logsumexp(logits, axis=-1) - picked)


def mlp_loss(params, x, y):
    wte, w1, b1, w2, b2 = params
    emb = mx.take(wte, x, axis=0).reshape(x.shape[0], -1)
    h = mx.tanh(emb @ w1.T + b1)
    return cross_entropy(h @ w2.T + b2, y)


def attention(h, wq, wk, wv):
    b, t, d = h.shape

    def heads(w):  # (b, t, d) -> (b, heads, t, head_size)
        return (h @ w.T).reshape(b, t, gpt.HEADS, gpt.HEAD_SIZE).transpose(0, 2, 1, 3)

    q, k, v = heads(wq), heads(wk), heads(wv)
    scores = (q @ k.transpose(0, 1, 3, 2)) * gpt.HEAD_SIZE**-0.5
    weights = mx.softmax(mx.where(CAUSAL[:t, :t], scores, -mx.inf), axis=-1)
    return (weights @ v).transpose(0, 2, 1, 3).reshape(b, t, d)


def gpt_loss(params, x, y):
    wte, wpe, blocks, (lnf_g, lnf_b, head_w, head_b) = gpt.unpack(params)

    def norm(h, g, b):
        return mx.fast.layer_norm(h, g, b, gpt.LN_EPS)

    h = mx.take(wte, x, axis=0) + wpe[: x.shape[1]]
    for ln1_g, ln1_b, wq, wk, wv, proj_w, proj_b, ln2_g, ln2_b, ff1_w, ff1_b, ff2_w, ff2_b in blocks:
        h = h + attention(norm(h, ln1_g, ln1_b), wq, wk, wv) @ proj_w.T + proj_b
        h = h + mx.maximum(norm(h, ln2_g, ln2_b) @ ff1_w.T + ff1_b, 0.0) @ ff2_w.T + ff2_b
    return cross_entropy(norm(h, lnf_g, lnf_b) @ head_w.T + head_b, y)


LOSSES = {"mlp": mlp_loss, "gpt": gpt_loss}


def to_batch(x, y):
    batch = mx.array(x, dtype=mx.int32), mx.array(y, dtype=mx.int32)
    mx.eval(*batch)
    return batch


def build(mode: str, workload: str, folder: Path | None) -> TrainingProgram:
    return functional_sgd(workload, folder, LOSSES[workload], value_and_grad=mx.value_and_grad,
                          compile_step=mx.compile if mode == "compile" else None, to_array=mx.array,
                          wait=mx.eval, to_batch=to_batch, version=mx.__version__)
