"""The native driver burtorch-bench: the one-line JSON protocol of harness/worker.py, correct
outputs, and clean failures on bad input."""
from __future__ import annotations

import json
import math
import statistics
import subprocess
import sys

import pytest

from workloads import WORKLOADS

try:
    from tests.test_burtorch_build import driver_path
except ImportError:
    from test_burtorch_build import driver_path

# The keys harness/worker.py writes; the runner treats both children alike.
WORKER_KEYS = {"status", "outputs", "precision", "iterations", "warmup", "loop_time_s", "per_iter_s", "samples_s",
               "framework_version", "cpu_clocks", "cpu_clocks_source", "loop_cpu_time_s", "cpu_time_s",
               "peak_resident_bytes", "peak_virtual_bytes", "peak_private_bytes", "peak_private_source"}


def run_driver(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(driver_path()), *args], capture_output=True, text=True, timeout=60)


def result_of(*args: str) -> dict:
    run = run_driver(*args)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) == 1, run.stdout
    return json.loads(lines[0])


@pytest.mark.parametrize("workload", ["tiny", "small"])
def test_outputs_match_the_reference(workload):
    result = result_of(workload, "--iterations", "2000", "--warmup", "5", "--blocks", "10")
    w = WORKLOADS[workload]
    check = w.check(w.points()[0], result["outputs"], result["precision"])
    assert check.ok, check.as_dict()
    assert result["precision"] == "fp64"


def test_the_line_has_every_field_the_worker_writes():
    result = result_of("tiny", "--iterations", "1000", "--blocks", "10")
    assert WORKER_KEYS <= set(result)
    assert result["status"] == "ok" and result["iterations"] == 1000 and result["warmup"] == 0
    assert result["framework_version"].startswith("burtorch ")
    assert result["cpu_clocks"] is None and result["cpu_clocks_source"]
    assert result["cpu_time_s"] >= result["loop_cpu_time_s"] >= 0


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
    expected = WORKLOADS["tiny"].reference({"a": -4.0, "b": 3.0})
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
])
def test_bad_input_exits_2_with_one_line(args):
    run = run_driver(*args)
    assert run.returncode == 2
    assert run.stdout == ""
    assert len(run.stderr.splitlines()) == 1 and run.stderr.startswith("burtorch-bench: error: ")


def test_unknown_workload_names_the_known_ones():
    run = run_driver("mlp", "--iterations", "10")
    assert "tiny" in run.stderr and "small" in run.stderr


def test_every_sample_is_finite():
    result = result_of("tiny", "--iterations", "500", "--blocks", "500")
    assert all(math.isfinite(s) for s in result["samples_s"])
