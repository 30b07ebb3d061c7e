"""CUDA IPC and batched copies without a GPU: the recording driver of tests/_fake_ipc.py shows the
exact driver calls, the handle bytes and the copy addresses.  Two processes on a GPU sharing
memory and events, and copies landing, are checked by tests/gpu/test_ipc_gpu.py."""

from __future__ import annotations

import json

import pytest

from tests._fake_ipc import ipc_driver
from tests._support import scenario_json


@pytest.fixture
def driver(tmp_path) -> str:
    return ipc_driver(tmp_path, 12080)


def run(lib: str, scenario: str, *args) -> dict:
    return scenario_json("recorded_ipc", scenario, *args, env={"CUDALOAD_LIBCUDA": lib})


def test_a_buffer_and_a_view_export_their_allocation_with_the_offset_and_the_gpu(driver):
    out = run(driver, "exports")
    base = f"{out['ptr']:x}"
    # the view's handle is its allocation's, with the offset beside it
    assert out["calls"][:3] == [f"cuIpcGetMemHandle {base}", f"cuIpcGetMemHandle {base}",
                                f"cuIpcGetEventHandle {hex(out['event'])}"]
    assert out["nbytes"] == [256, 64] and out["offsets"] == [0, 16]
    assert out["uuid"] == "00010203-0405-0607-0809-0a0b0c0d0e0f"  # the recording device 0's
    assert out["equal"]
    assert out["flags"] == 6 and out["timing"] is False and out["interprocess"] is True


def test_memory_ipc_cannot_share_is_refused_saying_what_to_use(driver):
    out = run(driver, "exports")
    refused = out["refused"]
    assert refused["managed"].startswith("TypeError") and "cudaload.alloc(" in refused["managed"]
    assert refused["pool"].startswith("TypeError") and "without a" in refused["pool"]
    assert refused["host"].startswith("TypeError") and "shared_memory" in refused["host"]
    assert refused["plain_event"].startswith("ValueError") and "interprocess=True" in \
        refused["plain_event"]
    assert refused["timing_event"].startswith("ValueError")
    assert refused["here"].startswith("ValueError") and "this process" in refused["here"]
    assert refused["not_handle"].startswith("TypeError")
    assert refused["freed"].startswith("ValueError") and "freed" in refused["freed"]
    assert out["refused_calls"] == []  # none reached the driver's IPC entry points


def test_another_process_opens_the_handles_with_the_bytes_exported_and_closes_once(driver,
                                                                                   tmp_path):
    exported = run(driver, "exports")
    path = tmp_path / "handles.json"
    path.write_text(json.dumps(exported["handles"]))
    out = run(driver, "imports", path)
    base = f"{exported['ptr']:x}"
    assert out["calls"] == [
        f"cuIpcOpenMemHandle_v2 ipc-mem {base} intact 1",  # CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
        "cuIpcCloseMemHandle a00000000",  # free() twice: closed once, never cuMemFree
        f"cuIpcOpenMemHandle_v2 ipc-mem {base} intact 1",
        "cuIpcCloseMemHandle a00000000",  # the view, garbage: the mapping's base closed
        f"cuIpcOpenEventHandle ipc-evt {exported['event']:x} intact",
        f"cuIpcOpenMemHandle_v2 ipc-mem {base} intact 1",  # answered CUDA_ERROR_INVALID_CONTEXT
    ]
    assert out["type"] == "ImportedBuffer" and out["is_device_buffer"]
    assert out["ptr"] == 0xa00000000 and out["nbytes"] == 256
    assert out["view"] == [0xa00000000 + 16, 64]
    assert out["stream_free"].startswith("ValueError")
    assert out["event"] == ["Event", 0xf000, False, True] and out["waited_event"] == 0xf000
    refused = out["refused"]
    assert refused["other_gpu"].startswith("ValueError") and "does not see" in \
        refused["other_gpu"]
    assert refused["other_device"].startswith("ValueError") and "same GPU" in \
        refused["other_device"]
    assert refused["invalid_context"].startswith("ValueError")
    assert "CUDA_ERROR_INVALID_CONTEXT" in refused["invalid_context"]


def _batch_calls(out: dict) -> list[str]:
    d1, d2, host = (f"{out[k]:x}" for k in ("d1", "d2", "host"))
    return [f"  {d1} {host} 64", f"  {d2} {d1} 32", f"  123400 {d1} 16", f"  {d2} {host} 64"]


@pytest.mark.parametrize("version, name", [(12080, "cuMemcpyBatchAsync"),
                                           (13000, "cuMemcpyBatchAsync_v2")])
def test_copy_batch_issues_one_batch_of_the_drivers_abi(tmp_path, version, name):
    out = run(ipc_driver(tmp_path, version), "batches")
    copies = [c for c in out["calls"] if c.startswith(("  ", "cuMemcpy"))]
    # the copy of no bytes is dropped; sources read in stream order, no hints, no flags
    assert copies == [f"{name} 4 copies, 1 attributes from 0: order 1 hints 0 0 flags 0 stream",
                      *_batch_calls(out)]


def test_copy_batch_on_a_driver_without_the_batch_issues_one_copy_each(tmp_path):
    out = run(ipc_driver(tmp_path, 12020), "batches")
    copies = [c for c in out["calls"] if c.startswith(("  ", "cuMemcpy"))]
    assert copies == ["cuMemcpyAsync" + c[1:] + " stream" for c in _batch_calls(out)]


def test_copy_batch_on_the_legacy_stream_issues_one_copy_each(driver):
    out = run(driver, "batches")
    d1, d2, host = (f"{out[k]:x}" for k in ("d1", "d2", "host"))
    assert out["legacy"] == [f"cuMemcpyAsync {d1} {host} 8 legacy",
                             f"cuMemcpyAsync {d2} {d1} 8 legacy"]


def test_copy_batch_in_a_stream_capture_issues_one_copy_each(driver):
    out = run(driver, "batches")
    d1, d2, host = (f"{out[k]:x}" for k in ("d1", "d2", "host"))
    assert out["captured"] == [f"cuMemcpyAsync {d1} {host} 8 stream",
                               f"cuMemcpyAsync {host} {d2} 8 stream"]


def test_a_bad_copy_issues_no_copy_and_says_which(driver):
    out = run(driver, "batches")
    refused = out["refused"]
    for name in ("too_many", "dst_too_small", "negative", "null", "freed", "read_only",
                 "strided", "huge", "null_array"):
        assert refused[name].startswith("ValueError") and "copy 1" in refused[name], name
    for name in ("float", "host_array", "pair", "bool", "not_list"):
        assert refused[name].startswith("TypeError"), name
    assert "65 bytes do not fit its dst, which has 64" in refused["too_many"]
    assert "copy_from_host" in refused["host_array"]
    assert "src's __cuda_array_interface__ data pointer is 0 (NULL)" in refused["null_array"]
    assert out["after_refusals"] == []


def test_a_failed_batch_names_the_copy_the_driver_reports(driver):
    error = run(driver, "failed_batch")["error"]
    # failIdx 1 of the two copies issued is the caller's copy 2 (copy 0 had no bytes)
    assert error.startswith("DriverError") and "copy 2" in error
