"""Floating-point operations of one training step: the counting rules, which the MLP and GPT apply
to their own declared shapes (workloads/catalog/mlp.py and gpt.py, `Workload.step_flops`).

Counted: the multiply-adds of the matrix products, 2 FLOPs each. A linear layer over N rows
costs 2 N in out forward and twice that backward (the weights' gradient and the input's: every
layer's input has a gradient, as the first layer's comes from the embedding table). Causal
attention costs, per head and sequence, the query-key products and the weighted sums of values
over the sum(t + 1 for t < T) visible pairs, times three as well. Elementwise work (activations,
softmax, layer norm, the SGD update) is left out: it is not what a peak multiply-add rate
measures. Engines that compute the masked half of attention do more work than counted here, and
ours less for the MLP's input gradient (one product row per distinct embedding row at each
position, linear_block_backward.hpp): the count is the model's, and a rate from it is effective.

Bytes a step must move at least (step_bytes), beside its FLOPs, in the precision it computes in: every
parameter read forward, read again backward (for its layer's input gradient) and written by the update,
that backward read and the update being one sweep in place at the least; and the activations that
backward needs (each product's input, each nonlinearity's output), written forward and read backward.
Gradients are not counted: at the least each is consumed where it is made. So 3 P + 2 A values for P
parameters and A kept activations, and the working set, where the step's data lives, is P + A values.
"""
from __future__ import annotations

from dataclasses import dataclass

# Forward, the weights' gradient, the input's gradient.
PASSES = 3
EMBEDDINGS = ("wte", "wpe")


def linear_macs_per_row(shapes) -> int:
    """Multiply-adds per row (sample or token) of every weight matrix in a list of (name, shape)."""
    return sum(out * inp for name, shape in shapes if len(shape) == 2 and name.split(".")[-1] not in EMBEDDINGS
               for out, inp in [shape])


def causal_attention_macs(layers: int, heads: int, head_size: int, tokens: int) -> int:
    """Multiply-adds of one sequence's attention: scores, then the weighted values, over the visible pairs."""
    pairs = tokens * (tokens + 1) // 2  # causal: position t sees t + 1 positions
    return layers * heads * 2 * pairs * head_size


def step_flops(macs_per_sample: int, batch: int) -> int:
    """FLOPs of one SGD step over `batch` samples of `macs_per_sample` forward multiply-adds each."""
    return 2 * PASSES * batch * macs_per_sample


def linear_products(shapes, rows: int) -> list[tuple[int, int, int]]:
    """(m, k, n) of each matrix product of a step's linear layers over `rows` rows (the batch's samples or
    tokens, as one product): per weight (out, in), the forward (rows x in)(in x out), the weights' gradient
    (out x rows)(rows x in) and the input's (rows x out)(out x in)."""
    return [product for name, shape in shapes if len(shape) == 2 and name.split(".")[-1] not in EMBEDDINGS
            for out, inp in [shape] for product in ((rows, inp, out), (out, rows, inp), (rows, out, inp))]


# Bytes of one value in each precision an engine computes in (a trial's `precision`).
VALUE_BYTES = {"fp32": 4, "fp64": 8}


@dataclass(frozen=True)
class StepBytes:
    """The least a step moves, by the kind of sweep that moves it (machine/bandwidth.py measures both)."""
    read: int  # read only: the parameters, forward
    updated: int  # read and written back, both ways counted: the parameters backward and by the update, the activations
    working_set: int  # the parameters and the kept activations: the cache level they fit in serves the step

    @property
    def total(self) -> int:
        return self.read + self.updated


def step_bytes(parameters: int, kept: int, precision: str) -> StepBytes:
    """The bytes of one SGD step over `parameters` values that keeps `kept` activations from forward to backward."""
    size = VALUE_BYTES[precision]
    return StepBytes(read=parameters * size, updated=2 * (parameters + kept) * size,
                     working_set=(parameters + kept) * size)
