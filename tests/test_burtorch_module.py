"""The Python module `burtorch`: every operator against torch.autograd and central finite
differences (FP64, random inputs), the paper's graphs, rewind, save/load, DOT, the layers against
their torch counterparts, and the errors a user can run into."""
from __future__ import annotations

import json
import os
import random
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from engines.base import EngineSpec
from tests.tests_support import worker_argv
from workloads import load

try:
    from tests.test_burtorch_build import ROOT, import_burtorch
except ImportError:
    from test_burtorch_build import ROOT, import_burtorch


@pytest.fixture(scope="module")
def bt():
    return import_burtorch()


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


@dataclass(frozen=True)
class Op:
    name: str
    arity: int
    ours: Callable  # (burtorch, [Value]) -> Value
    theirs: Callable  # (torch, [tensor]) -> 0-d tensor
    lo: float = -2.0
    hi: float = 2.0


def weighted(xs):
    """sum_k (k + 1) x_k: a scalar to which every element of xs matters differently."""
    total = xs[0]
    for k, x in enumerate(xs[1:], start=2):
        total = total + x * float(k)
    return total


POSITIVE = dict(lo=0.3, hi=2.0)
OPS = [
    Op("relu", 1, lambda b, x: b.relu(x[0]), lambda t, x: t.relu(x[0])),
    Op(".relu()", 1, lambda b, x: x[0].relu(), lambda t, x: t.relu(x[0])),
    Op("tanh", 1, lambda b, x: b.tanh(x[0]), lambda t, x: t.tanh(x[0])),
    Op(".tanh()", 1, lambda b, x: x[0].tanh(), lambda t, x: t.tanh(x[0])),
    Op("exp", 1, lambda b, x: b.exp(x[0]), lambda t, x: t.exp(x[0])),
    Op(".exp()", 1, lambda b, x: x[0].exp(), lambda t, x: t.exp(x[0])),
    Op("negative_log", 1, lambda b, x: b.negative_log(x[0]), lambda t, x: -t.log(x[0]), **POSITIVE),
    Op("sigmoid", 1, lambda b, x: b.sigmoid(x[0]), lambda t, x: t.sigmoid(x[0])),
    Op(".sigmoid()", 1, lambda b, x: x[0].sigmoid(), lambda t, x: t.sigmoid(x[0])),
    Op("inv", 1, lambda b, x: b.inv(x[0]), lambda t, x: 1 / x[0], **POSITIVE),
    Op("sqr", 1, lambda b, x: b.sqr(x[0]), lambda t, x: x[0] ** 2),
    Op("pow3", 1, lambda b, x: b.pow3(x[0]), lambda t, x: x[0] ** 3),
    Op("log", 1, lambda b, x: b.log(x[0]), lambda t, x: t.log(x[0]), **POSITIVE),
    Op(".log()", 1, lambda b, x: x[0].log(), lambda t, x: t.log(x[0]), **POSITIVE),
    Op("sqrt", 1, lambda b, x: b.sqrt(x[0]), lambda t, x: t.sqrt(x[0]), **POSITIVE),
    Op(".sqrt()", 1, lambda b, x: x[0].sqrt(), lambda t, x: t.sqrt(x[0]), **POSITIVE),
    Op("inv_sqrt", 1, lambda b, x: b.inv_sqrt(x[0]), lambda t, x: t.rsqrt(x[0]), **POSITIVE),
    Op("-x", 1, lambda b, x: -x[0], lambda t, x: -x[0]),
    Op("mul_by_constant", 1, lambda b, x: b.mul_by_constant(x[0], -2.5), lambda t, x: x[0] * -2.5),
    Op("add_constant", 1, lambda b, x: b.add_constant(x[0], 4.0), lambda t, x: x[0] + 4.0),
    Op("pow", 1, lambda b, x: b.pow(x[0], 2.5), lambda t, x: x[0] ** 2.5, **POSITIVE),
    Op("x**2", 1, lambda b, x: x[0] ** 2, lambda t, x: x[0] ** 2),
    Op("x**3", 1, lambda b, x: x[0] ** 3, lambda t, x: x[0] ** 3),
    Op("x**-1", 1, lambda b, x: x[0] ** -1, lambda t, x: x[0] ** -1, **POSITIVE),
    Op("x**0.5", 1, lambda b, x: x[0] ** 0.5, lambda t, x: x[0] ** 0.5, **POSITIVE),
    Op("x**-0.5", 1, lambda b, x: x[0] ** -0.5, lambda t, x: x[0] ** -0.5, **POSITIVE),
    Op("x**1.7", 1, lambda b, x: x[0] ** 1.7, lambda t, x: x[0] ** 1.7, **POSITIVE),
    Op("x*3", 1, lambda b, x: x[0] * 3, lambda t, x: x[0] * 3),
    Op("3*x", 1, lambda b, x: 3 * x[0], lambda t, x: 3 * x[0]),
    Op("x+1.5", 1, lambda b, x: x[0] + 1.5, lambda t, x: x[0] + 1.5),
    Op("1.5+x", 1, lambda b, x: 1.5 + x[0], lambda t, x: 1.5 + x[0]),
    Op("x-1.5", 1, lambda b, x: x[0] - 1.5, lambda t, x: x[0] - 1.5),
    Op("1.5-x", 1, lambda b, x: 1.5 - x[0], lambda t, x: 1.5 - x[0]),
    Op("x/4", 1, lambda b, x: x[0] / 4, lambda t, x: x[0] / 4),
    Op("4/x", 1, lambda b, x: 4 / x[0], lambda t, x: 4 / x[0], **POSITIVE),
    Op("add", 2, lambda b, x: b.add(x[0], x[1]), lambda t, x: x[0] + x[1]),
    Op("sub", 2, lambda b, x: b.sub(x[0], x[1]), lambda t, x: x[0] - x[1]),
    Op("mul", 2, lambda b, x: b.mul(x[0], x[1]), lambda t, x: x[0] * x[1]),
    Op("div", 2, lambda b, x: b.div(x[0], x[1]), lambda t, x: x[0] / x[1], **POSITIVE),
    Op("mean", 2, lambda b, x: b.mean(x[0], x[1]), lambda t, x: (x[0] + x[1]) / 2),
    Op("add_squares", 2, lambda b, x: b.add_squares(x[0], x[1]), lambda t, x: x[0] ** 2 + x[1] ** 2),
    Op("mean_squares", 2, lambda b, x: b.mean_squares(x[0], x[1]), lambda t, x: (x[0] ** 2 + x[1] ** 2) / 2),
    Op("negative_mean", 2, lambda b, x: b.negative_mean(x[0], x[1]), lambda t, x: -(x[0] + x[1]) / 2),
    Op("x+y", 2, lambda b, x: x[0] + x[1], lambda t, x: x[0] + x[1]),
    Op("x-y", 2, lambda b, x: x[0] - x[1], lambda t, x: x[0] - x[1]),
    Op("x*y", 2, lambda b, x: x[0] * x[1], lambda t, x: x[0] * x[1]),
    Op("x/y", 2, lambda b, x: x[0] / x[1], lambda t, x: x[0] / x[1], **POSITIVE),
    Op("reduce_sum", 5, lambda b, x: b.reduce_sum(x), lambda t, x: t.stack(x).sum()),
    Op("reduce_sub", 5, lambda b, x: b.reduce_sub(x), lambda t, x: x[0] - t.stack(x[1:]).sum()),
    Op("reduce_mul", 5, lambda b, x: b.reduce_mul(x), lambda t, x: t.stack(x).prod()),
    Op("reduce_mean", 5, lambda b, x: b.reduce_mean(x), lambda t, x: t.stack(x).mean()),
    Op("reduce_sum_of_squares", 5, lambda b, x: b.reduce_sum_of_squares(x), lambda t, x: (t.stack(x) ** 2).sum()),
    Op("reduce_mean_squares", 5, lambda b, x: b.reduce_mean_squares(x), lambda t, x: (t.stack(x) ** 2).mean()),
    Op("reduce_negative_mean", 5, lambda b, x: b.reduce_negative_mean(x), lambda t, x: -t.stack(x).mean()),
    Op("log_sum_exp", 5, lambda b, x: b.log_sum_exp(x), lambda t, x: t.logsumexp(t.stack(x), 0)),
    Op("variance_biased", 5, lambda b, x: b.variance_biased(x), lambda t, x: t.stack(x).var(unbiased=False)),
    Op("variance", 5, lambda b, x: b.variance(x), lambda t, x: t.stack(x).var()),
    Op("reduce_mean_and_mean_squares", 5,
       lambda b, x: weighted(list(b.reduce_mean_and_mean_squares(x))),
       lambda t, x: t.stack(x).mean() + 2 * (t.stack(x) ** 2).mean()),
    Op("softmax", 5, lambda b, x: weighted(b.softmax(x)), lambda t, x: weighted(list(t.softmax(t.stack(x), 0)))),
    Op("cross_entropy", 5, lambda b, x: b.cross_entropy(x, 2),
       lambda t, x: t.nn.functional.cross_entropy(t.stack(x)[None], t.tensor([2]))),
    Op("inner_product", 6, lambda b, x: b.inner_product(x[:3], x[3:]), lambda t, x: t.stack(x[:3]) @ t.stack(x[3:])),
    Op("inner_product_with_bias", 7, lambda b, x: b.inner_product_with_bias(x[:3], x[3:6], x[6]),
       lambda t, x: t.stack(x[:3]) @ t.stack(x[3:6]) + x[6]),
]


def random_inputs(op: Op, seed: int) -> list[float]:
    """Uniform in [lo, hi], kept 0.1 away from 0 (relu's kink) when the range straddles it."""
    rng = random.Random(f"{op.name}/{seed}")
    xs = []
    for _ in range(op.arity):
        x = rng.uniform(op.lo, op.hi)
        xs.append(x if abs(x) > 0.1 else x + 0.3)
    return xs


def evaluate(bt, op: Op, xs: list[float]) -> tuple[float, list[float]]:
    mark = bt.mark()
    leaves = [bt.Value(x) for x in xs]
    y = op.ours(bt, leaves)
    y.backward()
    result = y.data, [v.grad for v in leaves]
    bt.rewind(mark)
    return result


def value_at(bt, op: Op, xs: list[float]) -> float:
    mark = bt.mark()
    y = op.ours(bt, [bt.Value(x) for x in xs]).data
    bt.rewind(mark)
    return y


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("op", OPS, ids=[op.name for op in OPS])
def test_operator_against_torch_autograd(bt, torch, op, seed):
    xs = random_inputs(op, seed)
    value, grads = evaluate(bt, op, xs)
    leaves = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in xs]
    y = op.theirs(torch, leaves)
    y.backward()
    assert value == pytest.approx(y.item(), rel=1e-12, abs=1e-14)
    assert grads == pytest.approx([t.grad.item() for t in leaves], rel=1e-11, abs=1e-13)


@pytest.mark.parametrize("op", OPS, ids=[op.name for op in OPS])
def test_operator_against_finite_differences(bt, op):
    xs = random_inputs(op, 2)
    _, grads = evaluate(bt, op, xs)
    for k, x in enumerate(xs):
        h = 1e-5 * max(1.0, abs(x))
        up = value_at(bt, op, xs[:k] + [x + h] + xs[k + 1:])
        down = value_at(bt, op, xs[:k] + [x - h] + xs[k + 1:])
        assert grads[k] == pytest.approx((up - down) / (2 * h), rel=1e-6, abs=1e-7), f"d/dx{k}"


@pytest.mark.parametrize("op", [op for op in OPS if op.name in
                                ("tanh", "x/y", "log_sum_exp", "inner_product_with_bias", "cross_entropy", "x**-0.5")],
                         ids=lambda op: op.name)
def test_fp32_against_torch(bt, torch, op):
    xs = random_inputs(op, 3)
    mark = bt.fp32.mark()
    leaves = [bt.fp32.Value(x) for x in xs]
    y = op.ours(bt.fp32, leaves)
    y.backward()
    tensors = [torch.tensor(x, dtype=torch.float32, requires_grad=True) for x in xs]
    ref = op.theirs(torch, tensors)
    ref.backward()
    assert y.data == pytest.approx(ref.item(), rel=1e-5)
    assert [v.grad for v in leaves] == pytest.approx([t.grad.item() for t in tensors], rel=1e-5, abs=1e-6)
    bt.fp32.rewind(mark)


def test_tiny_graph(bt):
    a, b = bt.Value(-41.0), bt.Value(2.0)
    c = a + b
    d = a * b + b**3
    e = c - d
    f = e**2
    g = f / 2.0
    g.backward()
    assert (g.data, a.grad, b.grad) == (612.5, -35.0, 1050.0)


def micrograd_small_graph(bt) -> tuple[float, float, float]:
    """micrograd's README example, as written there (`x += y` rebinds x to a new node): g, dg/da, dg/db."""
    a, b = bt.Value(-4.0), bt.Value(2.0)
    c = a + b
    d = a * b + b**3
    before = c
    c += c + 1
    assert c is not before and c.index != before.index and before.data == -2.0
    c += 1 + c + (-a)
    d += d * 2 + (b + a).relu()
    d += 3 * d + (b - a).relu()
    e = c - d
    f = e**2
    g = f / 2.0
    g += 10.0 / f
    g.backward()
    return g.data, a.grad, b.grad


def assert_small_graph_values(g: float, da: float, db: float) -> None:
    assert g == pytest.approx(2421 / 98, rel=1e-14)
    assert da == pytest.approx(47620 / 343, rel=1e-13)  # 138.8338, not the authors' 104.125
    assert db == pytest.approx(221433 / 343, rel=1e-13)  # 645.5773, not 680.286


def test_small_graph_with_in_place_operators(bt):
    assert_small_graph_values(*micrograd_small_graph(bt))


def test_the_module_loads_after_every_framework_and_keeps_its_fp64_values(bt):
    # The module's pool sits in static TLS (initial-exec, config.hpp): it must still load after the
    # frameworks have taken their share, and its FP64 values stay exact (TLS descriptors, tried
    # before, returned g = 4512.5 for this graph).
    script = """
import importlib.util, sys
for name in ("torch", "tensorflow", "jax", "mlx.core"):
    if importlib.util.find_spec(name.split(".")[0]) is not None:
        importlib.import_module(name)
sys.path[:0] = sys.argv[1:]
import burtorch
from tests.test_burtorch_module import micrograd_small_graph
print(*map(repr, micrograd_small_graph(burtorch)))
"""
    where = [str(Path(bt.__file__).parent), str(ROOT)]
    run = subprocess.run([sys.executable, "-c", script, *where], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert_small_graph_values(*map(float, run.stdout.split()))


def test_rewind_keeps_parameters_and_drops_the_graph(bt):
    params = [bt.Value(0.5), bt.Value(-1.5)]
    mark = bt.mark()
    for _ in range(3):
        bt.rewind(mark)
        loss = params[0] * params[1] + params[1] ** 2
        loss.backward()
    bt.rewind(mark)
    assert bt.pool_size() == mark.nodes
    assert [p.data for p in params] == [0.5, -1.5]
    assert [p.grad for p in params] == [3 * -1.5, 3 * (0.5 - 3.0)]  # three steps accumulated
    with pytest.raises(IndexError):
        loss.data
    bt.zero_grad(params[0], params[1])
    assert [p.grad for p in params] == [0.0, 0.0]
    assert bt.Value(1.0).index == mark.nodes  # the dropped nodes' memory is reused
    bt.rewind(mark)


def test_rewind_to_a_mark_ahead_of_the_pool_is_refused(bt):
    mark_before = bt.mark()
    bt.Value(1.0)
    ahead = bt.mark()
    bt.rewind(mark_before)
    with pytest.raises(ValueError):
        bt.rewind(ahead)


def test_save_load_seven_activations_is_56_bytes_byte_exact(bt, tmp_path):
    a, b = bt.Value(-4.0), bt.Value(2.0)
    chain = [a + b]
    for k in range(6):  # one node per step: seven consecutive activations
        chain.append(chain[-1] * b if k % 2 else chain[-1] + 0.5)
    first, last = chain[0], chain[-1]
    assert last.index - first.index == 6
    original = [v.data for v in chain]
    path = tmp_path / "activations.bin"
    bt.save(str(path), first, last)
    assert path.stat().st_size == 56
    assert path.read_bytes() == struct.pack("=7d", *original)
    for v in chain:
        v.data = 0.0
    bt.load(str(path), first, last)
    assert struct.pack("=7d", *[v.data for v in chain]) == path.read_bytes()
    bt.save(str(path), first, last, part="values_and_grads")
    assert path.stat().st_size == 112
    with pytest.raises(OSError):
        bt.load(str(path), first, last)  # 112 bytes do not fit 7 values
    with pytest.raises(OSError):
        bt.save(str(tmp_path / "missing" / "x.bin"), first, last)


def test_dot_export(bt):
    a, b = bt.Value(3.0), bt.Value(2.0)
    g = (a * b).relu()
    g.backward()
    dot = bt.to_dot(g, {"a": a, "g": g})
    assert dot.startswith("digraph burtorch {")
    assert "{a | leaf | data 3 | grad 2 |" in dot
    assert "{g | relu | data 6 | grad 1 |" in dot
    assert f"n{a.index} -> n{a.index + 2};" in dot


def test_errors_a_user_can_make(bt):
    x = bt.Value(1.0)
    with pytest.raises(TypeError):
        bt.Value("one")
    with pytest.raises(TypeError):
        x + "one"
    with pytest.raises(TypeError):
        2.0 ** x
    with pytest.raises(TypeError):
        x + bt.fp32.Value(1.0)
    with pytest.raises(ValueError):
        bt.inner_product([x], [x, x])
    with pytest.raises(IndexError):
        bt.cross_entropy([x, x], 2)
    with pytest.raises(ValueError):
        bt.Linear(2, 2, activation="gelu")
    with pytest.raises(ValueError):
        bt.Linear(2, 2)([x])


@pytest.mark.parametrize("workload", ["tiny", "small"])
def test_engine_program_rebuilds_each_step(bt, workload):
    from engines import burtorch as engine

    w = load(workload)
    params = w.points()[0]
    program = engine.BUILDERS[w.kind](engine.ENGINES[1], w, params)
    size = None
    for _ in range(5):
        program.step()
        size = size or bt.pool_size()
        assert bt.pool_size() == size  # rewound every step, not growing
    assert w.check(params, program.outputs(), "fp64").ok
    assert program.version == f"burtorch {bt.__version__}"


def test_worker_runs_the_python_engine(bt):
    from engines import burtorch as engine

    spec: EngineSpec = next(s for s in engine.ENGINES if s.language == "python")
    # The child imports the same module this process did, installed or built here.
    module_dir = str(Path(bt.__file__).parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([module_dir, str(ROOT), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run(worker_argv(spec.id, "small", {"a": -4.0, "b": 2.0}, "--iterations", "200", "--blocks", "4"),
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["status"] == "ok"
    assert load("small").check({"a": -4.0, "b": 2.0}, result["outputs"], "fp64").ok
