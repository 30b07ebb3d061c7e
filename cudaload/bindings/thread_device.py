"""The calling thread's CUDA device, by ordinal, and its architecture.

A thread's device is the one it chose (``Device.set_current``), else that of the context another
library made current in the thread, else the process's default (:func:`choose_default`: the rank's
device, so that a thread a pool starts never touches device 0 of a rank given device 3), else
device 0; once found it is remembered for the thread.
Compiling for "the current device" (``compile(arch=None)``) needs only its architecture, so it
asks here, below the launch layer that owns ``Device`` objects: no climb from compiling up to
launching.  ``launch/device.py`` keeps its ``Device`` objects in step through :func:`choose`.

Both are attributes of :data:`state`, a thread-local, so that a compile that finds them there
makes no call at all (``state.arch`` is None until :func:`arch` has asked the driver in this
thread, and again after a fork: the child must not use what its parent's driver answered).

Imports of cudaload: driver, lifetime.
"""

from __future__ import annotations

import threading

from . import driver
from .._base import lifetime
from ..errors import CudaUnavailableError, DriverUnavailableError

__all__ = ["state", "ordinal", "choose", "choose_default", "arch", "none_visible"]


class _State(threading.local):
    """One thread's device: ``ordinal`` and ``arch`` (compute capability, e.g. 90), or None."""

    ordinal: int | None = None
    arch: int | None = None


state = _State()
_archs: dict[int, int] = {}  # ordinal -> compute capability: fixed for the life of a process
_default: list[int] = []  # the process's default ordinal, when one was chosen: [ordinal]
# Why no thread of this process can use a device, once arch() found it: the driver's failure to
# load or initialise (remembered by driver.init), a forked child, or no device visible (the count
# is fixed at cuInit).  None while a device may be usable: a thread's own device can still fail.
unusable: CudaUnavailableError | None = None


def choose(ordinal_: int) -> None:
    """Make device ``ordinal_`` the calling thread's."""
    state.ordinal, state.arch = ordinal_, None


def choose_default(ordinal_: int) -> None:
    """Make device ``ordinal_`` the device of every thread that has chosen none and has no other
    library's context current (threads that already asked keep what they found)."""
    _default[:] = [ordinal_]


def ordinal() -> int:
    """The calling thread's device ordinal.  Raises :class:`CudaLoadError` where CUDA is
    unavailable or the driver cannot say."""
    found = state.ordinal
    if found is not None:
        return found
    drv = driver.init()
    ctx = drv.ffi.new("CUcontext *")
    driver.check(drv.cuCtxGetCurrent(ctx), "cuCtxGetCurrent")
    found = _default[0] if _default else 0
    if ctx[0] != drv.ffi.NULL:
        out = drv.ffi.new("CUdevice *")
        driver.check(drv.cuCtxGetDevice(out), "cuCtxGetDevice")
        found = out[0]
    state.ordinal = found
    return found


def arch() -> int:
    """Compute capability of the calling thread's device as an int, e.g. 90, also set as
    ``state.arch``.  Raises :class:`CudaLoadError` where CUDA is unavailable (after fork too) or
    no such device exists."""
    global unusable
    try:
        drv = driver.init()
    except CudaUnavailableError as err:
        unusable = err
        raise
    which = ordinal()
    found = _archs.get(which)
    if found is None:
        ffi = drv.ffi
        handle, value = ffi.new("CUdevice *"), ffi.new("int *")
        driver.check(drv.cuDeviceGetCount(value), "cuDeviceGetCount")
        if value[0] <= 0:
            unusable = none_visible()
            raise unusable
        driver.check(drv.cuDeviceGet(handle, which), "cuDeviceGet")
        major_minor = []
        for name in ("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR",
                     "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR"):
            driver.check(drv.cuDeviceGetAttribute(value, ffi.integer_const(name), handle[0]),
                         "cuDeviceGetAttribute")
            major_minor.append(value[0])
        found = _archs[which] = major_minor[0] * 10 + major_minor[1]
    state.arch = found
    return found


def none_visible() -> DriverUnavailableError:
    """cuInit succeeded yet no device is visible: as unavailable as cuInit's NO_DEVICE, with its
    code, so that callers who look at ``.name`` see the same either way."""
    code = driver.api().ffi.integer_const("CUDA_ERROR_NO_DEVICE")
    name, text = driver.describe(code)
    return DriverUnavailableError(
        f"no CUDA device is visible: cuDeviceGetCount reports 0 ({name}: {text})",
        code=code, name=name, function="cuDeviceGetCount", detail=text,
        hint="check CUDA_VISIBLE_DEVICES (empty or invalid hides every GPU) and `nvidia-smi`")


def _forget_unusable() -> None:
    global unusable
    unusable = None


def _after_fork_in_child() -> None:
    state.arch = None  # arch() asks again, and so raises ForkedProcessError
    _forget_unusable()


lifetime.on_fork_in_child(_after_fork_in_child)
lifetime.on_forget(_forget_unusable)  # a device set up since may answer
