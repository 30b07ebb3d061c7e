"""Each public entry that hands a Python int to the driver, called with the values at the ends
of the C integer types, onto the logging driver of tests/_fake_tensor_map.py (named by
$CUDALOAD_LIBCUDA), or onto a real driver without a device (``unavailable``):

    python -m tests.scenarios.integer_ranges recorded|unavailable

prints, as JSON on its last line, per entry the outcome of each value of :data:`VALUES`: "ok"
where the call returned, else "<exception class>: <message>".  cudaload is loaded inside the
scenarios.
"""

from __future__ import annotations

import json
import sys

from tests.scenarios.recorded_launches import layout

VALUES = (-1, 2 ** 31, 2 ** 32, 2 ** 63, 2 ** 64)

# One parameter of each integer type, at its natural alignment (as cuFuncGetParamInfo gives it).
KERNEL = ('extern "C" __global__ void k(signed char a, unsigned char b, short c, unsigned short d, '
          'int e, unsigned int f, long long g, unsigned long long h) {}')
SCALARS = ("signed char", "unsigned char", "short", "unsigned short", "int", "unsigned int",
           "long long", "unsigned long long")
LAYOUT = ((0, 1), (1, 1), (2, 2), (4, 2), (8, 4), (12, 4), (16, 8), (24, 8))
ZEROS = (0,) * 8


def outcome(call, value) -> str:
    try:
        call(value)
    except Exception as err:  # the test judges which
        return f"{type(err).__name__}: {err}"
    return "ok"


class Span:
    """Memory known by ``.ptr`` and ``.nbytes`` only, as ``copy_from`` takes it."""

    def __init__(self, ptr, nbytes):
        self.ptr, self.nbytes = ptr, nbytes


class _Interface:
    """An array known by its __cuda_array_interface__ only, at ``ptr``."""

    def __init__(self, ptr):
        self.ptr = ptr

    @property
    def __cuda_array_interface__(self):
        return {"data": (self.ptr, False), "shape": (4,), "typestr": "<f4", "version": 3}


class _HostArray:
    """A host array known by its __array_interface__ only, at ``ptr``: the driver is asked for
    the device address it maps it at."""

    def __init__(self, ptr):
        self.ptr = ptr

    def __repr__(self) -> str:
        return "a host array"  # not its address: the message must name the value itself

    @property
    def __array_interface__(self):
        return {"data": (self.ptr, False), "shape": (4,), "typestr": "<f4", "version": 3}


def _memory_entries(cudaload, s) -> dict:
    buf, dev = cudaload.alloc(64), cudaload.Device(0)
    return {
        "alloc": lambda v: cudaload.alloc(v),
        "alloc stream": lambda v: cudaload.alloc(v, stream=s),
        "alloc device": lambda v: cudaload.alloc(16, device=v),
        "alloc_host": lambda v: cudaload.alloc_host(v),
        "alloc_managed": lambda v: cudaload.alloc_managed(v),
        "DeviceBuffer ptr": lambda v: cudaload.DeviceBuffer(v, 16, dev),
        "DeviceBuffer nbytes": lambda v: cudaload.DeviceBuffer(0x700000000, v, dev),
        "HostBuffer host_ptr": lambda v: cudaload.HostBuffer(v, 0x500000000, 16, dev),
        "HostBuffer nbytes": lambda v: cudaload.HostBuffer(0x5000, 0x500000000, v, dev),
        "copy_to_host nbytes": lambda v: buf.copy_to_host(nbytes=v),
        "copy_to_host out nbytes": lambda v: buf.copy_to_host(bytearray(64), nbytes=v),
        "copy_from_host nbytes": lambda v: buf.copy_from_host(bytes(64), nbytes=v),
        "copy_from ptr": lambda v: buf.copy_from(Span(v, 16)),
        "copy_from nbytes": lambda v: buf.copy_from(Span(buf.ptr, v)),
        "copy_from_host stream": lambda v: buf.copy_from_host(bytes(64), stream=v),
        "fill uint32": lambda v: buf.fill(v),
        "fill int16": lambda v: buf.fill(v, dtype="int16"),
        "memset": lambda v: buf.memset(v),
        "release_threshold": lambda v: setattr(cudaload.memory_pool(), "release_threshold", v),
        "memory_pool device": lambda v: cudaload.memory_pool(v),
        "prefetch device": lambda v: cudaload.alloc_managed(64).prefetch(v),
        "advise device": lambda v: cudaload.alloc_managed(64).advise("accessed_by", v),
        "MemoryPool device": lambda v: cudaload.MemoryPool(v),
        "MemoryPool max_size": lambda v: cudaload.MemoryPool(max_size=v),
        "MemoryPool release_threshold": lambda v: cudaload.MemoryPool(release_threshold=v),
        "MemoryPool.trim": lambda v: cudaload.MemoryPool().trim(v),
        "alloc pool": lambda v: cudaload.alloc(v, stream=s, pool=cudaload.MemoryPool()),
        "__dlpack__ stream": lambda v: buf.__dlpack__(stream=v),
    }


def _device_entries(cudaload) -> dict:
    dev = cudaload.Device(0)
    return {
        "Device": lambda v: cudaload.Device(v),
        "Device.attribute": lambda v: dev.attribute(v),
        "device_for_rank": lambda v: cudaload.device_for_rank(v),
        "Stream priority": lambda v: cudaload.Stream(priority=v),
        "Stream.from_handle": lambda v: cudaload.Stream.from_handle(v),
        "Event.record stream": lambda v: cudaload.Event().record(v),
    }


def _launch_entries(cudaload, s) -> dict:
    layout(*LAYOUT)
    k = cudaload.Program(KERNEL).compile().load().get_kernel("k")
    raw = cudaload.RawKernel(KERNEL, "k")
    with s.capture() as graph:
        k(1, 32, ZEROS, stream=s)
    entries = {
        "grid x": lambda v: k(v, 32, ZEROS),
        "grid y": lambda v: k((1, v), 32, ZEROS),
        "block": lambda v: k(1, v, ZEROS),
        "cluster": lambda v: k(1, 32, ZEROS, cluster=v),
        "RawKernel cluster z": lambda v: raw(1, 32, ZEROS, cluster=(1, 1, v)),
        "shared_mem": lambda v: k(1, 32, ZEROS, shared_mem=v),
        "launch stream": lambda v: k(1, 32, ZEROS, stream=v),
        "Graph.launch stream": lambda v: graph.launch(v),
        "Graph.upload stream": lambda v: graph.upload(v),
        "occupancy block": lambda v: k.occupancy(v),
        "occupancy shared_mem": lambda v: k.occupancy(32, v),
        "max_potential_block_size limit": lambda v: k.max_potential_block_size(0, v),
        "max_potential_block_size shared_mem": lambda v: k.max_potential_block_size(v),
        "max_potential_block_size shared_mem()": lambda v: k.max_potential_block_size(
            lambda _block: v),
        "available_dynamic_shared_memory blocks": lambda v: k.available_dynamic_shared_memory(
            v, 32),
        "available_dynamic_shared_memory block": lambda v: k.available_dynamic_shared_memory(
            1, v),
        "max_active_clusters cluster": lambda v: k.max_active_clusters(1, 32, (v, 1)),
        "max_potential_cluster_size grid": lambda v: k.max_potential_cluster_size(v, 32),
        "attributes.required_cluster_width": lambda v: setattr(
            k.attributes, "required_cluster_width", v),
    }
    raw(1, 32, ZEROS)  # its parameters read from the layout above
    layout((0, 8))  # for p, launched first below
    p = cudaload.Program('extern "C" __global__ void p(float *x) {}').compile().load() \
        .get_kernel("p")
    entries["argument pointer"] = lambda v: p(1, 32, (v,))
    entries["argument pointer interface"] = lambda v: p(1, 32, (_Interface(v),))
    entries["argument host array"] = lambda v: p(1, 32, (_HostArray(v),))
    for i, ctype in enumerate(SCALARS):
        entries[f"argument {ctype}"] = (
            lambda i: lambda v: k(1, 32, ZEROS[:i] + (v,) + ZEROS[i + 1:]))(i)
    return entries


def _tensor_map_entries(cudaload) -> dict:
    tiled = cudaload.TensorMap.tiled

    def at(address=0x700000000, shape=(64, 64), strides=None, box=(8, 8), element_strides=None):
        return tiled(address, box, dtype="float32", shape=shape, strides=strides,
                     element_strides=element_strides)
    return {
        "TensorMap address": lambda v: at(address=v),
        "TensorMap shape": lambda v: at(shape=(v, 64)),
        "TensorMap strides": lambda v: at(strides=(v, 4)),
        "TensorMap box": lambda v: at(box=(v, 8)),
        "TensorMap element_strides": lambda v: at(element_strides=(v, 1)),
        "TensorMap im2col pixels": lambda v: cudaload.TensorMap.im2col(
            0x700000000, dtype="float32", shape=(1, 8, 8, 16), lower_corner=(0, 0),
            upper_corner=(0, 0), channels_per_pixel=16, pixels_per_column=v),
    }


def recorded() -> dict:
    import cudaload

    s = cudaload.Stream()
    entries = {**_memory_entries(cudaload, s), **_device_entries(cudaload),
               **_launch_entries(cudaload, s), **_tensor_map_entries(cudaload)}
    out = {name: [outcome(call, v) for v in VALUES] for name, call in entries.items()}
    # a copy's size is checked against both buffers: a host buffer larger than this one too
    buf = cudaload.alloc(64)
    out["larger host"] = [outcome(buf.copy_from_host, bytes(65)),
                          outcome(lambda out: buf.copy_to_host(out), bytearray(65))]
    # Where the value is no integer at all, the convention: TypeError (bool included).
    out["not integers"] = [outcome(call, v) for call, v in (
        (entries["alloc"], True), (entries["cluster"], 2.0), (entries["Stream priority"], True),
        (entries["attributes.required_cluster_width"], 1.0), (entries["TensorMap box"], True),
        (entries["max_potential_block_size limit"], "8"),
        # a device ordinal or a buffer's size int() would cut down to another one
        (entries["alloc device"], 1.7), (entries["memory_pool device"], 1.7),
        (entries["MemoryPool device"], 1.7), (entries["DeviceBuffer nbytes"], 10.7),
        (entries["DeviceBuffer ptr"], 4096.5))]
    # what is an integer, though no int: a NumPy integer, an object with __index__
    out["integers"] = [outcome(call, v) for call, v in (
        (entries["alloc device"], _Index(1)), (entries["DeviceBuffer nbytes"], _Index(10)),
        (entries["DeviceBuffer ptr"], _Index(4096)), (entries["memory_pool device"], _Index(1)))]
    return out


class _Index:
    """An integer by ``__index__`` only."""

    def __init__(self, value: int):
        self.value = value

    def __index__(self) -> int:
        return self.value


def unavailable() -> dict:
    """A value out of range is refused where no device is: before the driver is asked."""
    import cudaload

    entries = {"alloc": cudaload.alloc, "alloc_host": cudaload.alloc_host,
               "alloc_managed": cudaload.alloc_managed, "Device": cudaload.Device}
    return {name: [outcome(call, v) for v in (*VALUES, 16)] for name, call in entries.items()}


SCENARIOS = {f.__name__: f for f in (recorded, unavailable)}

if __name__ == "__main__":
    print(json.dumps(SCENARIOS[sys.argv[1]]()))
