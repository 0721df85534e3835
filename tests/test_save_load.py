"""Save/load (paper Table 4): every engine that implements it, run as the runner runs it, on the
smoke profile; the seven loaded values must equal the saved ones exactly."""
from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from engines import all_engines
from harness.planning.plan import PlannedTrial
from harness.running.runner import child_command, parse_payload
from harness.running.spawn import RunOptions
from workloads import load
from workloads.graphs import small, small_activations

ROOT = Path(__file__).resolve().parents[1]
WORKLOAD = load("save_load")
POINT = WORKLOAD.points()[0]
# Engines of kind "program" (the authors' programs) print their own text: tests/test_authors_* run them.
ENGINES = sorted(eid for eid, spec in all_engines().items() if spec.runs(WORKLOAD) and spec.kind != "program")
RAW_PAYLOAD_BYTES = 7 * 8


def run_save_load(engine_id: str, timing: str = "paper") -> dict:
    spec = all_engines()[engine_id]
    why = spec.unavailable_reason()
    if why is None and hasattr(spec, "prepare"):
        why = spec.prepare()
    if why is not None:
        pytest.skip(f"{engine_id} unavailable: {why}")
    iterations = WORKLOAD.iterations["smoke"]
    planned = PlannedTrial(spec, WORKLOAD, POINT, 0, iterations, WORKLOAD.warmup["smoke"], 120)
    options = RunOptions(cpu=0, python=sys.executable, timing=timing)
    command = child_command(planned, iterations, planned.warmup, options, None)
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    payload = parse_payload(done.stdout)
    assert payload is not None, done.stdout[-500:]
    return payload


def test_the_paper_rows_are_engines():
    assert {"torch/eager/python/cpu", "torch/torchscript/python/cpu", "torch/numpy/python/cpu",
            "tensorflow/eager/python/cpu", "tensorflow/graph/python/cpu", "libtorch/eager/cpp/cpu"} <= set(ENGINES)


@pytest.mark.parametrize("timing", ["paper", "lean"])
@pytest.mark.parametrize("engine_id", ENGINES)
def test_loaded_activations_equal_the_saved_ones_exactly(engine_id, timing):
    payload = run_save_load(engine_id, timing)
    check = WORKLOAD.check(POINT, payload["outputs"], payload["precision"])
    assert check.ok and check.max_rel_err == 0, check.as_dict()
    assert payload["precision"] == "fp64"
    # Save and load are timed apart inside the timed loop, so together they fit in it.
    assert 0 < payload["save_s"] and 0 < payload["load_s"]
    assert payload["save_s"] + payload["load_s"] <= payload["loop_time_s"]
    assert payload["file_size_bytes"] >= RAW_PAYLOAD_BYTES
    if engine_id == "torch/numpy/python/cpu":
        assert payload["file_size_bytes"] == RAW_PAYLOAD_BYTES
    if "save_load_dir" in payload:
        assert not Path(payload["save_load_dir"]).exists(), "the temporary folder was left behind"


def test_one_bit_off_fails_the_check():
    exact = WORKLOAD.reference(POINT)
    off = {**exact, "g": math.nextafter(exact["g"], math.inf)}
    assert WORKLOAD.check(POINT, exact, "fp64").ok
    assert not WORKLOAD.check(POINT, off, "fp64").ok


def test_the_saved_activations_are_the_small_graphs_nodes():
    def relu(x):
        return max(x, 0.0)

    a, b = POINT["a"], POINT["b"]
    c, d, e, f, g = small_activations(a, b, relu)
    assert g == small(a, b, relu)
    assert dict(zip("abcdefg", (a, b, c, d, e, f, g))) == WORKLOAD.reference(POINT)
