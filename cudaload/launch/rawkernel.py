"""RawKernel: a kernel given as CUDA source, compiled (through the cache) and loaded on first use,
as CuPy's ``RawKernel`` is.

It imports both sides: kernel (launching) and program (compiling).
"""

from __future__ import annotations

from ..bindings import driver
from .kernel import Kernel, _KernelState, symbol_name
from ..compile.program import Program

__all__ = ["RawKernel"]


class _RawCore(_KernelState):
    """A kernel's state (_KernelState) whose module is compiled from source on first use."""

    def __init__(self, source, name, options, name_expressions, signature):
        super().__init__(None, name, signature=signature, source=source)
        self._options = tuple(options)
        self._name_expressions = tuple(name_expressions)

    def _loaded(self):
        if self._module is None:
            # A module needs the driver: say CUDA is unavailable before compiling for nothing
            # (and before a missing NVRTC could be the error reported instead).
            driver.init()
            with self._lock:
                if self._module is None:
                    program = Program(self._source, options=self._options,
                                      name_expressions=self._name_expressions)
                    self._module = program.compile().load()
        return self._module


class RawKernel(Kernel):
    """A kernel from CUDA source, compiled (through the cache) and loaded on first use.

    ``RawKernel(source, name, options=(), name_expressions=())``; ``name`` may be a name
    expression such as ``"scale<float>"``.  Raises :class:`CompileError` on that first use."""

    _SEND_INSTEAD = ("send the source and the kernel's name, and make the RawKernel again in the "
                     "receiving process (it compiles through the kernel cache)")

    def __new__(cls, source: str, name: str, *, options=(), name_expressions=(),
                signature: str | None = None):
        exprs = tuple(name_expressions)
        name = symbol_name(name, "kernel name")  # before `in`, which a name of another type breaks
        if "<" in name and name not in exprs:
            exprs += (name,)
        return cls._wrap(_RawCore(source, name, options, exprs, signature))

    @property
    def module(self):
        """The loaded Module (compiling now if needed)."""
        return self._kernel_state._loaded()
