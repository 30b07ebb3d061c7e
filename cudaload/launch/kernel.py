"""Launching kernels: ``Kernel`` (from ``Module.get_kernel``); ``RawKernel`` is in rawkernel.py.

In the thread that owns a kernel, ``kernel(grid, block, args)`` calls its fast-path function: the
whole hot path in one generated function (_fast_path.py says how a Kernel gets it, and how to read
it).  Elsewhere, and whenever something changed, it runs ``_KernelState.launch``: this thread's launch
state (a thread-local read), the cached ``CUlaunchConfig`` for (grid, block, shared_mem, stream) (a
dict read), the packing plan generated for the argument types of the last call (one call: a type
test and a ``struct.pack_into`` into a preallocated buffer that a ``void*[]`` already points into),
and ``cuLaunchKernelEx``.  Context binding, checks of the grid against the device, enabling large
shared memory and the choice of conversions happen once, on the slow path.
"""

from __future__ import annotations

import _thread
import functools
import threading
import weakref

from . import _fast_path, _launch_failure, arguments
from .attributes import KernelAttributes, Occupancy, occupancy as _occupancy
from .occupancy import KernelOccupancy
from ..bindings import driver
from . import signature as _signature
from ._sizes import byte_count, constant as _constant, dims as _dims
from ..bindings._cuda_ffi import ffi as _cuda_ffi
from ..errors import LaunchArgumentError
from .device import Device, activate, current_device, generation
from ._unpicklable import GpuState

TYPE_CHECKING = False  # true for type checkers only, to whom a Kernel's call is typed
if TYPE_CHECKING:
    from .launch_types import TypedLaunch as _partial
else:
    _partial = functools.partial
__all__ = ["Kernel"]

_MAX_CONFIGS = 256  # cached launch configurations per kernel and thread
_SMEM_DEFAULT = 48 * 1024
_const = _cuda_ffi.integer_const  # names resolved once, here: the launch path reads plain ints
_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = _const(
    "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES")
_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = _const(
    "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN")
_CU_LAUNCH_ATTRIBUTE_COOPERATIVE = _const("CU_LAUNCH_ATTRIBUTE_COOPERATIVE")
_CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = _const("CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION")
_CUDA_ERROR_INVALID_VALUE = _const("CUDA_ERROR_INVALID_VALUE")
_keep: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class _ThreadState:
    """One thread's state for one kernel on one device: function, buffer, configs, packing plan."""

    __slots__ = ("device", "func", "packer", "pointers", "configs", "launch", "null", "pack",
                 "types", "smem", "last", "own", "repeat", "fast_paths", "__weakref__")

    def __init__(self, kernel: _KernelState, dev: Device):
        drv = activate(dev, owning=True)
        self.device = dev
        self.func = kernel._function(dev)
        self.packer = arguments.Packer(drv.ffi, kernel.name, kernel._params_for(dev, self.func),
                                       dev.ordinal)
        self.pointers = self.packer.pointers
        # The last plain launch shape, compared by identity (see _KernelState.launch).
        self.last = _fast_path.LastLaunch(generation.value)
        self.configs = self.last.configs
        self.own = False  # whether this thread owns the kernel's fast-path function
        self.repeat = None  # the plan of the last launch that could have installed one
        self.fast_paths: dict = {}  # plan -> its fast-path function
        # cuLaunchKernelEx takes four pointers, which cffi passes in about a third of the time of
        # cuLaunchKernel's eleven arguments; the CUlaunchConfig is built once per launch shape.
        self.launch = drv.cuLaunchKernelEx
        self.null = drv.ffi.NULL
        self.pack = _never
        self.types: tuple[type, ...] | None = None
        self.smem = kernel._smem_enabled.setdefault(dev.ordinal, _SharedMemoryLimit())


class _SharedMemoryLimit:
    """The dynamic shared memory a kernel's function on one device may use (``nbytes``, raised
    by cuFuncSetAttribute), shared by the threads launching it there."""

    __slots__ = ("nbytes",)

    def __init__(self):
        self.nbytes = _SMEM_DEFAULT


def _never(_args) -> bool:
    return False


class _KernelState:
    """Everything a kernel knows and caches; ``launch`` is what calling a :class:`Kernel` runs."""

    def __init__(self, module, name: str, signature: str | None = None, source: str | None = None):
        self.name = symbol_name(name, "kernel name")
        self._module = module
        self._signature = signature
        self._source = source
        self._lock = _thread.allocate_lock()
        # .state: the calling thread's _ThreadState for its current device; .states: its _ThreadState per
        # device.  Thread-local, so a pool's finished threads take theirs with them.
        self._tls = threading.local()
        self._functions: dict[int, object] = {}
        self._params: tuple | None = None
        self._from_source = False  # whether the C types came from reading the source
        self._smem_enabled: dict[int, _SharedMemoryLimit] = {}
        self._kernel = _fast_path.nothing  # the Kernel calling this state, by weak reference
        self._owner = None  # the ident of the thread that owns the fast-path function
        self._fast_plan = None  # the plan whose fast-path function the Kernel calls, if any
        self._watch = None  # a weak reference that reports the owner thread's end
        if signature is not None:
            _signature.signature_types(signature)  # a malformed signature fails here, not at launch

    # ---- the launch ----------------------------------------------------------------------------

    def launch(self, grid, block, args, _=_fast_path.POSITIONAL, *, shared_mem=0, stream=None,
               cluster=None, cooperative=False):
        if _ is not _fast_path.POSITIONAL:
            raise TypeError(f"{self.name}: a kernel takes three positional arguments (grid, block, "
                            "args); pass shared_mem, stream, cluster and cooperative by name")
        try:
            state = self._tls.state
        except AttributeError:  # first launch of this kernel in this thread
            state = None
        if state is None or state.last.gen != generation.value:
            state = self._prepare()
        last = state.last
        # Repeated launches pass the same int or tuple objects (literals, cached small ints), so
        # identity finds the last shape without building and hashing a key; equal-but-new objects
        # take the dict below.  Only immutable grids and blocks are remembered this way.
        if grid is last.grid and block is last.block and stream is last.stream \
                and shared_mem is last.shmem and cluster is None and not cooperative:
            config = last.config
        else:
            try:
                config, constant = state.configs[grid, block, shared_mem, stream, cluster,
                                                 cooperative]
            except (KeyError, TypeError):
                config, constant = self._config(state, grid, block, shared_mem, stream, cluster,
                                                cooperative)
            if constant:
                last.set_shape(grid, block, shared_mem, stream, config)
        last.unpacked()  # the buffer holds these arguments, not an fast-path function's
        try:
            if not state.pack(args):
                self._repack(state, args)
        except LaunchArgumentError:
            raise
        except arguments.PACK_ERRORS as exc:
            raise state.packer.fail(args, exc) from None
        rc = state.launch(config, state.func, state.pointers, state.null)
        if rc:
            self._failed(rc, state, config)
        if state.own and self._fast_plan is not state.pack:
            _fast_path.install(self, state)

    def _failed(self, rc: int, state: _ThreadState, config) -> None:
        """The driver refused the launch: retried, or the DriverError (_launch_failure.py)."""
        _launch_failure.failed(self.name, rc, state, config)

    def _repack(self, state: _ThreadState, args) -> None:
        types = tuple(map(type, args))
        pack = state.pack = state.packer.plan(types)
        state.types = types
        if not pack(args):  # right types, but a guard failed (e.g. an array on another device)
            raise state.packer.fail(args, None)

    # ---- slow path: resolution, layout, checks ----------------------------------------------

    def _loaded(self):
        return self._module

    def _function(self, dev: Device):
        func = self._functions.get(dev.ordinal)
        if func is None:
            module = self._loaded()
            func = self._functions[dev.ordinal] = module.function(module.symbol(self.name), dev)
        return func

    def _types(self):
        """C types and parameter names: declared signature, mangled name, or the source."""
        if self._signature is not None:
            return _signature.signature_types(self._signature)
        module = self._loaded()
        types = _signature.mangled_types(module.symbol(self.name))
        if types is not None:
            return types, None
        source = self._source or module.code.source
        if source:
            found = _signature.source_types(source, self.name)
            if found is not None:
                self._from_source = True
                return found
        return None, None

    def _params_for(self, dev: Device, func):
        if self._params is None:
            types, names = self._types()
            layout = _driver_layout(func)
            try:
                self._params = _signature.build_params(types, layout, names)
            except LaunchArgumentError:
                # Types read from the source can be wrong where the driver's layout is not
                # (a parameter pack, a macro standing for a type): trust the layout then.
                if layout is None or self._signature is not None or not self._from_source:
                    raise
                self._params = _signature.build_params(None, layout)
        return self._params

    @property
    def params(self) -> tuple:
        """Per parameter: index, offset, size, C type (None where unknown), name."""
        dev = current_device()
        return self._params_for(dev, self._function(dev))

    @property
    def signature(self) -> str:
        """The kernel's signature as error messages show it."""
        return _signature.describe_signature(self.name, self.params)

    def _prepare(self) -> _ThreadState:
        dev = current_device()
        try:
            states = self._tls.states
        except AttributeError:
            states = self._tls.states = {}
        state = states.get(dev.ordinal)
        if state is None:
            state = states[dev.ordinal] = _ThreadState(self, dev)
        else:
            activate(dev, owning=True)
            state.last.set_gen(generation.value)
        state.own = _fast_path.claim(self)
        self._tls.state = state
        return state

    def _config(self, state: _ThreadState, grid, block, shared_mem, stream, cluster, cooperative):
        """(CUlaunchConfig, whether launch may find this shape again by identity), cached."""
        # Decided here, once per shape, rather than on every launch.
        constant = cluster is None and not cooperative and _constant(grid) \
            and _constant(block) and type(shared_mem) is int
        grid3, block3 = _dims(grid, "grid"), _dims(block, "block")
        dev = state.device
        max_grid, max_block, max_threads = dev.limits()
        for axis in range(3):
            if block3[axis] > max_block[axis] or grid3[axis] > max_grid[axis]:
                raise ValueError(f"{self.name}: grid {grid3} / block {block3} exceeds device "
                                 f"{dev.ordinal}'s limits (grid {max_grid}, block {max_block})")
        if block3[0] * block3[1] * block3[2] > max_threads:
            raise ValueError(f"{self.name}: block {block3} has more than the device's "
                             f"{max_threads} threads per block")
        shared_mem = byte_count(shared_mem, "shared_mem", self.name)
        if shared_mem > state.smem.nbytes:
            self._enable_smem(state, shared_mem)
        drv = driver.api()
        cfg = drv.ffi.new("CUlaunchConfig *")
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid3
        cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = block3
        cfg.sharedMemBytes = shared_mem
        cfg.hStream = self._stream_handle(state, stream)
        if cluster is not None or cooperative:
            attrs = drv.ffi.new("CUlaunchAttribute[2]")
            n = 0
            if cluster is not None:
                attrs[n].id = _CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
                dims = attrs[n].value.clusterDim
                dims.x, dims.y, dims.z = _dims(cluster, "cluster")
                n += 1
            if cooperative:
                attrs[n].id = _CU_LAUNCH_ATTRIBUTE_COOPERATIVE
                attrs[n].value.cooperative = 1
                n += 1
            cfg.attrs, cfg.numAttrs = attrs, n
            _keep[cfg] = attrs  # the config points into attrs: they live and die together
        if len(state.configs) >= _MAX_CONFIGS:
            state.configs.clear()
        try:
            state.configs[grid, block, shared_mem, stream, cluster, cooperative] = cfg, constant
        except TypeError:  # an unhashable grid (a list): launchable, just not cached
            pass
        return cfg, constant

    def _stream_handle(self, state: _ThreadState, stream):
        if stream is None:
            return driver.api().ffi.NULL
        from .stream import launch_handle  # deferred: only this path needs it

        return launch_handle(stream, state.device, self.name, state.last)

    def _enable_smem(self, state: _ThreadState, nbytes: int) -> None:
        dev = state.device
        limit = dev.attribute(_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        if nbytes > limit:
            raise ValueError(f"{self.name}: shared_mem={nbytes} exceeds device {dev.ordinal}'s "
                             f"{limit} bytes of shared memory per block")
        with self._lock:
            if nbytes > state.smem.nbytes:
                drv = activate(dev)
                driver.check(drv.cuFuncSetAttribute(
                    state.func, _CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes),
                    "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)")
                state.smem.nbytes = nbytes


def symbol_name(name, what: str) -> str:
    """``name`` checked before it reaches the driver, which reads a C string: "k\\0evil" would
    resolve the kernel k.  Raises TypeError, ValueError."""
    if not isinstance(name, str):
        raise TypeError(f"a {what} must be a str such as 'saxpy' or 'scale<float>', not "
                        f"{type(name).__name__}")
    if "\0" in name:
        raise ValueError(f"{what} {name!r} contains a NUL character, where the driver would cut "
                         f"it short (to {name[:name.index(chr(0))]!r}); remove it")
    if not name:
        raise ValueError(f"the {what} is empty; give it as declared in the source")
    return name


def _driver_layout(func):
    """[(offset, size)] of each parameter from the driver (CUDA 12.4+), else None."""
    drv = driver.init()
    if drv.version < 12040:
        return None
    try:
        get = drv.cuFuncGetParamInfo
    except AttributeError:
        return None
    offset, size = drv.ffi.new("size_t *"), drv.ffi.new("size_t *")
    layout = []
    while True:
        rc = get(func, len(layout), offset, size)
        if rc == _CUDA_ERROR_INVALID_VALUE:  # past the last parameter
            return layout
        if rc:
            return None
        layout.append((offset[0], size[0]))


class Kernel(GpuState, KernelOccupancy, _partial):
    """A kernel of a loaded module.  Call it as ``kernel(grid, block, args, shared_mem=0, stream=None)``;
    occupancy queries beyond ``occupancy`` come from :class:`KernelOccupancy` (occupancy.py).

    Raises :class:`LaunchArgumentError` for arguments that do not fit, ``TypeError`` for a grid,
    block, cluster or ``shared_mem`` that is no integer, ``ValueError`` for a dimension outside
    1..2**32-1 or ``shared_mem`` outside 0..2**32-1 (the driver's unsigned int), a stream handle
    outside 0..2**64-1, a grid or block beyond the device's limits, :class:`DriverError` when
    the launch fails."""

    # A partial over the bound ``_KernelState.launch``: CPython calls it through vectorcall, while an
    # instance with a Python ``__call__`` pays for a tuple and a keyword dict on every launch
    # (about 0.3 us, a tenth of the whole launch).

    _SEND_INSTEAD = ("send the ObjectCode (it pickles) and the kernel's name, and call "
                     "obj.load().get_kernel(name) in the receiving process")

    def __new__(cls, module, name: str, signature: str | None = None):
        return cls._wrap(_KernelState(module, name, signature=signature))

    _kernel_state: _KernelState

    @classmethod
    def _wrap(cls, kernel_state: _KernelState):
        self = functools.partial.__new__(cls, kernel_state.launch)
        self._kernel_state = kernel_state
        kernel_state._kernel = weakref.ref(self)
        return self

    def __repr__(self) -> str:
        return f"<cudaload.{type(self).__name__} {self.name}>"

    @property
    def name(self) -> str:
        return self._kernel_state.name

    @property
    def params(self) -> tuple:
        """Per parameter: index, offset, size, C type (None where unknown), name."""
        return self._kernel_state.params

    @property
    def signature(self) -> str:
        """The kernel's signature as error messages show it."""
        return self._kernel_state.signature

    @property
    def attributes(self) -> KernelAttributes:
        """Registers, block size limit, shared/const/local bytes, versions: read when first used."""
        return KernelAttributes(self._kernel_state, current_device())

    def occupancy(self, block, shared_mem: int = 0) -> Occupancy:
        """Active blocks per multiprocessor, and a block size that fills it.  Raises ValueError."""
        return _occupancy(self._kernel_state, block, shared_mem)
