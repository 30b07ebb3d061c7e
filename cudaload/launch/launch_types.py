"""What a kernel launch takes, as types: ``Dims`` (a grid, block or cluster), ``KernelArgument``
(what one kernel parameter may be given), ``KernelArguments`` (a launch's ``args``) and
``StreamLike`` (its ``stream``).  A ``Kernel``'s call is typed with them for type checkers
(``TypedLaunch``, below), and host packages may annotate their own code with them.

Nothing in cudaload imports this module at run time: a launch checks its values itself (_sizes.py,
arguments.py), and a type says only what a checker can.  An array or stream of a library cudaload
never imports (CuPy, PyTorch, JAX, numba) matches a Protocol below by the attribute the launch reads
from it; a numpy scalar matches by the conversion it supports (``__index__``, ``__float__``,
``__complex__``).  The classes of cudaload named here are forward references, resolved by type
checkers, so that importing this module imports no other.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import (TYPE_CHECKING, Any, Protocol, SupportsComplex, SupportsFloat, SupportsIndex,
                    TypeAlias, Union)

if TYPE_CHECKING:
    import ctypes
    import functools

    from .memory import DeviceBuffer
    from .pinned import HostBuffer
    from .stream import Stream

__all__ = ["ArrayInterface", "BufferLike", "CudaArrayInterface", "CudaStreamInterface", "DLPack",
           "Dims", "KernelArgument", "KernelArguments", "StreamLike"]


class CudaArrayInterface(Protocol):
    """An array with the CUDA Array Interface (CuPy, PyTorch, numba, JAX): its device address."""

    @property
    def __cuda_array_interface__(self) -> object: ...


class DLPack(Protocol):
    """An array that DLPack exports, with the device it is on."""

    def __dlpack__(self) -> object: ...

    def __dlpack_device__(self) -> object: ...


class ArrayInterface(Protocol):
    """A host array with numpy's array interface (a numpy array): passed where it is pinned."""

    @property
    def __array_interface__(self) -> object: ...


class BufferLike(Protocol):
    """An object of the buffer protocol (``collections.abc.Buffer`` from Python 3.12 on): pinned
    host memory for a pointer, or the bytes of a struct."""

    def __buffer__(self, flags: int, /) -> memoryview: ...


class CudaStreamInterface(Protocol):
    """A stream another library made, by the CUDA stream protocol (``__cuda_stream__``)."""

    @property
    def __cuda_stream__(self) -> object: ...


class _TorchStream(Protocol):
    @property
    def cuda_stream(self) -> int: ...


class _CupyStream(Protocol):
    @property
    def ptr(self) -> int: ...


# A grid, block or cluster: an integer or a tuple of one to three (a numpy integer is one too).
Dims: TypeAlias = Union[SupportsIndex, tuple[SupportsIndex], tuple[SupportsIndex, SupportsIndex],
                        tuple[SupportsIndex, SupportsIndex, SupportsIndex]]

# One kernel argument, by the table of docs/api.md "Kernel arguments": numbers (Python's, numpy's,
# ctypes'), raw device pointers as ints, bytes for structs, cudaload's buffers, device arrays,
# pinned host memory.  Which of them fits which parameter is the launch's to check.
KernelArgument: TypeAlias = Union[
    int, float, complex, SupportsIndex, SupportsFloat, SupportsComplex,
    "ctypes._SimpleCData[Any]", bytes, bytearray, memoryview, BufferLike,
    "DeviceBuffer", "HostBuffer", CudaArrayInterface, DLPack, ArrayInterface]

# A launch's ``args``: one value per kernel parameter (a tuple, or another sequence).
KernelArguments: TypeAlias = Sequence[KernelArgument]

# A launch's ``stream`` (None: the legacy default stream): what ``Stream.from_handle`` takes.
StreamLike: TypeAlias = Union["Stream", int, CudaStreamInterface, _TorchStream, _CupyStream]


if TYPE_CHECKING:
    class TypedLaunch(functools.partial[None]):
        """``functools.partial`` with a kernel launch's call, in place of its ``(*args, **kwargs)
        -> Any``: what kernel.py's ``Kernel`` derives from for type checkers.  At run time it
        derives from ``functools.partial`` itself and nothing is added to a launch."""

        def __call__(self, grid: Dims, block: Dims, args: KernelArguments, *,
                     shared_mem: SupportsIndex = 0, stream: StreamLike | None = None,
                     cluster: Dims | None = None, cooperative: bool = False) -> None: ...
