"""Floating-point operations of one training step, from the models' declared shapes.

Counted: the multiply-adds of the matrix products, 2 FLOPs each. A linear layer over N rows
costs 2 N in out forward and twice that backward (the weights' gradient and the input's: every
layer's input has a gradient, as the first layer's comes from the embedding table). Causal
attention costs, per head and sequence, the query-key products and the weighted sums of values
over the sum(t + 1 for t < T) visible pairs, times three as well. Elementwise work (activations,
softmax, layer norm, the SGD update) is left out: it is not what a peak multiply-add rate
measures. Engines that compute the masked half of attention do more work than counted here.
"""
from __future__ import annotations

from typing import Mapping

from workloads.catalog import gpt, mlp

# Forward, the weights' gradient, the input's gradient.
PASSES = 3
EMBEDDINGS = ("wte", "wpe")


def linear_macs_per_row(shapes) -> int:
    """Multiply-adds per row (sample or token) of every weight matrix in a list of (name, shape)."""
    return sum(out * inp for name, shape in shapes if len(shape) == 2 and name.split(".")[-1] not in EMBEDDINGS
               for out, inp in [shape])


def mlp_step_flops(hidden_dim: int, batch: int) -> int:
    return 2 * PASSES * batch * linear_macs_per_row(mlp.param_shapes(hidden_dim))


def gpt_step_flops(batch: int) -> int:
    tokens = gpt.BLOCK_SIZE
    pairs = tokens * (tokens + 1) // 2  # causal: position t sees t + 1 positions
    attention_macs = gpt.LAYERS * gpt.HEADS * 2 * pairs * gpt.HEAD_SIZE  # scores, then weighted values
    per_sequence = tokens * linear_macs_per_row(gpt.param_shapes()) + attention_macs
    return 2 * PASSES * batch * per_sequence


def step_flops(workload: str, params: Mapping) -> int | None:
    """FLOPs of one training step of a workload's point; None for workloads that are not trained."""
    if workload == "mlp":
        return mlp_step_flops(int(params["hidden_dim"]), int(params["batch"]))
    if workload == "gpt":
        return gpt_step_flops(int(params["batch"]))
    return None
