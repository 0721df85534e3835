"""The module's batch-level calls (Nodes, Trainer) and the models written with them
(engines/burtorch_models.py): the same losses as the native driver to the bit, the same build.

The driver and the Python worker train from one shared-inputs folder per point, as a run does: equal
losses there mean the module builds the driver's graphs, in the driver's node order and graphs of
samples (burtorch/batch_step.hpp), with the driver's kernels.
"""
from __future__ import annotations

import json
import re
import subprocess

import numpy as np
import pytest

from tests.test_burtorch_build import ROOT, driver_path, import_burtorch
from tests.test_burtorch_driver import train
from tests.tests_support import worker_argv
from workloads import load


@pytest.fixture(scope="module")
def burtorch():
    return import_burtorch()


@pytest.fixture(scope="module")
def bt(burtorch):
    return burtorch.fp32


@pytest.mark.parametrize("workload, params", [
    *[("mlp", {"hidden_dim": 64, "batch": b}) for b in (1, 8, 64)],
    *[("gpt", {"batch": b}) for b in (1, 8, 64)],
], ids=lambda p: p if isinstance(p, str) else ",".join(f"{k}={v}" for k, v in p.items()))
def test_module_losses_equal_the_drivers_to_the_bit(workload, params, tmp_path):
    """Three SGD steps (the first a warm-up) from the same inputs: the same three losses."""
    load(workload).prepare(params, 3, tmp_path, None)
    native = train(workload, tmp_path, iterations=2, warmup=1, **params)
    command = worker_argv("burtorch/eager/python/cpu", workload, params, "--iterations", "2", "--warmup", "1",
                          "--blocks", "2", "--inputs", str(tmp_path))
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    python = json.loads(done.stdout)
    assert python["outputs"] == native["outputs"]
    assert sorted(python["outputs"]) == ["loss_0", "loss_1", "loss_2"]


def test_build_info_is_the_drivers(burtorch):
    version = subprocess.run([str(driver_path()), "--version"], capture_output=True, text=True, timeout=30).stdout
    described = re.fullmatch(r"burtorch \S+ \((.*)\)\s*", version)
    assert described, version
    info = burtorch.build_info()
    assert info["description"] == described.group(1)
    assert info["description"].startswith(f"{info['kernels']} kernels; {info['gemm']}; isa {info['isa']}; ")
    if info["kernels"] == "avx512":
        assert "avx512f" in info["isa"].split()


def test_the_gpt_is_split_as_the_driver_splits_it(burtorch):
    assert burtorch.samples_per_graph("gpt") == 8
    assert burtorch.samples_per_graph("mlp") is None  # the whole batch in one graph
    with pytest.raises(ValueError, match="mlp or gpt"):
        burtorch.samples_per_graph("tiny")


def test_nodes_layers_equal_their_list_calls(bt):
    table = bt.Embedding(5, 3, seed=1)
    layer = bt.Linear(3, 4, activation="tanh", seed=2)
    norm = bt.LayerNorm(4)
    ids = np.array([[4, 0], [2, 2]])
    rows = table.rows(ids)
    assert len(rows) == 12
    assert rows.data.tolist() == [v.data for r in (4, 0, 2, 2) for v in table[r]]
    listed = norm(layer(rows.tolist()))
    blocked = norm(layer(rows))
    assert blocked.data.tolist() == [v.data for v in listed]
    doubled = blocked + blocked
    assert doubled.data.tolist() == [2 * v.data for v in listed]


def test_ids_in_any_form_numpy_converts_name_the_same_rows(bt):
    """int64 arrays are read in place; lists, other integer types, int64 of the other byte order and strided
    views are converted."""
    table = bt.Embedding(5, 3, seed=1)
    ids = np.array([[4, 0, 1], [2, 2, 3]])
    expected = table.rows(ids).data.tolist()
    swapped = ids.astype(ids.dtype.newbyteorder())
    strided = np.array([[4, 9, 0, 9, 1], [2, 9, 2, 9, 3]])[:, ::2]
    for same in (ids.tolist(), ids.astype(np.int32), swapped, np.asfortranarray(ids), strided):
        assert table.rows(same).data.tolist() == expected
    with pytest.raises(TypeError):
        table.rows("not ids")
    with pytest.raises(IndexError, match="row id out of range"):
        table.rows(np.array([5]))


def test_embed_is_each_tokens_row_plus_its_positions_row(bt):
    """GPT-2's wte[idx] + wpe[pos] in one call: the values and the gradients of the two lookups and their sum."""
    tokens, positions = bt.Embedding(6, 3, seed=1), bt.Embedding(4, 3, seed=2)
    ids = np.array([[5, 0, 2], [1, 1, 4]])
    fused = bt.embed(tokens, positions, ids)
    summed = tokens.rows(ids) + positions.rows(np.array([[0, 1, 2], [0, 1, 2]]))
    assert fused.data.tolist() == summed.data.tolist()
    grads = []
    for out in (fused, summed):
        # A distinct weight per output, so that a row summed into the wrong place would show.
        bt.backward(bt.reduce_sum([bt.mul_by_constant(v, k + 1.0) for k, v in enumerate(out.tolist())]))
        grads.append([p.grad for table in (tokens, positions) for p in table.parameters()])
        bt.zero_grad(tokens.parameters() + positions.parameters())
    assert grads[0] == grads[1] and any(grads[0])
    with pytest.raises(ValueError, match="windows, tokens"):
        bt.embed(tokens, positions, np.array([[0, 1, 2, 3, 4]]))  # 5 tokens, 4 positions
    with pytest.raises(ValueError, match="windows, tokens"):
        bt.embed(tokens, positions, np.array([0, 1]))
    with pytest.raises(IndexError, match="row id out of range"):
        bt.embed(tokens, positions, np.array([[6]]))


def test_a_transformer_block_is_its_layers_one_after_the_other(bt):
    """One call for the block gives the values and gradients of its seven steps called one by one."""
    block = bt.TransformerBlock(8, 2, seed=5)
    layers = (block.ln1, block.attention, block.ln2, block.ff1, block.ff2)
    assert [p.data for p in block.parameters()] == [p.data for layer in layers for p in layer.parameters()]
    x = bt.Nodes([bt.Value(v) for v in np.random.default_rng(0).uniform(-1, 1, 2 * 3 * 8)])  # 2 windows of 3
    mark = bt.mark()

    def run(forward):
        out = forward(x)
        bt.reduce_sum([v * w for v, w in zip(out.tolist(), np.linspace(-1, 1, len(out)))]).backward()
        seen = out.data.tolist(), [p.grad for p in block.parameters()], x.grad.tolist()
        bt.zero_grad(block.parameters() + x.tolist())
        bt.rewind(mark)
        return seen

    def by_layers(h):
        h = h + block.attention(block.ln1(h), 3)
        return h + block.ff2(block.ff1(block.ln2(h)))

    assert run(lambda h: block(h, 3)) == run(by_layers)
    with pytest.raises(ValueError, match="windows"):
        block(x, 4)


def test_a_transformer_stack_is_its_blocks_in_turn(bt):
    stack = bt.TransformerStack(3, 8, 2, ff=16, seed=6)
    assert len(stack) == 3 and len(stack[0].ff1.parameters()) == 16 * 8 + 16
    assert [p.data for p in stack.parameters()] == [p.data for block in stack for p in block.parameters()]
    x = bt.Nodes([bt.Value(v) for v in np.random.default_rng(1).uniform(-1, 1, 4 * 8)])
    in_turn = x
    for block in stack:
        in_turn = block(in_turn, 2)
    assert stack(x, 2).data.tolist() == in_turn.data.tolist()
    with pytest.raises(IndexError):
        stack[3]
    assert stack.norm is None


def test_a_stack_with_a_norm_normalises_its_last_blocks_outputs(bt):
    stack = bt.TransformerStack(2, 8, 2, ff=16, norm=True, seed=6)
    stack.norm.load(np.linspace(0.5, 1.5, 8, dtype=np.float32), np.linspace(-0.1, 0.1, 8, dtype=np.float32))
    blocks = [p.data for block in stack for p in block.parameters()]
    assert [p.data for p in stack.parameters()] == blocks + [p.data for p in stack.norm.parameters()]
    x = bt.Nodes([bt.Value(v) for v in np.random.default_rng(2).uniform(-1, 1, 4 * 8)])
    assert stack(x, 2).data.tolist() == stack.norm(stack[1](stack[0](x, 2), 2)).data.tolist()


def test_cross_entropy_gives_a_loss_per_row_or_a_mean_per_window(bt):
    logits = bt.Nodes([bt.Value(v) for v in (0.5, -1.0, 2.0, 0.0, 1.5, -0.5)])
    per_row = bt.cross_entropy(logits, np.array([2, 0]))
    assert per_row.data.tolist() == [bt.cross_entropy(logits.tolist()[:3], 2).data,
                                     bt.cross_entropy(logits.tolist()[3:], 0).data]
    per_window = bt.cross_entropy(logits, np.array([[2, 0]]))
    assert per_window.data.tolist() == [bt.reduce_mean(per_row.tolist()).data]
    with pytest.raises(IndexError, match="target"):
        bt.cross_entropy(logits, np.array([3, 0]))
    with pytest.raises(ValueError, match="targets"):
        bt.cross_entropy(logits, np.array([0, 0, 0, 0]))


def test_trainer_steps_as_sgd_on_the_mean_gradient(bt):
    layer = bt.Linear(2, 2, seed=3)
    params = layer.parameters()
    before = [p.data for p in params]
    trainer = bt.Trainer(params[0], params[-1], batch=2, learning_rate=0.5, samples_per_graph=1)
    assert trainer.samples_per_graph == 1
    x = [[1.0, 2.0], [-1.0, 0.5]]
    targets = np.array([0, 1])
    grads = [0.0] * len(params)
    mark = bt.mark()
    for s in range(2):  # the mean gradient, by hand
        loss = bt.cross_entropy(layer([bt.Value(v) for v in x[s]]), int(targets[s]))
        loss.backward()
        grads = [g + p.grad / 2 for g, p in zip(grads, params)]
        bt.zero_grad(params)
        bt.rewind(mark)

    def losses(first, count):
        return bt.cross_entropy(layer(bt.Nodes([bt.Value(v) for s in range(first, first + count) for v in x[s]])),
                                targets[first:first + count])

    trainer.step(losses)
    assert [p.data for p in params] == pytest.approx([b - 0.5 * g for b, g in zip(before, grads)], rel=1e-6)
    assert all(p.grad == 0 for p in params)


def test_trainer_refuses_losses_that_are_not_one_per_sample(bt):
    layer = bt.Linear(2, 2, seed=3)
    params = layer.parameters()
    trainer = bt.Trainer(params[0], params[-1], batch=2, learning_rate=0.1)
    with pytest.raises(ValueError, match="one per sample"):
        trainer.step(lambda first, count: bt.Nodes([bt.Value(1.0)]))
    with pytest.raises(ValueError, match="one per sample"):
        trainer.step(lambda first, count: [bt.Value(1.0)] * count)
    with pytest.raises(ZeroDivisionError):
        trainer.step(lambda first, count: 1 / 0)


def small_gpt(bt, norm=True):
    """vocab 11, 4 positions, d_model 8, 2 heads, 2 blocks: its parameters consecutive, table to head."""
    wte, wpe = bt.Embedding(11, 8, seed=1), bt.Embedding(4, 8, seed=2)
    stack = bt.TransformerStack(2, 8, 2, ff=16, norm=norm, seed=3)
    return wte, wpe, stack, bt.Linear(8, 11, True, "identity", seed=4)


def test_a_gpt_trains_as_its_layers_called_from_python(bt):
    """Trainer.step over a GptBatch gives the losses and the parameters that the layers' own calls give, to the
    bit: 3 windows in graphs of 2 (one graph of a single window, sliced from the batch), two steps."""
    rng = np.random.default_rng(7)
    x, y = rng.integers(0, 11, (3, 4)), rng.integers(0, 11, (3, 4))

    def train(step_of):
        wte, wpe, stack, head = layers = small_gpt(bt)
        trainer = bt.Trainer(wte.parameters()[0], head.parameters()[-1], batch=3, learning_rate=0.1, samples_per_graph=2)
        losses = [trainer.step(step_of(*layers)) for _ in range(2)]
        return losses, [p.data for p in wte.parameters() + wpe.parameters() + stack.parameters() + head.parameters()]

    def by_layers(wte, wpe, stack, head):
        def losses(first, count):
            xs, ys = x[first:first + count], y[first:first + count]
            return bt.cross_entropy(head(stack(bt.embed(wte, wpe, xs), xs.shape[1])), ys)
        return losses

    in_one_call = train(lambda *layers: bt.Gpt(*layers).batch(x, y))
    assert in_one_call == train(by_layers)
    assert in_one_call[0][1] < in_one_call[0][0]  # the step learned


def test_a_gpt_refuses_what_does_not_fit_it(bt):
    wte, wpe, stack, head = small_gpt(bt)
    with pytest.raises(ValueError, match="layer norm"):
        bt.Gpt(wte, wpe, small_gpt(bt, norm=False)[2], head)
    with pytest.raises(ValueError, match="one d_model"):
        bt.Gpt(wte, bt.Embedding(4, 6), stack, head)
    gpt = bt.Gpt(wte, wpe, stack, head)
    ok = np.zeros((2, 4), dtype=np.int64)
    for x, y, error, message in [
        (np.zeros((2, 5)), np.zeros((2, 5)), ValueError, "windows, tokens"),  # 5 tokens, 4 positions
        (ok, np.zeros((2, 3)), ValueError, "windows, tokens"),
        (np.zeros(4), np.zeros(4), ValueError, "windows, tokens"),
        (ok + 11, ok, IndexError, "token id out of range"),
        (ok, ok - 1, IndexError, "target out of range"),
    ]:
        with pytest.raises(error, match=message):
            gpt.batch(x, y)
    trainer = bt.Trainer(wte.parameters()[0], head.parameters()[-1], batch=3, learning_rate=0.1)
    with pytest.raises(ValueError, match="batch size"):
        trainer.step(gpt.batch(ok, ok))


def test_nodes_of_a_rewound_graph_are_refused(bt):
    mark = bt.mark()
    nodes = bt.Nodes([bt.Value(1.0), bt.Value(2.0)])
    bt.rewind(mark)
    with pytest.raises(IndexError, match="no longer exist"):
        nodes + nodes


def test_the_manifest_says_whether_the_module_is_the_drivers_build(burtorch, tmp_path, monkeypatch):
    from harness.store import manifest

    monkeypatch.setattr(manifest, "find_executable", lambda name: str(driver_path()))
    native = manifest.native_build_info(1, ("tiny",))
    assert native["module"] == burtorch.build_info() and native["module_same_build"] is True
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\necho nonsense\n")
    broken.chmod(0o755)
    native = manifest.native_build_info(1, ("tiny",), str(broken))
    assert native["module"] is None and "module_same_build" not in native
    assert native["module_source"].startswith(f"burtorch.build_info() failed under {broken}")
