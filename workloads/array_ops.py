"""The operations the numpy-style models (the MLP's and the GPT's `loss`) need, per array library.

One definition of each model serves every library whose array API is numpy's in all but a few
names: HIPS autograd.numpy (the FP64 reference), jax.numpy and mlx.core. The few differences
are the fields below; everything else the models call is on `np` under numpy's own name
(tanh, exp, maximum, mean, sqrt, where, tril, ones, transpose, swapaxes) or an array method
(reshape, .T, @, indexing by integer arrays).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class ArrayOps:
    np: Any  # the numpy-like namespace
    logsumexp: Callable  # logsumexp(z): over the last axis, that axis dropped
    pick: Callable  # pick(z, ids): z[..., ids] along the last axis, one id per leading index
    softmax: Callable  # softmax(z): over the last axis
    # layer_norm(h, gain, bias, eps) over the last axis, where the library has a fused one.
    layer_norm: Callable | None = None


def autograd_ops() -> ArrayOps:
    import autograd.numpy as anp
    import numpy as np

    def logsumexp(z):
        top = anp.max(z, axis=-1, keepdims=True)
        return (top + anp.log(anp.sum(anp.exp(z - top), axis=-1, keepdims=True)))[..., 0]

    def pick(z, ids):
        flat = z.reshape(-1, z.shape[-1])
        return flat[np.arange(flat.shape[0]), np.asarray(ids).reshape(-1)].reshape(np.shape(ids))

    def softmax(z):
        e = anp.exp(z - anp.max(z, axis=-1, keepdims=True))
        return e / anp.sum(e, axis=-1, keepdims=True)

    return ArrayOps(anp, logsumexp, pick, softmax)
