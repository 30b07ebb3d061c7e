"""Devices, streams and events on a real GPU: with Device, uuid and PCI id against other
libraries, stream priority and flags, handle equality, event flags, a stream waiting for another."""

from __future__ import annotations

import re

import pytest

import cudaload
from cudaload.launch.device import activate, current_device

np = pytest.importorskip("numpy")

from .test_host_functions import SLOW  # noqa: E402


def test_with_device_makes_it_current_and_restores_the_previous():
    before = current_device()
    with cudaload.Device(0) as dev:
        assert current_device() is dev
        assert cudaload.Stream().device is dev
    assert current_device() is before


def test_uuid_and_pci_bus_id_agree_with_other_libraries():
    dev = cudaload.Device(0)
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", dev.uuid)
    assert re.fullmatch(r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9a-fA-F]", dev.pci_bus_id)
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        uuid = getattr(props, "uuid", None)
        if uuid is not None:  # torch's _CUuuid prints as the 8-4-4-4-12 form, "GPU-" or not
            assert dev.uuid in str(uuid).lower()
        bus = getattr(props, "pci_bus_id", None)
        if bus is not None:
            assert int(dev.pci_bus_id.split(":")[1], 16) == bus
    try:
        import cupy
    except ImportError:
        return
    assert cupy.cuda.Device(0).pci_bus_id.lower() == dev.pci_bus_id.lower()


def test_stream_priority_and_flags_read_back_and_out_of_range_is_refused():
    drv = activate(cudaload.Device(0))
    least, greatest = drv.ffi.new("int *"), drv.ffi.new("int *")
    assert drv.cuCtxGetStreamPriorityRange(least, greatest) == 0
    high = cudaload.Stream(priority=greatest[0], non_blocking=False)
    assert high.priority == greatest[0] and high.is_nonblocking is False
    low = cudaload.Stream(priority=least[0])
    assert low.priority == least[0] and low.is_nonblocking is True
    assert cudaload.Stream().priority == 0
    with pytest.raises(ValueError, match="outside device 0's range"):
        cudaload.Stream(priority=greatest[0] - 1)
    with pytest.raises(ValueError, match="outside device 0's range"):
        cudaload.Stream(priority=least[0] + 1)


def test_a_wrapped_handle_is_the_same_stream():
    s = cudaload.Stream()
    for wrapped in (cudaload.Stream.from_handle(s.handle), cudaload.Stream.from_handle(s.ptr)):
        assert wrapped == s and hash(wrapped) == hash(s)
    assert cudaload.Stream() != s and len({s, cudaload.Stream.from_handle(s.ptr)}) == 1


def test_event_flags_read_back_and_a_blocking_event_waits():
    k = cudaload.RawKernel(SLOW, "slow")
    s = cudaload.Stream()
    out = cudaload.alloc(4).memset(0)
    e = cudaload.Event(timing=False, blocking_sync=True)
    assert (e.timing, e.blocking_sync) == (False, True)
    d = cudaload.Event()
    assert (d.timing, d.blocking_sync) == (True, False)
    k(1, 1, (50_000_000, out, 8), stream=s)
    e.record(s)
    e.synchronize()
    assert e.query() and np.frombuffer(out.copy_to_host(), np.int32)[0] == 8


def test_a_stream_waits_for_another_and_refuses_what_is_neither():
    k = cudaload.RawKernel(SLOW, "slow")
    scale = cudaload.RawKernel(r"""
extern "C" __global__ void twice(int *x) { *x *= 2; }""", "twice")
    first, second = cudaload.Stream(), cudaload.Stream()
    out = cudaload.alloc(4).memset(0)
    k(1, 1, (100_000_000, out, 21), stream=first)  # 0.1 s, then 21
    second.wait(first)
    scale(1, 1, (out,), stream=second)  # only after the 21 is written
    second.synchronize()
    assert np.frombuffer(out.copy_to_host(), np.int32)[0] == 42
    with pytest.raises(TypeError, match="an Event or a Stream"):
        second.wait(42)
