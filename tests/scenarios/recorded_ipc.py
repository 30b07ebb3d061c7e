"""CUDA IPC and batched copies onto the recording driver of tests/_fake_ipc.py (named by
$CUDALOAD_LIBCUDA), one fresh process each.

    python -m tests.scenarios.recorded_ipc SCENARIO [ARG]

Each scenario returns the driver calls it caused (and what it saw), printed as JSON on the last
line.  ``exports`` gives the pickled handles (hex) that ``imports`` opens in another process.
"""

from __future__ import annotations

import ctypes
import json
import os
import pickle
import sys

from tests.scenarios.recorded_memory import calls, refusal


def address(handle) -> int:
    """A driver handle (a cffi pointer) as an int."""
    from cudaload.bindings import driver

    return int(driver.api().ffi.cast("uintptr_t", handle))


def exports() -> dict:
    import cudaload

    buf = cudaload.alloc(256)
    view = cudaload.DeviceBuffer(buf.ptr + 16, 64, buf.device, owner=buf)
    event = cudaload.Event(interprocess=True)
    flags = ctypes.CDLL(os.environ["CUDALOAD_LIBCUDA"]).fake_event_flags()
    handles = {"buffer": buf.export_ipc(), "view": view.export_ipc(), "event": event.export_ipc()}
    out = {"ptr": buf.ptr, "event": address(event.handle), "flags": flags,
           "timing": event.timing, "interprocess": event.interprocess,
           "handles": {k: pickle.dumps(h).hex() for k, h in handles.items()},
           "nbytes": [handles["buffer"].nbytes, handles["view"].nbytes],
           "offsets": [handles["buffer"].offset, handles["view"].offset],
           "uuid": handles["buffer"].device_uuid, "equal": pickle.loads(pickle.dumps(
               handles["view"])) == handles["view"]}
    before = len(calls())
    s = cudaload.Stream()
    out["refused"] = {
        "managed": refusal(lambda: cudaload.alloc_managed(64).export_ipc()),
        "pool": refusal(lambda: cudaload.alloc(64, stream=s).export_ipc()),
        "host": refusal(lambda: cudaload.alloc_host(64).export_ipc()),
        "plain_event": refusal(lambda: cudaload.Event().export_ipc()),
        "timing_event": refusal(lambda: cudaload.Event(interprocess=True, timing=True)),
        "here": refusal(lambda: cudaload.import_ipc(handles["buffer"])),
        "not_handle": refusal(lambda: cudaload.import_ipc(b"\0" * 64)),
    }
    out["refused_calls"] = [c for c in calls()[before:] if c.startswith("cuIpc")]
    freed = cudaload.alloc(8)
    freed.free()
    out["refused"]["freed"] = refusal(freed.export_ipc)
    out["calls"] = [c for c in calls() if c.startswith("cuIpc")]
    return out


def imports(path: str) -> dict:
    import cudaload

    with open(path) as f:
        handles = {k: pickle.loads(bytes.fromhex(v)) for k, v in json.load(f).items()}
    buf = cudaload.import_ipc(handles["buffer"])
    out = {"type": type(buf).__name__, "ptr": buf.ptr, "nbytes": buf.nbytes,
           "is_device_buffer": isinstance(buf, cudaload.DeviceBuffer)}
    out["stream_free"] = refusal(lambda: buf.free(stream=cudaload.Stream()))
    buf.free()
    buf.free()  # closed once
    view = cudaload.import_ipc(handles["view"], device=0)
    out["view"] = [view.ptr, view.nbytes]
    del view  # garbage: closed
    event = cudaload.import_ipc(handles["event"])
    out["event"] = [type(event).__name__, address(event.handle), event.timing,
                    event.interprocess]
    cudaload.Stream().wait(event)
    waited = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    ctypes.CDLL(os.environ["CUDALOAD_LIBCUDA"]).fake_waits(*map(ctypes.byref, waited))
    out["waited_event"] = waited[1].value
    other = pickle.loads(pickle.dumps(handles["buffer"]))
    other.device_uuid = "ffffffff-0000-0000-0000-000000000000"
    out["refused"] = {"other_gpu": refusal(lambda: cudaload.import_ipc(other)),
                      "other_device": refusal(lambda: cudaload.import_ipc(handles["buffer"],
                                                                          device=1))}
    ctypes.CDLL(os.environ["CUDALOAD_LIBCUDA"]).fake_ipc_open_rc(201)
    out["refused"]["invalid_context"] = refusal(lambda: cudaload.import_ipc(handles["buffer"]))
    out["calls"] = [c for c in calls() if c.startswith("cuIpc")]
    return out


class Interface:
    """A CUDA Array Interface object over ``ptr``: 16 float32, read-only or not."""

    def __init__(self, ptr: int, readonly: bool = False, strides=None):
        self.__cuda_array_interface__ = {"data": (ptr, readonly), "shape": (16,),
                                         "typestr": "<f4", "strides": strides, "version": 3}


def batches() -> dict:
    import cudaload

    s = cudaload.Stream()
    d1, d2, h = cudaload.alloc(64), cudaload.alloc(64), cudaload.alloc_host(64)
    cudaload.copy_batch([(d1, h, 64), (d2, d1, 32), (0x123400, d1, 16),
                         (Interface(d2.ptr), h, 64), (d1, d2, 0)], s)
    out = {"d1": d1.ptr, "d2": d2.ptr, "host": h.host_ptr, "calls": calls()}
    mark = len(calls())
    cudaload.copy_batch([(d1, h, 8), (d2, d1, 8)], None)  # the legacy stream: one copy each
    out["legacy"] = calls()[mark:]
    mark = len(calls())
    with s.capture():  # the batch has no graph node: one copy each, captured
        cudaload.copy_batch([(d1, h, 8), (h, d2, 8)], s)
    out["captured"] = calls()[mark:]
    mark = len(calls())
    freed = cudaload.alloc(8)
    freed.free()
    out["refused"] = {name: refusal(lambda c=c: cudaload.copy_batch([(d1, h, 8), c], s))
                      for name, c in {
                          "too_many": (d1, h, 65), "dst_too_small": (Interface(d1.ptr), d2, 65),
                          "negative": (d1, h, -1), "float": (d1, h, 8.0),
                          "host_array": (d1, bytearray(8), 8), "pair": (d1, h),
                          "null": (0, d1, 8), "freed": (freed, d1, 8),
                          "null_array": (d1, Interface(0), 8),
                          "read_only": (Interface(d1.ptr, readonly=True), d2, 8),
                          "strided": (Interface(d1.ptr, strides=(8,)), d2, 8),
                          "bool": (True, d1, 8), "huge": (1 << 64, d1, 8)}.items()}
    out["refused"]["not_list"] = refusal(lambda: cudaload.copy_batch(5, s))
    out["after_refusals"] = calls()[mark:]
    return out


def failed_batch() -> dict:
    import cudaload

    ctypes.CDLL(os.environ["CUDALOAD_LIBCUDA"]).fake_batch_fail_at(ctypes.c_long(1))
    d1, d2 = cudaload.alloc(64), cudaload.alloc(64)
    return {"error": refusal(lambda: cudaload.copy_batch([(d1, d2, 0), (d2, d1, 8), (d1, d2, 8)],
                                                         cudaload.Stream()))}


SCENARIOS = {f.__name__: f for f in (exports, imports, batches, failed_batch)}

if __name__ == "__main__":
    print(json.dumps(SCENARIOS[sys.argv[1]](*sys.argv[2:])))
