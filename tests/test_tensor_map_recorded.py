"""Tensor maps and the memory pool's release threshold without a GPU: the logging driver of
tests/_fake_tensor_map.py shows every argument the driver gets.  What a tensor map
moves on a device is checked by tests/gpu/test_tensor_map.py."""

from __future__ import annotations

import pytest

from tests._fake_tensor_map import (no_im2col_driver, tensor_map_driver,  # noqa: F401  (fixtures)
                                    tensor_map_library)
from tests._support import scenario_json


def run(driver: str, scenario: str) -> dict:
    return scenario_json("recorded_tensor_maps", scenario, env={"CUDALOAD_LIBCUDA": driver})


def recognisable(address: int, rank: int) -> str:
    """The bytes the recording driver writes into a map: the address, then i * 7 + rank."""
    return (address.to_bytes(8, "little")
            + bytes((i * 7 + rank) & 255 for i in range(8, 128))).hex()


def test_tiled_maps_reach_the_driver_innermost_first_with_every_option(tensor_map_driver):
    out = run(tensor_map_driver, "tiled")
    ptr = f"{out['ptr']:x}"
    common = "aligned=1"  # the map itself 128-byte aligned, as CUtensorMap is declared
    assert out["calls"] == [
        # float32 (7), dims (64, 40), the row stride 256 bytes, box (32, 16), swizzle 128B (3),
        # L2 promotion 128B (2)
        f"cuTensorMapEncodeTiled {common} type=7 rank=2 address={ptr} dims=64,40 strides=256 "
        "box=32,16 element_strides=1,1 interleave=0 swizzle=3 l2=2 oob=0",
        # float16 (6) with padded rows: strides for dims 1.. (64, 640); element strides
        # reversed; NaN fill (1), L2 256B (3)
        f"cuTensorMapEncodeTiled {common} type=6 rank=3 address={ptr} dims=24,10,4 "
        "strides=64,640 box=8,5,2 element_strides=1,2,1 interleave=0 swizzle=0 l2=3 oob=1",
        # the CUDA Array Interface: float64 (8), C-contiguous strides worked out
        f"cuTensorMapEncodeTiled {common} type=8 rank=2 address={ptr} dims=16,8 strides=128 "
        "box=8,4 element_strides=1,1 interleave=0 swizzle=0 l2=0 oob=0",
        # its bits read as bfloat16 (9), strides as given, swizzle spelled in lower case
        f"cuTensorMapEncodeTiled {common} type=9 rank=2 address={ptr} dims=16,8 strides=64 "
        "box=8,8 element_strides=1,1 interleave=0 swizzle=1 l2=0 oob=0",
        # DLPack: a DeviceBuffer's 1-D uint8 (0) export of 10240 bytes
        f"cuTensorMapEncodeTiled {common} type=0 rank=1 address={ptr} dims=10240 strides= "
        "box=64 element_strides=1 interleave=0 swizzle=0 l2=0 oob=0",
        # an int address; int32 (3)
        f"cuTensorMapEncodeTiled {common} type=3 rank=2 address={out['ptr'] + 256:x} "
        "dims=16,16 strides=64 box=4,4 element_strides=1,1 interleave=0 swizzle=0 l2=0 oob=0",
        # int8 travels as uint8 (0); interleave 32B (2) with swizzle 32B (1)
        f"cuTensorMapEncodeTiled {common} type=0 rank=3 address={ptr} dims=64,4,4 "
        "strides=64,256 box=4,2,2 element_strides=1,1,1 interleave=2 swizzle=1 l2=0 oob=0",
    ]
    assert out["bytes"] == recognisable(out["ptr"], 2)
    length, kind, dtype, shape, strides, address, device, kept, text, shown = out["described"]
    assert (length, kind, dtype, shape, strides) == (128, "tiled", "float32", [40, 64], [256, 4])
    assert (address, device, kept) == (out["ptr"], 0, True)
    assert text == shown and text.startswith("<cudaload.TensorMap tiled float32 (40, 64)")
    # an address of this process's device memory: never sent elsewhere, nor copied as bytes
    assert out["pickle"].startswith("NotPicklableError") and "make the tensor map again" in \
        out["pickle"]
    assert out["copy"].startswith("NotPicklableError")


def test_im2col_maps_reach_the_driver_with_corners_innermost_first(tensor_map_driver):
    out = run(tensor_map_driver, "im2col")
    ptr = f"{out['ptr']:x}"
    assert out["calls"] == [
        f"cuTensorMapEncodeIm2col aligned=1 type=6 rank=4 address={ptr} dims=32,8,8,2 "
        "strides=64,512,4096 lower=-2,-1 upper=0,1 channels=32 pixels=64 "
        "element_strides=1,1,1,1 interleave=0 swizzle=2 l2=0 oob=0",
    ]
    assert out["kind"] == "im2col" and out["bytes"] == recognisable(out["ptr"], 4)


# what each bad map raises, and a phrase of the message that says what to change
REFUSED = {
    "rank0": ("ValueError", "takes 1 to 5"),
    "rank6": ("ValueError", "takes 1 to 5"),
    "dtype": ("ValueError", "complex64"),
    "dtype_numpy": ("ValueError", "complex128"),
    "zero_dim": ("ValueError", "shape[0] = 0"),
    "inner_stride": ("ValueError", "contiguous"),
    "outer_stride": ("ValueError", "multiple of 16"),
    "huge_stride": ("ValueError", "2**40"),
    "box_count": ("ValueError", "2 are needed"),
    "box_zero": ("ValueError", "box[0] = 0"),
    "box_big": ("ValueError", "1..256"),
    "box_float": ("TypeError", "box[0]"),
    "box_not_tuple": ("TypeError", "tuple of 2 ints"),
    "box_inner_bytes": ("ValueError", "multiple of 16 bytes"),
    "swizzle_name": ("ValueError", "'128B'"),
    "swizzle_type": ("TypeError", "swizzle must be a str"),
    "swizzle_span": ("ValueError", "32-byte swizzle span"),
    "interleave_swizzle": ("ValueError", "swizzle='32B'"),
    "interleave_rank": ("ValueError", "with interleave"),
    "l2": ("ValueError", "l2_promotion"),
    "oob_int": ("ValueError", "oob_fill='zero'"),
    "oob_name": ("ValueError", "'nan'"),
    "element_stride_big": ("ValueError", "element_strides[1] = 9"),
    "element_stride_zero": ("ValueError", "element_strides[0] = 0"),
    "misaligned": ("ValueError", "16-byte aligned"),
    "misaligned_32": ("ValueError", "32-byte aligned"),
    "past_the_end": ("ValueError", "the buffer has 10240"),
    "shape_of_array": ("TypeError", "describes its own shape"),
    "dtype_size": ("ValueError", "2-byte elements"),
    "big_endian": ("ValueError", "little-endian"),
    "complex_typestr": ("ValueError", "'complex64' has no tensor map type"),
    "long_double_typestr": ("ValueError", "'float128' has no tensor map type"),
    "bad_interface": ("TypeError", "['data']"),
    "no_address": ("TypeError", "no device address"),
    "host_dlpack": ("ValueError", "reads device memory"),
    "address_without_shape": ("TypeError", "pass shape="),
    "shape_without_dtype": ("TypeError", "pass dtype="),
    "freed": ("ValueError", "freed"),
    "im2col_rank": ("ValueError", "takes 3 to 5"),
    "im2col_corner_range": ("ValueError", "-128..127"),
    "im2col_corner_count": ("ValueError", "2 are needed"),
    "im2col_channels": ("ValueError", "channels_per_pixel = 0"),
    "im2col_channels_big": ("ValueError", "1..256"),
    "im2col_pixels": ("ValueError", "1..1024"),
    "im2col_swizzle_span": ("ValueError", "32-byte swizzle span"),
}


@pytest.fixture(scope="module")
def refusals(tmp_path_factory) -> dict:
    return run(tensor_map_library(tmp_path_factory.mktemp("tensor_maps")), "refusals")


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_bad_tensor_map_is_refused_before_the_driver_saying_what_to_change(refusals, case):
    kind, phrase = REFUSED[case]
    got = refusals["refused"][case]
    assert got is not None, f"{case} was not refused"
    assert got.startswith(kind + ":") and phrase in got, got


def test_no_refused_tensor_map_reaches_the_driver(refusals):
    assert set(refusals["refused"]) == set(REFUSED)
    assert refusals["calls"] == []


def test_a_driver_without_im2col_says_so_and_still_encodes_tiled_maps(no_im2col_driver):
    out = run(no_im2col_driver, "no_im2col")
    assert out["missing"].startswith("MissingSymbolError")
    assert "cuTensorMapEncodeIm2col" in out["missing"] and "newer driver" in out["missing"]
    assert [c.split()[0] for c in out["calls"]] == ["cuTensorMapEncodeTiled"]


def test_a_tensor_map_is_passed_by_value_as_its_128_bytes(tensor_map_driver):
    out = run(tensor_map_driver, "launched")
    assert out["first"] == out["map"] + out["ptr"].to_bytes(8, "little").hex()
    assert out["again"] == out["other"] + out["ptr"].to_bytes(8, "little").hex()
    assert out["other"] != out["map"]
    assert out["second"] == out["map"] + (7).to_bytes(4, "little").hex()
    assert out["wrong"].startswith("LaunchArgumentError")


def test_the_pool_release_threshold_is_set_and_read_back_per_device(tensor_map_driver):
    out = run(tensor_map_driver, "pool_threshold")
    assert (out["before"], out["after"], out["other"]) == (0, 1 << 30, (1 << 64) - 1)
    assert out["calls"] == [
        "cuDeviceGetMemPool 0", "cuMemPoolGetAttribute a000 4",
        "cuDeviceGetMemPool 0", f"cuMemPoolSetAttribute a000 4 {1 << 30}",
        "cuDeviceGetMemPool 0", "cuMemPoolGetAttribute a000 4",
        "cuDeviceGetMemPool 1", f"cuMemPoolSetAttribute a010 4 {(1 << 64) - 1}",
        "cuDeviceGetMemPool 1", "cuMemPoolGetAttribute a010 4",
    ]
    assert out["negative"].startswith("ValueError")
    assert out["float"].startswith("TypeError")
    assert out["too_big"].startswith("ValueError") and "2**64-1" in out["too_big"]
    assert out["repr"] == "<cudaload.MemoryPool of device 0>"
