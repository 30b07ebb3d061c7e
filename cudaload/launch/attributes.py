"""Kernel introspection: what the driver says of a loaded kernel, and how many of its blocks fit.

``Kernel.attributes`` is a :class:`KernelAttributes` of the kernel's function on the thread's
device; each value is read with ``cuFuncGetAttribute`` on first access, not before.
``Kernel.occupancy(block, shared_mem)`` gives an :class:`Occupancy` from
``cuOccupancyMaxActiveBlocksPerMultiprocessor`` and ``cuOccupancyMaxPotentialBlockSize``.  The
names are CuPy's and cuda.core's (``num_regs``, ``shared_size_bytes``, ...).
"""

from __future__ import annotations

from ..bindings import driver
from ..bindings._cuda_ffi import ffi as _cuda_ffi
from ._sizes import C_INT, bounded, byte_count, dims as _dims
from .device import Device, activate, current_device
from ._unpicklable import GpuState

__all__ = ["KernelAttributes", "Occupancy", "occupancy"]

_const = _cuda_ffi.integer_const
_MAX_DYNAMIC_SHARED, _SHARED_OPTIN, _WARP_SIZE, _THREADS_PER_SM = map(_const, (
    "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES",
    "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", "CU_DEVICE_ATTRIBUTE_WARP_SIZE",
    "CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR"))


def _read(func, attr: int, dev: Device) -> int:
    drv = activate(dev)
    out = drv.ffi.new("int *")
    rc = drv.cuFuncGetAttribute(out, attr, func)
    if rc:
        name = _cuda_ffi.string(_cuda_ffi.cast("CUfunction_attribute", attr))
        driver.check(rc, f"cuFuncGetAttribute({name})")
    return out[0]


class _Attribute:
    """A ``CUfunction_attribute`` read from the driver on first access, then kept: these are
    fixed once the code is loaded."""

    def __init__(self, constant: str, doc: str):
        self.attr = _const(constant)
        self.__doc__ = doc

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, obj, owner=None) -> int:
        if obj is None:  # looked up on the class: the descriptor itself
            return self  # type: ignore[return-value]
        value = obj._values.get(self.name)
        if value is None:
            value = obj._values[self.name] = _read(obj._func(), self.attr, obj.device)
        return value


class _Settable(_Attribute):
    """A ``CUfunction_attribute`` a program may set (``cuFuncSetAttribute``): read each time,
    since a launch or another library may have set it since."""

    def __get__(self, obj, owner=None) -> int:
        if obj is None:
            return self  # type: ignore[return-value]
        return _read(obj._func(), self.attr, obj.device)

    def __set__(self, obj, value) -> None:
        value = bounded(value, self.name, *C_INT)  # the driver's int
        drv = activate(obj.device)
        driver.check(drv.cuFuncSetAttribute(obj._func(), self.attr, value),
                     f"cuFuncSetAttribute({self.name}={value})")


class KernelAttributes(GpuState):
    """What the driver says of a kernel compiled for one device; each value read on first access.

    Raises :class:`DriverError` when the driver cannot say (and what loading the kernel raises:
    a RawKernel compiles on first use)."""

    __slots__ = ("device", "_kernel_state", "_function", "_values")
    _SEND_INSTEAD = "send the values (attrs.as_dict())"

    max_threads_per_block = _Attribute("CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK",
                                       "most threads a block of this kernel can have here")
    num_regs = _Attribute("CU_FUNC_ATTRIBUTE_NUM_REGS", "registers per thread")
    shared_size_bytes = _Attribute("CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES",
                                   "static shared memory per block, without the dynamic part")
    const_size_bytes = _Attribute("CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES", "__constant__ memory")
    local_size_bytes = _Attribute("CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES",
                                  "local memory per thread (spills, stack arrays)")
    ptx_version = _Attribute("CU_FUNC_ATTRIBUTE_PTX_VERSION",
                             "virtual architecture compiled for, major * 10 + minor (90: 9.0)")
    binary_version = _Attribute("CU_FUNC_ATTRIBUTE_BINARY_VERSION",
                                "binary architecture, major * 10 + minor (90 for sm_90)")
    cache_mode_ca = _Attribute("CU_FUNC_ATTRIBUTE_CACHE_MODE_CA",
                               "1 when compiled with -Xptxas --dlcm=ca (global loads cached in L1)")
    cluster_size_must_be_set = _Attribute("CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET",
                                          "1 when the kernel cannot launch without a cluster size")
    # Settable: the driver checks the value (a cluster shape the source fixed cannot change);
    # setting one raises TypeError for no integer, ValueError for one outside the C int's range.
    preferred_shared_memory_carveout = _Settable(
        "CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT",
        "percent of the L1/shared memory to make shared memory (-1: no preference); settable")
    required_cluster_width = _Settable("CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH",
                                       "cluster x dimension the kernel needs (0: none); settable")
    required_cluster_height = _Settable("CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT",
                                        "cluster y dimension the kernel needs; settable")
    required_cluster_depth = _Settable("CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH",
                                       "cluster z dimension the kernel needs; settable")
    non_portable_cluster_size_allowed = _Settable(
        "CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED",
        "1 when clusters above the portable 8 blocks may be launched; settable")
    cluster_scheduling_policy_preference = _Settable(
        "CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE",
        "a CUclusterSchedulingPolicy; settable")
    NAMES = ("max_threads_per_block", "num_regs", "shared_size_bytes", "const_size_bytes",
             "local_size_bytes", "ptx_version", "binary_version")

    def __init__(self, kernel_state, device: Device):
        self.device = device
        self._kernel_state = kernel_state
        self._function = None
        self._values: dict[str, int] = {}

    def _func(self):
        if self._function is None:
            self._function = self._kernel_state._function(self.device)
        return self._function

    @property
    def max_dynamic_shared_size_bytes(self) -> int:
        """Most dynamic shared memory a launch may ask for now (launches raise it as needed)."""
        return _read(self._func(), _MAX_DYNAMIC_SHARED, self.device)

    def as_dict(self) -> dict[str, int]:
        """Every value by name, as CuPy's ``RawKernel.attributes`` gives them."""
        return {name: getattr(self, name) for name in (*self.NAMES,
                                                        "max_dynamic_shared_size_bytes")}

    def __repr__(self) -> str:
        known = ", ".join(f"{k}={v}" for k, v in self._values.items())
        return (f"<KernelAttributes of {self._kernel_state.name} on device "
                f"{self.device.ordinal}: {known}>")


class Occupancy:
    """How a block size fills a multiprocessor, and the block size that fills it best.

    ``active_blocks_per_multiprocessor``: blocks of ``block`` threads (with ``shared_mem`` bytes
    of dynamic shared memory) resident at once on one multiprocessor; ``occupancy``: their warps
    over the most the multiprocessor holds (0.0 to 1.0); ``suggested_block_size``: the block
    size with the highest occupancy for that shared memory, and ``min_grid_size`` the grid that
    then fills every multiprocessor."""

    __slots__ = ("block", "shared_mem", "active_blocks_per_multiprocessor", "occupancy",
                 "suggested_block_size", "min_grid_size")
    block: int
    shared_mem: int
    active_blocks_per_multiprocessor: int
    occupancy: float
    suggested_block_size: int
    min_grid_size: int

    def __init__(self, **values: float) -> None:
        for name in self.__slots__:
            setattr(self, name, values[name])

    def __repr__(self) -> str:
        return "Occupancy(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__) + ")"


def occupancy(kernel_state, block, shared_mem=0) -> Occupancy:
    """The :class:`Occupancy` of ``block`` threads per block (an int, or a tuple of up to three)
    with ``shared_mem`` bytes of dynamic shared memory, on the thread's device.

    Raises TypeError for a block or byte count that is no integer, ValueError for one this
    kernel cannot launch with, :class:`DriverError`."""
    threads = _threads(block, kernel_state.name)
    shared_mem = byte_count(shared_mem, "shared_mem", kernel_state.name)
    dev = current_device()
    attrs = KernelAttributes(kernel_state, dev)
    limit = attrs.max_threads_per_block
    if threads > limit:
        raise ValueError(
            f"{kernel_state.name}: a block of {threads} threads is more than this kernel can run "
            f"on device {dev.ordinal}: at most {limit} (its {attrs.num_regs} registers per thread "
            f"or its launch bounds decide); ask for {limit} or fewer")
    func = attrs._func()
    _allow_shared(attrs, func, shared_mem)
    drv = activate(dev)
    blocks, grid, best = drv.ffi.new("int *"), drv.ffi.new("int *"), drv.ffi.new("int *")
    driver.check(drv.cuOccupancyMaxActiveBlocksPerMultiprocessor(blocks, func, threads,
                                                                 shared_mem),
                 "cuOccupancyMaxActiveBlocksPerMultiprocessor")
    # No callback: the same dynamic shared memory for every block size tried.
    driver.check(drv.cuOccupancyMaxPotentialBlockSize(grid, best, func, drv.ffi.NULL, shared_mem,
                                                      0), "cuOccupancyMaxPotentialBlockSize")
    warp = dev.attribute(_WARP_SIZE)
    warps = blocks[0] * -(-threads // warp)
    return Occupancy(block=threads, shared_mem=shared_mem,
                     active_blocks_per_multiprocessor=blocks[0],
                     occupancy=warps * warp / dev.attribute(_THREADS_PER_SM),
                     suggested_block_size=best[0], min_grid_size=grid[0])


def _threads(block, name: str) -> int:
    """Threads in ``block``: an int, or the product of a tuple of one to three ints; at most
    2**31-1, the driver's int."""
    try:
        x, y, z = _dims(block, "block")
        return bounded(x * y * z, "threads in the block", 1, C_INT[1])
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{name}: {exc}") from None


def _allow_shared(attrs: KernelAttributes, func, nbytes: int) -> None:
    """Let the function use ``nbytes`` of dynamic shared memory, as a launch asking for it does,
    so that the occupancy counts it rather than refusing it.  Raises ValueError beyond the
    device's limit."""
    if nbytes <= attrs.max_dynamic_shared_size_bytes:
        return
    dev = attrs.device
    static, limit = attrs.shared_size_bytes, dev.attribute(_SHARED_OPTIN)
    if nbytes + static > limit:
        raise ValueError(f"{attrs._kernel_state.name}: shared_mem={nbytes} and this kernel's "
                         f"{static} bytes of static shared memory exceed device {dev.ordinal}'s "
                         f"{limit} bytes per block; ask for at most {limit - static}")
    drv = activate(dev)
    driver.check(drv.cuFuncSetAttribute(func, _MAX_DYNAMIC_SHARED, nbytes),
                 "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)")
