"""The Python framework engines on the tiny and small graphs, run the way the runner runs them.

Each case spawns `python -m harness.running.worker` (a framework import per case, so the iteration
counts are the smoke profile's) and judges its outputs with the workload's own check.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engines import all_engines
from engines import torch as torch_engines
from tests.tests_support import worker_argv
from workloads import load

ROOT = Path(__file__).resolve().parents[1]

FRAMEWORK_ENGINES = (
    "torch/eager/python/cpu",
    "torch/torchscript/python/cpu",
    "torch/compile/python/cpu",
    "torch/eager/python/gpu",
    "tensorflow/eager/python/cpu",
    "tensorflow/graph/python/cpu",
    "tflite/graph/interpreter/cpu",
    "jax/eager/python/cpu",
    "jax/jit/python/cpu",
    "autograd/eager/python/cpu",
    "micrograd/eager/python/cpu",
    "mlx/eager/python/cpu",
    "mlx/compile/python/cpu",
    "tinygrad/eager/python/cpu",
    "tinygrad/jit/python/cpu",
)
FRAMEWORKS = ("torch", "tensorflow", "jax", "jaxlib", "autograd", "micrograd", "mlx", "tinygrad")


def run_worker(engine_id: str, workload: str, params: dict, iterations: int,
               warmup: int) -> subprocess.CompletedProcess:
    command = worker_argv(engine_id, workload, params, "--iterations", str(iterations), "--warmup", str(warmup),
                          "--blocks", "4")
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_registry_lists_every_framework_engine_for_tiny_and_small():
    engines = all_engines()
    missing = [i for i in FRAMEWORK_ENGINES if i not in engines]
    assert not missing
    for engine_id in FRAMEWORK_ENGINES:
        assert engines[engine_id].runs(load("tiny")) and engines[engine_id].runs(load("small")), engine_id


def test_listing_engines_imports_no_framework():
    # The runner lists engines and checks their availability; a framework imported there would
    # inflate every child's memory readings and slow planning down.
    probe = ("import json, sys\n"
             "from engines import all_engines\n"
             "[spec.unavailable_reason() for spec in all_engines().values()]\n"
             f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {FRAMEWORKS!r})))\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


def test_tflite_is_labelled_fp32_and_the_rest_fp64():
    engines = all_engines()
    assert engines["tflite/graph/interpreter/cpu"].precision == "fp32"
    assert "FP64" in engines["tflite/graph/interpreter/cpu"].note
    assert all(engines[i].precision is None for i in FRAMEWORK_ENGINES if not i.startswith("tflite/"))


def test_gpu_engine_unavailable_without_nvidia_driver(monkeypatch):
    monkeypatch.setattr(torch_engines.os.path, "exists", lambda path: False)
    monkeypatch.setattr(torch_engines.shutil, "which", lambda name: None)
    assert "NVIDIA driver" in all_engines()["torch/eager/python/gpu"].unavailable_reason()


def test_gpu_engine_available_with_nvidia_driver(monkeypatch):
    monkeypatch.setattr(torch_engines.os.path, "exists", lambda path: path == "/proc/driver/nvidia/version")
    monkeypatch.setattr(torch_engines.shutil, "which", lambda name: None)
    spec = all_engines()["torch/eager/python/gpu"]
    assert spec.condition() is None


@pytest.mark.parametrize("workload", ["tiny", "small"])
@pytest.mark.parametrize("engine_id", FRAMEWORK_ENGINES)
def test_engine_matches_reference(engine_id, workload):
    spec = all_engines()[engine_id]
    reason = spec.unavailable_reason()
    if reason:
        pytest.skip(reason)
    w = load(workload)
    params = w.points()[0]
    done = run_worker(engine_id, workload, params, w.iterations["smoke"], w.warmup["smoke"])
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["status"] == "ok", result
    precision = spec.precision or w.precision
    assert result["precision"] == precision
    check = w.check(params, result["outputs"], precision)
    assert check.ok, check.as_dict()
    assert result["framework_version"], "the framework version goes into the results"


@pytest.mark.parametrize("engine_id", ["none/empty/python/cpu", "libtorch/eager/cpp/cpu"])
def test_a_changed_copy_of_an_engine_keeps_what_its_class_does(engine_id):
    """An engine run in an environment or bound to another interpreter is a replace()d copy: the
    floor row must still run only memory workloads, a built-on-first-use engine must still build."""
    engine = all_engines()[engine_id]
    copy = engine.replace(python="/elsewhere/bin/python")
    assert type(copy) is type(engine) and copy.python == "/elsewhere/bin/python"
    assert [copy.runs(load(w)) for w in ("tiny", "small", "mlp")] == [engine.runs(load(w)) for w in ("tiny", "small", "mlp")]
    assert getattr(copy, "prepare", None).__func__ is getattr(engine, "prepare", None).__func__ if hasattr(engine, "prepare") \
        else not hasattr(copy, "prepare")
