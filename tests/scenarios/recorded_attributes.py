"""Kernel attributes and occupancy through the real Kernel onto the recording driver of
tests/_fakelibs.py (named by $CUDALOAD_LIBCUDA), one fresh process each.

    python -m tests.scenarios.recorded_attributes SCENARIO

Each scenario returns what it saw, printed as JSON on the last line.  The recording driver and
cudaload are loaded inside the scenarios, so importing this module loads nothing.
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import sys

SOURCE = 'extern "C" __global__ void k(float *x, int n) { if (n) x[0] = 1.0f; }'


@functools.cache
def fake() -> ctypes.CDLL:
    return ctypes.CDLL(os.environ["CUDALOAD_LIBCUDA"])


def _kernel():
    from cudaload import Program

    return Program(SOURCE).compile().load().get_kernel("k")


def _query() -> list:
    """[block, dynamic shared memory] of the last active-blocks query, the shared memory and
    block size limit of the last potential-block-size query, and whether it had a callback."""
    block, smem, potential, limit = (ctypes.c_int(), ctypes.c_size_t(), ctypes.c_size_t(),
                                     ctypes.c_int())
    callback = fake().fake_occupancy(ctypes.byref(block), ctypes.byref(smem),
                                     ctypes.byref(potential), ctypes.byref(limit))
    return [block.value, smem.value, potential.value, limit.value, bool(callback)]


def attributes() -> dict:
    import cudaload

    k = _kernel()
    out = {"before": fake().fake_attribute_reads()}
    attrs = k.attributes
    out["made"] = fake().fake_attribute_reads()  # making the view reads nothing
    out["num_regs"] = attrs.num_regs
    out["num_regs_again"] = attrs.num_regs
    out["after_one"] = fake().fake_attribute_reads()  # read once, then kept
    out["dict"] = attrs.as_dict()
    out["repr"] = repr(attrs)
    reads = fake().fake_attribute_reads()
    attrs.max_dynamic_shared_size_bytes
    out["dynamic_reads"] = fake().fake_attribute_reads() - reads  # read each time
    out["device"] = attrs.device.ordinal
    import pickle

    try:
        pickle.dumps(attrs)
        out["pickled"] = None
    except TypeError as err:
        out["pickled"] = [type(err).__name__, err.hint]
    occ = pickle.loads(pickle.dumps(k.occupancy(128)))
    out["occupancy_pickles"] = [occ.block, occ.active_blocks_per_multiprocessor]
    raw = cudaload.RawKernel(SOURCE, "k")  # compiled and loaded by its first attribute read
    out["raw"] = [raw.attributes.max_threads_per_block, raw.attributes.binary_version]
    return out


def occupancy() -> dict:
    from cudaload.launch.attributes import Occupancy

    k = _kernel()
    out = {}
    for name, block, smem in (("256", 256, 0), ("16x16", (16, 16), 0), ("list", [8, 4, 2], 0),
                              ("100", 100, 0), ("768", 768, 0), ("smem", 256, 32768),
                              ("big_smem", 256, 100000)):
        occ = k.occupancy(block, shared_mem=smem)
        out[name] = {n: getattr(occ, n) for n in Occupancy.__slots__}
        out[name]["query"] = _query()
        value = ctypes.c_int()
        out[name]["set"] = [fake().fake_func_set(ctypes.byref(value)), value.value]
    out["repr"] = repr(k.occupancy(256))
    return out


def refusals() -> dict:
    k = _kernel()
    out = {}
    for name, block, smem in (("zero", 0, 0), ("negative", -32, 0), ("too_many", 1024, 0),
                              ("float", 2.5, 0), ("str", "256", 0), ("bool", True, 0),
                              ("four_dims", (4, 4, 4, 1), 0), ("zero_dim", (32, 0), 0),
                              ("smem_negative", 256, -1), ("smem_float", 256, 1.5),
                              ("smem_too_much", 256, 232448)):
        try:
            k.occupancy(block, shared_mem=smem)
            out[name] = None
        except Exception as err:  # noqa: BLE001  (reported, whatever it is)
            out[name] = [type(err).__name__, str(err)]
    out["last_query"] = _query()  # none of the refused ones reached the driver
    return out


SCENARIOS = {f.__name__: f for f in (attributes, occupancy, refusals)}

if __name__ == "__main__":
    print(json.dumps(SCENARIOS[sys.argv[1]](*sys.argv[2:])))
