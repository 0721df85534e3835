"""The `burtorch` module's layers (linear, neuron, embedding, layer norm, causal self-attention) against
their torch counterparts, in FP64 (test_burtorch_module.py holds the operators and graphs)."""
from __future__ import annotations

import math
import random

import pytest
from test_burtorch_module import bt, torch, weighted  # noqa: F401  (bt and torch: module-scoped fixtures)


def _weighted_torch(torch, ys):
    return (ys * torch.arange(1, ys.numel() + 1, dtype=ys.dtype).reshape(ys.shape)).sum()


def _weighted_ours(ys):
    return weighted(ys)


def _values(n, seed):
    rng = random.Random(seed)
    return [rng.uniform(-1, 1) for _ in range(n)]


@pytest.mark.parametrize("activation", ["identity", "relu", "tanh", "sigmoid"])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_matches_torch(bt, torch, activation, bias):
    torch.manual_seed(0)
    ref = torch.nn.Linear(5, 3, bias=bias, dtype=torch.float64)
    layer = bt.Linear(5, 3, bias=bias, activation=activation)
    layer.load(ref.weight.detach().flatten().tolist(), ref.bias.detach().tolist() if bias else [])
    x = _values(5, 1)
    xs = [bt.Value(v) for v in x]
    ys = layer(xs)
    _weighted_ours(ys).backward()
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    act = {"identity": lambda y: y, "relu": torch.relu, "tanh": torch.tanh, "sigmoid": torch.sigmoid}[activation]
    yt = act(ref(xt))
    _weighted_torch(torch, yt).backward()
    assert [y.data for y in ys] == pytest.approx(yt.tolist(), rel=1e-12, abs=1e-14)
    assert [v.grad for v in xs] == pytest.approx(xt.grad.tolist(), rel=1e-12, abs=1e-14)
    assert [w.grad for w in layer.weights] == pytest.approx(ref.weight.grad.flatten().tolist(), rel=1e-12, abs=1e-14)
    if bias:
        assert [b.grad for b in layer.biases] == pytest.approx(ref.bias.grad.tolist(), rel=1e-12, abs=1e-14)
    assert len(layer.parameters()) == 15 + (3 if bias else 0)


def test_neuron(bt):
    n = bt.Neuron(3, bias=True, activation="tanh", seed=4)
    params = n.parameters()
    assert len(params) == 4 and all(-1 <= p.data < 1 for p in params)
    xs = [bt.Value(v) for v in (0.1, -0.2, 0.3)]
    y = n(xs)
    expected = math.tanh(sum(p.data * x.data for p, x in zip(params, xs)) + params[3].data)
    assert y.data == pytest.approx(expected, rel=1e-14)


def test_embedding_matches_torch(bt, torch):
    torch.manual_seed(1)
    ref = torch.nn.Embedding(5, 3, dtype=torch.float64)
    table = bt.Embedding(5, 3)
    table.load(ref.weight.detach().flatten().tolist())
    tokens = [1, 3, 1]
    rows = [v for t in tokens for v in table[t]]
    _weighted_ours(rows).backward()
    _weighted_torch(torch, ref(torch.tensor(tokens))).backward()
    assert [v.data for v in rows] == ref(torch.tensor(tokens)).flatten().tolist()
    assert [p.grad for p in table.parameters()] == pytest.approx(ref.weight.grad.flatten().tolist(), rel=1e-14)


@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_matches_torch(bt, torch, affine):
    torch.manual_seed(2)
    ref = torch.nn.LayerNorm(6, eps=1e-5, elementwise_affine=affine, dtype=torch.float64)
    norm = bt.LayerNorm(6, affine=affine)
    if affine:
        with torch.no_grad():
            ref.weight.uniform_(0.5, 1.5)
            ref.bias.uniform_(-0.5, 0.5)
        norm.load(ref.weight.tolist(), ref.bias.tolist())
    x = [3.0 + v for v in _values(6, 3)]  # a mean far from zero
    xs = [bt.Value(v) for v in x]
    ys = norm(xs)
    _weighted_ours(ys).backward()
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    yt = ref(xt)
    _weighted_torch(torch, yt).backward()
    assert [y.data for y in ys] == pytest.approx(yt.tolist(), rel=1e-12, abs=1e-13)
    assert [v.grad for v in xs] == pytest.approx(xt.grad.tolist(), rel=1e-10, abs=1e-12)
    if affine:
        assert [g.grad for g in norm.gamma] == pytest.approx(ref.weight.grad.tolist(), rel=1e-11, abs=1e-13)
        assert [b.grad for b in norm.beta] == pytest.approx(ref.bias.grad.tolist(), rel=1e-12)


def _torch_attention(torch, x, q, k, v, proj, heads):
    tokens, d = x.shape
    hd = d // heads

    def split(t):
        return t.view(tokens, heads, hd).transpose(0, 1)

    scores = split(q(x)) @ split(k(x)).transpose(-2, -1) / math.sqrt(hd)
    mask = torch.triu(torch.ones(tokens, tokens, dtype=torch.bool), 1)
    weights = scores.masked_fill(mask, float("-inf")).softmax(-1)
    return proj((weights @ split(v(x))).transpose(0, 1).reshape(tokens, d))


@pytest.mark.parametrize("bias", [True, False])
def test_causal_self_attention_matches_torch(bt, torch, bias):
    torch.manual_seed(3)
    d, heads, tokens = 6, 3, 4
    refs = [torch.nn.Linear(d, d, bias=bias, dtype=torch.float64) for _ in range(4)]
    attention = bt.CausalSelfAttention(d, heads, bias=bias)
    for ours, ref in zip((attention.query, attention.key, attention.value, attention.proj), refs):
        ours.load(ref.weight.detach().flatten().tolist(), ref.bias.detach().tolist() if bias else [])
    x = _values(tokens * d, 5)
    xs = [[bt.Value(v) for v in x[t * d:(t + 1) * d]] for t in range(tokens)]
    ys = attention(xs)
    _weighted_ours([y for row in ys for y in row]).backward()
    xt = torch.tensor(x, dtype=torch.float64).reshape(tokens, d).requires_grad_()
    yt = _torch_attention(torch, xt, *refs, heads)
    _weighted_torch(torch, yt).backward()
    assert [y.data for row in ys for y in row] == pytest.approx(yt.flatten().tolist(), rel=1e-11, abs=1e-13)
    assert [v.grad for row in xs for v in row] == pytest.approx(xt.grad.flatten().tolist(), rel=1e-10, abs=1e-12)
    for ours, ref in zip((attention.query, attention.key, attention.value, attention.proj), refs):
        assert [w.grad for w in ours.weights] == pytest.approx(ref.weight.grad.flatten().tolist(), rel=1e-10, abs=1e-12)
        if bias:
            assert [b.grad for b in ours.biases] == pytest.approx(ref.bias.grad.tolist(), rel=1e-10, abs=1e-12)
