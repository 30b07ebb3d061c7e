"""Which function an entry point declared with the 13.0 ABI resolves to on the driver library
named by CUDALOAD_LIBCUDA, in a fresh process.

    python -m tests.scenarios.driver_abi SCENARIO

Each prints what it found as JSON on its last line.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys


def prefetch_symbol() -> None:
    """The address cudaload resolves cuMemPrefetchAsync_v2 to, the versioned symbol's own, and
    what cuGetProcAddress gives for the base name at the driver's version."""
    from cudaload.bindings import driver

    drv = driver.api()
    resolved = int(drv.ffi.cast("uintptr_t", drv.cuMemPrefetchAsync_v2))
    lib = ctypes.CDLL(os.environ["CUDALOAD_LIBCUDA"])
    exported = ctypes.cast(lib.cuMemPrefetchAsync_v2, ctypes.c_void_p).value
    pfn, status = drv.ffi.new("void **"), drv.ffi.new("CUdriverProcAddressQueryResult *")
    rc = drv._lib.cuGetProcAddress_v2(b"cuMemPrefetchAsync", pfn, drv.version, 0, status)
    base = int(drv.ffi.cast("uintptr_t", pfn[0])) if rc == 0 else None
    print(json.dumps({"version": drv.version, "resolved": resolved, "exported": exported,
                      "base": base}))


SCENARIOS = {f.__name__: f for f in (prefetch_symbol,)}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]]()
