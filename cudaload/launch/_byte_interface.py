"""What every span of memory with a device address shows consumers: its length and the array
interfaces of 1-D uint8 of that length, the shape DLPack gets too (see dlpack.py), so that a
consumer reinterprets it as another dtype on its side."""

from __future__ import annotations

from ._unpicklable import GpuState


def array_interface(host_address: int, nbytes: int) -> dict:
    """numpy's ``__array_interface__`` of host memory."""
    return {"shape": (nbytes,), "typestr": "|u1", "data": (host_address, False), "version": 3}


class ByteSpan(GpuState):
    """Base of DeviceBuffer and HostBuffer: ``len()`` and ``__cuda_array_interface__`` from the
    subclass's ``ptr``, ``nbytes`` and ``_live()`` (which raises once the memory is freed)."""

    __slots__ = ()
    ptr: int
    nbytes: int

    def _live(self):
        raise NotImplementedError

    def __len__(self) -> int:
        return self.nbytes

    @property
    def __cuda_array_interface__(self) -> dict:
        """Version 3, with no stream for the consumer to wait on."""
        self._live()
        return {"shape": (self.nbytes,), "typestr": "|u1", "data": (self.ptr, False),
                "version": 3, "strides": None, "stream": None}
