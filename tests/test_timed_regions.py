"""The one table of timed regions (workloads/timed_regions.csv) covers every engine's paper row, and
the engines time what it says: observed by counting what a step creates, never by timing it."""
from __future__ import annotations

import importlib
import types

import pytest

from engines import all_engines
from engines.base import find_executable
from harness.commands.cli import main
from harness.planning.plan import PlannedTrial
from harness.analysis import paper
from harness.running.runner import child_command
from harness.running.spawn import RunOptions
from harness.store import results
from harness.store.run_plan import TIMINGS
from tests.tests_support import worker_argv
from workloads import all_workloads, load
from workloads.catalog import gpt
from workloads.timed_regions import MATCHES, regions
from workloads.training import CHECKED_STEPS, FP32_TOLERANCE


def paper_rows() -> set[tuple[str, str]]:
    """(engine, workload) of every engine that stands beside a row the paper prints for a workload."""
    printed = {(r.workload, r.key) for r in paper.load_rows()}
    workloads = [w for w in all_workloads().values() if w.paper is not None]
    # The authors' programs (kind "program") time what they time: theirs by definition.
    return {(e.id, w.name) for e in all_engines().values() for w in workloads
            if e.paper_row and e.runs(w) and e.kind != "program" and (w.paper.csv_name, e.paper_row) in printed}


def test_every_paper_row_has_its_timed_region_and_every_region_a_row():
    table = regions()
    assert paper_rows() - set(table) == set()
    engines, workloads = all_engines(), all_workloads()
    for (engine, workload), row in table.items():
        assert engine in engines and workload in workloads, (engine, workload)
        assert row.matches in MATCHES and row.authors_loop and row.lean_loop and row.paper_loop and row.evidence


def test_a_row_that_adopts_the_authors_loop_has_a_paper_step_and_no_other_does():
    table = regions()
    adopted = {e for (e, w), r in table.items() if r.paper_loop != r.lean_loop}
    assert adopted, "no row adopts the authors' loop"
    for (engine_id, workload), row in table.items():
        spec = all_engines()[engine_id]
        if spec.kind != "python" or spec.unavailable_reason() or workload not in ("tiny", "small", "save_load"):
            continue
        try:
            program = importlib.import_module(spec.module).BUILDERS[load(workload).kind](spec, load(workload), load(workload).points()[0], None)
        except ImportError:
            continue  # a framework that is installed but cannot start here (no GPU)
        has_paper_step = getattr(program, "paper_step", None) is not None
        assert has_paper_step == (row.paper_loop != row.lean_loop), (engine_id, workload)


def build(engine_id: str, workload: str, graph=None):
    spec = all_engines()[engine_id]
    reason = spec.unavailable_reason()
    if reason:
        pytest.skip(reason)
    w = load(workload)
    view = types.SimpleNamespace(name=w.name, kind=w.kind, precision=w.precision, graph=graph or w.graph)
    try:
        return importlib.import_module(spec.module).BUILDERS[w.kind](spec, view, w.points()[0], None)
    except ImportError as exc:
        pytest.skip(str(exc))


def created(program, step_name: str, counter: list, steps: int = 5) -> int:
    step = getattr(program, step_name)
    step()  # compile, trace: what the warm-up absorbs
    before = len(counter)
    for _ in range(steps):
        step()
    return len(counter) - before


def test_micrograd_paper_step_makes_its_two_leaves_per_iteration(monkeypatch):
    program = build("micrograd/eager/python/cpu", "tiny")
    from micrograd.engine import Value

    leaves, init = [], Value.__init__

    def counting(self, data, _children=(), _op=""):
        if not _children:
            leaves.append(data)
        init(self, data, _children, _op)

    monkeypatch.setattr(Value, "__init__", counting)
    assert created(program, "paper_step", leaves) - created(program, "step", leaves) == 2 * 5


def test_torch_paper_step_makes_its_leaves_per_iteration(monkeypatch):
    program = build("torch/eager/python/cpu", "small")
    import torch

    calls, tensor = [], torch.tensor
    monkeypatch.setattr(torch, "tensor", lambda *a, **k: calls.append(1) or tensor(*a, **k))
    assert created(program, "step", calls) == 0
    assert created(program, "paper_step", calls) == 2 * 5


def test_jax_paper_step_makes_its_inputs_per_iteration_and_still_waits(monkeypatch):
    program = build("jax/jit/python/cpu", "tiny")
    import jax
    import jax.numpy as jnp

    made, waited = [], []
    float64, block = jnp.float64, jax.block_until_ready
    monkeypatch.setattr(jnp, "float64", lambda x: made.append(x) or float64(x))
    monkeypatch.setattr(jax, "block_until_ready", lambda x: waited.append(1) or block(x))
    assert created(program, "step", made) == 0
    assert created(program, "paper_step", made) == 2 * 5
    assert len(waited) == 2 * 6  # every step of both, the lean one and the authors' one


def test_tflite_paper_step_feeds_once_and_reads_the_outputs_each_step(monkeypatch):
    program = build("tflite/graph/interpreter/cpu", "tiny")
    interpreter = type(program._interpreter)
    calls = []
    for name in ("set_tensor", "get_tensor"):
        method = getattr(interpreter, name)
        monkeypatch.setattr(interpreter, name, lambda self, *a, _m=method, _n=name: calls.append(_n) or _m(self, *a))
    created(program, "step", calls)
    assert calls.count("set_tensor") == 2 * 6 and calls.count("get_tensor") == 0
    calls.clear()
    created(program, "paper_step", calls)
    assert calls.count("set_tensor") == 0 and calls.count("get_tensor") == 3 * 6


def test_tensorflow_paper_step_reads_variables(monkeypatch):
    program = build("tensorflow/eager/python/cpu", "tiny")
    import tensorflow as tf

    watched, watch = [], tf.GradientTape.watch
    monkeypatch.setattr(tf.GradientTape, "watch", lambda self, x: watched.append(type(x).__name__) or watch(self, x))
    created(program, "step", watched)
    assert not any("Variable" in name for name in watched)
    watched.clear()
    created(program, "paper_step", watched)
    assert watched and all("Variable" in name for name in watched)


def test_autograd_paper_step_runs_three_forwards_per_iteration():
    forwards = []
    tiny = load("tiny").graph

    def counted(a, b, relu):
        forwards.append(1)
        return tiny(a, b, relu)

    program = build("autograd/eager/python/cpu", "tiny", graph=counted)
    assert created(program, "step", forwards) == 5
    assert created(program, "paper_step", forwards) == 3 * 5


@pytest.mark.parametrize("engine_id,paper_bytes", [("tensorflow/eager/python/cpu", 634), ("tensorflow/graph/python/cpu", 329)])
def test_tensorflow_paper_save_load_pickles_the_seven_once_per_step(engine_id, paper_bytes, monkeypatch):
    program = build(engine_id, "save_load")
    import pickle

    calls = []
    for name in ("dump", "load"):
        method = getattr(pickle, name)
        monkeypatch.setattr(pickle, name, lambda *a, _m=method, _n=name: calls.append(_n) or _m(*a))
    assert created(program, "step", calls) == 0
    assert created(program, "paper_step", calls) == 2 * 5 and calls.count("dump") == calls.count("load")
    # The paper's file sizes are these pickles (a byte or so apart from one TF version to another).
    assert abs(program.extra["file_size_bytes"] - paper_bytes) <= 8


def test_torch_numpy_paper_load_reads_8_bytes_per_tensor_and_save_detaches_each(monkeypatch):
    program = build("torch/numpy/python/cpu", "save_load")
    import numpy as np
    import torch

    buffers, detached = [], []
    frombuffer, detach = np.frombuffer, torch.Tensor.detach
    monkeypatch.setattr(np, "frombuffer", lambda buffer, **k: buffers.append(len(buffer)) or frombuffer(buffer, **k))
    monkeypatch.setattr(torch.Tensor, "detach", lambda self: detached.append(1) or detach(self))
    assert created(program, "step", buffers) == 5 and set(buffers) == {7 * 8} and not detached
    buffers.clear()
    assert created(program, "paper_step", buffers) == 7 * 5 and set(buffers) == {8}
    assert len(detached) == 7 * 6


GPT_POINT = {"batch": 2}


@pytest.fixture(scope="module")
def gpt_inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gpt")
    load("gpt").prepare(GPT_POINT, CHECKED_STEPS, folder, None)
    return folder


def gpt_losses(engine_id: str, step_name: str, inputs) -> dict[str, float]:
    """The first losses of a torch GPT program stepped with `step_name`, checked as the harness checks them."""
    spec = all_engines()[engine_id]
    program = importlib.import_module(spec.module).BUILDERS["training"](spec, load("gpt"), GPT_POINT, inputs)
    for _ in range(CHECKED_STEPS):
        getattr(program, step_name)()
    losses = program.outputs()
    assert load("gpt").check(GPT_POINT, losses, "fp32", inputs).ok, (step_name, losses)
    return losses


@pytest.mark.parametrize("engine_id", ["torch/eager/python/cpu", "torch/torchscript/python/cpu"])
def test_torch_gpt_paper_step_trains_the_module_style_model_with_the_default_sgd(engine_id, gpt_inputs, monkeypatch):
    if all_engines()[engine_id].unavailable_reason():
        pytest.skip(all_engines()[engine_id].unavailable_reason())
    row = regions()[(engine_id, "gpt")]
    assert row.paper_loop != row.lean_loop, "the table says this row's paper loop is the lean one"
    import torch
    import torch.optim.sgd as sgd

    from engines import torch_models
    from engines.torch_gpt_modules import GPT, Head

    built, scripted, updates = [], [], []
    make, fused, script = torch_models.gpt_module, torch_models.fused_train_step, torch.jit.script
    monkeypatch.setattr(torch_models, "gpt_module", lambda tensors: built.append(make(tensors)) or built[-1])
    monkeypatch.setattr(torch_models, "fused_train_step", lambda *a: built.append("fused") or fused(*a))
    monkeypatch.setattr(torch.jit, "script", lambda fn, *a, **k: scripted.append(type(fn)) or script(fn, *a, **k))
    for name in ("_single_tensor_sgd", "_multi_tensor_sgd"):
        update = getattr(sgd, name)
        monkeypatch.setattr(sgd, name, lambda *a, _u=update, _n=name, **k: updates.append(_n) or _u(*a, **k))

    paper = gpt_losses(engine_id, "paper_step", gpt_inputs)
    [model] = built  # the module-style model alone: a paper trial never builds the fused one
    assert isinstance(model, GPT) and sum(isinstance(m, Head) for m in model.modules()) == gpt.LAYERS * gpt.HEADS
    assert scripted[:1] == ([GPT] if "torchscript" in engine_id else [])  # then it scripts the methods
    assert updates == ["_single_tensor_sgd"] * CHECKED_STEPS  # the default SGD: a loop over the tensors
    built.clear(), updates.clear()
    lean = gpt_losses(engine_id, "step", gpt_inputs)
    assert built == ["fused"] and updates == ["_multi_tensor_sgd"] * CHECKED_STEPS
    for name, loss in paper.items():
        assert abs(loss - lean[name]) <= FP32_TOLERANCE * max(abs(lean[name]), 1.0), name


def test_the_worker_steps_as_the_timing_asks():
    import json
    import subprocess
    import sys

    for timing in ("paper", "lean"):
        argv = worker_argv("micrograd/eager/python/cpu", "tiny", {"a": -41.0, "b": 2.0}, "--iterations", "3")
        argv[argv.index("--timing") + 1] = timing
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["timed_as"] == timing


@pytest.mark.parametrize("engine_id", ["burtorch/eager/cpp/cpu", "libtorch/eager/cpp/cpu"])
def test_the_runner_gives_native_drivers_the_timing(engine_id):
    planned = PlannedTrial(all_engines()[engine_id], load("tiny"), {"a": -41.0, "b": 2.0}, 0, 10, 0, 60)
    for timing in TIMINGS:
        command = child_command(planned, 10, 0, RunOptions(cpu=0, timing=timing), None)
        assert command[command.index("--timing") + 1] == timing


@pytest.mark.parametrize("timing", TIMINGS)
def test_a_native_trial_records_the_loop_its_driver_ran(timing, tmp_path):
    if find_executable("burtorch-bench") is None:
        pytest.skip("burtorch-bench is not built (make setup)")
    engine = "burtorch/eager/cpp/cpu"
    assert main(["run", "--workload", "tiny", "--profile", "smoke", "--engine", engine, "--trials", "1",
                 "--timing", timing, "--out", str(tmp_path), "--no-report"]) == 0
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    (trial,) = [t for t in results.read_trials(run_dir) if t["engine"] == engine]
    assert trial["status"] == "ok" and trial["check"]["ok"], trial
    assert trial["timing"] == trial["timed_as"] == timing
