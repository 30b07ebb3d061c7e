"""Loaded code: ``Module`` holds a cubin/PTX image and resolves its kernels per device on first use.

Drivers with the library API (CUDA 12.0+) load once for every context (``cuLibraryLoadData``);
older ones load per context (``cuModuleLoadData``).  An image the driver refuses is recompiled once
for what it can load (by what compiled it: ``compile.program.recompile_refused``) before the error is
raised.
"""

from __future__ import annotations

import _thread
import weakref

from ..bindings import driver
from ..bindings._cuda_ffi import ffi as _cuda_ffi
from .device import Device, activate, as_device, current_device
from ._graph_pins import unload as _unload
from ._unpicklable import GpuState
from ..errors import DriverError

TYPE_CHECKING = False  # true for type checkers only: kernel and memory import this module
if TYPE_CHECKING:
    from .kernel import Kernel
    from .memory import DeviceBuffer

__all__ = ["Module", "REFUSALS", "load_once"]

# The driver's answers for an image it cannot load here (recompiling may help).
REFUSALS = frozenset(map(_cuda_ffi.integer_const, (
    "CUDA_ERROR_INVALID_IMAGE", "CUDA_ERROR_NO_BINARY_FOR_GPU", "CUDA_ERROR_INVALID_PTX",
    "CUDA_ERROR_UNSUPPORTED_PTX_VERSION")))

def load_once(obj) -> Module:
    """The Module of ``obj`` shared by every copy of it (``ObjectCode.load()``): loaded on the first
    call, under the lock the copies share, so code compiled once is loaded once."""
    driver.init()  # in a forked child: ForkedProcessError, before a lock the parent held
    slot = obj._module
    with slot.lock:  # one load per code; other code loads meanwhile
        module = slot.module
        if module is None:
            module = slot.module = Module(obj)
    return module


class Module(GpuState):
    """A loaded image; ``get_kernel`` and ``get_global`` find what it defines.

    Raises :class:`DriverError` when the driver refuses the image even after one recompilation."""

    _SEND_INSTEAD = ("send its ObjectCode (module.code, which pickles) and call .load() on it in "
                     "the receiving process")

    def __init__(self, obj):
        self._obj = obj
        self._lock = _thread.RLock()
        self._recompiled = False
        drv = driver.init()
        self._use_library = drv.version >= 12000
        self._library = None
        self._per_device: dict[int, object] = {}  # ordinal -> CUmodule (per-context loading)
        self._kernels: dict[str, object] = {}  # symbol -> CUkernel (library loading)
        if self._use_library:
            self._retry(self._load_library)
        else:
            self._retry(lambda: self._context_module(current_device()))

    @property
    def code(self):
        """The ObjectCode this module was loaded from."""
        return self._obj

    def _image(self, drv):
        code = self._obj.code
        if getattr(self._obj, "kind", "cubin") == "ptx" and not code.endswith(b"\0"):
            code += b"\0"  # the driver reads PTX as a C string
        return drv.ffi.new("char[]", code)

    def _loading(self, call: str) -> str:
        """``call`` named with the code it loads (its program or file), for the error."""
        name = getattr(self._obj, "name", None)
        return f"{call} of {name}" if name else call

    def _load_library(self) -> None:
        drv = driver.init()
        out = drv.ffi.new("CUlibrary *")
        null = drv.ffi.NULL
        driver.check(drv.cuLibraryLoadData(out, self._image(drv), null, null, 0, null, null, 0),
                     self._loading("cuLibraryLoadData"))
        self._library = out[0]
        self._kernels.clear()
        weakref.finalize(self, _unload, "cuLibraryUnload", out[0], None).atexit = False

    def _context_module(self, dev: Device):
        mod = self._per_device.get(dev.ordinal)
        if mod is None:
            drv = activate(dev, owning=True)
            out = drv.ffi.new("CUmodule *")
            driver.check(drv.cuModuleLoadData(out, self._image(drv)),
                         self._loading("cuModuleLoadData"))
            mod = self._per_device[dev.ordinal] = out[0]
            weakref.finalize(self, _unload, "cuModuleUnload", mod, dev).atexit = False
        return mod

    def _retry(self, action):
        """Run ``action``; if the driver refuses the image, recompile once and run it again."""
        try:
            return action()
        except DriverError as err:
            if err.code not in REFUSALS or self._recompiled:
                raise
            # Imported here, after a refusal only: code made elsewhere (ObjectCode.from_bytes)
            # loads without the compile path's imports.
            from ..compile.program import recompile_refused  # deferred: only this path needs it

            fresh = recompile_refused(self._obj)
            if fresh is None:
                raise
            with self._lock:
                self._recompiled = True
                self._obj = fresh
                self._per_device.clear()
                if self._use_library:
                    self._load_library()
            return action()

    def symbol(self, name: str) -> str:
        """The symbol a kernel or name expression is compiled to (its lowered name, if any)."""
        return (getattr(self._obj, "lowered_names", None) or {}).get(name, name)

    def function(self, symbol: str, dev: Device):
        """The ``CUfunction`` of ``symbol`` in ``dev``'s primary context, loading as needed."""
        def resolve():
            drv = activate(dev, owning=True)
            out = drv.ffi.new("CUfunction *")
            if self._use_library:
                kernel = self._kernels.get(symbol)
                if kernel is None:
                    handle = drv.ffi.new("CUkernel *")
                    driver.check(drv.cuLibraryGetKernel(handle, self._library, symbol.encode()),
                                 f"cuLibraryGetKernel({symbol!r})")
                    kernel = self._kernels[symbol] = handle[0]
                driver.check(drv.cuKernelGetFunction(out, kernel), "cuKernelGetFunction")
            else:
                driver.check(drv.cuModuleGetFunction(out, self._context_module(dev),
                                                     symbol.encode()),
                             f"cuModuleGetFunction({symbol!r})")
            return out[0]
        with self._lock:
            return self._retry(resolve)

    def get_kernel(self, name: str, signature: str | None = None) -> Kernel:
        """The kernel ``name`` (or a name expression such as ``"scale<float>"``).

        ``signature`` (e.g. ``"const float*, float, int"``) declares the C types where neither the
        mangled name nor the source says them.  Raises :class:`DriverError` if there is no such
        kernel (on first use), :class:`LaunchArgumentError` for a malformed signature,
        ValueError for a name that is empty or contains NUL."""
        from .kernel import Kernel  # deferred: only this path needs it

        return Kernel(self, name, signature=signature)

    def get_global(self, name: str, device=None) -> DeviceBuffer:
        """A ``__device__``/``__constant__`` variable as a :class:`DeviceBuffer` view."""
        from .kernel import symbol_name  # deferred: only this path needs it
        from .memory import DeviceBuffer  # deferred: only this path needs it

        symbol_name(name, "variable name")
        if getattr(self._obj, "linked", False):
            raise ValueError(
                f"get_global({name!r}): this module's program was compiled with lto=True, and "
                "link-time optimisation removes the device variables its code does not need and "
                "folds the reads of those it never writes, so what the host reads or writes "
                "there would not be what the kernels use; compile it without lto=True (link it "
                "without -optimize-unused-variables) to reach its variables from the host")
        dev = as_device(device)
        drv = activate(dev, owning=True)
        ptr, size = drv.ffi.new("CUdeviceptr *"), drv.ffi.new("size_t *")
        symbol = self.symbol(name).encode()
        if self._use_library:
            rc = drv.cuLibraryGetGlobal(ptr, size, self._library, symbol)
        else:
            rc = drv.cuModuleGetGlobal_v2(ptr, size, self._context_module(dev), symbol)
        driver.check(rc, f"get_global({name!r})")
        return DeviceBuffer(ptr[0], size[0], dev, owner=self)
