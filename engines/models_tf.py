"""The MLP and the GPT in TensorFlow (FP32), and their SGD training Program, eager or as one tf.function.

A step records the loss on a GradientTape, takes the gradients of the parameter variables and
updates them in place; in graph mode the whole step is a tf.function traced in the first
(warm-up) step for the batch's fixed shape. The embedding tables' gradients come back as
IndexedSlices and are applied sparsely, as TensorFlow's own optimizers do.
"""
from __future__ import annotations

from pathlib import Path

from engines.tensorflow import import_single_threaded
from engines.training import TrainingProgram, first_batch, load
from workloads import gpt

tf = import_single_threaded()

CAUSAL = tf.linalg.band_part(tf.ones((gpt.BLOCK_SIZE, gpt.BLOCK_SIZE), dtype=tf.bool), -1, 0)


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


def attention(h, wq, wk, wv):
    b, t = h.shape[0], h.shape[1]

    def heads(w):  # (b, t, d) -> (b, heads, t, head_size)
        return tf.transpose(tf.reshape(linear(h, w), (b, t, gpt.HEADS, gpt.HEAD_SIZE)), (0, 2, 1, 3))

    q, k, v = heads(wq), heads(wk), heads(wv)
    scores = tf.linalg.matmul(q, k, transpose_b=True) * gpt.HEAD_SIZE**-0.5
    weights = tf.nn.softmax(tf.where(CAUSAL[:t, :t], scores, float("-inf")), axis=-1)
    return tf.reshape(tf.transpose(tf.linalg.matmul(weights, v), (0, 2, 1, 3)), (b, t, gpt.D_MODEL))


def gpt_loss(params, x, y):
    wte, wpe, blocks, (lnf_g, lnf_b, head_w, head_b) = gpt.unpack(params)
    h = tf.gather(wte, x) + wpe[: x.shape[1]]
    for ln1_g, ln1_b, wq, wk, wv, proj_w, proj_b, ln2_g, ln2_b, ff1_w, ff1_b, ff2_w, ff2_b in blocks:
        h = h + linear(attention(layer_norm(h, ln1_g, ln1_b), wq, wk, wv), proj_w, proj_b)
        h = h + linear(tf.nn.relu(linear(layer_norm(h, ln2_g, ln2_b), ff1_w, ff1_b)), ff2_w, ff2_b)
    return cross_entropy(linear(layer_norm(h, lnf_g, lnf_b), head_w, head_b), y)


LOSSES = {"mlp": mlp_loss, "gpt": gpt_loss}


def to_batch(x, y):
    return tf.constant(x, dtype=tf.int32), tf.constant(y, dtype=tf.int32)


def build(mode: str, workload: str, folder: Path | None) -> TrainingProgram:
    data = load(workload, folder)
    lr = data.config["learning_rate"]
    params = [tf.Variable(t) for t in data.tensors()]
    loss_of = LOSSES[workload]

    def sgd_step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_of(params, x, y)
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
