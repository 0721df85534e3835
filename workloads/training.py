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
from workloads.base import TOLERANCE, Workload
from workloads.data import SEED, Corpus

# Losses of the first CHECKED_STEPS steps (warm-up included) are compared across engines.
CHECKED_STEPS = 3
# One SGD step size for every engine and both workloads. Not the paper's BurTorch 0.1: from the
# uniform(-1, 1) start, 0.1 makes the e = 1024 MLP diverge (at b = 1 its loss climbs from 28 to
# over 100 in 4,000 steps), and logit gaps beyond 87 push softmax into FP32 subnormals, whose
# cost can differ from kernel to kernel. At 0.01 the loss falls at every corner of both grids
# (mean of the last 100 steps against the first 100, torch eager, paper step counts).
LEARNING_RATE = 0.01
# The check compares the first steps' losses with errors relative to max(|loss|, 1): a single
# sample's loss can be near zero (from this start the logits reach +-60) while its FP32 rounding is
# that of the logits, so a plain relative error would fail correct engines. Measured here (torch
# eager, 40 batch draws each at e = 128, 512, 1024, b = 1; every Python engine at the grid's
# corners) the error stays below 1.1e-5, and the GPT's within 5e-7 (its LayerNorms keep logits
# small); 1e-4 leaves a tenfold margin for other kernels' summation orders, yet a 1% error in
# the step size fails at e = 1024, b = 64 (1.5e-3). Three losses cannot see every wrong gradient:
# they check that the engines train the same model from the same start, not each gradient.
FP32_TOLERANCE = 1e-4
ERROR_FLOOR = 1.0


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
    where = {"corpus_path": corpus.path} if corpus.path else {}
    shared.write(folder, {**config, "seed": SEED, "corpus": corpus.name, "corpus_sha256": corpus.sha256, **where,
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


def training_workload(**declared) -> Workload:
    """A training workload: FP32 SGD steps from the inputs prepare() wrote, every step timed (no
    blocks), checked on its first losses against the FP64 reference."""
    return Workload(kind="training", precision="fp32", blocks=None, reference=reference,
                    tolerance={**TOLERANCE, "fp32": FP32_TOLERANCE}, error_floor=ERROR_FLOOR, **declared)
