"""The MLP and the GPT written with the `burtorch` Python module (FP32): the same C++ layers as the
native driver, one call per layer over a graph's every token (a Nodes: the block of handles stays
in C++; a Linear over every sample's tokens is one matrix product), the GPT's blocks one call
(burtorch.TransformerStack: each block's seven steps, the driver's code), ids and targets as numpy
arrays. burtorch.Trainer takes each step as the driver does (burtorch_ext/include/burtorch/
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
        wte, w1, b1, w2, b2 = tensors
        self.wte = bt.Embedding(*wte.shape)
        self.hidden = bt.Linear(w1.shape[1], w1.shape[0], True, "tanh")
        self.head = bt.Linear(w2.shape[1], w2.shape[0], True, "identity")
        self.wte.load(wte)
        self.hidden.load(w1, b1)
        self.head.load(w2, b2)
        self.vocab = w2.shape[0]

    @staticmethod
    def to_batch(x, y) -> tuple:
        """Row ids and targets as the calls read them, so that the timed step converts nothing."""
        return np.ascontiguousarray(x, dtype=np.int64), np.ascontiguousarray(y, dtype=np.int64)

    def losses(self, bt, x, y):
        """Each sample's loss (Nodes) for the rows of x and y."""
        return bt.cross_entropy(self.head(self.hidden.over_rows(self.wte, x)), y)


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
        self.vocab = head_w.shape[0]

    @staticmethod
    def to_batch(x, y) -> tuple:
        """Token ids and targets (windows, tokens) as the calls read them, so that the timed step converts nothing."""
        return np.ascontiguousarray(x, dtype=np.int64), np.ascontiguousarray(y, dtype=np.int64)

    def losses(self, bt, x, y):
        """Each window's mean loss over its tokens (Nodes) for the windows of x and y."""
        h = self.blocks(bt.embed(self.wte, self.wpe, x), x.shape[1])
        return bt.cross_entropy(self.head(h), y)


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

    one_graph = trainer.samples_per_graph >= batch_size

    def to_batch(x, y):
        """The batch as Trainer.step takes it: the function that builds the graph of its samples
        first..first+count-1. Made here, untimed, so that the timed step is Trainer.step itself."""
        x, y = type(model).to_batch(x, y)
        if one_graph:  # the batch as it is, no slices
            return lambda first, count: model.losses(bt, x, y)
        return lambda first, count: model.losses(bt, x[first:first + count], y[first:first + count])

    return TrainingProgram(workload, data, to_batch, trainer.step, f"burtorch {burtorch.__version__}")
