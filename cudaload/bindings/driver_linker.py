"""Checked calls into the driver's linker (``cuLink*``): device code linked into one CUBIN where
nvJitLink is missing or cannot link it.

The driver links in the context current in the calling thread (the caller makes one current) and
for that context's device unless ``CU_JIT_TARGET`` says otherwise.  It links CUBIN, PTX, fatbins
and libraries; LTO IR only nvJitLink links (the driver's own LTO is deprecated since CUDA 12.0).
Which options it is given, and when it is used, is compile/link/linker.py's.
"""

from __future__ import annotations

from . import driver
from .nvjitlink import undefined_symbol
from ..errors import LinkError

__all__ = ["link", "INPUTS", "LOG_BYTES"]

# ObjectCode kind -> the driver's input type
INPUTS = {"cubin": "CU_JIT_INPUT_CUBIN", "ptx": "CU_JIT_INPUT_PTX",
          "fatbin": "CU_JIT_INPUT_FATBINARY", "library": "CU_JIT_INPUT_LIBRARY"}
LOG_BYTES = 1 << 16  # each log's buffer; the driver cuts a longer log short


def link(inputs, options) -> tuple[bytes, str]:
    """(CUBIN, info log) of ``inputs``, (kind, bytes, name) each, linked by the driver in the
    current context with ``options``, (CUjit_option name, int value) pairs.  Raises LinkError
    with both logs when the driver refuses an input, the link, an option or the target (one newer
    than it knows: CUDA_ERROR_INVALID_VALUE from cuLinkCreate), DriverError when it refuses a
    call otherwise (no context current: CUDA_ERROR_INVALID_CONTEXT)."""
    drv = driver.init()
    ffi = drv.ffi
    info, error = ffi.new("char[]", LOG_BYTES), ffi.new("char[]", LOG_BYTES)
    names = ["CU_JIT_INFO_LOG_BUFFER", "CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES",
             "CU_JIT_ERROR_LOG_BUFFER", "CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES",
             *(name for name, _value in options)]
    values = [info, ffi.cast("void *", LOG_BYTES), error, ffi.cast("void *", LOG_BYTES),
              *(ffi.cast("void *", value) for _name, value in options)]
    keys = ffi.new("CUjit_option[]", [ffi.integer_const(n) for n in names])
    state = ffi.new("CUlinkState *")
    rc = drv.cuLinkCreate_v2(len(names), keys, ffi.new("void *[]", values), state)
    if rc == ffi.integer_const("CUDA_ERROR_INVALID_VALUE"):  # an option or target it refuses
        name, text = driver.describe(int(rc))
        given = ", ".join(f"{option}={value}" for option, value in options)
        raise LinkError(f"cuLinkCreate failed: {name} ({int(rc)}): {text}: this driver refuses "
                        f"one of the options {given}, such as a target it does not know",
                        log=ffi.string(error).decode(errors="replace").strip(), linker="driver",
                        result=name, function="cuLinkCreate")
    driver.check(rc, "cuLinkCreate")
    try:
        rc, failed, call = 0, "cuLinkComplete", "cuLinkComplete"
        for kind, data, name in inputs:
            image = ffi.new("char[]", data)  # PTX is read as a C string: this copy ends in NUL
            rc = drv.cuLinkAddData_v2(state[0], ffi.integer_const(INPUTS[kind]), image,
                                      len(data), name.encode(), 0, ffi.NULL, ffi.NULL)
            if rc:
                failed, call = f"cuLinkAddData ({kind} input {name})", "cuLinkAddData"
                break
        cubin, size = ffi.new("void **"), ffi.new("size_t *")
        if not rc:
            rc = drv.cuLinkComplete(state[0], cubin, size)
        info_log = ffi.string(info).decode(errors="replace").strip()
        if rc:
            log = ffi.string(error).decode(errors="replace").strip()
            name, text = driver.describe(int(rc))
            raise LinkError(f"{failed} failed: {name} ({int(rc)}): {text}", log=log,
                            info_log=info_log, symbol=undefined_symbol(log), linker="driver",
                            result=name, function=call)
        return ffi.buffer(ffi.cast("char *", cubin[0]), size[0])[:], info_log  # before destroy
    finally:
        drv.cuLinkDestroy(state[0])
