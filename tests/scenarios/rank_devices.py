"""One device per process, on the context-counting driver of tests/_fakelibs.py (two devices)
or, for the ``gpu_`` scenarios, on two real GPUs; one fresh process each: which devices got a
context while a process used only one.

    python -m tests.scenarios.rank_devices SCENARIO

Each scenario returns what it saw, printed as JSON on the last line.
"""

from __future__ import annotations

import ctypes
import json
import sys

from tests.scenarios.recorded_launches import fake, layout

SOURCE = 'extern "C" __global__ void k(int n) {}'


def contexts() -> dict:
    """Per device: primary contexts retained, times one of its contexts was made current."""
    retained, bound = (ctypes.c_int * 8)(), (ctypes.c_int * 8)()
    fake().fake_contexts(retained, bound)
    return {"retained": list(retained)[:2], "bound": list(bound)[:2]}


def _active() -> list:
    """cuDevicePrimaryCtxGetState's "active" of devices 0 and 1, through cudaload's own binding."""
    from cudaload.bindings import driver

    drv = driver.init()
    handle = drv.ffi.new("CUdevice *")
    flags, active = drv.ffi.new("unsigned int *"), drv.ffi.new("int *")
    out = []
    for ordinal in (0, 1):
        driver.check(drv.cuDeviceGet(handle, ordinal), "cuDeviceGet")
        driver.check(drv.cuDevicePrimaryCtxGetState(handle[0], flags, active),
                     "cuDevicePrimaryCtxGetState")
        out.append(active[0])
    return out


def _use_current_device(out: dict, tag: str) -> None:
    """Everything a rank does with the thread's device: memory, a stream, an event, a module
    loaded, a launch, a synchronisation."""
    import cudaload
    from cudaload import Program

    buf = cudaload.alloc(256)
    buf.memset(0)
    stream = cudaload.Stream()
    kernel = Program(SOURCE).compile().load().get_kernel("k")
    kernel(1, 1, (3,), stream=stream)
    event = cudaload.Event()
    event.record(stream)
    stream.synchronize()
    from cudaload.launch.device import current_device

    current_device().synchronize()
    out[tag] = [buf.device.ordinal, stream.device.ordinal, current_device().ordinal]


def with_device_one() -> dict:
    """compile(arch=None) before any device is chosen, then ``with Device(1):`` all of a rank's
    work, then the report and compile(arch=None) again after the block."""
    import cudaload
    from cudaload import Program
    from cudaload.launch.device import current_device

    layout((0, 4))
    out = {"arch_before": Program(SOURCE).compile().arch, "before": contexts()}
    with cudaload.Device(1):
        _use_current_device(out, "inside")
    out["after"] = current_device().ordinal
    out["arch_after"] = Program(SOURCE + "\n// after").compile().arch
    out["available"] = cudaload.status(refresh=True).as_dict()["available"]
    out["contexts"] = contexts()
    out["active"] = _active()
    return out


def rank_from_environment() -> dict:
    """``device_for_rank()`` with the launcher's variables of the test's environment, then the
    rank's work in this thread and in a thread started after."""
    import threading

    import cudaload

    layout((0, 4))
    out = {"ordinal": cudaload.device_for_rank().ordinal}
    _use_current_device(out, "main")
    thread = threading.Thread(target=_use_current_device, args=(out, "thread"))
    thread.start()
    thread.join()
    out["contexts"] = contexts()
    out["active"] = _active()
    return out


def bad_ranks() -> dict:
    """What device_for_rank raises for ranks that are none, from the variable and as argument;
    and whether anything reached the driver's contexts."""
    import os

    import cudaload
    from cudaload.errors import CudaLoadError

    def attempt(**kw):
        try:
            cudaload.device_for_rank(**kw)
        except ValueError as err:
            return [type(err).__name__, isinstance(err, CudaLoadError), str(err),
                    getattr(err, "variable", "?")]
        return None

    out = {}
    for value in ("x", "-1", "", " ", "1.0", "\u00b2"):
        os.environ["LOCAL_RANK"] = value
        out[f"env {value!r}"] = attempt()
    del os.environ["LOCAL_RANK"]
    for value in (-1, "two", 1.5, True):
        out[f"arg {value!r}"] = attempt(local_rank=value)
    out["contexts"] = contexts()
    return out


FILL = 'extern "C" __global__ void fill(int *p, int v) { p[threadIdx.x] = v + threadIdx.x; }'


def _gpu_work() -> list:
    """On the thread's device: compile(arch=None), memory, a stream, a launch, the values read
    back; [device of the buffer, the values are right]."""
    import cudaload
    from cudaload import Program

    buf = cudaload.alloc(4 * 32)
    stream = cudaload.Stream()
    Program(FILL).compile().load().get_kernel("fill")(1, 32, (buf, 7), stream=stream)
    stream.synchronize()
    data = bytes(buf.copy_to_host())
    values = [int.from_bytes(data[4 * i:4 * i + 4], "little") for i in range(32)]
    return [buf.device.ordinal, values == [7 + i for i in range(32)]]


def gpu_device_one() -> dict:
    """On a machine of two or more GPUs: all of a rank's work inside ``with Device(1):``, in a
    thread too, the report after; whether device 0's primary context is active."""
    import threading

    import cudaload
    from cudaload import Program

    out = {"arch_before": Program(FILL).compile().arch}
    with cudaload.Device(1):
        out["work"] = _gpu_work()
        cudaload.Device(1).synchronize()
    out["available"] = cudaload.status(refresh=True).as_dict()["available"]

    def in_thread():  # a thread's device is its own choice: it chooses device 1 too
        cudaload.Device(1).set_current()
        out["thread"] = _gpu_work()

    thread = threading.Thread(target=in_thread)
    thread.start()
    thread.join()
    out["active"] = _active()
    return out


def gpu_rank() -> dict:
    """``device_for_rank()`` (the test sets LOCAL_RANK=1) on two real GPUs, the work done in this
    thread and in one started after; whether device 0's primary context is active."""
    import threading

    import cudaload

    out = {"ordinal": cudaload.device_for_rank().ordinal, "work": _gpu_work()}
    thread = threading.Thread(target=lambda: out.setdefault("thread", _gpu_work()))
    thread.start()
    thread.join()
    out["active"] = _active()
    return out


SCENARIOS = {f.__name__: f for f in (with_device_one, rank_from_environment, bad_ranks,
                                     gpu_device_one, gpu_rank)}

if __name__ == "__main__":
    print(json.dumps(SCENARIOS[sys.argv[1]]()))
