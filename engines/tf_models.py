"""The MLP and the GPT in TensorFlow (FP32), and their SGD training Program, eager or as one tf.function.

A step records the loss on a GradientTape, takes the gradients of the parameter variables and
updates them in place; in graph mode the whole step is a tf.function traced in the first
(warm-up) step for the batch's fixed shape. The embedding tables' gradients come back as
IndexedSlices and are applied sparsely, as TensorFlow's own optimizers do.
Import this module only after engines.tf_runtime has set TensorFlow's threads.
"""
from __future__ import annotations

from pathlib import Path

import tensorflow as tf

from engines.training import TrainingProgram, first_batch, load
from workloads.catalog import gpt


def linear(h, w, b=None):
    out = tf.linalg.matmul(h, w, transpose_b=True)
    return out if b is None else out + b


def cross_entropy(logits, y):
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))


def mlp_loss(params, x, y):
    wte, w1, b1, w2, b2 = params
    emb = tf.reshape(tf.gather(wte, x), (tf.shape(x)[0], -1))
    h = tf.tanh(linear(emb, w1, b1))
    return cross_entropy(linear(h, w2, b2), y)


def layer_norm(h, g, b):
    mean, var = tf.nn.moments(h, axes=[-1], keepdims=True)
    return tf.nn.batch_normalization(h, mean, var, b, g, gpt.LN_EPS)


def attention(h, block: gpt.Block, causal):
    b, t = h.shape[0], h.shape[1]

    def heads(w):  # (b, t, d) -> (b, heads, t, head_size)
        return tf.transpose(tf.reshape(linear(h, w), (b, t, gpt.HEADS, gpt.HEAD_SIZE)), (0, 2, 1, 3))

    q, k, v = heads(block.wq), heads(block.wk), heads(block.wv)
    scores = tf.linalg.matmul(q, k, transpose_b=True) * gpt.HEAD_SIZE**-0.5
    weights = tf.nn.softmax(tf.where(causal[:t, :t], scores, float("-inf")), axis=-1)
    return tf.reshape(tf.transpose(tf.linalg.matmul(weights, v), (0, 2, 1, 3)), (b, t, gpt.D_MODEL))


def gpt_loss(params, x, y, causal):
    p = gpt.unpack(params)
    h = tf.gather(p.wte, x) + p.wpe[: x.shape[1]]
    for block in p.blocks:
        h = h + linear(attention(layer_norm(h, block.ln1_g, block.ln1_b), block, causal), block.proj_w, block.proj_b)
        ff = tf.nn.relu(linear(layer_norm(h, block.ln2_g, block.ln2_b), block.ff1_w, block.ff1_b))
        h = h + linear(ff, block.ff2_w, block.ff2_b)
    return cross_entropy(linear(layer_norm(h, p.lnf_g, p.lnf_b), p.head_w, p.head_b), y)


def loss_of(workload: str):
    """The workload's loss as a function of (params, x, y)."""
    if workload == "mlp":
        return mlp_loss
    causal = tf.linalg.band_part(tf.ones((gpt.BLOCK_SIZE, gpt.BLOCK_SIZE), dtype=tf.bool), -1, 0)
    return lambda params, x, y: gpt_loss(params, x, y, causal)


def to_batch(x, y):
    return tf.constant(x, dtype=tf.int32), tf.constant(y, dtype=tf.int32)


def build(mode: str, workload, folder: Path | None) -> TrainingProgram:
    data = load(workload, folder)
    lr = data.config["learning_rate"]
    params = [tf.Variable(t) for t in data.tensors()]
    loss_fn = loss_of(workload.name)

    def sgd_step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(params, x, y)
        for p, g in zip(params, tape.gradient(loss, params)):
            if isinstance(g, tf.IndexedSlices):
                p.scatter_sub(tf.IndexedSlices(lr * g.values, g.indices))
            else:
                p.assign_sub(lr * g)
        return loss

    if mode == "graph":
        x0, y0 = first_batch(workload, data)
        signature = (tf.TensorSpec(x0.shape, tf.int32), tf.TensorSpec(y0.shape, tf.int32))
        sgd_step = tf.function(sgd_step, input_signature=signature, autograph=False)
    return TrainingProgram(workload, data, to_batch, lambda batch: sgd_step(*batch), tf.__version__)
