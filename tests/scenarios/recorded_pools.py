"""Memory pools, allocations from them and managed memory advice onto the recording driver of
tests/_fake_pools.py (named by $CUDALOAD_LIBCUDA), one fresh process each.

    python -m tests.scenarios.recorded_pools SCENARIO

Each scenario returns the driver calls it caused (and what it saw), printed as JSON on the last
line.  cudaload and the driver are loaded inside the scenarios.
"""

from __future__ import annotations

import copy
import gc
import json
import pickle
import sys

from tests.scenarios.recorded_memory import calls, refusal


def refusals(cases: dict) -> dict:
    """What each of ``cases`` raised, and how many driver calls the refusals made (none, where
    every argument is checked before the driver)."""
    before = len(calls())
    out = {name: refusal(call) for name, call in cases.items()}
    out["driver_calls"] = len(calls()) - before
    return out


def pool_made() -> dict:
    import cudaload

    pool = cudaload.MemoryPool(1, release_threshold=1 << 30, max_size=1 << 32)
    s = cudaload.Stream(device=1)
    out = {"repr": repr(pool), "device": pool.device.ordinal, "threshold": pool.release_threshold}
    buf = cudaload.alloc(1000, stream=s, pool=pool)
    out["buffer"] = [buf.ptr, buf.device.ordinal, type(buf).__name__]
    out["used"], out["reserved"] = pool.used, pool.reserved
    cudaload.alloc(24, stream=s, pool=pool)  # garbage at once: freed on s
    gc.collect()
    buf.free(stream=s)
    pool.trim(16)
    out["after_trim"] = [pool.used, pool.reserved, pool.used_high, pool.reserved_high]
    pool.reset_high()
    out["after_reset"] = [pool.used_high, pool.reserved_high]
    out["policies"] = [pool.follow_event_dependencies, pool.allow_opportunistic,
                       pool.allow_internal_dependencies]
    pool.allow_opportunistic = False
    out["opportunistic"] = pool.allow_opportunistic
    pool.close()
    pool.close()  # a second close does nothing
    out["closed_repr"] = repr(pool)
    out["closed_use"] = refusal(lambda: pool.used)
    out["closed_alloc"] = refusal(lambda: cudaload.alloc(8, stream=s, pool=pool))
    out["calls"] = calls()
    return out


def pool_collected() -> dict:
    import cudaload

    pool = cudaload.MemoryPool()
    del pool
    gc.collect()
    return {"calls": calls()}


def pool_refused() -> dict:
    import cudaload

    pool, s = cudaload.MemoryPool(), cudaload.Stream()
    current = cudaload.memory_pool()

    def setter(name, value):
        return lambda: setattr(pool, name, value)

    out = refusals({
        "float_device": lambda: cudaload.MemoryPool(0.5),
        "no_device": lambda: cudaload.MemoryPool(7),
        "negative_max": lambda: cudaload.MemoryPool(max_size=-1),
        "huge_max": lambda: cudaload.MemoryPool(max_size=1 << 64),
        "text_threshold": lambda: cudaload.MemoryPool(release_threshold="1G"),
        "no_stream": lambda: cudaload.alloc(8, pool=pool),
        "not_a_pool": lambda: cudaload.alloc(8, stream=s, pool="default"),
        "other_device": lambda: cudaload.alloc(8, device=1, stream=s, pool=pool),
        "negative_trim": lambda: pool.trim(-1),
        "float_trim": lambda: pool.trim(1.5),
        "set_used": setter("used", 0),
        "set_high": setter("used_high", 0),
        "int_policy": setter("allow_opportunistic", 1),
        "negative_threshold": setter("release_threshold", -1),
        "close_current": current.close,
        "pickle": lambda: pickle.dumps(pool),
        "copy": lambda: copy.copy(current),
    })
    out["current_repr"] = repr(current)
    return out


def pool_current() -> dict:
    import cudaload

    s = cudaload.Stream()
    buf = cudaload.alloc(64, stream=s, pool=cudaload.memory_pool())
    out = {"ptr": buf.ptr}
    buf.free(stream=s)
    out["calls"] = calls()
    return out


def pool_old_driver() -> dict:
    import cudaload

    out = {"max_size": refusal(lambda: cudaload.MemoryPool(max_size=1 << 20))}
    cudaload.MemoryPool()  # without a maximum size: made as on any driver
    m = cudaload.alloc_managed(256)
    out["advise"] = refusal(lambda: m.advise("read_mostly"))
    try:
        m.advise("read_mostly")
    except cudaload.CudaLoadError as err:
        out["advise_kinds"] = [type(err).__name__, isinstance(err, cudaload.MissingSymbolError),
                               err.symbol]
    out["read_back"] = m.read_mostly  # cuMemRangeGetAttribute is there (CUDA 8.0)
    out["calls"] = calls()
    return out


def advice() -> dict:
    import cudaload

    m = cudaload.alloc_managed(4096)
    out = {"start": [m.read_mostly, m.preferred_location, m.accessed_by,
                     m.last_prefetch_location]}
    m.advise("read_mostly")
    m.advise("preferred_location", 1)
    m.advise("accessed_by")
    m.advise("accessed_by", "cpu")
    out["set"] = [m.read_mostly, m.preferred_location, m.accessed_by]
    m.advise("preferred_location", "cpu")
    out["preferred_cpu"] = m.preferred_location
    m.advise("read_mostly", unset=True)
    m.advise("preferred_location", unset=True)
    m.advise("accessed_by", 0, unset=True)
    out["unset"] = [m.read_mostly, m.preferred_location, m.accessed_by]
    m.prefetch(1)
    out["prefetched"] = m.last_prefetch_location
    m.prefetch("cpu")
    out["prefetched_cpu"] = m.last_prefetch_location
    out["calls"] = calls()
    return out


def advice_refused() -> dict:
    import cudaload

    m = cudaload.alloc_managed(64)
    out = refusals({
        "unknown": lambda: m.advise("read_only"),
        "not_text": lambda: m.advise(3),
        "read_mostly_device": lambda: m.advise("read_mostly", 0),
        "unset_preferred_device": lambda: m.advise("preferred_location", 0, unset=True),
        "int_unset": lambda: m.advise("accessed_by", unset=1),
        "float_device": lambda: m.advise("accessed_by", 1.5),
        "no_device": lambda: m.advise("accessed_by", 7),
        "gpu_text": lambda: m.advise("accessed_by", "gpu"),
    })
    m.free()
    out["freed"] = refusal(lambda: m.advise("read_mostly"))
    out["freed_read"] = refusal(lambda: m.preferred_location)
    return out


def accessible() -> dict:
    import cudaload

    kinds = {"device": cudaload.alloc(16), "host": cudaload.alloc_host(16),
             "managed": cudaload.alloc_managed(16), "pool": cudaload.alloc(
                 16, stream=cudaload.Stream(), pool=cudaload.MemoryPool())}
    return {name: [b.is_device_accessible, b.is_host_accessible] for name, b in kinds.items()}


SCENARIOS = {f.__name__: f for f in (pool_made, pool_collected, pool_refused, pool_current,
                                     pool_old_driver, advice, advice_refused, accessible)}

if __name__ == "__main__":
    print(json.dumps(SCENARIOS[sys.argv[1]]()))
