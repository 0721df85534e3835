"""The MLP and the GPT in JAX (FP32), and their SGD training Program, op by op (eager) or under jax.jit.

A step is value_and_grad of the loss plus the SGD update, returning the new parameters; under
jit the whole step is one compiled function, traced and compiled in the first (warm-up) step.
Every step waits for the new parameters: JAX dispatches asynchronously.
"""
from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp

from engines.training import TrainingProgram, functional_sgd
from workloads import gpt

CAUSAL = jnp.tril(jnp.ones((gpt.BLOCK_SIZE, gpt.BLOCK_SIZE), dtype=bool))


def cross_entropy(logits, y):
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, y[..., None], axis=-1))


def mlp_loss(params, x, y):
    wte, w1, b1, w2, b2 = params
    emb = wte[x].reshape(x.shape[0], -1)
    h = jnp.tanh(emb @ w1.T + b1)
    return cross_entropy(h @ w2.T + b2, y)


def layer_norm(h, g, b):
    mu = jnp.mean(h, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(h - mu), axis=-1, keepdims=True)
    return (h - mu) * jax.lax.rsqrt(var + gpt.LN_EPS) * g + b


def attention(h, wq, wk, wv):
    b, t, d = h.shape

    def heads(w):  # (b, t, d) -> (b, heads, t, head_size)
        return (h @ w.T).reshape(b, t, gpt.HEADS, gpt.HEAD_SIZE).transpose(0, 2, 1, 3)

    q, k, v = heads(wq), heads(wk), heads(wv)
    scores = (q @ k.transpose(0, 1, 3, 2)) * gpt.HEAD_SIZE**-0.5
    weights = jax.nn.softmax(jnp.where(CAUSAL[:t, :t], scores, -jnp.inf), axis=-1)
    return (weights @ v).transpose(0, 2, 1, 3).reshape(b, t, d)


def gpt_loss(params, x, y):
    wte, wpe, blocks, (lnf_g, lnf_b, head_w, head_b) = gpt.unpack(params)
    h = wte[x] + wpe[: x.shape[1]]
    for ln1_g, ln1_b, wq, wk, wv, proj_w, proj_b, ln2_g, ln2_b, ff1_w, ff1_b, ff2_w, ff2_b in blocks:
        h = h + attention(layer_norm(h, ln1_g, ln1_b), wq, wk, wv) @ proj_w.T + proj_b
        h = h + jax.nn.relu(layer_norm(h, ln2_g, ln2_b) @ ff1_w.T + ff1_b) @ ff2_w.T + ff2_b
    return cross_entropy(layer_norm(h, lnf_g, lnf_b) @ head_w.T + head_b, y)


LOSSES = {"mlp": mlp_loss, "gpt": gpt_loss}


def to_batch(x, y):
    return jnp.asarray(x, dtype=jnp.int32), jnp.asarray(y, dtype=jnp.int32)


def build(mode: str, workload: str, folder: Path | None) -> TrainingProgram:
    return functional_sgd(workload, folder, LOSSES[workload], value_and_grad=jax.value_and_grad,
                          compile_step=jax.jit if mode == "jit" else None, to_array=jnp.asarray,
                          wait=lambda loss, params: jax.block_until_ready(params), to_batch=to_batch,
                          version=jax.__version__)
