"""A launch the driver refused: retried once where another library bound its own context, else
the :class:`DriverError`, with the largest grid that fits for a cooperative grid too large.

``_KernelState.launch`` and the fast-path functions call :func:`failed` with the ``CUresult``;
the launch path itself stays free of this.
"""

from __future__ import annotations

from ..bindings import driver
from ..bindings._cuda_ffi import ffi as _cuda_ffi
from ..errors import DriverError
from . import device
from .device import activate

__all__ = ["failed"]

_const = _cuda_ffi.integer_const
# Another library may have bound its own context in this thread; bind ours again and retry once.
_REBIND = frozenset(map(_const, ("CUDA_ERROR_INVALID_CONTEXT", "CUDA_ERROR_CONTEXT_IS_DESTROYED",
                                 "CUDA_ERROR_INVALID_HANDLE")))
_TOO_LARGE = _const("CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE")
_SM_COUNT = _const("CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT")


def failed(name: str, rc: int, state, config) -> None:
    """Retry a launch refused for a foreign context once; raise :class:`DriverError` for what
    the driver still refuses."""
    if rc in _REBIND:
        device._tls.bound = None  # another library changed this thread's context
        activate(state.device)
        rc = state.launch(config, state.func, state.pointers, state.null)
        if not rc:
            return
    err = driver.error(int(rc), f"cuLaunchKernelEx({name})")
    if rc == _TOO_LARGE:
        err = _cooperative_too_large(err, state, config)
    raise err


def _cooperative_too_large(err: DriverError, state, config) -> DriverError:
    """``err`` with the grid asked for and the most blocks of this shape resident at once, which
    is what a cooperative grid may have (the driver's occupancy, times the multiprocessors)."""
    dev = state.device
    drv = activate(dev)
    threads = config.blockDimX * config.blockDimY * config.blockDimZ
    per_sm = drv.ffi.new("int *")
    driver.check(drv.cuOccupancyMaxActiveBlocksPerMultiprocessor(
        per_sm, state.func, threads, config.sharedMemBytes),
        "cuOccupancyMaxActiveBlocksPerMultiprocessor")
    sms = dev.attribute(_SM_COUNT)
    fits = per_sm[0] * sms
    grid = config.gridDimX * config.gridDimY * config.gridDimZ
    return DriverError(
        f"{err.args[0]}; a cooperative grid of {grid} blocks is more than device {dev.ordinal} "
        f"holds at once: at most {fits} ({per_sm[0]} blocks of {threads} threads and "
        f"{config.sharedMemBytes} bytes of dynamic shared memory per multiprocessor, {sms} "
        f"multiprocessors)", code=err.code, name=err.name, function=err.function,
        detail=err.message,
        hint=f"launch at most {fits} blocks and loop over the work in the kernel (a grid-stride "
             f"loop), or use fewer threads or less shared memory per block")
