"""Occupancy queries beyond one block size and the settable kernel attributes through the real
Kernel onto the recording driver (tests/_fakelibs.py); run as
``python -m tests.scenarios.recorded_occupancy SCENARIO``, which prints the JSON of what it saw.
"""

from __future__ import annotations

import ctypes
import json
import sys

from tests.scenarios.recorded_attributes import _kernel, _query, fake
from tests.scenarios.recorded_streams import raised as _error


def queries() -> dict:
    k = _kernel()
    out = {"plain": k.max_potential_block_size(), "limited": k.max_potential_block_size(
        block_size_limit=500)}
    out["plain_query"] = _query()
    asked = []
    out["by_function"] = k.max_potential_block_size(
        lambda block: asked.append(block) or block * 128)  # 96 KiB for 768 threads: 256
    out["function_query"] = _query()
    out["asked"] = asked
    out["function_raises"] = _error(lambda: k.max_potential_block_size(lambda b: 1 / 0))
    out["function_float"] = _error(lambda: k.max_potential_block_size(lambda b: 1.5))
    out["negative_limit"] = _error(lambda: k.max_potential_block_size(block_size_limit=-1))
    out["available"] = [k.available_dynamic_shared_memory(1, 256),
                        k.available_dynamic_shared_memory(4, (16, 16))]
    out["available_zero"] = _error(lambda: k.available_dynamic_shared_memory(0, 256))
    out["clusters"] = [k.max_active_clusters(64, 128, 2), k.max_active_clusters(64, 128, (2, 2))]
    out["cluster_size"] = k.max_potential_cluster_size(64, 128)
    k.attributes.non_portable_cluster_size_allowed = 1
    out["cluster_size_non_portable"] = k.max_potential_cluster_size(64, 128)
    return out


def attributes() -> dict:
    k = _kernel()
    attrs = k.attributes
    names = ("cache_mode_ca", "cluster_size_must_be_set", "preferred_shared_memory_carveout",
             "required_cluster_width", "required_cluster_height", "required_cluster_depth",
             "non_portable_cluster_size_allowed", "cluster_scheduling_policy_preference")
    out = {"read": {n: getattr(attrs, n) for n in names}}
    attrs.preferred_shared_memory_carveout = 50
    attrs.required_cluster_width = 2
    value = ctypes.c_int()
    out["set_call"] = [fake().fake_func_set(ctypes.byref(value)), value.value]
    out["read_back"] = [attrs.preferred_shared_memory_carveout, k.attributes.required_cluster_width]
    out["refused"] = _error(lambda: setattr(attrs, "preferred_shared_memory_carveout", 101))
    out["float"] = _error(lambda: setattr(attrs, "required_cluster_width", 2.0))
    out["read_only"] = _error(lambda: setattr(attrs, "cache_mode_ca", 1))
    return out


def shared_memory_opt_in() -> dict:
    """Launches asking for more dynamic shared memory than the default 48 KiB: the kernel's limit
    on the device is raised once for every thread that launches it, and only upward."""
    import threading

    from tests.scenarios.recorded_launches import last, layout

    layout((0, 8), (8, 4))  # k(float *x, int n)
    k = _kernel()

    def last_set() -> list:
        value = ctypes.c_int()
        return [fake().fake_func_set(ctypes.byref(value)), value.value]

    out = {}
    k(1, 32, (0, 1), shared_mem=100_000)
    out["raised"] = last_set()
    other = threading.Thread(target=lambda: k(1, 32, (0, 1), shared_mem=90_000))
    other.start()
    other.join()
    out["other_thread_below"] = last_set()  # within the limit the first launch set
    k(1, 32, (0, 1), shared_mem=120_000)
    out["raised_again"] = last_set()
    out["launched_with"] = last(12)[1][6]
    out["beyond_the_device"] = _error(lambda: k(1, 32, (0, 1), shared_mem=232_449))
    return out


SCENARIOS = {f.__name__: f for f in (queries, attributes, shared_memory_opt_in)}

if __name__ == "__main__":
    print(json.dumps(SCENARIOS[sys.argv[1]]()))
