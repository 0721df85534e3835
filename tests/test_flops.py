"""FLOPs of a training step (workloads/flops.py's rules, each workload's `step_flops`) against counts by hand."""
from __future__ import annotations

from workloads import load
from workloads.catalog import gpt


def test_mlp_step_flops_are_the_hand_count():
    # w1 e x 1024 and w2 27 x e per sample; forward, dW and dX: 6 FLOPs per multiply-add.
    step_flops = load("mlp").step_flops
    assert step_flops({"hidden_dim": 1024, "batch": 64}) == 6 * 64 * (1024 * 1024 + 27 * 1024) == 413_270_016
    assert step_flops({"hidden_dim": 4, "batch": 1}) == 6 * (4 * 1024 + 27 * 4) == 25_224


def test_gpt_step_flops_are_the_hand_count():
    # Per token and layer: wq, wk, wv, proj 4 x 24 x 24, ff1 and ff2 2 x 24 x 96; the head 65 x 24.
    linear = 8 * (6 * (4 * 24 * 24 + 2 * 24 * 96) + 65 * 24)
    # Per layer and head: 36 causal pairs of 4-wide query-key products and weighted values.
    attention = 6 * 6 * 2 * 36 * 4
    assert load("gpt").step_flops({"batch": 1}) == 6 * (linear + attention) == 2_127_744
    assert load("gpt").step_flops({"batch": 64}) == 64 * 2_127_744


def test_gpt_step_flops_follow_the_declared_shapes(monkeypatch):
    for name, value in {"LAYERS": 1, "HEADS": 2, "HEAD_SIZE": 4, "D_MODEL": 8, "BLOCK_SIZE": 4, "VOCAB": 10}.items():
        monkeypatch.setattr(gpt, name, value)
    linear = 4 * (4 * 8 * 8 + 2 * 8 * 32 + 10 * 8)
    attention = 1 * 2 * 2 * 10 * 4
    assert gpt.WORKLOAD.step_flops({"batch": 3}) == 3 * 6 * (linear + attention) == 63_936


def test_untrained_workloads_have_no_step_flops():
    assert load("tiny").step_flops is None


def test_mlp_step_bytes_are_the_hand_count():
    # P = 1755 + 1052 e parameters; kept per sample: the 16 x 64 embeddings, e hidden units, 27 logits.
    parameters, kept = 1755 + 1052 * 1024, 1024 + 1024 + 27
    moved = load("mlp").step_bytes({"hidden_dim": 1024, "batch": 1}, "fp32")
    assert moved.read == 4 * parameters == 4_316_012  # the weights read forward
    assert moved.updated == 4 * 2 * (parameters + kept) == 8_648_624  # read backward, written by the update; kept
    assert moved.total / 2**20 > 12  # the "at least 12 MiB"
    assert moved.working_set == 4 * (parameters + kept)
    assert load("mlp").step_bytes({"hidden_dim": 1024, "batch": 1}, "fp64").total == 2 * moved.total


def test_gpt_step_bytes_are_the_hand_count():
    # Kept per sequence: 8 tokens x (6 blocks x 10 x 24 + ln_f's 24 + 65 logits), and 6 x 6 x 36 softmax weights.
    kept = 8 * (6 * 240 + 24 + 65) + 6 * 6 * 36
    assert kept == 13_528
    moved = load("gpt").step_bytes({"batch": 64}, "fp32")
    assert (moved.read, moved.updated, moved.working_set) == (4 * 46_337, 8 * (46_337 + 64 * kept), 4 * (46_337 + 64 * kept))


def test_untrained_workloads_have_no_step_bytes():
    assert load("tiny").step_bytes is None and load("small").step_bytes is None
