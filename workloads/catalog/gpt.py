"""A character-level mini-GPT, FP32 training by plain SGD (paper Tables 7/14/18).

Decoder-only transformer: token + position embeddings, 6 pre-LayerNorm blocks, a final
LayerNorm and a linear head over the 65 symbols of tiny-shakespeare; context (block size) 8,
d_model 24, 6 causal self-attention heads of size 4, a 4x ReLU feed-forward.

    x = wte[tokens] + wpe[positions]
    for each block:  x = x + proj(attention(ln1(x)));  x = x + ff2(relu(ff1(ln2(x))))
    logits = head(ln_f(x));  loss = mean over batch and positions of cross_entropy(logits, next token)

Attention: q, k, v = wq h, wk h, wv h (24 -> 24, no bias); head j uses features 4j..4j+3;
scores q.k / sqrt(4), causal mask, softmax, concatenation of the heads, then proj (24 -> 24 + bias).
LayerNorm: biased variance, eps 1e-5, gain and bias of 24.

Parameters: 46,337. The paper states 46,289 = 46,337 - 48, exactly one LayerNorm's 24 gains
and 24 biases: its count fits this model without the final LayerNorm, which its text does not
mention (the last block's output goes "finally" to the affine head). The final LayerNorm is
kept here as in Karpathy's gpt.py, the paper's PyTorch baseline.
"""
from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Mapping, NamedTuple

import numpy as np

from workloads import data, flops, training
from workloads.array_ops import autograd_ops
from workloads.base import PaperTable

LAYERS, HEADS, BLOCK_SIZE, D_MODEL = 6, 6, 8, 24
HEAD_SIZE = D_MODEL // HEADS
VOCAB = len(data.TEXT_ALPHABET)
LN_EPS = 1e-5


class Block(NamedTuple):
    """One transformer block's tensors, in the order of params.bin."""
    ln1_g: object
    ln1_b: object
    wq: object
    wk: object
    wv: object
    proj_w: object
    proj_b: object
    ln2_g: object
    ln2_b: object
    ff1_w: object
    ff1_b: object
    ff2_w: object
    ff2_b: object


class Params(NamedTuple):
    wte: object
    wpe: object
    blocks: list  # of Block
    lnf_g: object
    lnf_b: object
    head_w: object
    head_b: object


def param_shapes() -> list[tuple[str, tuple[int, ...]]]:
    d, f = D_MODEL, 4 * D_MODEL
    block = {"ln1_g": (d,), "ln1_b": (d,), "wq": (d, d), "wk": (d, d), "wv": (d, d), "proj_w": (d, d),
             "proj_b": (d,), "ln2_g": (d,), "ln2_b": (d,), "ff1_w": (f, d), "ff1_b": (f,), "ff2_w": (d, f),
             "ff2_b": (d,)}
    shapes = [("wte", (VOCAB, d)), ("wpe", (BLOCK_SIZE, d))]
    for layer in range(LAYERS):
        shapes += [(f"h{layer}.{name}", block[name]) for name in Block._fields]
    return shapes + [("lnf_g", (d,)), ("lnf_b", (d,)), ("head_w", (VOCAB, d)), ("head_b", (VOCAB,))]


def param_count() -> int:
    return sum(int(np.prod(shape)) for _, shape in param_shapes())


def unpack(params: list) -> Params:
    """The flat tensor list of params.bin as named records."""
    n = len(Block._fields)
    blocks = [Block(*params[2 + n * i: 2 + n * (i + 1)]) for i in range(LAYERS)]
    return Params(params[0], params[1], blocks, *params[2 + n * LAYERS:])


def step_flops(params: Mapping) -> int:
    """FLOPs of one SGD step at a point (workloads/flops.py's rules), from the shapes as declared now."""
    per_sequence = (BLOCK_SIZE * flops.linear_macs_per_row(param_shapes())
                    + flops.causal_attention_macs(LAYERS, HEADS, HEAD_SIZE, BLOCK_SIZE))
    return flops.step_flops(per_sequence, int(params["batch"]))


def step_products(params: Mapping) -> list[tuple[int, int, int]]:
    """(m, k, n) of one SGD step's linear products at a point, the batch's tokens as one block
    (workloads/flops.py); attention's per-window products (8 x 8 x 4) are no SGEMM and are left out."""
    return flops.linear_products(param_shapes(), int(params["batch"]) * BLOCK_SIZE)


def kept_activations(params: Mapping) -> int:
    """Values backward needs from forward, over the batch: per token and block, ln1's output (the input of
    wq, wk, wv), q, k and v, the heads' concatenation (proj's input), ln2's output (ff1's input) and the
    ReLU's output (ff2's input), 10 d; per sequence, block and head the softmax's weights over the visible
    pairs; per token ln_f's output (the head's input) and the logits."""
    pairs = BLOCK_SIZE * (BLOCK_SIZE + 1) // 2
    per_sequence = BLOCK_SIZE * (LAYERS * 10 * D_MODEL + D_MODEL + VOCAB) + LAYERS * HEADS * pairs
    return int(params["batch"]) * per_sequence


def step_bytes(params: Mapping, precision: str) -> flops.StepBytes:
    """The least one SGD step moves at a point, in `precision` (workloads/flops.py's rule)."""
    return flops.step_bytes(param_count(), kept_activations(params), precision)


def samples(corpus_text: str) -> np.ndarray:
    """Every window of 9 consecutive token ids: inputs are the first 8, targets the last 8."""
    return np.lib.stride_tricks.sliding_window_view(data.encode(corpus_text, data.TEXT_ALPHABET), BLOCK_SIZE + 1)


def check_data(data_dir: str | None) -> None:
    corpus = data.text_corpus(data_dir)
    if len(corpus.text) <= BLOCK_SIZE:
        raise data.DataError(f"{corpus.name} is shorter than one block ({BLOCK_SIZE + 1} characters): nothing to train on")


def split_rows(rows) -> tuple:
    return rows[:, :BLOCK_SIZE], rows[:, 1:]


def layer_norm(ops, h, g, b):
    if ops.layer_norm is not None:
        return ops.layer_norm(h, g, b, LN_EPS)
    mu = ops.np.mean(h, axis=-1, keepdims=True)
    var = ops.np.mean((h - mu) ** 2, axis=-1, keepdims=True)
    return (h - mu) / ops.np.sqrt(var + LN_EPS) * g + b


def attention(ops, h, block: Block):
    np_ = ops.np
    b, t, _ = h.shape

    def heads(w):  # (b, t, d) -> (b, heads, t, head_size)
        return np_.transpose((h @ w.T).reshape(b, t, HEADS, HEAD_SIZE), (0, 2, 1, 3))

    q, k, v = heads(block.wq), heads(block.wk), heads(block.wv)
    scores = (q @ np_.swapaxes(k, -1, -2)) * HEAD_SIZE**-0.5
    scores = np_.where(np_.tril(np_.ones((t, t))) > 0, scores, float("-inf"))
    return np_.transpose(ops.softmax(scores) @ v, (0, 2, 1, 3)).reshape(b, t, D_MODEL)


def loss(ops, params, x, y):
    """The model in numpy style (workloads/array_ops.py): the specification every engine implements."""
    p = unpack(params)
    h = p.wte[x] + p.wpe[: x.shape[1]]
    for block in p.blocks:
        h = h + attention(ops, layer_norm(ops, h, block.ln1_g, block.ln1_b), block) @ block.proj_w.T + block.proj_b
        hidden = ops.np.maximum(layer_norm(ops, h, block.ln2_g, block.ln2_b) @ block.ff1_w.T + block.ff1_b, 0.0)
        h = h + hidden @ block.ff2_w.T + block.ff2_b
    logits = layer_norm(ops, h, p.lnf_g, p.lnf_b) @ p.head_w.T + p.head_b
    return ops.np.mean(ops.logsumexp(logits) - ops.pick(logits, y))


def prepare(params: Mapping, steps: int, folder: Path, data_dir: str | None) -> None:
    corpus = data.text_corpus(data_dir)
    config = {"workload": "gpt", "learning_rate": training.LEARNING_RATE, "layers": LAYERS, "heads": HEADS,
              "block_size": BLOCK_SIZE, "d_model": D_MODEL, "vocab": VOCAB}
    training.prepare_run(Path(folder), config, param_shapes(), samples(corpus.text), steps,
                         int(params["batch"]), corpus, partial(loss, autograd_ops()), split_rows)


WORKLOAD = training.training_workload(
    name="gpt",
    title="mini-GPT, 6 blocks x 6 heads, block size 8, d_model 24 (paper Tables 7/14/18)",
    grid={"batch": (1, 2, 4, 8, 16, 32, 64)},
    profile_grid={"quick": {"batch": (1, 8, 64)}},
    iterations={"smoke": 4, "quick": 20, "paper": 3_000},
    # As for the MLP: the paper's spread is over the steps of one run.
    trials={"smoke": 1, "quick": 1, "paper": 1},
    # quick: 3, as TorchScript's paper model (a scripted module) optimizes itself at its 2nd and 3rd
    # calls, seconds each: warmed up twice, its first timed step would outweigh the other 19.
    warmup={"smoke": 1, "quick": 3, "paper": 10},
    timeout_s={"smoke": 300, "quick": 600, "paper": 7200},
    prepare=prepare,
    check_data=check_data,
    model=loss,
    split_rows=split_rows,
    step_flops=step_flops,
    step_products=step_products,
    step_bytes=step_bytes,
    paper=PaperTable(
        point_titles={"batch": "Batch"},
        csv_name="gpt", title="Mini-GPT (46K parameters): compute per SGD step and memory by batch size",
        metrics=("step_time", "gflops", "paper_memory"), point=("batch",), figure="lines", figure_x="batch",
        notes=("Compute ± std per step; ours: std over timing blocks averaged over trials, "
               "paper: std over its 3,000 steps.",),
        differences=("final-layernorm", "optimiser", "learning-rate", "timed", "data", "launches", "graph-modes",
                     "timed-regions")),
)
