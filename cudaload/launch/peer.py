"""Peer access between two devices: whether one device's kernels may read and write another's
memory directly, and turning that on for a device's primary context.

The driver asks this per ordered pair: device 0 reaching device 1's memory is a separate grant
from device 1 reaching device 0's, so each direction is enabled on its own.
"""

from __future__ import annotations

from ..bindings import driver
from ..bindings._cuda_ffi import ffi as _cuda_ffi
from ..errors import DriverError

__all__ = ["can_access_peer", "enable_peer_access"]

_ALREADY_ENABLED = _cuda_ffi.integer_const("CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED")
_REFUSED = {_cuda_ffi.integer_const(name) for name in (
    "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", "CUDA_ERROR_INVALID_DEVICE", "CUDA_ERROR_TOO_MANY_PEERS")}
_NEXT_STEP = ("copy between the two devices instead (DeviceBuffer.copy_from works for any pair, "
              "staged through the host where the GPUs have no direct path); `nvidia-smi topo -m` "
              "shows how they are connected")


def can_access_peer(device, other) -> bool:
    """Whether Device ``device``'s kernels can access Device ``other``'s memory once peer access
    is enabled.  False for ``other`` the same device (the driver answers 0 there too: a device
    needs no grant to reach its own memory)."""
    if other is device:
        return False
    drv = driver.init()
    out = drv.ffi.new("int *")
    driver.check(drv.cuDeviceCanAccessPeer(out, device.handle, other.handle),
                 "cuDeviceCanAccessPeer")
    return bool(out[0])


def enable_peer_access(device, other, activate) -> None:
    """Let Device ``device``'s primary context access Device ``other``'s memory, binding it with
    ``activate(device)`` (device.py's, passed in: it imports this module).  Enabling it again is
    no error.  Raises ValueError for ``other`` the same device (before the driver is called), and
    :class:`DriverError` with the next step where the pair cannot (``cuDeviceCanAccessPeer``
    answers 0, then ``cuCtxEnablePeerAccess`` is not called; or that call refuses)."""
    if other is device:
        raise ValueError(f"device {device.ordinal} always reaches its own memory: give another "
                         "device to enable peer access to")
    if not can_access_peer(device, other):
        # Asked first: cuCtxEnablePeerAccess would answer a bare PEER_ACCESS_UNSUPPORTED.
        raise _refused(device, other, None)
    peer_context = other.context
    drv = activate(device)
    rc = drv.cuCtxEnablePeerAccess(peer_context, 0)
    if rc == _ALREADY_ENABLED:  # another library, or an earlier call, enabled it: as asked
        return
    if rc in _REFUSED:
        raise _refused(device, other, rc)
    driver.check(rc, "cuCtxEnablePeerAccess")


def _refused(device, other, rc: int | None) -> DriverError:
    """The :class:`DriverError` for a pair of devices that cannot access each other's memory."""
    if rc is None:
        return DriverError(
            f"device {device.ordinal} cannot access device {other.ordinal}'s memory "
            "(cuDeviceCanAccessPeer answered 0)", function="cuDeviceCanAccessPeer",
            hint=_NEXT_STEP)
    err = driver.error(rc, "cuCtxEnablePeerAccess")
    pair = f"device {device.ordinal} -> device {other.ordinal}"
    return DriverError(f"{err.args[0]} ({pair})", code=err.code, name=err.name,
                       function=err.function, detail=err.message, hint=_NEXT_STEP)


def copy(drv, dst: int, dst_device, src: int, src_device, nbytes: int, stream) -> None:
    """Copy ``nbytes`` from ``src`` on ``src_device`` to ``dst`` on ``dst_device`` with
    ``cuMemcpyPeer`` (on the CUstream ``stream`` with ``cuMemcpyPeerAsync`` unless None).

    The peer call names both contexts, so the driver picks the direct path where peer access is
    enabled and stages through the host where it is not; cuMemcpyDtoD is documented for memory of
    the current context only."""
    dst_ctx, src_ctx = dst_device.context, src_device.context
    if stream is None:
        driver.check(drv.cuMemcpyPeer(dst, dst_ctx, src, src_ctx, nbytes), "cuMemcpyPeer")
    else:
        driver.check(drv.cuMemcpyPeerAsync(dst, dst_ctx, src, src_ctx, nbytes, stream),
                     "cuMemcpyPeerAsync")
