"""The shared-inputs folder (workloads/inputs.py) that every MLP and GPT engine, Python or native, loads."""
from __future__ import annotations

import struct

import numpy as np
import pytest

from workloads import inputs, load, training
from workloads.array_ops import autograd_ops
from workloads.base import relative_error
from workloads.catalog import gpt, mlp


@pytest.fixture
def mlp_inputs(tmp_path):
    folder = tmp_path / "mlp"
    mlp.prepare({"hidden_dim": 4, "batch": 2}, 5, folder, None)
    return folder


def test_array_header_is_the_documented_48_bytes(tmp_path):
    path = tmp_path / "a.bin"
    inputs.write_array(path, np.arange(6, dtype=np.int32).reshape(2, 3))
    raw = path.read_bytes()
    assert raw[:8] == b"BBARRAY1"
    assert struct.unpack("<II4Q", raw[8:48]) == (2, 2, 2, 3, 1, 1)
    assert raw[48:] == b"".join(struct.pack("<i", v) for v in range(6))


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8])
def test_arrays_round_trip(tmp_path, dtype):
    array = (np.arange(24) % 7).astype(dtype).reshape(2, 3, 4)
    inputs.write_array(tmp_path / "a.bin", array)
    back = inputs.read_array(tmp_path / "a.bin")
    assert back.dtype == dtype and back.shape == (2, 3, 4) and (back == array).all()


def test_a_truncated_array_is_refused(tmp_path):
    path = tmp_path / "a.bin"
    inputs.write_array(path, np.ones(10, dtype=np.float32))
    path.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(inputs.InputsError, match="the header says"):
        inputs.read_array(path)


def test_float64_is_not_a_storable_dtype(tmp_path):
    with pytest.raises(inputs.InputsError):
        inputs.write_array(tmp_path / "a.bin", np.ones(3))


def test_config_round_trips_floats_exactly(tmp_path):
    config = {"lr": 0.1, "loss_0": 3.2958368660043291, "steps": 7, "params": "wte:27x64,b2:27"}
    inputs.write_config(tmp_path / "c.txt", config)
    assert inputs.read_config(tmp_path / "c.txt") == config


def test_prepared_folder_holds_what_the_docstring_promises(mlp_inputs):
    data = inputs.read(mlp_inputs)
    assert data.config["param_count"] == mlp.param_count(4) == data.params.size
    assert [shape for _, shape in data.param_shapes()] == [s for _, s in mlp.param_shapes(4)]
    assert data.params.dtype == np.float32 and np.abs(data.params).max() <= 1.0
    assert data.batches.shape == (5, 2) and data.samples.shape[1] == 17
    assert data.samples.max() < mlp.VOCAB
    assert data.config["learning_rate"] == training.LEARNING_RATE
    assert sorted(inputs.reference_losses(data.config)) == ["loss_0", "loss_1", "loss_2"]
    x, y = mlp.split_rows(data.batch_rows(4))
    assert x.shape == (2, 16) and y.shape == (2,)


def test_prepare_is_deterministic_and_shares_weights_across_batch_sizes(tmp_path, mlp_inputs):
    mlp.prepare({"hidden_dim": 4, "batch": 2}, 5, tmp_path / "again", None)
    mlp.prepare({"hidden_dim": 4, "batch": 64}, 5, tmp_path / "b64", None)
    for name in ("params.bin", "samples.bin", "batches.bin", "config.txt"):
        assert (tmp_path / "again" / name).read_bytes() == (mlp_inputs / name).read_bytes(), name
    assert (tmp_path / "b64" / "params.bin").read_bytes() == (mlp_inputs / "params.bin").read_bytes()


def test_the_reference_is_the_loss_of_the_initial_weights_then_of_each_sgd_step(mlp_inputs):
    data = inputs.read(mlp_inputs)
    params = [t.astype(np.float64) for t in data.tensors()]
    expected = load("mlp").reference({}, mlp_inputs)
    assert expected["loss_0"] == pytest.approx(mlp.loss(autograd_ops(), params, *mlp.split_rows(data.batch_rows(0))), rel=1e-14)
    assert len(set(expected.values())) == 3, "each step has its own loss"


def test_a_run_shorter_than_three_steps_is_checked_on_the_steps_it_ran(tmp_path):
    gpt.prepare({"batch": 1}, 1, tmp_path, None)
    expected = load("gpt").reference({"batch": 1}, tmp_path)
    assert list(expected) == ["loss_0"]
    assert load("gpt").check({"batch": 1}, expected, "fp32", tmp_path).ok


def test_losses_off_by_more_than_the_fp32_tolerance_fail_the_check(mlp_inputs):
    w = load("mlp")
    expected = w.reference({}, mlp_inputs)
    close = {k: v * (1 + 1e-6) for k, v in expected.items()}
    assert w.check({}, close, "fp32", mlp_inputs).ok
    off = {**expected, "loss_2": expected["loss_2"] * (1 + 1e-3)}
    check = w.check({}, off, "fp32", mlp_inputs)
    assert not check.ok and "relative error" in check.reason


def test_a_loss_near_zero_is_compared_absolutely_and_the_graphs_still_relatively():
    # One sample's loss can be ~1e-7 while FP32 rounds it at the logits' scale: a correct engine
    # must not fail on that, and the FP64 graph checks must stay strictly relative.
    assert relative_error(1e-7 + 5e-5, 1e-7, load("mlp").error_floor) <= load("mlp").tolerance["fp32"]
    assert relative_error(1e-7 + 5e-5, 1e-7) > 100
    assert load("tiny").error_floor == load("small").error_floor == 0.0


def test_an_engine_is_told_when_it_runs_past_the_prepared_steps(mlp_inputs):
    with pytest.raises(inputs.InputsError, match="outside the 5 steps"):
        inputs.read(mlp_inputs).batch_rows(5)
