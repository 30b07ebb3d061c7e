"""HostBuffer.__dlpack__ (pinned host memory as kDLCUDAHost) onto the memory-logging recording
driver of tests/_fake_memory.py (named by $CUDALOAD_LIBCUDA), in a fresh process each:
``python -m tests.scenarios.recorded_pinned_dlpack SCENARIO`` prints what it saw as JSON on its
last line.  cudaload is loaded inside the scenarios.
"""

from __future__ import annotations

import gc
import json
import sys

from tests.scenarios.recorded_dlpack import consume, errors, fields


def exports() -> dict:
    import cudaload

    h = cudaload.alloc_host(64)
    h.view[:] = bytes(range(64))
    out = {"host_ptr": h.host_ptr, "device": list(h.__dlpack_device__()),
           "legacy": fields(h.__dlpack__()),
           "versioned": fields(h.__dlpack__(max_version=(1, 0))),
           "as_host": fields(h.__dlpack__(dl_device=(1, 0), max_version=(1, 0))),
           "own_device": fields(h.__dlpack__(dl_device=(3, 0)))}
    copied = h.__dlpack__(copy=True, max_version=(1, 0))
    out["copy"] = fields(copied)
    out["other_device"] = errors(lambda: h.__dlpack__(dl_device=(2, 0)))
    out["bad_stream"] = errors(lambda: h.__dlpack__(stream=0))
    out["bad_copy"] = errors(lambda: h.__dlpack__(copy="yes"))
    held = h.__dlpack__()
    release = consume(held)
    out["free_while_viewed"] = errors(h.free)
    release()
    del held, copied
    gc.collect()
    h.free()
    out["freed"] = errors(h.__dlpack__)
    return out


def numpy_views() -> dict:
    import numpy as np

    import cudaload

    h = cudaload.alloc_host(16)
    h.view[:] = bytes(range(16))
    out = {"host_ptr": h.host_ptr}
    try:
        arr = np.from_dlpack(h)
    except Exception as err:  # noqa: BLE001  (NumPy's word on kDLCUDAHost, reported)
        out["own"] = [type(err).__name__, str(err)]
    else:
        out["own"] = [arr.ctypes.data, bytes(arr).hex()]
        del arr
    arr = np.from_dlpack(h, device="cpu")  # kDLCPU: the same bytes, no copy
    arr[0] = 99
    out["cpu"] = [arr.ctypes.data, int(h.view[0]), arr.dtype.str, list(arr.shape)]
    del arr
    gc.collect()
    h.free()
    return out


SCENARIOS = {f.__name__: f for f in (exports, numpy_views)}

if __name__ == "__main__":
    print(json.dumps(SCENARIOS[sys.argv[1]]()))
