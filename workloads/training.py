"""What the MLP and the GPT share: writing a run's inputs and the FP64 reference losses.

The reference is the workload's own numpy model, differentiated by HIPS autograd in FP64 from
the same float32 initial parameters and the same batches the engines get, then stepped by
plain SGD. Only numpy and autograd are imported here: the runner process stays lean.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Mapping

import numpy as np

from workloads import inputs as shared
from workloads.data import SEED, Corpus

# Losses of the first CHECKED_STEPS steps (warm-up included) are compared across engines.
CHECKED_STEPS = 3


def initial_params(count: int, seed: int = SEED) -> np.ndarray:
    return np.random.default_rng([seed, 0]).uniform(-1.0, 1.0, count).astype(np.float32)


def draw_batches(pool_rows: int, steps: int, batch: int, seed: int = SEED) -> np.ndarray:
    return np.random.default_rng([seed, 3]).integers(0, pool_rows, (steps, batch))


def prepare_run(folder: Path, config: dict, shapes: list, pool: np.ndarray, steps: int, batch: int,
                corpus: Corpus, loss: Callable, split_rows: Callable) -> None:
    """Draw the parameters and the batches, compute the reference losses, write the folder."""
    count = sum(int(np.prod(s)) for _, s in shapes)
    params = initial_params(count)
    drawn = draw_batches(len(pool), steps, batch)
    used, batches = np.unique(drawn, return_inverse=True)
    samples = pool[used]
    batches = batches.reshape(steps, batch)
    tensors = shared.split(params, [s for _, s in shapes])
    losses = reference_losses(loss, tensors, [split_rows(samples[b]) for b in batches[:CHECKED_STEPS]],
                              config["learning_rate"])
    shared.write(folder, {**config, "seed": SEED, "corpus": corpus.name, "corpus_sha256": corpus.sha256,
                          "steps": steps, "batch": batch, "param_count": count,
                          "params": shared.format_shapes(shapes), **losses},
                 params, samples, batches)


def reference_losses(loss: Callable, tensors: list, batches: list, learning_rate: float) -> dict[str, float]:
    """loss_i of SGD steps 0, 1, ... in FP64, each evaluated before that step's update."""
    from autograd import value_and_grad

    value_and_grads = value_and_grad(loss)
    params = [t.astype(np.float64) for t in tensors]
    out = {}
    for i, (x, y) in enumerate(batches):
        value, grads = value_and_grads(params, x, y)
        out[f"loss_{i}"] = float(value)
        params = [p - learning_rate * g for p, g in zip(params, grads)]
    return out


def reference(params: Mapping, inputs: Path | None) -> dict[str, float]:
    """The losses prepare() stored; nothing to compare against without an inputs folder."""
    if inputs is None:
        return {}
    return shared.reference_losses(shared.read_config(Path(inputs) / shared.CONFIG))
