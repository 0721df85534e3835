"""The MLP and the GPT written with the `burtorch` Python module (FP32): the same C++ layers as the
native driver, ids and targets as numpy arrays. The MLP's graph is built by Python, one call per
layer over a graph's every token (a Nodes: the block of handles stays in C++; a Linear over every
sample's tokens is one matrix product). The GPT's layers are made and loaded here and composed as a
burtorch.Gpt, whose graph is the driver's, built in one call (burtorch_ext/src/python/training.hpp
says why). burtorch.Trainer takes each step as the driver does (burtorch_ext/include/burtorch/
batch_step.hpp): the batch built as graphs of burtorch.samples_per_graph(model) samples, each
backpropagated in turn, then the SGD step on the mean gradient; the losses are the driver's to
the bit (tests/test_burtorch_models.py).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from engines.training import TrainingProgram, load


class Mlp:
    """h = tanh(w1 [wte rows of the context] + b1); logits = w2 h + b2 (workloads/catalog/mlp.py)."""

    def __init__(self, bt, tensors):
        self.bt = bt
        wte, w1, b1, w2, b2 = tensors
        self.wte = bt.Embedding(*wte.shape)
        self.hidden = bt.Linear(w1.shape[1], w1.shape[0], True, "tanh")
        self.head = bt.Linear(w2.shape[1], w2.shape[0], True, "identity")
        self.wte.load(wte)
        self.hidden.load(w1, b1)
        self.head.load(w2, b2)

    def to_batch(self, x, y):
        """The function that builds the batch's graph (one graph: samples_per_graph("mlp") is None)."""
        x, y, bt = ids(x), ids(y), self.bt
        return lambda first, count: bt.cross_entropy(self.head(self.hidden.over_rows(self.wte, x)), y)


class Gpt:
    """The mini-GPT of workloads/catalog/gpt.py over windows of tokens, one after the other."""

    def __init__(self, bt, tensors, heads: int):
        wte, wpe = tensors[0], tensors[1]
        d = wte.shape[1]
        self.wte, self.wpe = bt.Embedding(*wte.shape), bt.Embedding(*wpe.shape)
        self.wte.load(wte)
        self.wpe.load(wpe)
        per_block = 13
        layers = (len(tensors) - 6) // per_block
        per_layer = [tensors[2 + per_block * layer: 2 + per_block * (layer + 1)] for layer in range(layers)]
        self.blocks = bt.TransformerStack(layers, d, heads, per_layer[0][9].shape[0], norm=True)  # ff: ff1_w's rows
        for block, layer_tensors in zip(self.blocks, per_layer):
            ln1_g, ln1_b, wq, wk, wv, proj_w, proj_b, ln2_g, ln2_b, ff1_w, ff1_b, ff2_w, ff2_b = layer_tensors
            block.ln1.load(ln1_g, ln1_b)
            attention = block.attention
            for linear, w in ((attention.query, wq), (attention.key, wk), (attention.value, wv)):
                linear.load(w)
            attention.proj.load(proj_w, proj_b)
            block.ln2.load(ln2_g, ln2_b)
            block.ff1.load(ff1_w, ff1_b)
            block.ff2.load(ff2_w, ff2_b)
        lnf_g, lnf_b, head_w, head_b = tensors[-4:]
        self.head = bt.Linear(d, head_w.shape[0], True, "identity")
        self.blocks.norm.load(lnf_g, lnf_b)
        self.head.load(head_w, head_b)
        self.graph = bt.Gpt(self.wte, self.wpe, self.blocks, self.head)

    def to_batch(self, x, y):
        """Token ids and targets (windows, tokens), checked once, for Trainer.step."""
        return self.graph.batch(ids(x), ids(y))


def ids(a) -> np.ndarray:
    """Ids as the module reads them in place, so that the timed step converts nothing."""
    return np.ascontiguousarray(a, dtype=np.int64)


def build(workload, folder: Path | None) -> TrainingProgram:
    import burtorch

    bt = burtorch.fp32
    data = load(workload, folder)
    tensors = [np.asarray(t, dtype=np.float32) for t in data.tensors()]
    model = Mlp(bt, tensors) if workload.name == "mlp" else Gpt(bt, tensors, int(data.config["heads"]))
    # The layers made their parameters one after the other: from the table's first to the head's last.
    first, last = model.wte.parameters()[0], model.head.parameters()[-1]
    batch_size = int(data.config["batch"])
    trainer = bt.Trainer(first, last, batch_size, data.config["learning_rate"], burtorch.samples_per_graph(workload.name))
    return TrainingProgram(workload, data, model.to_batch, trainer.step, f"burtorch {burtorch.__version__}")
