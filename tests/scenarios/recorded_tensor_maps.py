"""Tensor maps and the memory pool's release threshold onto the logging driver of
tests/_fake_tensor_map.py (named by $CUDALOAD_LIBCUDA), in a fresh process each:
``python -m tests.scenarios.recorded_tensor_maps SCENARIO`` prints what the scenario saw, the
driver calls among it, as JSON on its last line.  cudaload is loaded inside the scenarios.
"""

from __future__ import annotations

import copy
import json
import pickle
import sys

from tests.scenarios.recorded_memory import calls, refusal


class Interface:
    """An array known only by its __cuda_array_interface__."""

    def __init__(self, **cai):
        self.__cuda_array_interface__ = {"version": 3, "strides": None, **cai}


class DLPackOnly:
    """An array known only by DLPack: a DeviceBuffer's export (1-D uint8)."""

    def __init__(self, buf, device=None):
        self.buf, self.device = buf, device

    def __dlpack__(self, **kw):
        return self.buf.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.device or self.buf.__dlpack_device__()


def tiled() -> dict:
    import cudaload
    from cudaload import TensorMap

    buf = cudaload.alloc(40 * 64 * 4)
    out = {"ptr": buf.ptr}
    t = TensorMap.tiled(buf, (16, 32), dtype="float32", shape=(40, 64), swizzle="128B",
                        l2_promotion="128B")
    out["bytes"] = t.hex()
    out["pickle"] = refusal(lambda: pickle.dumps(t))
    out["copy"] = refusal(lambda: copy.copy(t))
    out["described"] = [len(t), t.kind, t.dtype, list(t.shape), list(t.strides), t.address,
                        t.device.ordinal, t.source is buf, repr(t), str(t)]
    # padded rows (64 bytes for 10 uint16), a stride along the middle dimension, NaN fill
    TensorMap.tiled(buf, (2, 5, 8), dtype="float16", shape=(4, 10, 24), strides=(640, 64, 2),
                    element_strides=(1, 2, 1), oob_fill="nan", l2_promotion="256B")
    TensorMap.tiled(Interface(data=(buf.ptr, False), shape=(8, 16), typestr="<f8"), (4, 8))
    TensorMap.tiled(Interface(data=(buf.ptr, False), shape=(8, 16), typestr="<u2",
                              strides=(64, 2)), (8, 8), dtype="bfloat16", swizzle="32b")
    TensorMap.tiled(DLPackOnly(buf), (64,))
    TensorMap.tiled(buf.ptr + 256, (4, 4), dtype="int32", shape=(16, 16), interleave="none")
    TensorMap.tiled(buf, (2, 2, 4), dtype="int8", shape=(4, 4, 64), interleave="32B",
                    swizzle="32B")
    out["calls"] = calls()
    return out


def im2col() -> dict:
    import cudaload
    from cudaload import TensorMap

    buf = cudaload.alloc(2 * 8 * 8 * 32 * 2)
    t = TensorMap.im2col(buf, dtype="float16", shape=(2, 8, 8, 32), lower_corner=(-1, -2),
                         upper_corner=(1, 0), channels_per_pixel=32, pixels_per_column=64,
                         swizzle="64B")
    return {"ptr": buf.ptr, "kind": t.kind, "bytes": t.hex(), "calls": calls()}


def refusals() -> dict:
    import numpy as np

    import cudaload
    from cudaload import TensorMap

    buf = cudaload.alloc(40 * 64 * 4)
    ptr = buf.ptr

    def tiled(box=(16, 32), source=buf, **kw):
        kw.setdefault("dtype", "float32")
        kw.setdefault("shape", (40, 64))
        return lambda: TensorMap.tiled(source, box, **kw)

    def im2col(**kw):
        args = dict(dtype="float16", shape=(2, 8, 8, 32), lower_corner=(-1, -1),
                    upper_corner=(1, 1), channels_per_pixel=32, pixels_per_column=64)
        args.update(kw)
        return lambda: TensorMap.im2col(buf, **args)

    freed = cudaload.alloc(256)
    freed.free()
    cases = {
        "rank0": tiled((), shape=()),
        "rank6": tiled((1,) * 6, shape=(1, 1, 1, 1, 1, 16)),
        "dtype": tiled(dtype="complex64"),
        "dtype_numpy": tiled(dtype=np.dtype("complex128")),
        "zero_dim": tiled(shape=(0, 64)),
        "inner_stride": tiled(strides=(256, 8)),
        "outer_stride": tiled((4, 4), shape=(4, 3), strides=(12, 4)),
        "huge_stride": tiled((4, 4), source=ptr, shape=(2, 4), strides=(1 << 40, 4)),
        "box_count": tiled((16,)),
        "box_zero": tiled((0, 32)),
        "box_big": tiled((257, 32)),
        "box_float": tiled((16.0, 32)),
        "box_not_tuple": tiled(16),
        "box_inner_bytes": tiled((16, 6)),
        "swizzle_name": tiled(swizzle="256B"),
        "swizzle_type": tiled(swizzle=3),
        "swizzle_span": tiled(swizzle="32B"),
        "interleave_swizzle": tiled((2, 2, 4), shape=(4, 4, 64), interleave="32B"),
        "interleave_rank": tiled(interleave="16B"),
        "l2": tiled(l2_promotion="512B"),
        "oob_int": tiled(dtype="int32", oob_fill="nan"),
        "oob_name": tiled(oob_fill="inf"),
        "element_stride_big": tiled(element_strides=(1, 9)),
        "element_stride_zero": tiled(element_strides=(0, 1)),
        "misaligned": tiled(source=ptr + 8),
        "misaligned_32": tiled((2, 2, 8), source=ptr + 16, shape=(4, 4, 64), interleave="32B",
                               swizzle="32B"),
        "past_the_end": tiled(shape=(41, 64)),
        "shape_of_array": lambda: TensorMap.tiled(
            Interface(data=(ptr, False), shape=(8, 16), typestr="<f4"), (4, 4), shape=(8, 16)),
        "dtype_size": lambda: TensorMap.tiled(
            Interface(data=(ptr, False), shape=(8, 16), typestr="<f4"), (4, 4), dtype="float16"),
        "big_endian": lambda: TensorMap.tiled(
            Interface(data=(ptr, False), shape=(8, 16), typestr=">f4"), (4, 4)),
        "long_double_typestr": lambda: TensorMap.tiled(
            Interface(data=(ptr, False), shape=(8, 16), typestr="<f16"), (4, 4)),
        "complex_typestr": lambda: TensorMap.tiled(
            Interface(data=(ptr, False), shape=(8, 16), typestr="<c8"), (4, 4)),
        "bad_interface": lambda: TensorMap.tiled(Interface(data="x", shape=(4,), typestr="<f4"),
                                                 (4,)),
        "no_address": lambda: TensorMap.tiled(object(), (4,)),
        "host_dlpack": lambda: TensorMap.tiled(DLPackOnly(buf, (1, 0)), (16,)),
        "address_without_shape": lambda: TensorMap.tiled(ptr, (4,), dtype="float32"),
        "shape_without_dtype": lambda: TensorMap.tiled(buf, (4,), shape=(64,)),
        "freed": tiled(source=freed, shape=(4, 16)),
        "im2col_rank": im2col(shape=(64, 32), lower_corner=(), upper_corner=()),
        "im2col_corner_range": im2col(lower_corner=(-129, 0)),
        "im2col_corner_count": im2col(upper_corner=(1,)),
        "im2col_channels": im2col(channels_per_pixel=0),
        "im2col_channels_big": im2col(channels_per_pixel=257),
        "im2col_pixels": im2col(pixels_per_column=1025),
        "im2col_swizzle_span": im2col(swizzle="32B"),
    }
    out = {name: refusal(case) for name, case in cases.items()}
    return {"refused": out, "calls": calls()}


def no_im2col() -> dict:
    import cudaload
    from cudaload import TensorMap

    buf = cudaload.alloc(2 * 8 * 8 * 32 * 2)
    missing = refusal(lambda: TensorMap.im2col(
        buf, dtype="float16", shape=(2, 8, 8, 32), lower_corner=(0, 0), upper_corner=(0, 0),
        channels_per_pixel=32, pixels_per_column=64))
    TensorMap.tiled(buf, (8, 8), dtype="float16", shape=(64, 64))
    return {"missing": missing, "calls": calls()}


def launched() -> dict:
    import cudaload
    from cudaload import Program, TensorMap
    from tests.scenarios.recorded_launches import last, layout

    src = ("struct alignas(64) CUtensorMap_st { unsigned long long opaque[16]; };\n"
           "typedef CUtensorMap_st CUtensorMap;\n"
           'extern "C" __global__ void k(const __grid_constant__ CUtensorMap m, float *out) {}\n'
           "__global__ void cpp(const __grid_constant__ CUtensorMap m, int n) {}\n")
    mod = Program(src, name_expressions=["cpp"]).compile().load()
    buf = cudaload.alloc(64 * 64 * 4)
    t = TensorMap.tiled(buf, (32, 32), dtype="float32", shape=(64, 64))
    layout((0, 128), (128, 8))
    k = mod.get_kernel("k")
    k(1, 32, (t, buf))
    first = last(136)
    # again with another map: the second launch in a row takes the fast path, which packs anew
    other_buf = cudaload.alloc(64 * 64 * 4)
    other = TensorMap.tiled(other_buf, (32, 32), dtype="float32", shape=(64, 64))
    for _ in range(3):
        k(1, 32, (other, buf))
    again = last(136)
    layout((0, 128), (128, 4))
    mod.get_kernel("cpp")(1, 32, (t, 7))
    second = last(132)
    wrong = refusal(lambda: mod.get_kernel("k")(1, 32, (buf, buf)))
    return {"map": t.hex(), "other": other.hex(), "ptr": buf.ptr, "first": first[2],
            "again": again[2], "second": second[2], "wrong": wrong}


def pool_threshold() -> dict:
    import cudaload

    pool = cudaload.memory_pool()
    out = {"before": pool.release_threshold}
    pool.release_threshold = 1 << 30
    out["after"] = pool.release_threshold
    other = cudaload.memory_pool(1)
    other.release_threshold = (1 << 64) - 1  # "keep everything", as CUDA's samples set it
    out["other"] = other.release_threshold
    out["negative"] = refusal(lambda: setattr(pool, "release_threshold", -1))
    out["float"] = refusal(lambda: setattr(pool, "release_threshold", 1.5))
    out["too_big"] = refusal(lambda: setattr(pool, "release_threshold", 1 << 64))
    out["repr"] = repr(pool)
    out["calls"] = calls()
    return out


SCENARIOS = {f.__name__: f for f in (tiled, im2col, refusals, no_im2col, launched,
                                     pool_threshold)}

if __name__ == "__main__":
    print(json.dumps(SCENARIOS[sys.argv[1]]()))
