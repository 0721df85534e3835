"""The mini-GPT as PyTorch modules, one per attention head: the model style of the authors' PyTorch
baseline (Karpathy's nanoGPT lecture), which `--timing paper` times (workloads/timed_regions.csv).

It is the model of workloads/catalog/gpt.py, from the same weights: head j's query, key and value
are Linear layers of their own holding rows 4j..4j+3 of wq, wk and wv; the heads' outputs are
concatenated; each head compares its causal-mask buffer with 0 and the model makes the positions
with torch.arange at every call, as that style does, and the modules nest as there (a module call
costs Python time). Split per head, the weights are 174 tensors where the fused model has 84, so
a per-tensor optimizer does 174 updates a step.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from workloads.catalog import gpt


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.query = nn.Linear(gpt.D_MODEL, gpt.HEAD_SIZE, bias=False)
        self.key = nn.Linear(gpt.D_MODEL, gpt.HEAD_SIZE, bias=False)
        self.value = nn.Linear(gpt.D_MODEL, gpt.HEAD_SIZE, bias=False)
        self.register_buffer("tril", torch.tril(torch.ones(gpt.BLOCK_SIZE, gpt.BLOCK_SIZE)))
        self.scale = gpt.HEAD_SIZE**-0.5

    def forward(self, x):
        t = x.shape[1]
        scores = self.query(x) @ self.key(x).transpose(-2, -1) * self.scale
        weights = F.softmax(scores.masked_fill(self.tril[:t, :t] == 0, float("-inf")), dim=-1)
        return weights @ self.value(x)


class MultiHeadAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleList([Head() for _ in range(gpt.HEADS)])
        self.proj = nn.Linear(gpt.D_MODEL, gpt.D_MODEL)

    def forward(self, x):
        return self.proj(torch.cat([head(x) for head in self.heads], dim=-1))


class FeedForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(gpt.D_MODEL, 4 * gpt.D_MODEL), nn.ReLU(),
                                 nn.Linear(4 * gpt.D_MODEL, gpt.D_MODEL))

    def forward(self, x):
        return self.net(x)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(gpt.D_MODEL, eps=gpt.LN_EPS)
        self.attention = MultiHeadAttention()
        self.ln2 = nn.LayerNorm(gpt.D_MODEL, eps=gpt.LN_EPS)
        self.ff = FeedForward()

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        return x + self.ff(self.ln2(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(gpt.VOCAB, gpt.D_MODEL)
        self.wpe = nn.Embedding(gpt.BLOCK_SIZE, gpt.D_MODEL)
        self.blocks = nn.Sequential(*[Block() for _ in range(gpt.LAYERS)])
        self.ln_f = nn.LayerNorm(gpt.D_MODEL, eps=gpt.LN_EPS)
        self.head = nn.Linear(gpt.D_MODEL, gpt.VOCAB)

    def forward(self, x, y):
        """The mean cross-entropy of the next-token logits."""
        h = self.wte(x) + self.wpe(torch.arange(x.shape[1]))
        logits = self.head(self.ln_f(self.blocks(h)))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), y.view(-1))


def named_weights(tensors: list[np.ndarray]) -> dict[str, np.ndarray]:
    """The shared flat tensors (params.bin order) under GPT's state_dict names, wq/wk/wv cut per head."""
    p = gpt.unpack(tensors)
    named = {"wte.weight": p.wte, "wpe.weight": p.wpe, "ln_f.weight": p.lnf_g, "ln_f.bias": p.lnf_b,
             "head.weight": p.head_w, "head.bias": p.head_b}
    for i, b in enumerate(p.blocks):
        block = {"ln1.weight": b.ln1_g, "ln1.bias": b.ln1_b, "attention.proj.weight": b.proj_w,
                 "attention.proj.bias": b.proj_b, "ln2.weight": b.ln2_g, "ln2.bias": b.ln2_b,
                 "ff.net.0.weight": b.ff1_w, "ff.net.0.bias": b.ff1_b, "ff.net.2.weight": b.ff2_w,
                 "ff.net.2.bias": b.ff2_b}
        for j in range(gpt.HEADS):
            rows = slice(j * gpt.HEAD_SIZE, (j + 1) * gpt.HEAD_SIZE)
            block |= {f"attention.heads.{j}.{name}.weight": w[rows]
                      for name, w in (("query", b.wq), ("key", b.wk), ("value", b.wv))}
        named |= {f"blocks.{i}.{name}": w for name, w in block.items()}
    return named


def gpt_module(tensors: list[np.ndarray]) -> GPT:
    """GPT holding copies of the shared initial weights."""
    model = GPT()
    state = {name: torch.from_numpy(np.ascontiguousarray(w)) for name, w in named_weights(tensors).items()}
    # strict: every parameter must get a shared weight; the masks are the modules' own.
    model.load_state_dict({**state, **dict(model.named_buffers())}, strict=True)
    return model
