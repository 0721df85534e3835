"""The Program the training engines share: one SGD step per step(), batches prepared untimed.

An engine supplies two functions in its framework's terms:
  to_batch(x, y)     numpy token ids -> the batch as train_step takes it: the framework's tensors, or
                     what builds the batch's graph (called from prepare(), untimed)
  train_step(batch)  forward + backward + SGD update of the parameters it holds; returns the loss
The losses of the first CHECKED_STEPS steps (warm-up steps included) are kept as returned and
turned into floats only in outputs(), after the timed loop. An engine whose paper row trains
another model or optimizer (workloads/timed_regions.csv) also gives paper_train_step, which
paper_step() runs instead: the worker steps with it under `--timing paper`.
"""
from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Callable

from workloads import inputs
from workloads.training import CHECKED_STEPS


def load(workload, folder: Path | None) -> inputs.Inputs:
    if folder is None:
        raise ValueError(f"the {workload.name} workload needs --inputs (the folder its prepare() wrote)")
    loaded = inputs.read(folder)
    if loaded.config["workload"] != workload.name:
        raise ValueError(f"{folder} holds inputs for {loaded.config['workload']}, not {workload.name}")
    return loaded


def first_batch(workload, data: inputs.Inputs) -> tuple:
    """Step 0's (x, y) in numpy: the example a tracing or compiling engine builds its graph on."""
    return workload.split_rows(data.batch_rows(0))


class TrainingProgram:
    def __init__(self, workload, data: inputs.Inputs, to_batch: Callable, train_step: Callable, version: str,
                 paper_train_step: Callable | None = None):
        self._split_rows = workload.split_rows
        self._data = data
        self._to_batch = to_batch
        self._train_step = train_step
        self._paper_train_step = paper_train_step
        if paper_train_step is None:
            self.paper_step = None
        self._step = 0
        self._batch = None
        self._losses: list = []
        self.version = version
        self.extra = {"param_count": int(data.config["param_count"])}

    def prepare(self) -> None:
        """The next step's batch, gathered and converted; the worker calls this outside the timer."""
        self._batch = self._to_batch(*self._split_rows(self._data.batch_rows(self._step)))

    def step(self) -> None:
        self._run(self._train_step)

    def paper_step(self) -> None:
        self._run(self._paper_train_step)

    def _run(self, train_step: Callable) -> None:
        if self._batch is None:  # a timed block of several steps: only its first batch was prepared
            self.prepare()
        loss = train_step(self._batch)
        if self._step < CHECKED_STEPS:
            self._losses.append(loss)
        self._batch = None
        self._step += 1

    def outputs(self) -> dict[str, float]:
        return {f"loss_{i}": float(loss) for i, loss in enumerate(self._losses)}


class BuiltAtFirstCall:
    """A train_step that build() makes at its first call, a warm-up step: where a program offers two
    models, a trial then holds only the one it times (and its peak memory only that one's)."""

    def __init__(self, build: Callable[[], Callable]):
        self._build = build
        self._train_step: Callable | None = None

    def __call__(self, batch):
        if self._train_step is None:
            self._train_step = self._build()
        return self._train_step(batch)


def functional_sgd(workload, folder: Path | None, ops, *, value_and_grad: Callable, compile_step: Callable | None,
                   to_array: Callable, wait: Callable, to_batch: Callable, version: str) -> TrainingProgram:
    """The Program of a framework whose parameters are immutable arrays (JAX, MLX).

    The model is the workload's own numpy-style loss over `ops` (workloads/array_ops.py),
    value_and_grad the framework's transform of it; compile_step, where given, wraps the whole
    SGD step (traced in the first, warm-up, step); wait(loss, params) blocks until the
    framework's asynchronous or lazy computation of the step is done, or nothing would be timed.
    """
    data = load(workload, folder)
    lr = data.config["learning_rate"]
    loss_and_grads = value_and_grad(partial(workload.model, ops))

    def sgd_step(params, x, y):
        value, grads = loss_and_grads(params, x, y)
        return value, [p - lr * g for p, g in zip(params, grads)]

    if compile_step is not None:
        sgd_step = compile_step(sgd_step)
    state = {"params": [to_array(t) for t in data.tensors()]}

    def train_step(batch):
        value, state["params"] = sgd_step(state["params"], *batch)
        wait(value, state["params"])
        return value

    return TrainingProgram(workload, data, to_batch, train_step, version)
