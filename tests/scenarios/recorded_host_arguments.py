"""Pinned, mapped and managed memory as kernel arguments, launched onto the memory-logging
recording driver of tests/_fake_memory.py (named by $CUDALOAD_LIBCUDA), which maps its pinned and
registered host memory at device addresses of their own, as a driver without unified addressing
would: a launch that packed a host address instead of the device one shows.  One fresh process
each:

    python -m tests.scenarios.recorded_host_arguments SCENARIO

Each scenario returns what the driver received, printed as JSON on the last line.
"""

from __future__ import annotations

import json
import struct
import sys

from tests.scenarios.fast_path_launches import counting
from tests.scenarios.recorded_launches import last, layout

KINDS = ("host_buffer", "managed", "pinned_array", "pinned_bytes", "interface", "dlpack",
         "numpy_view", "other_device")


def kernels() -> dict:
    """One kernel ``k(float *x, int n)`` per kind of argument, each with a fast path of its own."""
    from cudaload import Program

    layout((0, 8), (8, 4))
    source = "".join(f'extern "C" __global__ void {name}(float *x, int n) {{}}\n'
                     for name in KINDS)
    module = Program(source).compile().load()
    return {name: module.get_kernel(name) for name in KINDS}


def sent() -> int:
    """The pointer the driver received in the last launch."""
    return struct.unpack("<Qi", bytes.fromhex(last(12)[2]))[0]


def both_paths(k, first, second) -> dict:
    """The pointers the driver received for ``first`` on the ordinary path (the first two launches,
    after which the fast-path function is installed), then from the fast-path function for
    ``first``, ``second`` (another value of the same type) and ``first``; ``fast``: whether the
    fast-path function served all three without the ordinary path."""
    ordinary = []
    for _ in range(2):
        k(1, 32, (first, 4))
        ordinary.append(sent())
    installed = k.func != k._kernel_state.launch
    calls = counting(k)
    fast = []
    for arg in (first, second, first):
        k(1, 32, (arg, 4))
        fast.append(sent())
    return {"ordinary": ordinary, "fast_path": fast, "fast": installed and not calls}


def refused(k, arg) -> str | None:
    """The message of the LaunchArgumentError ``k`` raised for ``arg``, or None."""
    from cudaload import LaunchArgumentError

    try:
        k(1, 32, (arg, 4))
    except LaunchArgumentError as err:
        return str(err)
    return None


class Interface:
    """Another library's array over the same memory, known by its CUDA Array Interface only."""

    def __init__(self, buf):
        self.cai = buf.__cuda_array_interface__

    @property
    def __cuda_array_interface__(self):
        return self.cai


class DLPackOnly:
    """Another library's array over a HostBuffer, known by DLPack only (kDLCUDAHost)."""

    def __init__(self, buf):
        self.buf = buf

    def __dlpack__(self, **kw):
        return self.buf.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.buf.__dlpack_device__()


def pointers() -> dict:
    """Each kind of host-reachable memory, through both paths, with the addresses it should give."""
    import numpy as np

    import cudaload

    k = kernels()
    h, h2 = cudaload.alloc_host(64), cudaload.alloc_host(64)
    out = {"h": [h.ptr, h2.ptr, h.host_ptr]}
    out["host_buffer"] = both_paths(k["host_buffer"], h, h2)
    out["interface"] = both_paths(k["interface"], Interface(h), Interface(h2))
    out["dlpack"] = both_paths(k["dlpack"], DLPackOnly(h), DLPackOnly(h2))
    out["numpy_view"] = both_paths(k["numpy_view"], np.asarray(h)[16:], np.frombuffer(h2.view))
    a, b = np.zeros(16, np.float32), np.zeros(16, np.float32)
    with cudaload.pin(a), cudaload.pin(b):
        out["pinned_array"] = both_paths(k["pinned_array"], a, b)
    out["unpinned_array"] = refused(k["pinned_array"], a)  # by the fast-path function's plan
    raw, raw2 = bytearray(64), bytearray(64)
    with cudaload.pin(raw), cudaload.pin(raw2):
        out["pinned_bytes"] = both_paths(k["pinned_bytes"], raw, raw2)
    out["unpinned_bytes"] = refused(k["pinned_bytes"], raw)
    cudaload.Device(1).set_current()
    k["other_device"](1, 32, (h, 4))  # allocated for device 0: pinned memory is every device's
    out["other_device"] = sent()
    cudaload.Device(0).set_current()
    h.free()
    out["freed"] = refused(k["host_buffer"], h)
    return out


def managed() -> dict:
    """A ManagedBuffer (a DeviceBuffer whose address the host shares) through both paths."""
    import cudaload

    m, m2 = cudaload.alloc_managed(64), cudaload.alloc_managed(64)
    return {"m": [m.ptr, m2.ptr], "managed": both_paths(kernels()["managed"], m, m2)}


def refusals() -> dict:
    """Host memory no kernel can reach, refused on the ordinary path and by the fast path's."""
    import numpy as np

    import cudaload

    k = kernels()["pinned_array"]
    plain = np.zeros(16, np.float32)
    out = {"first": refused(k, plain), "bytes": refused(k, bytearray(64)),
           "memoryview": refused(k, memoryview(bytearray(8)))}
    pinned = np.zeros(16, np.float32)
    with cudaload.pin(pinned):
        for _ in range(3):
            k(1, 32, (pinned, 4))
        out["installed"] = k.func != k._kernel_state.launch
        out["fast_path"] = refused(k, plain)
    return out


SCENARIOS = {f.__name__: f for f in (pointers, managed, refusals)}

if __name__ == "__main__":
    print(json.dumps(SCENARIOS[sys.argv[1]]()))
