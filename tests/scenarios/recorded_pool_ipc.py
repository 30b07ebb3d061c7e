"""Memory pools shared between processes, onto the recording driver of tests/_fake_pool_ipc.py
(named by $CUDALOAD_LIBCUDA), one fresh process each.

    python -m tests.scenarios.recorded_pool_ipc SCENARIO [ARG]

``shares`` exports a pool and a buffer of it, and a spawned child (multiprocessing) imports
them; ``receives`` unpickles a pool's handle that ``shares`` printed, in a process outside its
multiprocessing family.  Each prints what it saw as JSON on the last line.
"""

from __future__ import annotations

import ctypes
import json
import multiprocessing
import os
import pickle
import sys

from tests.scenarios.recorded_ipc import address
from tests.scenarios.recorded_memory import calls, refusal


def _frees() -> int:
    return ctypes.CDLL(os.environ["CUDALOAD_LIBCUDA"]).fake_frees()


def _child(pool_handle, buffer_handle) -> dict:
    """In the spawned process: the buffer refused before its pool, then both imported."""
    import cudaload

    out = {"early": refusal(lambda: cudaload.import_ipc(buffer_handle)),
           "fd_is_own": pool_handle.fd != -1 and os.fstat(pool_handle.fd).st_size == 8}
    pool = cudaload.import_ipc(pool_handle)
    out["pool"] = [type(pool).__name__, address(pool.handle), pool.ipc, repr(pool)]
    out["reexport"] = refusal(pool.export_ipc)
    buf = cudaload.import_ipc(buffer_handle)
    out["buffer"] = [type(buf).__name__, buf.ptr, buf.nbytes]
    out["stream_free"] = refusal(lambda: buf.free(stream=cudaload.Stream()))
    frees = _frees()
    buf.free()
    buf.free()  # released once
    out["freed"] = _frees() - frees
    del buf, pool  # the buffer kept its pool: both garbage now, the pool destroyed
    out["calls"] = [c for c in calls() if c.startswith("cuMemPool")]
    return out


def shares() -> dict:
    import cudaload

    pool = cudaload.MemoryPool(ipc=True)
    s = cudaload.Stream()
    buf = cudaload.alloc(256, stream=s, pool=pool)
    pool_handle, buffer_handle = pool.export_ipc(), buf.export_ipc()
    out = {"buffer_ptr": buf.ptr, "pool": address(pool.handle), "ipc": pool.ipc,
           "types": [type(pool_handle).__name__, type(buffer_handle).__name__],
           "buffer_handle": [buffer_handle.nbytes, buffer_handle.offset,
                             buffer_handle.pool_id == pool_handle.pool_id],
           "equal": pickle.loads(pickle.dumps(buffer_handle)) == buffer_handle,
           "pickled_pool": pickle.dumps(pool_handle).hex()}
    out["exported"] = [c for c in calls() if c.startswith(("cuMemPool", "cuMemAllocFromPool"))]
    with multiprocessing.get_context("spawn").Pool(1) as child:
        out["child"] = child.apply(_child, (pool_handle, buffer_handle))
    out["refused"] = _refusals(cudaload, s, pool_handle)
    fd = pool_handle.fd
    del pool_handle  # garbage: its descriptor is closed
    out["fd_closed"] = refusal(lambda: os.fstat(fd)) is not None
    return out


def _refusals(cudaload, s, pool_handle) -> dict:
    closed = cudaload.MemoryPool(ipc=True)
    closed.close()
    plain = cudaload.MemoryPool()
    before = len(calls())
    refused = {
        "plain_pool": refusal(lambda: cudaload.MemoryPool().export_ipc()),
        "device_pool": refusal(lambda: cudaload.memory_pool().export_ipc()),
        "plain_pool_memory": refusal(lambda: cudaload.alloc(64, stream=s, pool=plain).export_ipc()),
        "default_pool_memory": refusal(lambda: cudaload.alloc(64, stream=s).export_ipc()),
        "here": refusal(lambda: cudaload.import_ipc(pool_handle)),
        "not_bool": refusal(lambda: cudaload.MemoryPool(ipc=1)),
        "pickle_pool": refusal(lambda: pickle.dumps(cudaload.MemoryPool(ipc=True))),
        "closed": refusal(closed.export_ipc),
    }
    exports = ("cuMemPoolExport", "cuMemPoolImport")
    return {**refused, "calls": [c for c in calls()[before:] if c.startswith(exports)]}


def receives(pickled: str) -> dict:
    import cudaload  # noqa: F401  (what the unpickling names)

    return {"error": refusal(lambda: pickle.loads(bytes.fromhex(pickled)))}


def old_driver() -> dict:
    import cudaload

    return {"error": refusal(lambda: cudaload.MemoryPool(ipc=True)),
            "plain": repr(cudaload.MemoryPool())}


def no_fd_pools() -> dict:
    import cudaload

    ctypes.CDLL(os.environ["CUDALOAD_LIBCUDA"]).fake_no_fd_pools()
    return {"error": refusal(lambda: cudaload.MemoryPool(ipc=True)),
            "calls": [c for c in calls() if c.startswith("cuMemPool")]}


SCENARIOS = {f.__name__: f for f in (shares, receives, old_driver, no_fd_pools)}

if __name__ == "__main__":
    print(json.dumps(SCENARIOS[sys.argv[1]](*sys.argv[2:])))
