"""The MLP and mini-GPT training workloads: model sizes, and every Python engine against the FP64 reference.

Each engine case prepares a shared-inputs folder with the workload's own prepare() and runs
the worker with `--inputs` as the runner does (one framework import per case, a few steps).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engines import all_engines
from tests.tests_support import worker_argv
from workloads import load
from workloads.catalog import gpt, mlp

ROOT = Path(__file__).resolve().parents[1]

TRAINING_ENGINES = (
    "burtorch/eager/python/cpu",
    "torch/eager/python/cpu",
    "torch/torchscript/python/cpu",
    "torch/compile/python/cpu",
    "jax/eager/python/cpu",
    "jax/jit/python/cpu",
    "tensorflow/eager/python/cpu",
    "tensorflow/graph/python/cpu",
    "mlx/eager/python/cpu",
    "mlx/compile/python/cpu",
)
# Rows whose GPT case spends 20-30 s compiling, checked in the default suite on the MLP (and on the GPT by
# every trial of a run): their GPT cases are slow ones.
COMPILED_AT_LENGTH = ("torch/torchscript/python/cpu", "torch/compile/python/cpu", "jax/eager/python/cpu",
                      "jax/jit/python/cpu")
# The smallest point of each grid, and a GPT batch above 1 so that batching itself is checked.
SMOKE_POINTS = (("mlp", {"hidden_dim": 4, "batch": 1}), ("gpt", {"batch": 2}))
PAPER_PARAM_COUNTS = {4: 5_963, 16: 18_587, 32: 35_419, 64: 69_083, 128: 136_411, 512: 540_379, 1024: 1_079_003}


def test_mlp_parameter_counts_are_the_papers():
    assert {e: mlp.param_count(e) for e in load("mlp").grid["hidden_dim"]} == PAPER_PARAM_COUNTS


def test_gpt_has_the_papers_parameters_plus_one_final_layer_norm():
    assert gpt.param_count() == 46_337
    assert gpt.param_count() - 2 * gpt.D_MODEL == 46_289  # the paper's count


def test_grids_are_the_papers():
    assert load("mlp").grid == {"hidden_dim": (4, 16, 32, 64, 128, 512, 1024), "batch": (1, 64)}
    assert load("gpt").grid == {"batch": (1, 2, 4, 8, 16, 32, 64)}
    assert (load("mlp").iterations["paper"], load("gpt").iterations["paper"]) == (4_000, 3_000)
    assert load("mlp").blocks is None and load("gpt").blocks is None, "every step is timed"


def test_registry_lists_mlp_and_gpt_for_every_training_engine():
    engines = all_engines()
    for engine_id in TRAINING_ENGINES:
        assert engines[engine_id].runs(load("mlp")) and engines[engine_id].runs(load("gpt")), engine_id


def test_importing_the_workloads_imports_no_framework_and_no_autograd():
    probe = ("import json, sys\nimport workloads\n"
             "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('torch', 'jax', 'tensorflow', 'mlx', 'autograd'))))\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


def run_worker(engine_id: str, workload: str, params: dict, iterations: int, warmup: int,
               inputs: Path) -> subprocess.CompletedProcess:
    command = worker_argv(engine_id, workload, params, "--iterations", str(iterations), "--warmup", str(warmup),
                          "--blocks", str(iterations), "--inputs", str(inputs))
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """One inputs folder per smoke point, shared by every engine as in a run."""
    folders = {}
    for workload, params in SMOKE_POINTS:
        w = load(workload)
        folder = tmp_path_factory.mktemp(workload)
        w.prepare(params, w.warmup["smoke"] + w.iterations["smoke"], folder, None)
        folders[workload] = folder
    return folders


@pytest.mark.parametrize("engine_id,workload,params", [
    pytest.param(e, w, p, id=f"{e}-{w}", marks=[pytest.mark.slow] if w == "gpt" and e in COMPILED_AT_LENGTH else [])
    for e in TRAINING_ENGINES for w, p in SMOKE_POINTS])
def test_engine_trains_like_the_fp64_reference(engine_id, workload, params, prepared):
    trains_like_the_reference(engine_id, workload, params, prepared[workload])


def trains_like_the_reference(engine_id: str, workload: str, params: dict, inputs: Path) -> None:
    """A few smoke steps of `engine_id` from the prepared `inputs`: an FP32 row, one timing sample per step,
    the workload's parameter count, and three losses each its own step's, as the FP64 reference has them."""
    reason = all_engines()[engine_id].unavailable_reason()
    if reason:
        pytest.skip(reason)
    w = load(workload)
    done = run_worker(engine_id, workload, params, w.iterations["smoke"], w.warmup["smoke"], inputs)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["status"] == "ok", result
    assert result["precision"] == "fp32"
    assert len(result["samples_s"]) == w.iterations["smoke"], "one timing sample per step"
    assert result["param_count"] == (mlp.param_count(4) if workload == "mlp" else gpt.param_count())
    assert sorted(result["outputs"]) == ["loss_0", "loss_1", "loss_2"]
    check = w.check(params, result["outputs"], "fp32", inputs)
    assert check.ok, check.as_dict()


def test_a_training_engine_without_inputs_says_it_needs_them():
    if all_engines()["torch/eager/python/cpu"].unavailable_reason():
        pytest.skip("torch is not installed")
    command = worker_argv("torch/eager/python/cpu", "mlp", {"hidden_dim": 4, "batch": 1}, "--iterations", "1")
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "needs --inputs" in done.stderr


def test_a_run_through_the_cli_prepares_inputs_checks_losses_and_records_param_count(tmp_path):
    if all_engines()["torch/eager/python/cpu"].unavailable_reason():
        pytest.skip("torch is not installed")
    command = [sys.executable, "-m", "harness.commands.cli", "run", "--workload", "mlp", "--engine", "torch/eager/python/cpu",
               "--profile", "smoke", "--param", "hidden_dim=4", "--param", "batch=1", "--out", str(tmp_path)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    [run_dir] = list(tmp_path.iterdir())
    trials = [json.loads(line) for line in (run_dir / "trials.jsonl").read_text().splitlines()]
    [trial] = [t for t in trials if t["engine"] == "torch/eager/python/cpu"]  # beside the harness's floor row
    assert trial["status"] == "ok", trial.get("reason")
    assert trial["check"]["ok"], trial["check"]
    assert sorted(trial["check"]["expected"]) == ["loss_0", "loss_1", "loss_2"]
    assert trial["extra"]["param_count"] == 5_963
    assert trial["init_time_s"] > 0
