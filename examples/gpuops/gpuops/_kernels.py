"""The CUDA kernels of gpuops: one cudaload Program per (operation, dtype), compiled on first use.

``kernels/ops.cu`` is package data; it includes its sibling ``common.cuh``, which cudaload passes
to NVRTC as an in-memory header.  Each Program asks the shipped bundle ``_kernels.bundle`` first
(built by ``cudaload precompile --programs gpuops._kernels:programs ...``), then cudaload's kernel
cache, then NVRTC.  :func:`programs` is the one list of what gets compiled, for both.
"""

from __future__ import annotations

import threading

import numpy as np

from ._arrays import DTYPES

PACKAGE = "gpuops"
SOURCE = "kernels/ops.cu"
BUNDLE = "_kernels.bundle"

# operation -> the templates it launches; "{T}" is the element type, "{A}" its accumulator
OPS = {
    "add": ("add<{T}>",),
    "mul": ("mul<{T}>",),
    "axpy": ("axpy<{T}>",),
    "relu": ("relu<{T}>",),
    "sum": ("sum_partials<{T}, {A}>", "sum_final<{T}, {A}>"),
    "softmax": ("softmax_rows<{T}, {A}>",),
}

_lock = threading.Lock()
_bundle = None
_kernels: dict = {}  # (op, dtype) -> tuple of cudaload Kernels
_objects: dict = {}  # (op, dtype) -> the ObjectCode they were loaded from


def name_expressions(op: str, dtype) -> tuple[str, ...]:
    """The C++ name expressions of ``op`` for ``dtype``, e.g. ("add<float>",)."""
    ctype, acc, _np_acc = DTYPES[np.dtype(dtype)]
    return tuple(t.format(T=ctype, A=acc) for t in OPS[op])


def bundle():
    """The bundle of precompiled kernels shipped in this package (empty when not shipped)."""
    global _bundle
    if _bundle is None:
        from cudaload import Bundle

        _bundle = Bundle.from_resource(PACKAGE, BUNDLE)
    return _bundle


def program(op: str, dtype):
    """The cudaload Program holding ``op`` for ``dtype``."""
    import cudaload

    return cudaload.Program.from_resource(PACKAGE, SOURCE, name_expressions=name_expressions(
        op, dtype), bundle=bundle())


def programs():
    """Every Program gpuops may compile: what ``cudaload precompile --programs`` builds."""
    return [program(op, dtype) for op in OPS for dtype in DTYPES]


def kernels(op: str, dtype) -> tuple:
    """The loaded kernels of ``op`` for ``dtype`` (compiling or reading them on first use)."""
    key = (op, np.dtype(dtype))
    found = _kernels.get(key)
    if found is None:
        with _lock:
            found = _kernels.get(key)
            if found is None:
                prog = program(op, dtype)
                obj = prog.compile()
                module = obj.load()
                found = tuple(module.get_kernel(e) for e in prog.name_expressions)
                _objects[key] = obj
                _kernels[key] = found
    return found


def loaded() -> list[dict]:
    """Per kernel loaded so far: operation, dtype, arch, kind, and where its code came from
    ("bundle", "disk", "memory" or None for compiled in this process)."""
    return [{"op": op, "dtype": dt.name, "arch": obj.arch, "kind": obj.kind, "cached": obj.cached}
            for (op, dt), obj in _objects.items()]
