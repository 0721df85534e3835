"""The native driver burtorch-bench: the one-line JSON protocol of harness/running/worker.py, correct
outputs (the tiny and small graphs, save/load, and the MLP's and GPT's losses from the harness's
shared inputs) under both --timing loops, memory that does not grow with the batch, and clean
failures on bad input."""
from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from workloads import load
from workloads.inputs import read_config

try:
    from tests.test_burtorch_build import driver_path
except ImportError:
    from test_burtorch_build import driver_path

# The keys harness/running/worker.py writes; the runner treats both children alike.
WORKER_KEYS = {"status", "outputs", "precision", "iterations", "warmup", "loop_time_s", "per_iter_s", "samples_s",
               "framework_version", "cpu_clocks", "instructions", "cpu_clocks_source", "loop_cpu_time_s",
               "cpu_time_s", "peak_resident_bytes", "peak_virtual_bytes", "peak_private_bytes", "peak_private_source"}
# The paper's MLP sizes (Tables 5/6): parameters for hidden width e.
PAPER_MLP_PARAMS = {4: 5_963, 16: 18_587, 32: 35_419, 64: 69_083, 128: 136_411, 512: 540_379, 1024: 1_079_003}


def run_driver(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(driver_path()), *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


def result_of(*args: str, env: dict | None = None) -> dict:
    run = run_driver(*args, env=env)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) == 1, run.stdout
    return json.loads(lines[0])


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """inputs(workload, steps, **params): the folder the workload's prepare() writes, made once per point."""
    made = {}

    def folder(workload: str, steps: int, **params) -> Path:
        key = (workload, steps, tuple(sorted(params.items())))
        if key not in made:
            made[key] = tmp_path_factory.mktemp(workload)
            load(workload).prepare(params, steps, made[key], None)
        return made[key]

    return folder


def train(workload: str, folder: Path, iterations: int, warmup: int = 0, **params) -> dict:
    args = [workload, "--iterations", str(iterations), "--warmup", str(warmup), "--blocks", str(iterations),
            "--inputs", str(folder)]
    for name, value in params.items():
        args += ["--param", f"{name}={value!r}"]  # as harness/running/runner.py passes them
    return result_of(*args)


@pytest.mark.parametrize("workload", ["tiny", "small", "energy"])
def test_outputs_match_the_reference(workload):
    result = result_of(workload, "--iterations", "2000", "--warmup", "5", "--blocks", "10")
    w = load(workload)
    check = w.check(w.points()[0], result["outputs"], result["precision"])
    assert check.ok, check.as_dict()
    assert result["precision"] == "fp64"


@pytest.mark.parametrize("timing", ["paper", "lean"])
@pytest.mark.parametrize("workload", ["tiny", "small", "energy", "save_load"])
def test_both_timings_give_the_reference_and_say_which_loop_ran(workload, timing, tmp_path):
    w = load(workload)
    point = w.points()[0]
    params = [arg for name, value in point.items() for arg in ("--param", f"{name}={value!r}")]
    result = result_of(workload, "--iterations", "200", "--warmup", "2", "--blocks", "4", "--timing", timing, *params,
                       env={"TMPDIR": str(tmp_path)})
    check = w.check(point, result["outputs"], result["precision"])
    assert check.ok, check.as_dict()
    assert result["timed_as"] == timing  # each has the authors' loop (workloads/timed_regions.csv)
    if workload == "save_load" and sys.platform != "win32":
        assert result["file_io"] == {"paper": "mmap", "lean": "stdio"}[timing]


def test_the_default_timing_is_the_harness_default():
    assert result_of("tiny", "--iterations", "10")["timed_as"] == "paper"


def test_help_names_the_timing_option():
    run = run_driver("--help")
    assert run.returncode == 0 and "--timing paper|lean" in run.stdout


def test_the_line_has_every_field_the_worker_writes():
    result = result_of("tiny", "--iterations", "1000", "--blocks", "10")
    assert WORKER_KEYS <= set(result)
    assert result["status"] == "ok" and result["iterations"] == 1000 and result["warmup"] == 0
    assert result["framework_version"].startswith("burtorch ")
    assert result["cpu_time_s"] >= result["loop_cpu_time_s"] >= 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="perf_event_open is Linux's")
def test_cpu_clocks_are_counted_or_the_refusal_is_said():
    result = result_of("tiny", "--iterations", "1000", "--blocks", "10")
    source = result["cpu_clocks_source"]
    assert source.startswith("perf_event_open")
    if result["cpu_clocks"] is None:  # a VM without a PMU (this project's CI machine): the errno and why
        assert result["instructions"] is None
        assert source.startswith("perf_event_open: E") and len(source) > len("perf_event_open: E")
    else:
        assert isinstance(result["cpu_clocks"], int) and result["cpu_clocks"] > 0


def test_per_iteration_statistics_come_from_the_block_samples():
    result = result_of("small", "--iterations", "1003", "--blocks", "10")
    samples = result["samples_s"]
    stats = result["per_iter_s"]
    assert len(samples) == stats["n"] == 10
    assert stats["mean"] == pytest.approx(sum(samples) / 10, rel=1e-12)
    assert stats["min"] == min(samples)
    assert stats["median"] == pytest.approx(statistics.median(samples), rel=1e-12)
    assert stats["std"] == pytest.approx(statistics.stdev(samples), rel=1e-9)
    # 1003 = 101 * 3 + 100 * 7: the block samples weighted by their sizes add up to the loop time.
    loop = sum(s * n for s, n in zip(samples, [101] * 3 + [100] * 7))
    assert loop == pytest.approx(result["loop_time_s"], rel=1e-9)
    assert all(s > 0 for s in samples)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="VmHWM/VmPeak are Linux fields")
def test_linux_memory_fields():
    result = result_of("tiny", "--iterations", "1000")
    assert isinstance(result["peak_resident_bytes"], int) and result["peak_resident_bytes"] > 0
    assert result["peak_virtual_bytes"] >= result["peak_resident_bytes"]
    assert result["peak_private_bytes"] is None and result["peak_private_source"]


def test_parameters_override_the_defaults():
    result = result_of("tiny", "--iterations", "10", "--param", "a=-4", "--param", "b=3")
    expected = load("tiny").reference({"a": -4.0, "b": 3.0})
    assert result["outputs"] == pytest.approx(expected, rel=1e-15)


@pytest.mark.parametrize("args", [
    ("nonsense", "--iterations", "10"),
    ("tiny", "--iterations", "ten"),
    ("tiny", "--iterations", "0"),
    ("tiny",),
    ("tiny", "--iterations", "10", "--param", "c=1"),
    ("tiny", "--iterations", "10", "--param", "a=abc"),
    ("tiny", "--iterations", "10", "--blocks", "-1"),
    ("tiny", "--iterations", "10", "--bogus"),
    ("tiny", "--iterations", "10", "--timing", "fast"),
    ("tiny", "--iterations", "10", "--timing"),
])
def test_bad_input_exits_2_with_one_line(args):
    run = run_driver(*args)
    assert run.returncode == 2
    assert run.stdout == ""
    assert len(run.stderr.splitlines()) == 1 and run.stderr.startswith("burtorch-bench: error: ")


def test_unknown_workload_names_the_known_ones():
    run = run_driver("resnet", "--iterations", "10")
    assert run.returncode == 2
    assert all(name in run.stderr for name in ("tiny", "small", "save_load", "mlp", "gpt"))


def test_every_sample_is_finite():
    result = result_of("tiny", "--iterations", "500", "--blocks", "500")
    assert all(math.isfinite(s) for s in result["samples_s"])


@pytest.mark.parametrize("workload, params", [
    ("mlp", {"hidden_dim": 4, "batch": 1}),
    ("mlp", {"hidden_dim": 4, "batch": 4}),
    ("gpt", {"batch": 1}),
    ("gpt", {"batch": 2}),
    ("gpt", {"batch": 19}),  # graphs of 8, 8 and 3 windows (gpt.hpp's kSamplesPerGraph)
])
def test_training_losses_match_the_reference(inputs, workload, params):
    """Three SGD steps (the first a warm-up) from the shared initial parameters and batches."""
    folder = inputs(workload, 3, **params)
    result = train(workload, folder, iterations=2, warmup=1, **params)
    w = load(workload)
    check = w.check(params, result["outputs"], result["precision"], folder)
    assert check.ok, check.as_dict()
    assert sorted(result["outputs"]) == ["loss_0", "loss_1", "loss_2"]
    assert result["precision"] == "fp32"
    assert result["param_count"] == read_config(folder / "config.txt")["param_count"]
    assert len(result["samples_s"]) == 2  # every step is timed on its own
    assert result["timed_as"] == "lean"  # under --timing paper too: no authors' loop for training


@pytest.mark.parametrize("hidden", sorted(PAPER_MLP_PARAMS))
def test_mlp_has_the_papers_parameter_count(inputs, hidden):
    result = train("mlp", inputs("mlp", 1, hidden_dim=hidden, batch=1), iterations=1, hidden_dim=hidden, batch=1)
    assert result["param_count"] == PAPER_MLP_PARAMS[hidden]
    assert set(result["outputs"]) == {"loss_0"}


def test_gpt_parameter_count(inputs):
    result = train("gpt", inputs("gpt", 1, batch=1), iterations=1)
    assert result["param_count"] == 46_337  # the paper's 46,289 plus the final LayerNorm (workloads/gpt.py)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="VmHWM is a Linux field")
@pytest.mark.parametrize("workload, params, growth_mib", [("mlp", {"hidden_dim": 64}, 4), ("gpt", {}, 6)])
def test_peak_memory_grows_with_the_batch_by_its_graph_only(inputs, workload, params, growth_mib):
    """An MLP batch is one graph (its layers are blocks): b = 64 adds its 64 samples' nodes and the
    block products' buffers, no more. A GPT batch is graphs of 8 windows, one at a time: b = 64 adds
    8 windows' nodes (17,000 nodes per window at 17 bytes each, about 2.3 MiB) and the buffers, where
    one graph of 64 would add about 18 MiB."""
    peaks = [train(workload, inputs(workload, 2, **params, batch=b), iterations=2)["peak_resident_bytes"]
             for b in (1, 64)]
    assert peaks[0] <= peaks[1] <= peaks[0] + (growth_mib << 20), peaks


def test_training_needs_its_inputs_folder(inputs):
    for args in (("mlp", "--iterations", "1"),
                 ("gpt", "--iterations", "1", "--inputs", str(inputs("mlp", 1, hidden_dim=4, batch=1))),
                 ("mlp", "--iterations", "2", "--inputs", str(inputs("mlp", 1, hidden_dim=4, batch=1))),
                 ("mlp", "--iterations", "1", "--param", "batch=2",
                  "--inputs", str(inputs("mlp", 1, hidden_dim=4, batch=1)))):
        run = run_driver(*args)
        assert run.returncode == 1, args
        assert run.stdout == "" and len(run.stderr.splitlines()) == 1
        assert run.stderr.startswith("burtorch-bench: error: ")


def test_save_load_round_trip(tmp_path):
    result = result_of("save_load", "--iterations", "50", "--blocks", "5", "--param", "a=-4.0", "--param", "b=2.0",
                       env={"TMPDIR": str(tmp_path)})
    w = load("save_load")
    check = w.check({"a": -4.0, "b": 2.0}, result["outputs"], result["precision"])
    assert check.ok and check.max_rel_err == 0.0, check.as_dict()
    assert result["file_size_bytes"] == 56
    assert 0 < result["save_s"] + result["load_s"] <= result["loop_time_s"]
    assert list(tmp_path.iterdir()) == []  # the file is removed at exit
