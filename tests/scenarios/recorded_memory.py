"""Pinned and managed memory and fills onto the memory-logging recording driver of
tests/_fake_memory.py (named by $CUDALOAD_LIBCUDA), one fresh process each.

    python -m tests.scenarios.recorded_memory SCENARIO

Each scenario returns the driver calls it caused (and what it saw), printed as JSON on the last
line.  cudaload and the driver are loaded inside the scenarios.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import sys


def calls() -> list[str]:
    """The memory calls the driver logged so far, one string each."""
    lib = ctypes.CDLL(os.environ["CUDALOAD_LIBCUDA"])
    out = ctypes.create_string_buffer(16384)
    n = lib.fake_memory_log(out, ctypes.c_size_t(len(out)))
    return out.raw[:n].decode().splitlines()


def refusal(call) -> str | None:
    """The type name and message of what ``call`` raised, or None."""
    try:
        call()
    except Exception as err:  # the test checks which
        return f"{type(err).__name__}: {err}"
    return None


def fills() -> dict:
    import cudaload

    buf = cudaload.alloc(64)
    s = cudaload.Stream()
    buf.fill(0xBEEF, dtype="uint16")
    buf.fill(-1, dtype="int32")
    buf.fill(0x12345678)
    buf.fill(7, dtype="uint8", stream=s)
    buf.fill(-2, dtype="int16", stream=s)
    buf.fill(0xCAFEF00D, dtype="uint32", stream=s)
    before = len(calls())
    refused = {
        "too_big": refusal(lambda: buf.fill(1 << 16, dtype="uint16")),
        "too_small": refusal(lambda: buf.fill(-129, dtype="int8")),
        "negative_unsigned": refusal(lambda: buf.fill(-1, dtype="uint32")),
        "dtype": refusal(lambda: buf.fill(0, dtype="float32")),
        "float": refusal(lambda: buf.fill(1.5)),
        "odd_size": refusal(lambda: cudaload.alloc(6).fill(0, dtype="uint32")),
    }
    return {"ptr": buf.ptr, "calls": calls(), "refused": refused,
            "after_refusals": len(calls()) - before}


def pinned() -> dict:
    import cudaload

    h = cudaload.alloc_host(300)
    h.view[:4] = b"\x01\x02\x03\x04"
    d = cudaload.alloc(300)
    d.copy_from_host(h, stream=cudaload.Stream())
    out = {"cai": h.__cuda_array_interface__["data"][0], "len": len(h),
           "first": bytes(h.view[:4]).hex(), "repr": repr(h)}
    del h
    gc.collect()
    second = cudaload.alloc_host(16)
    view = second.view[:]
    out["held"] = refusal(second.free)
    view.release()
    second.free()
    out["freed_use"] = refusal(lambda: second.view)
    second.free()  # a second free does nothing
    out["negative"] = refusal(lambda: cudaload.alloc_host(-1))
    out["pickle"] = refusal(lambda: __import__("pickle").dumps(second))
    out["calls"] = calls()
    return out


def pinned_unmapped() -> dict:
    import cudaload

    ctypes.CDLL(os.environ["CUDALOAD_LIBCUDA"]).fake_fail_mapping(1)
    return {"error": refusal(lambda: cudaload.alloc_host(32)), "calls": calls()}


def pinned_array() -> dict:
    import numpy as np

    import cudaload

    array = np.arange(64, dtype=np.float32)
    out = {}
    try:
        with cudaload.pin(array) as same:
            out["same"] = same is array
            raise KeyError("inside")  # unpinned on the way out all the same
    except KeyError:
        pass
    out["read_only"] = refusal(lambda: cudaload.pin(b"abc").__enter__())
    out["not_buffer"] = refusal(lambda: cudaload.pin(3).__enter__())
    out["strided"] = refusal(lambda: cudaload.pin(array[::2]).__enter__())
    out["calls"] = calls()
    return out


def managed() -> dict:
    import cudaload

    m = cudaload.alloc_managed(4096)
    m.prefetch()
    m.prefetch(1, stream=cudaload.Stream())
    m.prefetch("cpu")
    out = {"type": type(m).__name__, "is_device_buffer": isinstance(m, cudaload.DeviceBuffer),
           "cai": m.__cuda_array_interface__["data"][0]}
    out["stream_free"] = refusal(lambda: m.free(stream=cudaload.Stream()))
    m.free()
    out["freed_prefetch"] = refusal(m.prefetch)
    out["calls"] = calls()
    return out


def stream_ordered() -> dict:
    import cudaload

    s = cudaload.Stream()
    explicit = cudaload.alloc(1000, stream=s)
    out = {"ptr": explicit.ptr}
    explicit.free(stream=s)
    out["freed_use"] = refusal(lambda: explicit.fill(0))
    explicit.free(stream=s)  # a second free does nothing
    garbage = cudaload.alloc(24, stream=s)
    del garbage, s  # the stream is kept until the buffer is freed on it
    gc.collect()
    other = cudaload.Stream()
    on_other = cudaload.alloc(8, stream=other)
    on_other.free()  # no stream: freed in the order of the stream it was allocated on
    out["calls"] = calls()
    return out


def closed_stream() -> dict:
    """A stream-ordered allocation that outlives its stream's close(): freed when garbage, after
    the work queued on the stream before the close."""
    import cudaload

    unraisable: list[str] = []
    sys.unraisablehook = lambda raised: unraisable.append(repr(raised.exc_value))
    s = cudaload.Stream()
    out = {"handle": s.ptr}
    garbage = cudaload.alloc(64, stream=s)
    s.close()
    del garbage
    gc.collect()
    waited = (ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p())
    lib = ctypes.CDLL(os.environ["CUDALOAD_LIBCUDA"])
    out["waits"] = lib.fake_waits(*map(ctypes.byref, waited))
    out["waiting"], out["recorded"] = waited[0].value, waited[2].value
    out["calls"], out["unraisable"] = calls(), unraisable
    return out


SCENARIOS = {f.__name__: f for f in (fills, pinned, pinned_unmapped, pinned_array, managed,
                                     stream_ordered, closed_stream)}

if __name__ == "__main__":
    print(json.dumps(SCENARIOS[sys.argv[1]]()))
