"""Devices and their primary contexts, made current per thread.

Each device's primary context is retained (never a private one), so cudaload shares memory and
streams with PyTorch and CuPy in the same process.  Which context is current is remembered per
thread, so making it current again costs one attribute read instead of a driver call.
"""

from __future__ import annotations

import _thread
import threading

from ..bindings import driver, thread_device
from . import _host_calls, peer
from .._base import lifetime
from ..bindings._cuda_ffi import ffi as _cuda_ffi
from ._sizes import C_INT, bounded, integer

__all__ = ["Device", "device_count", "visible_devices", "current_device", "activate"]

_lock = _thread.allocate_lock()
_devices: dict[int, Device] = {}
_tls = threading.local()  # .device: the thread's chosen Device; .bound: the one whose context is current
_const = _cuda_ffi.integer_const
_MAX_GRID = tuple(map(_const, ("CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X",
                               "CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y",
                               "CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z")))
_MAX_BLOCK = tuple(map(_const, ("CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X",
                                "CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y",
                                "CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z")))
_MAX_THREADS = _const("CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK")


def device_count() -> int:
    """Number of visible CUDA devices: 0 where CUDA is unavailable (``status()`` says why), as
    PyTorch's.  Never raises."""
    try:
        return visible_devices()
    except Exception:  # no driver, a failed cuInit, after fork: is_available() is False too
        return 0


def visible_devices() -> int:
    """Number of visible CUDA devices, 0 included.  Raises :class:`CudaUnavailableError` where
    CUDA is unavailable, the driver's errors when it cannot say."""
    drv = driver.init()
    out = drv.ffi.new("int *")
    driver.check(drv.cuDeviceGetCount(out), "cuDeviceGetCount")
    return out[0]


class Device:
    """One GPU, by ordinal; ``Device(i)`` is the same object each time.  ``with Device(i):``
    makes it the thread's device for the block and restores the previous one after.  Raises
    ``ValueError`` for an ordinal that is no int or outside the C int's 0..2**31-1 (before the
    driver is called) or that does not exist, :class:`CudaUnavailableError` where none does."""

    def __new__(cls, ordinal: int = 0):
        dev = _devices.get(ordinal) if type(ordinal) is int else None  # True is no ordinal
        if dev is not None:
            return dev
        try:
            ordinal = bounded(ordinal, "a device ordinal", 0, C_INT[1])
        except (TypeError, ValueError) as exc:  # ValueError for both, as Device always raised
            raise ValueError(f"no CUDA device {ordinal!r}: {exc}") from None
        count = visible_devices()
        if count <= 0:
            raise thread_device.none_visible()
        if ordinal >= count:
            raise ValueError(f"no CUDA device {ordinal!r}: {count} visible (0..{count - 1})")
        with _lock:
            dev = _devices.get(ordinal)
            if dev is None:
                dev = object.__new__(cls)
                dev._init(ordinal)
                _devices[ordinal] = dev
        return dev

    def _init(self, ordinal: int) -> None:
        drv = driver.init()
        self.ordinal = ordinal
        out = drv.ffi.new("CUdevice *")
        driver.check(drv.cuDeviceGet(out, ordinal), "cuDeviceGet")
        self.handle = out[0]
        self._context = None
        self._attrs: dict[int, int] = {}

    def __repr__(self) -> str:
        return f"<cudaload.Device {self.ordinal}: {self.name} (sm_{self.arch})>"

    def __reduce__(self):
        return (Device, (self.ordinal,))

    def attribute(self, attr) -> int:
        """A ``CUdevice_attribute`` value, by enum name or number.  Raises :class:`DriverError`,
        TypeError for a number that is no integer, ValueError for one outside 0..2**31-1, the
        enum's range (before the driver is called), AttributeError for a name that is no such
        enum value."""
        drv = driver.init()
        if isinstance(attr, str):
            attr = _attribute_number(drv, attr)
        else:
            attr = bounded(attr, "a CUdevice_attribute", 0, C_INT[1])
        value = self._attrs.get(attr)
        if value is None:
            out = drv.ffi.new("int *")
            driver.check(drv.cuDeviceGetAttribute(out, attr, self.handle), "cuDeviceGetAttribute")
            value = self._attrs[attr] = out[0]
        return value

    @property
    def name(self) -> str:
        drv = driver.init()
        buf = drv.ffi.new("char[256]")
        driver.check(drv.cuDeviceGetName(buf, 256, self.handle), "cuDeviceGetName")
        return drv.ffi.string(buf).decode(errors="replace")

    @property
    def uuid(self) -> str:
        """The GPU's UUID as ``nvidia-smi -L`` shows it after ``GPU-``: 8-4-4-4-12 hex digits."""
        drv = driver.init()
        out = drv.ffi.new("CUuuid *")
        driver.check(drv.cuDeviceGetUuid_v2(out, self.handle), "cuDeviceGetUuid")
        h = bytes(drv.ffi.buffer(out.bytes, 16)).hex()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    @property
    def pci_bus_id(self) -> str:
        """The PCI address, ``domain:bus:device.function`` (e.g. ``0000:19:00.0``)."""
        drv = driver.init()
        buf = drv.ffi.new("char[32]")
        driver.check(drv.cuDeviceGetPCIBusId(buf, 32, self.handle), "cuDeviceGetPCIBusId")
        return drv.ffi.string(buf).decode()

    @property
    def compute_capability(self) -> tuple[int, int]:
        return (self.attribute("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR"),
                self.attribute("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR"))

    @property
    def arch(self) -> int:
        major, minor = self.compute_capability
        return major * 10 + minor

    @property
    def total_memory(self) -> int:
        drv = driver.init()
        out = drv.ffi.new("size_t *")
        driver.check(drv.cuDeviceTotalMem_v2(out, self.handle), "cuDeviceTotalMem")
        return out[0]

    def mem_info(self) -> tuple[int, int]:
        """(free, total) bytes of device memory, as the driver reports them."""
        drv = activate(self)
        free, total = drv.ffi.new("size_t *"), drv.ffi.new("size_t *")
        driver.check(drv.cuMemGetInfo_v2(free, total), "cuMemGetInfo")
        return free[0], total[0]

    @property
    def context(self):
        """The retained primary context (a ``CUcontext`` cdata)."""
        if self._context is None:
            drv = driver.init()
            with _lock:
                if self._context is None:
                    out = drv.ffi.new("CUcontext *")
                    driver.check(drv.cuDevicePrimaryCtxRetain(out, self.handle),
                                 "cuDevicePrimaryCtxRetain")
                    # Released by the driver at process exit: other libraries share this context,
                    # and releasing it from an atexit hook could tear it down under them.
                    self._context = out[0]
        return self._context

    def set_current(self) -> None:
        """Make this the calling thread's device (its primary context current here)."""
        _tls.device = self
        thread_device.choose(self.ordinal)
        activate(self)

    def __enter__(self) -> Device:
        stack = _tls.__dict__.setdefault("previous", [])
        previous = current_device()
        # A previous device whose context cudaload never made must not get one on the way out
        # (a rank given device 1 would hold a context on device 0 too): the driver's own current
        # context then, NULL or another library's, is what the block's end restores.
        stack.append((previous, None if previous._context is not None
                      else _current_context(driver.init())))
        self.set_current()
        return self

    def __exit__(self, *exc) -> None:
        previous, context = _tls.previous.pop()
        if previous._context is not None:
            previous.set_current()
            return
        driver.check(driver.init().cuCtxSetCurrent(context), "cuCtxSetCurrent")
        _tls.device, _tls.bound = previous, None
        thread_device.choose(previous.ordinal)
        generation.value += 1

    def synchronize(self) -> None:
        """Wait for all work on this device.  Raises :class:`DriverError` (sticky errors too), and
        what a host function here raised since the last synchronising call."""
        activate(self)
        driver.check(driver.init().cuCtxSynchronize(), "cuCtxSynchronize")
        _host_calls.raise_pending(self.ordinal)

    def can_access_peer(self, other) -> bool:
        """Whether this device's kernels can access ``other``'s (a Device or an ordinal) memory
        once :meth:`enable_peer_access` was called; False for this device itself."""
        return peer.can_access_peer(self, as_device(other))

    def enable_peer_access(self, other) -> None:
        """Let this device's primary context access ``other``'s memory; again is no error.
        Raises as :func:`cudaload.launch.peer.enable_peer_access`, and as :func:`as_device` for
        an ``other`` that is no device."""
        peer.enable_peer_access(self, as_device(other), activate)

    def limits(self) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
        """(max grid, max block, max threads per block) of this device."""
        a = self.attribute
        gx, gy, gz = map(a, _MAX_GRID)
        bx, by, bz = map(a, _MAX_BLOCK)
        return (gx, gy, gz), (bx, by, bz), a(_MAX_THREADS)


def current_device() -> Device:
    """The calling thread's device: the one it chose with ``set_current``, else that of the context
    another library made current in this thread, else device 0."""
    dev = getattr(_tls, "device", None)
    if dev is not None:
        return dev
    dev = _tls.device = Device(thread_device.ordinal())
    return dev


class _Generation:
    """Bumped whenever a thread binds a different context, so cached launch state can tell
    cheaply that it must bind its own again (one attribute read on the hot path instead of a
    driver call)."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0


generation = _Generation()


def activate(device: Device | None = None, *, owning: bool = False) -> driver.Driver:
    """Bind ``device``'s (default: the thread's) primary context in this thread; return the driver.

    The bound context is remembered per thread, so binding it again costs no driver call.  With
    ``owning`` (the caller is about to make something that belongs to the current context:
    memory, a stream, an event, a kernel's function) the driver is asked which context is
    current instead: PyTorch or CuPy may have made another device's current since, and what is
    made there would belong to that device while labelled as this one."""
    drv = driver.init()
    if device is None:
        device = current_device()
    context = device.context
    if getattr(_tls, "bound", None) is not device or (
            owning and _current_context(drv) != context):
        driver.check(drv.cuCtxSetCurrent(context), "cuCtxSetCurrent")
        _tls.bound = device
        generation.value += 1
    return drv


def _current_context(drv):
    out = getattr(_tls, "context_out", None)
    if out is None:
        out = _tls.context_out = drv.ffi.new("CUcontext *")
    if drv.cuCtxGetCurrent(out):
        return None  # then bind ours: a failure to bind is reported by cuCtxSetCurrent
    return out[0]


def as_device(device) -> Device:
    """``None`` -> the thread's device; an integer (an int, a NumPy integer, anything with
    ``__index__``) -> ``Device(ordinal)``; a Device as is.  Raises TypeError for anything else
    (a float such as 1.7, which ``int()`` would cut down to another device; a bool, a str), and
    what ``Device`` raises."""
    if device is None:
        return current_device()
    if isinstance(device, Device):
        return device
    return Device(integer(device, "device (an ordinal or a cudaload.Device)"))


def _after_fork_in_child() -> None:
    # Cached launch state must take the slow path, which calls driver.init() and so raises
    # ForkedProcessError instead of calling into a driver the child cannot use.
    generation.value += 1
    if lifetime.forked():
        _devices.clear()  # Device(i) asks the driver again, and so raises ForkedProcessError too


lifetime.on_fork_in_child(_after_fork_in_child)


def _attribute_number(drv, name: str) -> int:
    """The ``CUdevice_attribute`` called ``name``; the bindings' other names (functions, other
    enums) are no attribute.  Raises AttributeError."""
    value = getattr(drv.library.lib, name, None) if name.startswith("CU_DEVICE_ATTRIBUTE_") else None
    if not isinstance(value, int):
        raise AttributeError(f"no device attribute {name!r}: give a CUdevice_attribute by its enum "
                             "name, e.g. 'CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT', or its number")
    return value
