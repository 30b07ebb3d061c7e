"""Faults that poison a GPU context, and forks after one is made, each run in a fresh process.

    python -m tests.scenarios.gpu_faults SCENARIO

Each prints what it found on its last line (JSON, except where the scenario says otherwise).
cudaload is imported inside each scenario, so importing this module needs no GPU.
"""

from __future__ import annotations

import json
import os
import sys

WRITE_ONE = 'extern "C" __global__ void w(int *p) { p[0] = 1; }'


def freed_buffer() -> None:
    """What a launch, a copy and a memset of a freed buffer raise, then a launch on a fresh one."""
    import numpy as np

    import cudaload
    from cudaload.errors import CudaLoadError

    k = cudaload.RawKernel(WRITE_ONE, "w")
    buf = cudaload.alloc(4)
    k(1, 1, (buf,))
    buf.free()
    result = {}
    for what, call in [("launch", lambda: (k(1, 1, (buf,)), cudaload.Device(0).synchronize())),
                       ("copy_to_host", lambda: buf.copy_to_host()),
                       ("memset", lambda: buf.memset(0))]:
        try:
            call()
            result[what] = "accepted"
        except Exception as err:
            result[what] = [type(err).__name__, str(err), isinstance(err, CudaLoadError)
                            or isinstance(err, ValueError)]
    try:
        fresh = cudaload.alloc(4)
        k(1, 1, (fresh,))
        result["after"] = int(np.frombuffer(fresh.copy_to_host(), np.int32)[0])
    except CudaLoadError as err:  # the freed pointer reached the GPU and poisoned the context
        result["after"] = str(err)
    print(json.dumps(result))


def sticky_fault() -> None:
    """The DriverError of a faulting kernel, and what an allocation raises after it, each with
    whether it is a CudaUnavailableError."""
    import cudaload
    from cudaload.errors import DriverError
    from tests.gpu.kernels import FAULT

    k = cudaload.RawKernel(FAULT, "fault")
    buf = cudaload.alloc(4)
    result = {}
    try:
        k(1, 1, (buf,))
        cudaload.Device(0).synchronize()
        result["fault"] = None
    except DriverError as err:
        result["fault"] = [err.name, str(err)]
        result["fault_unavailable"] = isinstance(err, cudaload.CudaUnavailableError)
    try:
        cudaload.alloc(4)
        cudaload.Device(0).synchronize()
        result["after"] = None
    except DriverError as err:
        result["after"] = err.name
        result["after_unavailable"] = isinstance(err, cudaload.CudaUnavailableError)
    print(json.dumps(result))


def launch_once() -> None:
    """A kernel that stores 5, launched: the value read back."""
    import numpy as np

    import cudaload

    k = cudaload.RawKernel('extern "C" __global__ void w(int *p) { p[0] = 5; }', "w")
    buf = cudaload.alloc(4)
    k(1, 1, (buf,))
    print(json.dumps(int(np.frombuffer(buf.copy_to_host(), np.int32)[0])))


def fork_after_init() -> None:
    """What an allocation in a child forked after initialisation raises (the parent goes on)."""
    import cudaload

    cudaload.alloc(4)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            cudaload.alloc(4)
            msg = "accepted"
        except Exception as err:
            msg = type(err).__name__ + ": " + str(err)
        os.write(w, msg.encode())
        os._exit(0)
    os.close(w)
    msg = os.read(r, 4096).decode()
    os.waitpid(pid, 0)
    cudaload.alloc(4)  # the parent is unaffected
    print(json.dumps(msg))


def sticky_lines() -> None:
    """Prints "FIRST <name> <message>" for a faulting kernel, then "SECOND ok" or "SECOND <name>"
    for an allocation after it (plain text)."""
    import cudaload
    from tests.gpu.kernels import FAULT

    k = cudaload.RawKernel(FAULT, "fault")
    buf = cudaload.alloc(16)
    k(1, 1, (buf,))
    try:
        cudaload.Device(0).synchronize()
    except cudaload.DriverError as e:
        print("FIRST", e.name, e)
    try:
        cudaload.alloc(16)
        print("SECOND ok")
    except cudaload.DriverError as e:
        print("SECOND", e.name)


def fork_child() -> None:
    """Prints "CHILD <exit code>" of a child forked after a launch: 0 when its launch, allocation
    and stream each raised ForkedProcessError naming spawn (plain text)."""
    import cudaload
    from tests.gpu.kernels import SAXPY

    k = cudaload.RawKernel(SAXPY, "saxpy")
    x = cudaload.alloc(64)
    k(1, 1, (x, x, 1.0, 4))
    pid = os.fork()
    if pid == 0:
        codes = 0
        for action in (lambda: k(1, 1, (x, x, 1.0, 4)), lambda: cudaload.alloc(8),
                       lambda: cudaload.Stream()):
            try:
                action()
            except cudaload.ForkedProcessError as e:
                codes += 1 if "spawn" in str(e) else 0
        os._exit(0 if codes == 3 else 1)
    _, status = os.waitpid(pid, 0)
    print("CHILD", os.waitstatus_to_exitcode(status))


SCENARIOS = {f.__name__: f for f in (freed_buffer, sticky_fault, launch_once, fork_after_init,
                                     sticky_lines, fork_child)}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
