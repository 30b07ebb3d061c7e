"""The calling thread's CUDA device, by ordinal, and its architecture.

A thread's device is the one it chose (``Device.set_current``), else that of the context another
library made current in the thread, else device 0; once found it is remembered for the thread.
Compiling for "the current device" (``compile(arch=None)``) needs only its architecture, so it
asks here, below the launch layer that owns ``Device`` objects: no climb from compiling up to
launching.  ``launch/device.py`` keeps its ``Device`` objects in step through :func:`choose`.

Imports of cudaload: driver.

Layer 1, bindings: may import the foundation and bindings.
"""

from __future__ import annotations

import threading

from . import driver

__all__ = ["ordinal", "choose", "arch"]

_tls = threading.local()  # .ordinal: the thread's device
_archs: dict[int, int] = {}  # ordinal -> compute capability (90): fixed for the life of a process


def choose(ordinal_: int) -> None:
    """Make device ``ordinal_`` the calling thread's."""
    _tls.ordinal = ordinal_


def ordinal() -> int:
    """The calling thread's device ordinal.  Raises :class:`CudaLoadError` where CUDA is
    unavailable or the driver cannot say."""
    found = getattr(_tls, "ordinal", None)
    if found is not None:
        return found
    drv = driver.init()
    ctx = drv.ffi.new("CUcontext *")
    driver.check(drv.cuCtxGetCurrent(ctx), "cuCtxGetCurrent")
    found = 0
    if ctx[0] != drv.ffi.NULL:
        out = drv.ffi.new("CUdevice *")
        driver.check(drv.cuCtxGetDevice(out), "cuCtxGetDevice")
        found = out[0]
    _tls.ordinal = found
    return found


def arch() -> int:
    """Compute capability of the calling thread's device as an int, e.g. 90.  Raises
    :class:`CudaLoadError` where CUDA is unavailable or no such device exists."""
    drv = driver.init()  # first: after fork, or without CUDA, this raises, whatever is remembered
    which = ordinal()
    found = _archs.get(which)
    if found is None:
        ffi = drv.ffi
        handle, value = ffi.new("CUdevice *"), ffi.new("int *")
        driver.check(drv.cuDeviceGet(handle, which), "cuDeviceGet")
        major_minor = []
        for name in ("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR",
                     "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR"):
            attribute = ffi.integer_const(name)
            driver.check(drv.cuDeviceGetAttribute(value, attribute, handle[0]),
                         "cuDeviceGetAttribute")
            major_minor.append(value[0])
        found = _archs[which] = major_minor[0] * 10 + major_minor[1]
    return found
