"""Launches that take a kernel's fast-path function (cudaload/launch/_fast_path.py), onto the recording
driver of tests/_fakelibs.py (named by $CUDALOAD_LIBCUDA), one fresh process each.

    python -m tests.scenarios.fast_path_launches SCENARIO

Each scenario returns what it saw, printed as JSON on the last line.
"""

from __future__ import annotations

import json
import struct
import sys
import threading

from tests.scenarios.recorded_launches import fake, last, layout

SOURCE = 'extern "C" __global__ void k(float *x, int n, float a) {}'
LAYOUT = ((0, 8), (8, 4), (12, 4))


def kernel(source: str = SOURCE, name: str = "k", pairs=LAYOUT):
    from cudaload import Program

    layout(*pairs)
    return Program(source).compile().load().get_kernel(name)


def sent() -> list:
    """(pointer, n, a) the driver received last."""
    return list(struct.unpack("<Qif", bytes.fromhex(last(16)[2])))


def counting(k) -> list:
    """Counts calls of the ordinary path from now on (the fast-path function calls it by name)."""
    kernel_state, calls = k._kernel_state, []
    ordinary = kernel_state.launch

    def launch(*args, **kw):
        calls.append(1)
        return ordinary(*args, **kw)
    kernel_state.launch = launch
    return calls


def express_path() -> dict:
    """After two launches the Kernel calls its fast-path function; repeated and changed arguments,
    equal computed grids, and what changes take the ordinary path again."""
    import numpy as np

    import cudaload

    k = kernel()
    buf, other = cudaload.alloc(64), cudaload.alloc(64)
    out = {"before": k.func == k._kernel_state.launch}
    for _ in range(3):
        k(1, 32, (buf, 7, 0.5))
    out["installed"] = k.func != k._kernel_state.launch
    calls = counting(k)
    k(1, 32, (buf, 7, 0.5))
    out["same"] = sent()
    k(1, 32, (other, 8, -0.0))
    out["changed"] = sent()
    grid = int("70000")  # an int made anew, equal to the last grid
    k(70000, 32, (other, 8, -0.0))
    k(grid, 32, (other, 8, -0.0))
    out["express_calls"] = len(calls)  # only the new grid took the ordinary path
    k(1, 32, (other, np.int32(9), 2.0))  # new types: the ordinary path
    out["numpy"] = sent()
    k(1, 32, (other, 8, -0.0))  # the fast-path function again, though the buffer holds other values
    out["back"] = sent()
    out["calls"] = len(calls)
    out["other_ptr"] = other.ptr
    out["ptr"] = buf.ptr
    return out


def refusals() -> dict:
    """With the fast-path function installed, what does not fit is refused as precisely as before."""
    import numpy as np

    import cudaload
    from cudaload import LaunchArgumentError

    k = kernel()
    buf, other = cudaload.alloc(64), cudaload.alloc(64)
    for _ in range(3):
        k(1, 32, (buf, 7, 0.5))
    out = {"installed": k.func != k._kernel_state.launch}

    def error(args, **kw):
        try:
            k(1, 32, args, **kw)
        except (LaunchArgumentError, TypeError, ValueError) as err:
            return [type(err).__name__, str(err)]
        return None
    out["count"] = error((buf, 7))
    out["bool_for_float"] = error((buf, 7, True))
    out["float_for_int"] = error((buf, 7.0, 0.5))
    out["host_array"] = error((np.zeros(4, np.float32), 7, 0.5))
    out["overflow"] = error((other, 2 ** 40, 0.5))  # packs part of the buffer, then fails
    out["after_overflow"] = [sent(), buf.ptr]
    k(1, 32, (buf, 7, 0.5))  # the arguments of the last good launch, as the same objects
    out["good_again"] = sent()
    try:
        k(1, 32, (buf, 7, 0.5), 0)
    except TypeError as err:
        out["fourth"] = str(err)
    other.free()
    out["freed"] = error((other, 7, 0.5))
    out["launches"] = last(16)[0]
    return out


def threads() -> dict:
    """Another thread launches through its own buffer; the owner's end hands the fast-path function
    to the next thread that launches."""
    import ctypes

    import cudaload

    fake().fake_launch_params.restype = ctypes.c_void_p
    k = kernel()
    buf = cudaload.alloc(64)
    out = {}
    seen = {}

    def worker(name, n, launches):
        for _ in range(launches):
            k(1, 32, (buf, n, 0.5))
        state = k._kernel_state
        seen[name] = [sent()[1], k.func != state.launch, state._owner == threading.get_ident(),
                      fake().fake_launch_params()]

    t = threading.Thread(target=worker, args=("owner", 1, 3))
    t.start()
    t.join()
    out["owner_gone"] = [k.func == k._kernel_state.launch, k._kernel_state._owner is None]
    for _ in range(3):
        k(1, 32, (buf, 2, 0.5))
    out["main"] = [sent()[1], k.func != k._kernel_state.launch, fake().fake_launch_params()]
    t = threading.Thread(target=worker, args=("second", 3, 3))
    t.start()
    t.join()
    out["second"] = seen["second"]
    k(1, 32, (buf, 2, 0.5))
    out["main_again"] = sent()[1]
    out["owner"] = seen["owner"]
    return out


def devices() -> dict:
    """A device made current after the fast-path function was installed gets the launch, with
    its own function: (context, function) of each launch."""
    import ctypes

    import cudaload

    fake().fake_launch_context.restype = fake().fake_launch_function.restype = ctypes.c_void_p

    def seen():
        return [fake().fake_launch_context(), fake().fake_launch_function()]

    k = kernel()
    ptr = cudaload.alloc(64).ptr  # an int: no buffer whose device a test would catch
    for _ in range(3):
        k(1, 32, (ptr, 7, 0.5))
    out = {"first": seen(), "installed": k.func != k._kernel_state.launch}
    cudaload.Device(1).set_current()
    k(1, 32, (ptr, 7, 0.5))
    out["second"] = seen()
    cudaload.Device(0).set_current()
    k(1, 32, (ptr, 7, 0.5))
    out["back"] = seen()
    return out


def freed_at_once() -> dict:
    """A kernel whose fast-path function is installed is freed by reference counting alone."""
    import gc
    import weakref

    import cudaload

    gc.disable()
    k = kernel()
    buf = cudaload.alloc(64)
    for _ in range(3):
        k(1, 32, (buf, 7, 0.5))
    installed = k.func != k._kernel_state.launch
    kernel_state = weakref.ref(k._kernel_state)
    del k
    return {"installed": installed, "freed": kernel_state() is None}


def generated_source() -> dict:
    """The fast-path launcher and the packer read as named files: a bad argument's traceback shows
    their lines, inspect finds their text, and the text goes with the kernel."""
    import gc
    import inspect
    import linecache
    import traceback

    from cudaload import LaunchArgumentError

    def registered():
        return sorted(name for name in linecache.cache if name.startswith("<cudaload "))

    k = kernel('struct S { int a, b; }; extern "C" __global__ void s(S v) {}', "s", ((0, 8),))
    for _ in range(3):
        k(1, 32, (bytes(8),))
    out = {"installed": k.func != k._kernel_state.launch, "registered": registered()}
    out["launcher_source"] = inspect.getsource(k.func)
    out["packer_source"] = inspect.getsource(k._kernel_state._tls.state.pack)
    try:
        k(1, 32, (bytes(4),))  # converted in the launcher, refused by the packer's converter
    except LaunchArgumentError:
        out["traceback"] = traceback.format_exc()
    del k
    gc.collect()
    out["left"] = registered()
    return out


def closed_streams() -> dict:
    """Closing a stream forgets the launch shapes naming it, and only those."""
    import cudaload

    k, on_closed = kernel(), kernel(SOURCE.replace(" k(", " k2("), "k2")
    buf = cudaload.alloc(64)
    s, other, closed = cudaload.Stream(), cudaload.Stream(), cudaload.Stream()
    for _ in range(3):
        k(1, 32, (buf, 7, 0.5), stream=other)
        on_closed(1, 32, (buf, 7, 0.5), stream=closed)
    out = {"installed": [k.func != k._kernel_state.launch,
                         on_closed.func != on_closed._kernel_state.launch]}
    calls = counting(k)
    s.close()
    closed.close()
    k(1, 32, (buf, 7, 0.5), stream=other)
    out["ordinary_calls"] = len(calls)  # none: the shape of other was kept
    out["kept"] = k._kernel_state._tls.state.last.stream is other
    launches = last(16)[0]
    try:
        on_closed(1, 32, (buf, 7, 0.5), stream=closed)
    except ValueError as err:
        out["on_closed"] = str(err)
    out["launched_on_closed"] = last(16)[0] - launches
    return out


SCENARIOS = {f.__name__: f for f in (express_path, refusals, threads, devices, freed_at_once,
                                     generated_source, closed_streams)}

if __name__ == "__main__":
    import cudaload  # noqa: F401  (imported before the recording driver is opened, as by a user)

    fake()
    print(json.dumps(SCENARIOS[sys.argv[1]]()))
