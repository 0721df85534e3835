"""Burn built and run for real: cargo builds engines/burn_driver (from the vendored folder where one
is given) and burn-bench's lines match the workloads' references. Where no vendored folder is given
and the driver is not built, these tests skip: the crate registry is out of reach on many machines,
and tests/test_burn.py covers the adapter against a fake cargo."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engines import burn
from workloads import load
from workloads.inputs import read_config

pytestmark = [
    pytest.mark.slow,  # a clean build takes minutes
    pytest.mark.skipif(not os.environ.get(burn.VENDOR_ENV) and not burn.is_built(),
                       reason=f"no vendored folder of Burn's crates (${burn.VENDOR_ENV}) and burn-bench not built"),
]


@pytest.fixture(scope="module")
def driver() -> Path:
    why = burn.build_driver()
    assert why is None, why
    return burn.executable()


def run(driver: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(driver), *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "RAYON_NUM_THREADS": "1"})


def line_of(driver: Path, *args: str) -> dict:
    done = run(driver, *args)
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.splitlines()
    return json.loads(line)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    def folder(workload: str, steps: int, **params) -> Path:
        made = tmp_path_factory.mktemp(workload)
        load(workload).prepare(params, steps, made, None)
        return made

    return folder


@pytest.mark.parametrize("workload", ["tiny", "small"])
def test_graphs_match_the_reference_in_fp64(driver, workload):
    w = load(workload)
    point = w.points()[0]
    params = [arg for name, value in point.items() for arg in ("--param", f"{name}={value!r}")]
    result = line_of(driver, workload, "--iterations", "200", "--warmup", "3", "--blocks", "10", *params)
    check = w.check(point, result["outputs"], result["precision"])
    assert check.ok, check.as_dict()
    assert result["precision"] == "fp64" and result["timed_as"] == "lean" and result["per_iter_s"]["n"] == 10
    assert result["framework_version"].startswith(f"burn {burn.burn_version()} ")
    assert result["cpu_time_s"] >= result["loop_cpu_time_s"] >= 0
    if sys.platform.startswith("linux"):
        assert result["peak_resident_bytes"] > 0 and result["peak_resident_source"] == "/proc/self/status VmHWM"


@pytest.mark.parametrize("workload, params", [
    ("mlp", {"hidden_dim": 4, "batch": 1}),
    ("mlp", {"hidden_dim": 128, "batch": 64}),
    ("gpt", {"batch": 1}),
    ("gpt", {"batch": 19}),
])
def test_training_losses_match_the_reference(driver, inputs, workload, params):
    """Three SGD steps (the first a warm-up) from the shared initial parameters and batches, in FP32."""
    folder = inputs(workload, 3, **params)
    args = [arg for name, value in params.items() for arg in ("--param", f"{name}={value!r}")]
    result = line_of(driver, workload, "--iterations", "2", "--warmup", "1", "--blocks", "2",
                     "--inputs", str(folder), *args)
    w = load(workload)
    check = w.check(params, result["outputs"], result["precision"], folder)
    assert check.ok, check.as_dict()
    assert sorted(result["outputs"]) == ["loss_0", "loss_1", "loss_2"] and result["precision"] == "fp32"
    assert result["param_count"] == read_config(folder / "config.txt")["param_count"]


def test_bad_input_is_one_line_and_a_usage_error(driver, inputs):
    for args, code in ((["nope", "--iterations", "1"], 2), (["tiny", "--iterations", "1", "--param", "z=1"], 2),
                       (["tiny", "--iterations", "0"], 2), (["tiny", "--iterations", "1", "--timing", "fast"], 2),
                       (["mlp", "--iterations", "1"], 1),
                       (["gpt", "--iterations", "1", "--inputs", str(inputs("mlp", 1, hidden_dim=4, batch=1))], 1),
                       (["mlp", "--iterations", "5", "--inputs", str(inputs("mlp", 1, hidden_dim=4, batch=1))], 1)):
        done = run(driver, *args)
        assert done.returncode == code, (args, done.stderr)
        assert done.stdout == "" and len(done.stderr.splitlines()) == 1
        assert done.stderr.startswith("burn-bench: error: ")
