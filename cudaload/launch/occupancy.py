"""What fits of a kernel beyond one block size: the best block size under a limit and a shared
memory that depends on it, the dynamic shared memory left per block, and clusters.

``Kernel`` takes these methods from :class:`KernelOccupancy` (``Kernel.occupancy`` itself is in
attributes.py).  Each asks the driver on the thread's device, as cuda.core's and CuPy's do:
``cuOccupancyMaxPotentialBlockSize`` (with the shared memory function as a C callback),
``cuOccupancyAvailableDynamicSMemPerBlock``, ``cuOccupancyMaxActiveClusters`` and
``cuOccupancyMaxPotentialClusterSize``.
"""

from __future__ import annotations

from ..bindings import driver
from ..bindings._cuda_ffi import ffi as _cuda_ffi
from ._sizes import C_INT, bounded, byte_count, dims as _dims
from .attributes import _threads
from .device import activate, current_device

TYPE_CHECKING = False  # true for type checkers only: no typing import at run time
if TYPE_CHECKING:
    from typing import Any

__all__ = ["KernelOccupancy"]

_CLUSTER = _cuda_ffi.integer_const("CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION")


def _function(kernel_state):
    dev = current_device()
    return kernel_state._function(dev), activate(dev)


def _config(drv, kernel_state, grid, block, shared_mem, cluster):
    """A CUlaunchConfig (and what it points into) for the occupancy queries that take one."""
    cfg = drv.ffi.new("CUlaunchConfig *")
    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = _dims(grid, "grid")
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = _dims(block, "block")
    cfg.sharedMemBytes = byte_count(shared_mem, "shared_mem", kernel_state.name)
    attrs = drv.ffi.new("CUlaunchAttribute[1]")
    if cluster is not None:
        attrs[0].id = _CLUSTER
        c = attrs[0].value.clusterDim
        c.x, c.y, c.z = _dims(cluster, "cluster")
        cfg.attrs, cfg.numAttrs = attrs, 1
    return cfg, attrs


def _within(value, what: str, low: int, name: str) -> int:
    """``value`` as an int of ``low``..2**31-1 (the driver's int), in a message about the kernel
    ``name``.  Raises TypeError, ValueError."""
    try:
        return bounded(value, what, low, C_INT[1])
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{name}: {exc}") from None


class KernelOccupancy:
    """Occupancy queries of a :class:`Kernel` (mixed into it; ``self._kernel_state`` is its
    _KernelState)."""

    __slots__ = ()
    _kernel_state: Any  # the kernel's _KernelState

    def max_potential_block_size(self, shared_mem=0, block_size_limit: int = 0) -> tuple[int, int]:
        """(min grid size, block size): the block size of highest occupancy, at most
        ``block_size_limit`` threads (0: no limit), and the grid that then fills the device.
        ``shared_mem``: dynamic shared memory per block in bytes, or a function of the block size
        giving it.  Raises TypeError for a ``block_size_limit`` or byte count that is no integer,
        ValueError for one out of range (the limit 0..2**31-1, bytes 0..2**32-1), what the
        function raises, :class:`DriverError`."""
        kernel_state = self._kernel_state
        limit = _within(block_size_limit, "block_size_limit", 0, kernel_state.name)
        func, drv = _function(kernel_state)
        grid, best = drv.ffi.new("int *"), drv.ffi.new("int *")
        if not callable(shared_mem):
            nbytes = byte_count(shared_mem, "shared_mem", kernel_state.name)
            driver.check(drv.cuOccupancyMaxPotentialBlockSize(grid, best, func, drv.ffi.NULL,
                                                              nbytes, limit),
                         "cuOccupancyMaxPotentialBlockSize")
            return grid[0], best[0]
        failures: list[BaseException] = []

        def per_block(block_size: int) -> int:
            if failures:
                return 0
            try:
                return byte_count(shared_mem(block_size), "shared_mem(block_size)",
                                  kernel_state.name)
            except BaseException as exc:  # noqa: BLE001 (raised below, after the driver returns)
                failures.append(exc)
                return 0

        # The callback lives until the call returns: the driver calls it only during the call.
        callback = drv.ffi.callback("CUoccupancyB2DSize", per_block)
        rc = drv.cuOccupancyMaxPotentialBlockSize(grid, best, func, callback, 0, limit)
        if failures:
            raise failures[0]
        driver.check(rc, "cuOccupancyMaxPotentialBlockSize")
        return grid[0], best[0]

    def available_dynamic_shared_memory(self, num_blocks: int, block) -> int:
        """Bytes of dynamic shared memory each block may have with ``num_blocks`` blocks of
        ``block`` threads resident on one multiprocessor.  Raises TypeError for a count that is
        no integer, ValueError for ``num_blocks`` or threads outside 1..2**31-1 (the driver's
        int), :class:`DriverError`."""
        kernel_state = self._kernel_state
        blocks = _within(num_blocks, "num_blocks", 1, kernel_state.name)
        threads = _threads(block, kernel_state.name)
        func, drv = _function(kernel_state)
        out = drv.ffi.new("size_t *")
        driver.check(drv.cuOccupancyAvailableDynamicSMemPerBlock(out, func, blocks, threads),
                     "cuOccupancyAvailableDynamicSMemPerBlock")
        return out[0]

    def max_active_clusters(self, grid, block, cluster, shared_mem=0) -> int:
        """How many clusters of ``cluster`` blocks can be resident at once for this launch shape.
        Raises TypeError (no integer), ValueError (a dimension outside 1..2**32-1, shared_mem
        outside 0..2**32-1), :class:`DriverError` (e.g. for a cluster the kernel or device
        cannot have)."""
        return self._cluster_query("cuOccupancyMaxActiveClusters", grid, block, shared_mem,
                                   cluster)

    def max_potential_cluster_size(self, grid, block, shared_mem=0) -> int:
        """The most blocks a cluster of this launch shape can have on the device.  Raises
        TypeError, ValueError (as :meth:`max_active_clusters`), :class:`DriverError`."""
        return self._cluster_query("cuOccupancyMaxPotentialClusterSize", grid, block, shared_mem,
                                   None)

    def _cluster_query(self, name: str, grid, block, shared_mem, cluster) -> int:
        func, drv = _function(self._kernel_state)
        cfg, _attrs = _config(drv, self._kernel_state, grid, block, shared_mem, cluster)
        out = drv.ffi.new("int *")
        driver.check(getattr(drv, name)(out, func, cfg), name)
        return out[0]
