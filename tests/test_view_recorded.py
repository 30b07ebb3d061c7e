"""``cudaload.view`` and ``TensorMap.replace_address`` without a GPU: views of CUDA Array
Interface and DLPack objects and of cudaload's buffers over the logging driver of
tests/_fake_tensor_map.py, their own exports read back, their pointers in recorded launches, and
the driver calls of a tensor map made from a view and moved to other memory.  What a view and a
moved map read on a device is checked by tests/gpu/test_view_gpu.py."""

from __future__ import annotations

import pytest

from tests._fake_tensor_map import tensor_map_library
from tests._support import scenario_json


@pytest.fixture(scope="module")
def driver(tmp_path_factory) -> str:
    return tensor_map_library(tmp_path_factory.mktemp("views"))


def run(driver: str, scenario: str) -> dict:
    return scenario_json("recorded_views", scenario, env={"CUDALOAD_LIBCUDA": driver})


@pytest.fixture(scope="module")
def described(driver) -> dict:
    return run(driver, "described")


def test_a_view_reads_pointer_shape_strides_in_elements_dtype_and_flags(described):
    ptr = described["ptr"]
    # [ptr, shape, strides (elements), typestr, dtype, itemsize, device, readonly, contiguous]
    assert described["strided"] == [ptr, [8, 16], [32, 2], "<f4", "float32", 4, 0, True, False]
    assert described["flat"] == [ptr + 64, [4, 6], [6, 1], "<i2", "int16", 2, 0, False, True]
    assert described["bools"][3:5] == ["|b1", "bool"]
    assert described["complex"][2:6] == [[2, 1], "<c8", "complex64", 8]


def test_without_numpy_a_view_gives_its_dtype_as_a_typestr(driver):
    out = run(driver, "without_numpy")
    assert out == {"dtypes": ["<f4", "|b1", "|u1"], "strides": [8, 1]}


def test_a_view_of_a_buffer_is_its_bytes_on_its_device(described):
    ptr = described["ptr"]
    assert described["buffer"] == [ptr, [4096], [1], "|u1", "uint8", 1, 0, False, True]
    assert described["dlpack"] == described["buffer"]
    assert described["other"][6] == 1  # a buffer of device 1
    # pinned memory: the device address a kernel reads, exported again as kDLCUDAHost (3)
    assert described["host"][0] == described["mapped"] != described["host_ptr"]
    assert described["host"][-2:] == [3, 0]
    assert described["dlpack_host"]["data"] == described["host_ptr"]
    assert described["dlpack_host"]["device"] == [3, 0]


def test_a_view_exports_the_interface_with_byte_strides_and_round_trips(described):
    cai = described["cai"]
    assert cai == {"shape": [8, 16], "typestr": "<f4", "data": [described["ptr"], True],
                   "version": 3, "stream": None, "strides": [128, 8]}
    assert described["cai_flat"] is None  # C-contiguous: no strides needed
    assert described["cai_again"] == described["strided"]
    assert described["of_view"] == described["strided"] and described["source_kept"]


def test_a_view_exports_dlpack_with_its_shape_strides_and_dtype(described):
    assert described["capsule"] == {"data": described["ptr"], "ndim": 2, "device": [2, 0],
                                    "dtype": [2, 32, 1], "shape": [8, 16], "strides": [32, 2]}
    assert described["flags"] == [1, 0]  # DLPACK_FLAG_BITMASK_READ_ONLY for the read-only one
    # read back through DLPack, which says nothing of read-only before version 1.0
    assert described["dlpack_again"][:7] == described["strided"][:7]
    assert described["dlpack_again"][8] is False


REFUSED = {
    "int": ("TypeError", "says nothing of its shape"),
    "object": ("TypeError", "not object"),
    "freed": ("ValueError", "was freed"),
    "numpy": ("ValueError", "copy it to the GPU"),
    # the words of a kernel argument in such memory (_foreign.HOST_HINT)
    "unmapped_host": ("ValueError", "the device does not map the array's memory: it is host "
                      "memory, but the kernel needs device memory: copy it with "
                      "cudaload.alloc(n).copy_from_host(a)"),
    "stride": ("ValueError", "no whole number of 4-byte elements"),
    "big_endian": ("ValueError", "little-endian"),
    "bad_interface": ("TypeError", "['data']"),
    "copy": ("DLPackError", "never a copy"),
    "to_host": ("DLPackError", "never a copy"),
    "pickle": ("NotPicklableError", "ArrayView"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_what_no_view_can_be_made_of_is_refused_saying_why(described, case):
    kind, phrase = REFUSED[case]
    got = described["refused"][case]
    assert got is not None and got.startswith(kind + ":") and phrase in got, got


def test_a_view_keeps_its_buffer_from_being_freed(driver):
    out = run(driver, "kept")
    assert (out["freed_while_viewed"], out["freed_after"]) == (0, 1)
    assert out["host_free"].startswith("BufferError") and out["host_free_after"] is None


def test_a_view_orders_the_source_stream_before_its_own(driver):
    out = run(driver, "streams")
    # the interface's stream recorded an event, which the view's stream waited for
    assert out["before"][0] == 0
    assert out["cai"] == [1, out["stream"], 0x5abc0]
    assert out["unordered"] == out["cai"]  # stream=-1, and no stream in the interface: no wait
    # DLPack: the consumer's stream handed to the producer, 1 (the legacy one) by default
    assert out["asked"] == [{"stream": 1}, {"stream": out["stream"]}]
    assert out["cai_stream"] == out["stream"] and out["default_cai_stream"] is None
    assert out["of_view"][0] == 3 and out["of_view"][2] == out["stream"]
    assert out["zero"].startswith("ValueError") and "never 0" in out["zero"]


def test_a_view_passes_its_pointer_to_a_launch_on_the_fast_path(driver):
    out = run(driver, "launched")
    a, b = (out[n].to_bytes(8, "little").hex() for n in ("a", "b"))
    assert out["launches"] == [a + b] * 3
    assert out["fast"] and out["ordinary"] == 0 and out["swapped"] == b + a
    assert out["other_device"].startswith("LaunchArgumentError") and \
        "on device 1" in out["other_device"]


@pytest.fixture(scope="module")
def tensor_maps(driver) -> dict:
    return run(driver, "tensor_maps")


def test_a_tensor_map_of_a_view_encodes_its_dims_and_strides(tensor_maps):
    assert tensor_maps["encoded"] == [
        f"cuTensorMapEncodeTiled aligned=1 type=7 rank=2 address={tensor_maps['ptr']:x} "
        "dims=64,16 strides=512 box=32,8 element_strides=1,1 interleave=0 swizzle=0 l2=0 oob=0"]


def test_replace_address_moves_the_map_without_encoding_again(tensor_maps):
    ptr, second = tensor_maps["ptr"], tensor_maps["second"]
    assert tensor_maps["calls"] == [
        f"cuTensorMapReplaceAddress aligned=1 was={ptr:x} address={second:x}",
        f"cuTensorMapReplaceAddress aligned=1 was={ptr:x} address={second + 1024:x}",
        f"cuTensorMapReplaceAddress aligned=1 was={ptr:x} address={second:x}"]
    old, new = bytes.fromhex(tensor_maps["map"]), bytes.fromhex(tensor_maps["moved"])
    assert new == second.to_bytes(8, "little") + old[8:]
    assert tensor_maps["original"] == tensor_maps["map"]  # bytes: the old map is unchanged
    assert tensor_maps["moved_address"] == second
    assert tensor_maps["described"] == ["float32", [16, 64], [512, 4]]
    assert (tensor_maps["by_address"], tensor_maps["by_buffer"]) == (second + 1024, second)


MOVE_REFUSED = {
    "misaligned_address": "16-byte aligned",
    "misaligned_view": "16-byte aligned",
    "other_shape": "shape (16, 32)",
    "other_strides": "strides (256, 4)",
    "other_dtype": "int32",
    "other_device": "on device 1",
    "too_small": "the buffer has 4096",
    "host": "pinned host memory",
}


@pytest.mark.parametrize("case", sorted(MOVE_REFUSED))
def test_replace_address_refuses_other_memory_before_the_driver(tensor_maps, case):
    got = tensor_maps["refused"][case]
    assert got is not None and got.startswith("ValueError:") and MOVE_REFUSED[case] in got, got


def test_no_refused_replace_address_reaches_the_driver(tensor_maps):
    assert set(tensor_maps["refused"]) == set(MOVE_REFUSED)
    assert not [c for c in tensor_maps["refused_calls"] if c.startswith("cuTensorMap")]
