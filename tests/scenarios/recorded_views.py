"""``cudaload.view`` and ``TensorMap.replace_address`` onto the logging driver of
tests/_fake_tensor_map.py (named by $CUDALOAD_LIBCUDA), in a fresh process each:
``python -m tests.scenarios.recorded_views SCENARIO`` prints what the scenario saw, the driver
calls among it, as JSON on its last line.  cudaload is loaded inside the scenarios.
"""

from __future__ import annotations

import json
import sys

from tests.scenarios.recorded_dlpack import managed, waits
from tests.scenarios.recorded_memory import calls, refusal
from tests.scenarios.recorded_tensor_maps import DLPackOnly, Interface


class Forwarded:
    """An array known only by DLPack, whose capsules another object makes (a view), recording the
    keywords each ``__dlpack__`` got."""

    def __init__(self, maker):
        self.maker, self.asked = maker, []

    def __dlpack__(self, **kw):
        self.asked.append(kw)
        return self.maker.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.maker.__dlpack_device__()


def seen(v) -> list:
    """What a view says of itself."""
    return [v.ptr, list(v.shape), list(v.strides), v.typestr, str(v.dtype), v.itemsize,
            v.device.ordinal, v.readonly, v.is_contiguous]


def capsule_dims(capsule) -> dict:
    """The tensor a capsule holds, read with cffi."""
    from cudaload.bindings._dlpack_ffi import ffi

    t = managed(capsule)[0].dl_tensor
    return {"data": int(ffi.cast("uintptr_t", t.data)), "ndim": t.ndim,
            "device": [t.device.device_type, t.device.device_id],
            "dtype": [t.dtype.code, t.dtype.bits, t.dtype.lanes],
            "shape": [t.shape[i] for i in range(t.ndim)],
            "strides": [t.strides[i] for i in range(t.ndim)]}


def described() -> dict:
    import numpy as np

    import cudaload

    buf = cudaload.alloc(4096)
    other = cudaload.alloc(256, device=1)
    host = cudaload.alloc_host(512)
    # rows of 32 floats, every other column: strides (128, 8) bytes; read-only
    strided = cudaload.view(Interface(data=(buf.ptr, True), shape=(8, 16), typestr="<f4",
                                      strides=(128, 8)))
    flat = cudaload.view(Interface(data=(buf.ptr + 64, False), shape=(4, 6), typestr="<i2"))
    out = {"ptr": buf.ptr, "strided": seen(strided), "flat": seen(flat),
           "buffer": seen(cudaload.view(buf)), "other": seen(cudaload.view(other)),
           "dlpack": seen(cudaload.view(DLPackOnly(buf))),
           "host": seen(cudaload.view(host)) + list(cudaload.view(host).__dlpack_device__()),
           "host_ptr": host.host_ptr, "mapped": host.ptr,
           "of_view": seen(cudaload.view(strided)), "source_kept": strided.source is not None,
           "bools": seen(cudaload.view(Interface(data=(buf.ptr, False), shape=(3,),
                                                 typestr="|b1"))),
           "complex": seen(cudaload.view(Interface(data=(buf.ptr, False), shape=(2, 2),
                                                   typestr="<c8")))}
    cai = strided.__cuda_array_interface__
    out["cai"] = {k: (list(v) if isinstance(v, tuple) else v) for k, v in cai.items()}
    out["cai_flat"] = flat.__cuda_array_interface__["strides"]
    out["cai_again"] = seen(cudaload.view(Interface(**cai)))
    out["capsule"] = capsule_dims(strided.__dlpack__())
    # DLPack 1.x says read-only: the flag of each view's versioned capsule
    out["flags"] = [managed(x.__dlpack__(max_version=(1, 0)))[0].flags for x in (strided, flat)]
    out["dlpack_again"] = seen(cudaload.view(Forwarded(strided)))
    out["dlpack_host"] = capsule_dims(cudaload.view(host).__dlpack__())
    freed = cudaload.alloc(64)
    freed.free()
    out["refused"] = {
        "int": refusal(lambda: cudaload.view(buf.ptr)),
        "freed": refusal(lambda: cudaload.view(freed)),
        "object": refusal(lambda: cudaload.view(object())),
        "numpy": refusal(lambda: cudaload.view(np.zeros(4))),
        "unmapped_host": refusal(lambda: cudaload.view(DLPackOnly(buf, device=(3, 0)))),
        "stride": refusal(lambda: cudaload.view(Interface(data=(buf.ptr, False), shape=(4,),
                                                          typestr="<f4", strides=(6,)))),
        "big_endian": refusal(lambda: cudaload.view(Interface(data=(buf.ptr, False),
                                                              shape=(4,), typestr=">f4"))),
        "bad_interface": refusal(lambda: cudaload.view(Interface(data=(buf.ptr,), shape=(4,),
                                                                 typestr="<f4"))),
        "copy": refusal(lambda: strided.__dlpack__(copy=True)),
        "to_host": refusal(lambda: strided.__dlpack__(dl_device=(1, 0))),
        "pickle": refusal(lambda: __import__("pickle").dumps(strided)),
    }
    return out


def without_numpy() -> dict:
    sys.modules["numpy"] = None  # type: ignore[assignment]  # import numpy raises ImportError
    import cudaload

    buf = cudaload.alloc(256)
    v = cudaload.view(Interface(data=(buf.ptr, False), shape=(2, 8), typestr="<f4"))
    b = cudaload.view(Interface(data=(buf.ptr, False), shape=(4,), typestr="|b1"))
    return {"dtypes": [v.dtype, b.dtype, cudaload.view(buf).dtype], "strides": list(v.strides)}


def kept() -> dict:
    import gc

    import cudaload
    from tests.scenarios.recorded_dlpack import frees

    buf = cudaload.alloc(256)
    v = cudaload.view(buf)
    host = cudaload.alloc_host(64)
    hv = cudaload.view(host)
    buf.free()
    out = {"freed_while_viewed": frees()}
    del v
    gc.collect()
    out["freed_after"] = frees()
    out["host_free"] = refusal(host.free)
    del hv
    gc.collect()
    out["host_free_after"] = refusal(host.free)
    return out


def streams() -> dict:
    import cudaload
    from cudaload.launch._foreign import stream_pointer

    s = cudaload.Stream()
    handle = stream_pointer(s)[0]
    buf = cudaload.alloc(256)
    producer = 0x5abc0
    out = {"stream": handle, "before": waits()}
    cudaload.view(Interface(data=(buf.ptr, False), shape=(64,), typestr="<f4",
                            stream=producer), stream=s)
    out["cai"] = waits()
    cudaload.view(Interface(data=(buf.ptr, False), shape=(64,), typestr="<f4",
                            stream=producer), stream=-1)
    cudaload.view(Interface(data=(buf.ptr, False), shape=(64,), typestr="<f4"), stream=s)
    out["unordered"] = waits()
    forwarded = Forwarded(buf)
    cudaload.view(forwarded)
    v = cudaload.view(forwarded, stream=s)
    out["asked"] = forwarded.asked
    out["cai_stream"] = v.__cuda_array_interface__["stream"]
    cudaload.view(v, stream=cudaload.Stream())  # a view of v waits for v's stream
    out["of_view"] = waits()
    out["default_cai_stream"] = cudaload.view(buf).__cuda_array_interface__["stream"]
    out["zero"] = refusal(lambda: cudaload.view(Interface(data=(buf.ptr, False), shape=(4,),
                                                          typestr="<f4", stream=0)))
    return out


def launched() -> dict:
    import cudaload
    from cudaload import Program
    from tests.scenarios.fast_path_launches import counting
    from tests.scenarios.recorded_launches import last, layout

    src = 'extern "C" __global__ void k(const float *a, float *b) {}\n'
    k = Program(src).compile().load().get_kernel("k")
    buf = cudaload.alloc(1024)
    a = cudaload.view(Interface(data=(buf.ptr + 256, True), shape=(4, 4), typestr="<f4",
                                strides=(64, 8)))
    b = cudaload.view(buf)
    layout((0, 8), (8, 8))
    out = {"a": a.ptr, "b": b.ptr, "launches": []}
    for _ in range(3):  # the second in a row and after take the fast path
        k(1, 32, (a, b))
        out["launches"].append(last(16)[2])
    out["fast"] = k.func != k._kernel_state.launch
    ordinary = counting(k)
    k(1, 32, (b, a))  # the fast-path function, inlining each view's pointer
    out["swapped"] = last(16)[2]
    out["ordinary"] = len(ordinary)
    out["other_device"] = refusal(lambda: k(1, 32, (cudaload.view(cudaload.alloc(64, device=1)),
                                                    b)))
    return out


def tensor_maps() -> dict:
    import cudaload
    from cudaload import TensorMap

    buf = cudaload.alloc(64 * 1024)
    second = cudaload.alloc(64 * 1024)

    def rows(ptr, shape=(16, 64), strides=(512, 4), typestr="<f4"):
        return cudaload.view(Interface(data=(ptr, False), shape=shape, typestr=typestr,
                                       strides=strides))

    v = rows(buf.ptr)  # 16 rows of 64 floats, each row padded to 128 floats
    t = TensorMap.tiled(v, (8, 32))
    out = {"ptr": buf.ptr, "second": second.ptr, "map": t.hex(), "encoded": calls()}
    moved = t.replace_address(rows(second.ptr))
    out.update(moved=moved.hex(), moved_address=moved.address, original=t.hex(),
               described=[moved.dtype, list(moved.shape), list(moved.strides)])
    out["by_address"] = t.replace_address(second.ptr + 1024).address
    out["by_buffer"] = t.replace_address(second).address
    out["calls"] = calls()[len(out["encoded"]):]
    before = len(calls())
    out["refused"] = {
        "misaligned_address": refusal(lambda: t.replace_address(second.ptr + 8)),
        "misaligned_view": refusal(lambda: t.replace_address(rows(second.ptr + 4))),
        "other_shape": refusal(lambda: t.replace_address(rows(second.ptr, shape=(16, 32)))),
        "other_strides": refusal(lambda: t.replace_address(rows(second.ptr, strides=(256, 4)))),
        "other_dtype": refusal(lambda: t.replace_address(rows(second.ptr, typestr="<i4"))),
        "other_device": refusal(lambda: t.replace_address(cudaload.alloc(64 * 1024, device=1))),
        "too_small": refusal(lambda: t.replace_address(cudaload.alloc(4096))),
        "host": refusal(lambda: t.replace_address(cudaload.alloc_host(1024))),
    }
    out["refused_calls"] = calls()[before:]
    return out


SCENARIOS = {f.__name__: f for f in (described, without_numpy, kept, streams, launched, tensor_maps)}

if __name__ == "__main__":
    print(json.dumps(SCENARIOS[sys.argv[1]]()))
