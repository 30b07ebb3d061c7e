"""Peer access and copies between the two devices of the recording driver of tests/_fakelibs.py;
one fresh process each.

    python -m tests.scenarios.recorded_peer SCENARIO

Each scenario returns what it saw, printed as JSON on the last line.
"""

from __future__ import annotations

import ctypes
import json
import sys

from tests.scenarios.recorded_launches import fake

CONTEXTS = {0x1000: 0, 0x1100: 1}  # the recording driver's primary contexts, by device


def _peer_calls() -> dict:
    """cuDeviceCanAccessPeer queries, cuCtxEnablePeerAccess calls, and the (current device, peer
    device) pairs granted."""
    queries, pairs = ctypes.c_int(), (ctypes.c_void_p * 16)()
    calls = fake().fake_peer(ctypes.byref(queries), pairs)
    granted = [[CONTEXTS[pairs[i]], CONTEXTS[pairs[i + 1]]] for i in range(0, 16, 2) if pairs[i]]
    return {"queries": queries.value, "calls": calls, "granted": granted}


def _error(call) -> list:
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - the scenario reports what was raised
        return [type(exc).__name__, str(exc), getattr(exc, "name", None)]
    return ["no error"]


def enable() -> dict:
    """can_access_peer both ways and with itself, enable_peer_access twice from device 0 and once
    from device 1, the refusals, and the identity of Device(0) and Device(1)."""
    import cudaload

    d0, d1 = cudaload.Device(0), cudaload.Device(1)
    out = {"identity": [d0 is cudaload.Device(0), d0 != d1, hash(d0) != hash(d1)]}
    out["can"] = [d0.can_access_peer(d1), d1.can_access_peer(0), d0.can_access_peer(d0)]
    out["after_can"] = _peer_calls()
    d0.enable_peer_access(d1)
    d0.enable_peer_access(1)  # again: no error
    out["after_twice"] = _peer_calls()
    d1.enable_peer_access(d0)
    out["after_both"] = _peer_calls()
    out["same"] = _error(lambda: d0.enable_peer_access(d0))
    out["bad"] = [_error(lambda: d0.enable_peer_access(arg)) for arg in (2, 1.0, "1")]
    out["after_refusals"] = _peer_calls()
    fake().fake_peer_refuse(1)
    out["refused"] = _error(lambda: d1.enable_peer_access(d0))
    out["after_refused"] = _peer_calls()
    fake().fake_peer_refuse(0)
    fake().fake_peer_enable_rc(217)  # CUDA_ERROR_PEER_ACCESS_UNSUPPORTED from the enable itself
    out["enable_refused"] = _error(lambda: d1.enable_peer_access(d0))
    return out


def _last_peer_copy() -> dict:
    words, ptrs = (ctypes.c_ulonglong * 3)(), (ctypes.c_void_p * 3)()
    count = fake().fake_last_peer_copy(words, ptrs)
    return {"count": count, "dst": words[0], "src": words[1], "nbytes": words[2],
            "contexts": [CONTEXTS.get(ptrs[0] or 0), CONTEXTS.get(ptrs[1] or 0)],
            "stream": ptrs[2]}


def copy() -> dict:
    """copy_from a buffer of device 0 into one of device 1, without and with a stream; and a
    copy between two buffers of one device, which stays cuMemcpyDtoD."""
    import cudaload

    src = cudaload.alloc(256, device=0)
    dst = cudaload.alloc(512, device=1)
    out = {"src": src.ptr, "dst": dst.ptr}
    dst.copy_from(src)
    out["sync"] = _last_peer_copy()
    with cudaload.Device(1):
        stream = cudaload.Stream()
    dst.copy_from(src, stream=stream)
    out["stream"], out["stream_ptr"] = _last_peer_copy(), stream.ptr
    same = cudaload.alloc(256, device=1)
    dst.copy_from(same)
    d, s = ctypes.c_ulonglong(), ctypes.c_ulonglong()
    out["same_device"] = [fake().fake_last_copy(ctypes.byref(d), ctypes.byref(s)), d.value,
                          s.value, same.ptr, _last_peer_copy()["count"]]
    return out


SCENARIOS = {f.__name__: f for f in (enable, copy)}

if __name__ == "__main__":
    print(json.dumps(SCENARIOS[sys.argv[1]]()))
