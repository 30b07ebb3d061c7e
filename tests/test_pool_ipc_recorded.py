"""Memory pools shared between processes without a GPU: the recording driver of
tests/_fake_pool_ipc.py shows the exact driver calls, and its file descriptor reaching a spawned
child shows how the pool's handle travels.  Two processes on a GPU reading each other's bytes
are tests/gpu/test_pool_ipc_gpu.py."""

from __future__ import annotations

import pytest

from tests._fake_pool_ipc import pool_ipc_driver
from tests._fake_pools import pool_library
from tests._support import scenario_json


def run(lib: str, scenario: str, *args) -> dict:
    return scenario_json("recorded_pool_ipc", scenario, *args, env={"CUDALOAD_LIBCUDA": lib})


@pytest.fixture(scope="module")
def shared(tmp_path_factory) -> dict:
    """One exporter, with a spawned child that imports (spawning costs about a second)."""
    lib = pool_ipc_driver(tmp_path_factory.mktemp("pool_ipc"))
    return {"lib": lib, **run(lib, "shares")}


def test_a_pool_made_with_ipc_exports_itself_and_its_allocation(shared):
    pool = f"{shared['pool']:x}"
    assert shared["exported"] == [
        # CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR (1) in CUmemPoolProps.handleTypes
        f"cuMemPoolCreate {pool} alloc=1 handles=1 location=1:0 max=0 usage=0 win32=0 reserved=0",
        f"cuMemAllocFromPoolAsync 256 {pool} 0x5000",
        f"cuMemPoolExportToShareableHandle {pool} type=1 flags=0",
        f"cuMemPoolExportPointer {shared['buffer_ptr']:x}",  # the allocation itself
    ]
    assert shared["ipc"] is True
    assert shared["types"] == ["PoolHandle", "PoolMemoryHandle"]
    assert shared["buffer_handle"] == [256, 0, True]  # the buffer's handle names its pool
    assert shared["equal"]


def test_a_spawned_child_gets_the_descriptor_and_imports_the_pool_then_the_buffer(shared):
    child = shared["child"]
    assert child["fd_is_own"]  # a descriptor of the child's, onto the exporter's file
    assert child["calls"] == [
        # the driver read the exporter's pool back through the descriptor the child received
        f"cuMemPoolImportFromShareableHandle fd-of {shared['pool']:x} type=1 flags=0",
        f"cuMemPoolImportPointer c000 pool-ptr {shared['buffer_ptr']:x} intact",
        "cuMemPoolDestroy c000",  # the imported pool, garbage once its buffer was
    ]
    assert child["pool"] == ["MemoryPool", 0xc000, True,
                             "<cudaload.MemoryPool on device 0, shareable>"]
    assert child["buffer"] == ["ImportedBuffer", 0xd00000000, 256]
    assert child["freed"] == 1  # cuMemFree once, for two free() calls
    assert child["stream_free"].startswith("ValueError")


def test_a_buffer_before_its_pool_and_a_pool_exported_again_are_refused(shared):
    child = shared["child"]
    assert child["early"].startswith("ValueError") and "import the pool first" in child["early"]
    assert child["reexport"].startswith("DriverError") and "process that made it" in \
        child["reexport"]


def test_what_cannot_be_shared_by_pool_is_refused_saying_what_to_make(shared):
    refused = shared["refused"]
    for name in ("plain_pool", "device_pool"):
        assert refused[name].startswith("DriverError"), name
        assert "cudaload.MemoryPool(ipc=True)" in refused[name], name
    for name in ("plain_pool_memory", "default_pool_memory"):
        assert refused[name].startswith("TypeError"), name
        assert "MemoryPool(ipc=True)" in refused[name] and "without a stream" in refused[name]
    assert refused["here"].startswith("ValueError") and "this process" in refused["here"]
    assert refused["not_bool"].startswith("TypeError")
    assert refused["pickle_pool"].startswith("NotPicklableError")
    assert "pool.export_ipc()" in refused["pickle_pool"]
    assert refused["closed"].startswith("ValueError") and "closed" in refused["closed"]
    assert refused["calls"] == []  # none reached the driver's export or import


def test_the_exporters_descriptor_is_closed_with_its_handle(shared):
    assert shared["fd_closed"]


def test_a_handle_unpickled_outside_the_exporters_multiprocessing_family_says_how_to_send(shared):
    error = run(shared["lib"], "receives", shared["pickled_pool"])["error"]
    assert error.startswith("CudaLoadError") and "file descriptor" in error
    assert "through multiprocessing" in error


def test_a_driver_without_the_pool_ipc_calls_refuses_ipc_naming_the_release(tmp_path):
    out = run(pool_library(tmp_path), "old_driver")
    assert out["error"].startswith("MissingSymbolError")
    assert "cuMemPoolExportToShareableHandle" in out["error"] and "CUDA 11.2" in out["error"]
    assert out["plain"] == "<cudaload.MemoryPool on device 0>"  # a pool not shared still is


def test_a_device_that_shares_no_pool_by_descriptor_refuses_ipc_before_making_one(shared):
    out = run(shared["lib"], "no_fd_pools")
    assert out["error"].startswith("DriverError")
    assert "MEMPOOL_SUPPORTED_HANDLE_TYPES is 0" in out["error"]
    assert "POSIX file descriptor" in out["error"] and "leave ipc out" in out["error"]
    assert out["calls"] == []  # no cuMemPoolCreate
