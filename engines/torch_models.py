"""The MLP and the GPT in PyTorch (FP32), and their SGD training Program for eager, TorchScript and torch.compile.

The model is a function of (parameters..., x, y) -> loss, written with torch.nn.functional as
makemore and Karpathy's gpt.py would; TorchScript traces it on the first batch and
torch.compile compiles it (forward and backward) on the first call, which is a warm-up step.
The update is torch.optim.SGD over the same leaf tensors in every mode, with its multi-tensor
(foreach) implementation: on the CPU the default is one Python-level update per tensor, which
costs the GPT's 84 tensors about 0.25 ms a step against 0.15 ms.

Under `--timing paper` the eager and TorchScript GPT train what the authors' script trains
(workloads/timed_regions.csv): the module-style model of engines/torch_gpt_modules.py, scripted
for TorchScript, with the default SGD.
"""
from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F

from engines.torch_gpt_modules import gpt_module
from engines.training import BuiltAtFirstCall, TrainingProgram, first_batch, load
from workloads.catalog import gpt

# The modes whose GPT paper row trains the module-style model.
PAPER_MODES = ("eager", "torchscript")


def mlp_loss(wte, w1, b1, w2, b2, x, y):
    emb = F.embedding(x, wte).reshape(x.shape[0], -1)
    h = torch.tanh(F.linear(emb, w1, b1))
    return F.cross_entropy(F.linear(h, w2, b2), y)


def attention(h, block: gpt.Block, causal):
    b, t, d = h.shape

    def heads(w):  # (b, t, d) -> (b, heads, t, head_size)
        return F.linear(h, w).view(b, t, gpt.HEADS, gpt.HEAD_SIZE).transpose(1, 2)

    q, k, v = heads(block.wq), heads(block.wk), heads(block.wv)
    scores = (q @ k.transpose(-2, -1)) * gpt.HEAD_SIZE**-0.5
    weights = F.softmax(scores.masked_fill(~causal[:t, :t], float("-inf")), dim=-1)
    return (weights @ v).transpose(1, 2).reshape(b, t, d)


def gpt_loss(*tensors, causal):
    *params, x, y = tensors
    p = gpt.unpack(params)
    d = (gpt.D_MODEL,)
    h = F.embedding(x, p.wte) + p.wpe[: x.shape[1]]
    for block in p.blocks:
        normed = F.layer_norm(h, d, block.ln1_g, block.ln1_b, gpt.LN_EPS)
        h = h + F.linear(attention(normed, block, causal), block.proj_w, block.proj_b)
        ff = F.relu(F.linear(F.layer_norm(h, d, block.ln2_g, block.ln2_b, gpt.LN_EPS), block.ff1_w, block.ff1_b))
        h = h + F.linear(ff, block.ff2_w, block.ff2_b)
    logits = F.linear(F.layer_norm(h, d, p.lnf_g, p.lnf_b, gpt.LN_EPS), p.head_w, p.head_b)
    return F.cross_entropy(logits.reshape(-1, gpt.VOCAB), y.reshape(-1))


def loss_of(workload: str):
    """The workload's loss as a function of (parameters..., x, y) only, as tracing wants it."""
    if workload == "mlp":
        return mlp_loss
    causal = torch.tril(torch.ones(gpt.BLOCK_SIZE, gpt.BLOCK_SIZE, dtype=torch.bool))
    return lambda *tensors: gpt_loss(*tensors, causal=causal)


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


def build(mode: str, workload, folder: Path | None) -> TrainingProgram:
    data = load(workload, folder)
    if workload.name != "gpt" or mode not in PAPER_MODES:
        return TrainingProgram(workload, data, to_batch, fused_train_step(mode, workload, data), torch.__version__)
    # Scripting the module raises the peak resident memory by some 290 MB, tracing the fused loss by
    # 60 (torch 2.13): each is built only if stepped.
    return TrainingProgram(workload, data, to_batch, BuiltAtFirstCall(lambda: fused_train_step(mode, workload, data)),
                           torch.__version__, paper_train_step=BuiltAtFirstCall(lambda: module_train_step(mode, data)))


def fused_train_step(mode: str, workload, data):
    params = [torch.tensor(t, requires_grad=True) for t in data.tensors()]
    optimizer = torch.optim.SGD(params, lr=data.config["learning_rate"], foreach=True)
    forward = forward_of(mode, loss_of(workload.name), (*params, *to_batch(*first_batch(workload, data))))

    def train_step(batch):
        optimizer.zero_grad(set_to_none=True)
        loss = forward(*params, *batch)
        loss.backward()
        optimizer.step()
        return loss.detach()

    return train_step


def module_train_step(mode: str, data):
    """The authors' step: the module's forward, then zero_grad, backward and the default SGD."""
    model = gpt_module(data.tensors())
    if mode == "torchscript":
        model = torch.jit.script(model)  # its profiling runs fall in the first (warm-up) steps
    optimizer = torch.optim.SGD(model.parameters(), lr=data.config["learning_rate"])

    def train_step(batch):
        loss = model(*batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return loss.detach()

    return train_step
