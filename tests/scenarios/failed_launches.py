"""Launches and loads the recording driver of tests/_fakelibs.py refuses (fake_fail_launches,
fake_fail_loads), one fresh process each: what the launch path raises and retries.

    python -m tests.scenarios.failed_launches SCENARIO

Each scenario returns what it saw, printed as JSON on the last line.
"""

from __future__ import annotations

import json
import sys

from tests.scenarios.recorded_launches import fake, last, layout

_SRC = 'extern "C" __global__ void k(int n) {}'
_COOPERATIVE_TOO_LARGE, _OUT_OF_RESOURCES, _INVALID_CONTEXT = 720, 701, 201
_INVALID_IMAGE = 200


def _kernel():
    from cudaload import Program

    layout((0, 4))
    return Program(_SRC).compile().load().get_kernel("k")


def _raised(call) -> dict:
    """The error ``call`` raised: its type, str and driver fields."""
    try:
        call()
    except Exception as err:  # noqa: BLE001 (the type itself is what the test checks)
        return {"type": type(err).__name__, "str": str(err), "name": getattr(err, "name", None),
                "code": getattr(err, "code", None), "hint": getattr(err, "hint", None),
                "refused": fake().fake_refused_launches()}
    return {"type": None}


def cooperative_too_large() -> dict:
    k = _kernel()
    fake().fake_fail_launches(_COOPERATIVE_TOO_LARGE, 1)
    # block 256: 8 warps, so 64 / 8 = 8 blocks per multiprocessor of the 132: 1056 fit at once
    return _raised(lambda: k(5000, 256, (1,), cooperative=True))


def fast_path_failure() -> dict:
    k = _kernel()
    for i in range(5):  # the fast-path function is installed after two launches of one plan
        k(1, 32, (i,))
    fake().fake_fail_launches(_OUT_OF_RESOURCES, 1)
    out = _raised(lambda: k(1, 32, (9,)))
    k(1, 32, (11,))  # the next launch goes through
    out["after"] = last(4)
    return out


def foreign_context_retried() -> dict:
    k = _kernel()
    k(1, 1, (1,))
    fake().fake_fail_launches(_INVALID_CONTEXT, 1)  # another library bound its context
    k(1, 1, (2,))
    return {"refused": fake().fake_refused_launches(), "last": last(4)}


_PTX = b"""//
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u32 n) { ret; }
"""


def refused_image() -> dict:
    """Code made elsewhere (no Program to compile again) whose image the driver refuses."""
    from cudaload import ObjectCode

    fake().fake_fail_loads(_INVALID_IMAGE, 1)
    return _raised(lambda: ObjectCode.from_bytes(_PTX, "ptx", name="shipped.ptx").load())


SCENARIOS = {f.__name__: f for f in (cooperative_too_large, fast_path_failure,
                                     foreign_context_retried, refused_image)}

if __name__ == "__main__":
    import cudaload  # noqa: F401  (imported before the recording driver is opened, as by a user)

    fake()
    print(json.dumps(SCENARIOS[sys.argv[1]]()))
