"""DeviceBuffer's DLPack export onto the recording driver of tests/_fakelibs.py (named by
$CUDALOAD_LIBCUDA), one fresh process each: the capsule's structure read back with cffi, its
lifetime, the streams it waits on, copies, and NumPy as a real consumer of host copies.

    python -m tests.scenarios.recorded_dlpack SCENARIO

Each scenario returns what it saw, printed as JSON on the last line.  The recording driver and
cudaload are loaded inside the scenarios, so importing this module loads nothing.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import json
import os
import sys
import weakref

_USED = {False: ctypes.c_char_p(b"used_dltensor"), True: ctypes.c_char_p(b"used_dltensor_versioned")}


@functools.cache
def fake() -> ctypes.CDLL:
    return ctypes.CDLL(os.environ["CUDALOAD_LIBCUDA"])


@functools.cache
def _api():
    proto, api = ctypes.PYFUNCTYPE, ctypes.pythonapi
    return {"name": proto(ctypes.c_char_p, ctypes.py_object)(("PyCapsule_GetName", api)),
            "pointer": proto(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
                ("PyCapsule_GetPointer", api)),
            "rename": proto(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
                ("PyCapsule_SetName", api))}


def managed(capsule):
    """The structure in ``capsule``, as cffi sees it, and whether it is the versioned one."""
    from cudaload.bindings._dlpack_ffi import ffi

    name = _api()["name"](capsule)
    versioned = name == b"dltensor_versioned"
    kind = "DLManagedTensorVersioned *" if versioned else "DLManagedTensor *"
    return ffi.cast(kind, _api()["pointer"](capsule, name)), versioned


def fields(capsule) -> dict:
    from cudaload.bindings._dlpack_ffi import ffi

    m, versioned = managed(capsule)
    t = m.dl_tensor
    out = {"name": _api()["name"](capsule).decode(), "data": int(ffi.cast("uintptr_t", t.data)),
           "device": [t.device.device_type, t.device.device_id], "ndim": t.ndim,
           "dtype": [t.dtype.code, t.dtype.bits, t.dtype.lanes], "shape": t.shape[0],
           "strides": t.strides[0], "byte_offset": t.byte_offset,
           "deleter": m.deleter != ffi.NULL}
    if versioned:
        out.update(version=[m.version.major, m.version.minor], flags=m.flags)
    return out


def consume(capsule):
    """Take the structure as a consumer does: rename the capsule; return the deleter's call."""
    m, versioned = managed(capsule)
    assert _api()["rename"](capsule, _USED[versioned]) == 0
    return lambda: m.deleter(m)


def frees() -> int:
    return fake().fake_frees()


def waits() -> list:
    stream, event, recorded = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    count = fake().fake_waits(ctypes.byref(stream), ctypes.byref(event), ctypes.byref(recorded))
    return [count, stream.value or 0, recorded.value or 0]


def errors(call) -> list | None:
    try:
        call()
    except Exception as err:  # noqa: BLE001  (reported, whatever it is)
        return [type(err).__name__, isinstance(err, BufferError), str(err)]
    return None


def capsule_fields() -> dict:
    import cudaload

    buf = cudaload.alloc(64)
    other = cudaload.alloc(16, device=1)
    return {"ptr": buf.ptr, "legacy": fields(buf.__dlpack__()),
            "versioned": fields(buf.__dlpack__(max_version=(1, 2))),
            "old_consumer": fields(buf.__dlpack__(max_version=(0, 8))),
            "device": list(buf.__dlpack_device__()), "other": fields(other.__dlpack__()),
            "other_device": list(other.__dlpack_device__()),
            "empty": fields(cudaload.alloc(0).__dlpack__())["shape"]}


def lifetime() -> dict:
    from cudaload.launch import dlpack

    import cudaload

    out = {}
    start = frees()
    buf = cudaload.alloc(64)
    ref = weakref.ref(buf)
    capsule = buf.__dlpack__(max_version=(1, 0))
    del buf
    gc.collect()
    out["alive_while_exported"] = ref() is not None
    deleter = consume(capsule)
    del capsule
    gc.collect()
    out["alive_after_capsule_consumed"] = ref() is not None  # the consumer holds it
    deleter()
    gc.collect()
    out["dead_after_deleter"] = ref() is None
    out["freed_once"] = frees() - start
    # Never consumed: released at the next garbage collection once nothing holds the capsule.
    buf = cudaload.alloc(64)
    ref = weakref.ref(buf)
    capsule = buf.__dlpack__()
    del buf
    gc.collect()
    out["unconsumed_alive_while_held"] = ref() is not None
    del capsule
    gc.collect()
    out["unconsumed_released"] = ref() is None
    out["freed_twice"] = frees() - start
    # A consumer may release its view from any thread.
    import threading

    buf = cudaload.alloc(64)
    ref = weakref.ref(buf)
    deleter = consume(buf.__dlpack__(max_version=(1, 0)))
    del buf
    thread = threading.Thread(target=deleter)
    thread.start()
    thread.join()
    gc.collect()
    out["released_from_a_thread"] = ref() is None
    out["freed_thrice"] = frees() - start
    out["exports_left"] = len(dlpack._EXPORTS)
    return out


def free_while_viewed() -> dict:
    import cudaload

    out = {}
    start = frees()
    buf = cudaload.alloc(64)
    deleter = consume(buf.__dlpack__(max_version=(1, 0)))
    buf.free()
    out["ptr_after_free"] = buf.ptr
    out["freed_while_viewed"] = frees() - start
    out["export_after_free"] = errors(buf.__dlpack__)
    deleter()
    out["freed_after_last_view"] = frees() - start
    plain = cudaload.alloc(64)
    plain.free()
    out["freed_unviewed"] = frees() - start
    return out


def streams() -> dict:
    import cudaload

    buf = cudaload.alloc(64)
    out = {"start": waits()}
    for name, stream in (("none", None), ("legacy", 1), ("no_sync", -1)):
        buf.__dlpack__(stream=stream)
        out[name] = waits()
    buf.__dlpack__(stream=2)
    out["per_thread"] = waits()
    s = cudaload.Stream()
    buf.__dlpack__(stream=s.ptr, max_version=(1, 0))
    out["own_stream"] = waits() + [s.ptr]
    for name, stream in (("zero", 0), ("bool", True), ("float", 1.5), ("negative", -2),
                         ("str", "1")):
        out[name] = errors(lambda: buf.__dlpack__(stream=stream))
    return out


def copies() -> dict:
    import cudaload

    buf = cudaload.alloc(64)
    copied = buf.__dlpack__(copy=True, max_version=(1, 0))
    dst, src = ctypes.c_ulonglong(), ctypes.c_ulonglong()
    n = fake().fake_last_copy(ctypes.byref(dst), ctypes.byref(src))
    out = {"ptr": buf.ptr, "device_copy": fields(copied), "copied": [dst.value, src.value, n]}
    host = buf.__dlpack__(dl_device=(1, 0), max_version=(1, 0))
    out["host_copy"] = fields(host)
    m, _ = managed(host)
    from cudaload.bindings._dlpack_ffi import ffi

    out["host_bytes"] = ffi.buffer(ffi.cast("char *", m.dl_tensor.data), 4)[:].hex()
    out["same_device"] = fields(buf.__dlpack__(dl_device=(2, 0), copy=False))["data"]
    for name, kw in (("host_without_copy", {"dl_device": (1, 0), "copy": False}),
                     ("other_gpu", {"dl_device": (2, 1)}),
                     ("opencl", {"dl_device": (4, 0)}),
                     ("bad_device", {"dl_device": "cuda"}),
                     ("bad_version", {"max_version": "1.0"}),
                     ("bad_copy", {"copy": "yes"})):
        out[name] = errors(lambda: buf.__dlpack__(**kw))
    return out


def numpy_consumes() -> dict:
    import numpy as np

    import cudaload
    from cudaload.launch import dlpack

    buf = cudaload.alloc(64)
    out = {}
    arr = np.from_dlpack(buf, device="cpu")  # a host copy, consumed by NumPy itself
    out["host"] = [arr.dtype.str, list(arr.shape), bytes(arr[:4]).hex(), arr.flags.writeable]
    out["held"] = len(dlpack._EXPORTS)
    del arr
    gc.collect()
    out["after_release"] = len(dlpack._EXPORTS)

    class Legacy:  # a producer that answers every consumer with the DLPack 0.x capsule
        def __dlpack__(self, **kw):
            return buf.__dlpack__(dl_device=kw.get("dl_device"), copy=kw.get("copy"))

        def __dlpack_device__(self):
            return buf.__dlpack_device__()

    arr = np.from_dlpack(Legacy(), device="cpu")
    out["legacy"] = [len(arr), int(arr[0])]
    del arr
    # NumPy refuses device memory: its own BufferError, not one from a capsule destructor.
    out["refused"] = errors(lambda: np.from_dlpack(buf))
    gc.collect()
    out["left"] = len(dlpack._EXPORTS)
    return out


_KEPT: list = []


def view_at_exit() -> dict:
    """NumPy arrays over exports still alive when the interpreter exits (their deleters run
    during its shutdown), and a capsule never consumed."""
    import numpy as np

    import cudaload

    buf = cudaload.alloc(64)
    _KEPT.extend([np.from_dlpack(buf, device="cpu"), buf.__dlpack__(), buf])
    return {"kept": len(_KEPT)}


def kernel_argument() -> dict:
    """An object that speaks only DLPack, over a DeviceBuffer, passed to a kernel."""
    from tests.scenarios.recorded_launches import last, layout

    import cudaload
    from cudaload import Program
    from cudaload.launch import dlpack

    buf = cudaload.alloc(64)

    class OnlyDLPack:
        def __dlpack__(self, **kw):
            return buf.__dlpack__(**kw)

        def __dlpack_device__(self):
            return buf.__dlpack_device__()

    k = Program('extern "C" __global__ void k(float *x) {}').compile().load().get_kernel("k")
    layout((0, 8))
    k(1, 1, (OnlyDLPack(),))
    _count, _dims, data, _name = last(8)
    gc.collect()
    return {"passed": int.from_bytes(bytes.fromhex(data), "little"), "ptr": buf.ptr,
            "left": len(dlpack._EXPORTS)}


SCENARIOS = {f.__name__: f for f in (capsule_fields, lifetime, free_while_viewed, streams,
                                     copies, numpy_consumes, view_at_exit, kernel_argument)}

if __name__ == "__main__":
    print(json.dumps(SCENARIOS[sys.argv[1]](*sys.argv[2:])))
