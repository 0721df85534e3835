"""The MLP and the GPT written with the `burtorch` Python module (FP32): the same C++ layers as the
native driver, a batch built as one graph whose layers are blocks (a Linear over every sample's
tokens is one matrix product). Each step rewinds the pool to the mark after the parameters, builds
the batch's graph, backpropagates the sum of the samples' losses and takes the SGD step on the
mean gradient, as burtorch_ext/src/driver/training.hpp does (which splits a GPT batch into graphs
of a few windows, gpt.hpp's kSamplesPerGraph, to bound its memory; here a batch is one graph).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from engines.training import TrainingProgram, load


class Mlp:
    """h = tanh(w1 [wte rows of the context] + b1); logits = w2 h + b2 (workloads/catalog/mlp.py)."""

    def __init__(self, bt, tensors):
        wte, w1, b1, w2, b2 = tensors
        self.wte = bt.Embedding(*wte.shape)
        self.hidden = bt.Linear(w1.shape[1], w1.shape[0], True, "tanh")
        self.head = bt.Linear(w2.shape[1], w2.shape[0], True, "identity")
        self.wte.load(wte.ravel().tolist())
        self.hidden.load(w1.ravel().tolist(), b1.tolist())
        self.head.load(w2.ravel().tolist(), b2.tolist())
        self.vocab = w2.shape[0]

    @staticmethod
    def to_batch(x, y) -> tuple:
        """Row ids as over_rows reads them and targets as Python ints, so that the timed step converts nothing."""
        return np.ascontiguousarray(x, dtype=np.int64), [int(target) for target in y]

    def losses(self, bt, x, y) -> list:
        logits = self.head(self.hidden.over_rows(self.wte, x))
        v = self.vocab
        return [bt.cross_entropy(logits[s * v:(s + 1) * v], target) for s, target in enumerate(y)]


class Gpt:
    """The mini-GPT of workloads/catalog/gpt.py over windows of tokens, one after the other."""

    def __init__(self, bt, tensors, heads: int):
        wte, wpe = tensors[0], tensors[1]
        d = wte.shape[1]
        self.wte, self.wpe = bt.Embedding(*wte.shape), bt.Embedding(*wpe.shape)
        self.wte.load(wte.ravel().tolist())
        self.wpe.load(wpe.ravel().tolist())
        self.blocks = []
        per_block = 13
        layers = (len(tensors) - 6) // per_block
        for layer in range(layers):
            ln1_g, ln1_b, wq, wk, wv, proj_w, proj_b, ln2_g, ln2_b, ff1_w, ff1_b, ff2_w, ff2_b = \
                tensors[2 + per_block * layer: 2 + per_block * (layer + 1)]
            ln1 = bt.LayerNorm(d)
            attention = bt.CausalSelfAttention(d, heads, bias=False, proj_bias=True)
            ln2 = bt.LayerNorm(d)
            ff1 = bt.Linear(d, ff1_w.shape[0], True, "relu")
            ff2 = bt.Linear(ff1_w.shape[0], d, True, "identity")
            ln1.load(ln1_g.tolist(), ln1_b.tolist())
            for linear, w in ((attention.query, wq), (attention.key, wk), (attention.value, wv)):
                linear.load(w.ravel().tolist())
            attention.proj.load(proj_w.ravel().tolist(), proj_b.tolist())
            ln2.load(ln2_g.tolist(), ln2_b.tolist())
            ff1.load(ff1_w.ravel().tolist(), ff1_b.tolist())
            ff2.load(ff2_w.ravel().tolist(), ff2_b.tolist())
            self.blocks.append((ln1, attention, ln2, ff1, ff2))
        lnf_g, lnf_b, head_w, head_b = tensors[-4:]
        self.lnf = bt.LayerNorm(d)
        self.head = bt.Linear(d, head_w.shape[0], True, "identity")
        self.lnf.load(lnf_g.tolist(), lnf_b.tolist())
        self.head.load(head_w.ravel().tolist(), head_b.tolist())
        self.vocab = head_w.shape[0]
        # Handles of the embedding rows, made once: the parameters stay below the mark.
        self.token_rows = [self.wte[r] for r in range(wte.shape[0])]
        self.position_rows = [self.wpe[r] for r in range(wpe.shape[0])]

    @staticmethod
    def to_batch(x, y) -> tuple:
        """Token ids as Python ints, so that the timed step converts nothing."""
        return np.asarray(x).tolist(), np.asarray(y).tolist()

    def losses(self, bt, x, y) -> list:
        windows, tokens = len(x), len(x[0])
        h = []
        for window in x:
            for t, token in enumerate(window):
                h += [e + p for e, p in zip(self.token_rows[token], self.position_rows[t])]
        for ln1, attention, ln2, ff1, ff2 in self.blocks:
            h = [u + v for u, v in zip(h, attention(ln1(h), tokens))]
            h = [u + v for u, v in zip(h, ff2(ff1(ln2(h))))]
        logits = self.head(self.lnf(h))
        v = self.vocab
        return [bt.reduce_mean([bt.cross_entropy(logits[(s * tokens + t) * v:(s * tokens + t + 1) * v], y[s][t])
                                for t in range(tokens)]) for s in range(windows)]


def build(workload, folder: Path | None) -> TrainingProgram:
    import burtorch

    bt = burtorch.fp32
    data = load(workload, folder)
    tensors = [np.asarray(t, dtype=np.float32) for t in data.tensors()]
    model = Mlp(bt, tensors) if workload.name == "mlp" else Gpt(bt, tensors, int(data.config["heads"]))
    # The layers made their parameters one after the other: from the table's first to the head's last.
    first, last = model.wte.parameters()[0], model.head.parameters()[-1]
    mark = bt.mark()
    batch = int(data.config["batch"])
    step = data.config["learning_rate"] / batch

    def train_step(xy):
        x, y = xy
        bt.rewind(mark)
        losses = model.losses(bt, x, y)
        bt.backward(losses[0] if len(losses) == 1 else bt.reduce_sum(losses))
        bt.sgd_step_and_zero_grad(first, last, step)
        return sum(loss.data for loss in losses) / batch

    return TrainingProgram(workload, data, type(model).to_batch, train_step,
                           f"burtorch {burtorch.__version__}")
