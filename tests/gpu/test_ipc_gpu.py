"""CUDA IPC between two processes on one GPU (a spawned child imports what the parent exported),
and batched copies landing where they should."""

from __future__ import annotations

import pytest

import cudaload

np = pytest.importorskip("numpy")

SPIN = r"""
extern "C" __global__ void spin(long long cycles, int *done) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
    *done = 1;
}
"""


def _read_and_write(handle, view_handle) -> dict:
    """In the child: read the parent's bytes through both handles, then overwrite the buffer.
    One mapping of the allocation at a time: the view's is closed before the buffer's opens."""
    view = cudaload.import_ipc(view_handle)
    seen_view = bytes(view.copy_to_host())
    view.free()
    buf = cudaload.import_ipc(handle)
    seen = bytes(buf.copy_to_host())
    buf.copy_from_host(b"\xab" * buf.nbytes)
    buf.device.synchronize()
    out = {"seen": seen, "view": seen_view, "type": type(buf).__name__}
    buf.free()
    return out


def _wait_then_read(handle, event_handle) -> int:
    """In the child: order a copy of the parent's flag after the parent's event, return the flag."""
    flag = cudaload.import_ipc(handle)
    event = cudaload.import_ipc(event_handle)
    s = cudaload.Stream()
    s.wait(event)
    out = flag.copy_to_host(stream=s)
    s.synchronize()
    return int.from_bytes(bytes(out[:4]), "little")


def test_a_child_process_reads_and_writes_the_parents_buffer(child):
    buf = cudaload.alloc(1024).copy_from_host(bytes(range(256)) * 4)
    view = cudaload.DeviceBuffer(buf.ptr + 256, 512, buf.device, owner=buf)
    out = child.apply(_read_and_write, (buf.export_ipc(), view.export_ipc()))
    assert out["type"] == "ImportedBuffer"
    assert out["seen"] == bytes(range(256)) * 4
    assert out["view"] == (bytes(range(256)) * 4)[256:768]  # the view's offset travelled
    assert bytes(buf.copy_to_host()) == b"\xab" * 1024  # the child's write, seen here


def test_the_child_waits_on_an_event_the_parent_recorded(child):
    flag = cudaload.alloc(4).memset(0)
    spin = cudaload.Program(SPIN).compile().load().get_kernel("spin")
    s = cudaload.Stream()
    event = cudaload.Event(interprocess=True)
    rate = cudaload.Device(0).attribute("CU_DEVICE_ATTRIBUTE_CLOCK_RATE")  # kHz
    spin(1, 1, (np.int64(rate * 1000), flag), stream=s)  # about a second
    event.record(s)
    # Without the wait the child would copy the flag while the kernel still spins: 0.
    assert child.apply(_wait_then_read, (flag.export_ipc(), event.export_ipc())) == 1
    s.synchronize()


def test_a_handle_is_refused_in_the_process_that_exported_it():
    buf = cudaload.alloc(64)
    with pytest.raises(ValueError, match="another"):
        cudaload.import_ipc(buf.export_ipc())


def test_memory_of_a_pool_is_refused_for_ipc_saying_what_to_allocate():
    s = cudaload.Stream()
    pooled = cudaload.alloc(64, stream=s)
    with pytest.raises(TypeError, match=r"cudaload\.alloc\(nbytes\)"):
        pooled.export_ipc()
    pooled.free(stream=s)
    s.synchronize()


class _Bytes:
    """A CUDA Array Interface object: ``n`` bytes of device memory at ``ptr``."""

    def __init__(self, ptr: int, n: int):
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": (n,), "typestr": "|u1",
                                         "version": 3}


@pytest.mark.parametrize("on_legacy_stream", [False, True])
def test_copy_batch_lands_host_to_device_and_device_to_device_copies(on_legacy_stream):
    n = 1024
    pattern = np.arange(4 * n, dtype=np.uint8) * 7
    host = cudaload.alloc_host(4 * n)
    np.asarray(host)[:] = pattern
    source = cudaload.alloc(n).copy_from_host(pattern[::-1].copy()[:n])
    dsts = [cudaload.alloc(n).memset(0) for _ in range(4)]
    back = cudaload.alloc_host(n)
    s = None if on_legacy_stream else cudaload.Stream()
    cudaload.copy_batch([(dsts[0], host, n),                       # pinned -> device
                         (dsts[1], host.host_ptr + n, n),          # an address -> device
                         (dsts[2], source, n),                     # device -> device
                         (dsts[3], _Bytes(source.ptr, n // 2), n // 2),  # an array -> device
                         (back, source, n)], s)                    # device -> pinned
    if s is None:
        cudaload.Device(0).synchronize()
    else:
        s.synchronize()
    got = [np.frombuffer(d.copy_to_host(), np.uint8) for d in dsts]
    assert (got[0] == pattern[:n]).all() and (got[1] == pattern[n:2 * n]).all()
    assert (got[2] == pattern[::-1][:n]).all()
    assert (got[3][:n // 2] == pattern[::-1][:n // 2]).all() and not got[3][n // 2:].any()
    assert (np.asarray(back) == pattern[::-1][:n]).all()
