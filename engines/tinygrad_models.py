"""The MLP and the GPT in tinygrad: the workload's own numpy-style model (workloads/array_ops.py)
over tinygrad's Tensor, one plain SGD step that updates the parameters in place (Tensor.assign),
eagerly or under TinyJit.
"""
from __future__ import annotations

import itertools
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

import numpy as np

from engines.training import TrainingProgram, first_batch, load
from workloads.array_ops import ArrayOps
from workloads.training import CHECKED_STEPS


def array_ops(Tensor, device: str) -> ArrayOps:
    """numpy's names for what the models call, in tinygrad's spelling."""
    numpy_like = SimpleNamespace(
        tanh=Tensor.tanh, exp=Tensor.exp, sqrt=Tensor.sqrt, maximum=Tensor.maximum, where=Tensor.where,
        tril=Tensor.tril,
        mean=lambda x, axis=None, keepdims=False: x.mean(axis=axis, keepdim=keepdims),
        ones=lambda shape: Tensor.ones(*shape, device=device),
        transpose=lambda x, axes: x.permute(*axes),
        swapaxes=lambda x, a, b: x.transpose(a, b))
    return ArrayOps(numpy_like, logsumexp=lambda z: z.logsumexp(axis=-1),
                    pick=lambda z, ids: z.gather(-1, ids.unsqueeze(-1)).squeeze(-1),
                    softmax=lambda z: z.softmax(axis=-1))


class TensorTrainingProgram(TrainingProgram):
    """A TrainingProgram whose losses are tinygrad tensors: read back with item(), after the loop."""

    def outputs(self) -> dict[str, float]:
        return {f"loss_{i}": loss.item() for i, loss in enumerate(self._losses)}


def build(mode: str, workload, folder: Path | None, tinygrad, device: str, captured: Callable,
          version: Callable) -> TrainingProgram:
    Tensor = tinygrad.Tensor
    data = load(workload, folder)
    lr = data.config["learning_rate"]
    params = [Tensor(t, device=device).realize() for t in data.tensors()]
    ops = array_ops(Tensor, device)

    # Each step writes its loss into a buffer it is given, one per checked step (then a scratch one):
    # TinyJit's replays write whatever a step returns to one buffer, overwritten at every step.
    losses = [Tensor.zeros(1, device=device).contiguous().realize() for _ in range(CHECKED_STEPS + 1)]
    steps = itertools.count()

    def sgd_step(x, y, loss_out):
        loss = workload.model(ops, params, x, y)
        for p, g in zip(params, loss.gradient(*params)):
            p.assign(p - lr * g)
        loss_out.assign(loss.reshape(1)).realize(*params)

    def to_batch(x, y):
        return (Tensor(np.ascontiguousarray(x, dtype=np.int32), device=device).realize(),
                Tensor(np.ascontiguousarray(y, dtype=np.int32), device=device).realize())

    if mode == "jit":
        sgd_step = captured(tinygrad.TinyJit(sgd_step), *to_batch(*first_batch(workload, data)), losses[-1])
        # The two steps that made it trained the parameters: back to their start, in the buffers it recorded.
        Tensor.realize(*[p.assign(Tensor(t, device=device)) for p, t in zip(params, data.tensors())])
    synchronize = tinygrad.Device[device].synchronize

    def train_step(batch):
        loss = losses[min(next(steps), CHECKED_STEPS)]
        sgd_step(*batch, loss)
        synchronize()
        return loss

    return TensorTrainingProgram(workload, data, to_batch, train_step, version)
