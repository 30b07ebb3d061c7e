"""The numpy implementations: what gpuops computes when CUDA is not available.

Each follows the kernels' arithmetic (values accumulated in float32 for float16), so both paths give
the same results up to rounding.
"""

from __future__ import annotations

import numpy as np

from ._arrays import DTYPES


def _acc(dtype):
    return DTYPES[np.dtype(dtype)][2]


def add(x, y):
    return np.add(x, y)


def mul(x, y):
    return np.multiply(x, y)


def axpy(a, x, y):
    acc = _acc(x.dtype)
    alpha = acc.type(x.dtype.type(a))
    return (alpha * x.astype(acc) + y.astype(acc)).astype(x.dtype)


def relu(x):
    return np.maximum(x, x.dtype.type(0))


def sum(x):  # noqa: A001 - the operation's public name
    return x.dtype.type(np.sum(x, dtype=_acc(x.dtype)))


def softmax(x):
    wide = x.astype(_acc(x.dtype))
    e = np.exp(wide - wide.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(x.dtype)
