"""The MLP and the GPT in PyTorch (FP32), and their SGD training Program for eager, TorchScript and torch.compile.

The model is a function of (parameters..., x, y) -> loss, written with torch.nn.functional as
makemore and Karpathy's gpt.py would; TorchScript traces it on the first batch and
torch.compile compiles it (forward and backward) on the first call, which is a warm-up step.
The update is torch.optim.SGD over the same leaf tensors in every mode, with its multi-tensor
(foreach) implementation: on the CPU the default is one Python-level update per tensor, which
costs the GPT's 84 tensors about 0.25 ms a step against 0.15 ms.
"""
from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F

from engines.training import TrainingProgram, first_batch, load
from workloads import gpt

CAUSAL = torch.tril(torch.ones(gpt.BLOCK_SIZE, gpt.BLOCK_SIZE, dtype=torch.bool))


def mlp_loss(wte, w1, b1, w2, b2, x, y):
    emb = F.embedding(x, wte).reshape(x.shape[0], -1)
    h = torch.tanh(F.linear(emb, w1, b1))
    return F.cross_entropy(F.linear(h, w2, b2), y)


def attention(h, wq, wk, wv):
    b, t, d = h.shape

    def heads(w):  # (b, t, d) -> (b, heads, t, head_size)
        return F.linear(h, w).view(b, t, gpt.HEADS, gpt.HEAD_SIZE).transpose(1, 2)

    q, k, v = heads(wq), heads(wk), heads(wv)
    scores = (q @ k.transpose(-2, -1)) * gpt.HEAD_SIZE**-0.5
    weights = F.softmax(scores.masked_fill(~CAUSAL[:t, :t], float("-inf")), dim=-1)
    return (weights @ v).transpose(1, 2).reshape(b, t, d)


def gpt_loss(*tensors):
    *params, x, y = tensors
    wte, wpe, blocks, (lnf_g, lnf_b, head_w, head_b) = gpt.unpack(params)
    d = (gpt.D_MODEL,)
    h = F.embedding(x, wte) + wpe[: x.shape[1]]
    for ln1_g, ln1_b, wq, wk, wv, proj_w, proj_b, ln2_g, ln2_b, ff1_w, ff1_b, ff2_w, ff2_b in blocks:
        h = h + F.linear(attention(F.layer_norm(h, d, ln1_g, ln1_b, gpt.LN_EPS), wq, wk, wv), proj_w, proj_b)
        ff = F.relu(F.linear(F.layer_norm(h, d, ln2_g, ln2_b, gpt.LN_EPS), ff1_w, ff1_b))
        h = h + F.linear(ff, ff2_w, ff2_b)
    logits = F.linear(F.layer_norm(h, d, lnf_g, lnf_b, gpt.LN_EPS), head_w, head_b)
    return F.cross_entropy(logits.reshape(-1, gpt.VOCAB), y.reshape(-1))


LOSSES = {"mlp": mlp_loss, "gpt": gpt_loss}


def to_batch(x, y):
    return torch.from_numpy(x.astype("int64")), torch.from_numpy(y.astype("int64"))


def forward_of(mode: str, loss, example: tuple):
    if mode == "eager":
        return loss
    if mode == "torchscript":
        return torch.jit.trace(loss, example)
    if mode == "compile":
        return torch.compile(loss, fullgraph=True, dynamic=False)
    raise ValueError(f"unknown torch mode {mode!r}")


def build(mode: str, workload: str, folder: Path | None) -> TrainingProgram:
    data = load(workload, folder)
    params = [torch.tensor(t, requires_grad=True) for t in data.tensors()]
    optimizer = torch.optim.SGD(params, lr=data.config["learning_rate"], foreach=True)
    forward = forward_of(mode, LOSSES[workload], (*params, *to_batch(*first_batch(workload, data))))

    def train_step(batch):
        optimizer.zero_grad(set_to_none=True)
        loss = forward(*params, *batch)
        loss.backward()
        optimizer.step()
        return loss.detach()

    return TrainingProgram(workload, data, to_batch, train_step, torch.__version__)
