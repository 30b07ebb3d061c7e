"""The array interfaces of a span of memory: 1-D uint8 of its length, the same shape DLPack gets
(see dlpack.py), so a consumer reinterprets it as another dtype on its side."""

from __future__ import annotations


def array_interface(host_address: int, nbytes: int) -> dict:
    """numpy's ``__array_interface__`` of host memory."""
    return {"shape": (nbytes,), "typestr": "|u1", "data": (host_address, False), "version": 3}


def cuda_array_interface(device_address: int, nbytes: int) -> dict:
    """``__cuda_array_interface__`` (version 3) of device memory, with no stream for the
    consumer to wait on."""
    return {"shape": (nbytes,), "typestr": "|u1", "data": (device_address, False),
            "version": 3, "strides": None, "stream": None}
