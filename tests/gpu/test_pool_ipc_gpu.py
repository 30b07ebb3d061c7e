"""A memory pool shared between two processes on one GPU: a spawned child imports the parent's
pool (its file descriptor passed by multiprocessing) and a buffer allocated from it, reads the
parent's bytes and writes its own, which the parent then reads."""

from __future__ import annotations

import pytest

import cudaload


def _read_and_write(pool_handle, buffer_handle, waited=None) -> dict:
    """In the child: import the pool, then the buffer; read it, overwrite it, release it (an
    importer frees its mapping before the exporter frees the memory)."""
    pool = cudaload.import_ipc(pool_handle)
    buf = cudaload.import_ipc(buffer_handle)
    if waited is not None:  # the parent's writes, ordered by its interprocess event
        s = cudaload.Stream()
        s.wait(cudaload.import_ipc(waited))
        s.synchronize()
    seen = bytes(buf.copy_to_host())
    buf.copy_from_host(b"\xcd" * buf.nbytes)
    buf.device.synchronize()
    out = {"seen": seen, "type": type(buf).__name__, "pool": [type(pool).__name__, pool.ipc]}
    buf.free()
    return out


def test_a_child_reads_and_writes_a_buffer_of_the_parents_shared_pool(child):
    pool = cudaload.MemoryPool(ipc=True)
    s = cudaload.Stream()
    buf = cudaload.alloc(4096, stream=s, pool=pool)
    s.synchronize()  # the allocation is made before another process touches it
    pattern = bytes(range(256)) * 16
    buf.copy_from_host(pattern)
    out = child.apply(_read_and_write, (pool.export_ipc(), buf.export_ipc()))
    assert out == {"seen": pattern, "type": "ImportedBuffer", "pool": ["MemoryPool", True]}
    assert bytes(buf.copy_to_host()) == b"\xcd" * 4096  # the child's write, seen here
    buf.free(stream=s)
    s.synchronize()
    pool.close()


def test_the_child_reads_after_the_parents_event_without_a_synchronization(child):
    pool = cudaload.MemoryPool(ipc=True)
    s = cudaload.Stream()
    buf = cudaload.alloc(1 << 20, stream=s, pool=pool)
    buf.memset(0x5a, stream=s)
    ready = cudaload.Event(interprocess=True).record(s)  # the allocation and the write, done
    out = child.apply(_read_and_write, (pool.export_ipc(), buf.export_ipc(), ready.export_ipc()))
    assert out["seen"] == b"\x5a" * (1 << 20)
    assert bytes(buf.copy_to_host()) == b"\xcd" * (1 << 20)
    buf.free(stream=s)
    s.synchronize()


def test_pools_that_cannot_be_shared_say_what_to_make():
    with pytest.raises(cudaload.DriverError, match=r"MemoryPool\(ipc=True\)"):
        cudaload.MemoryPool().export_ipc()
    with pytest.raises(cudaload.DriverError, match=r"MemoryPool\(ipc=True\)"):
        cudaload.memory_pool().export_ipc()
    s = cudaload.Stream()
    pooled = cudaload.alloc(64, stream=s, pool=cudaload.MemoryPool())
    with pytest.raises(TypeError, match=r"MemoryPool\(ipc=True\)"):
        pooled.export_ipc()
    pooled.free(stream=s)
    s.synchronize()


def test_a_shared_pool_keeps_its_attributes_and_its_handle_is_refused_here():
    pool = cudaload.MemoryPool(ipc=True, release_threshold=1 << 20)
    assert pool.ipc and pool.release_threshold == 1 << 20
    with pytest.raises(ValueError, match="another"):
        cudaload.import_ipc(pool.export_ipc())
