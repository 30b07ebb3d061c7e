"""Integers that do not fit the C type the driver takes are typed errors, raised before the
driver is called: every public entry that hands an int to the driver, at -1, 2**31, 2**32, 2**63
and 2**64 (tests/scenarios/integer_ranges.py calls them on the logging recording driver of
tests/_fake_tensor_map.py).  A value out of range is a ValueError (or TypeError) that names it,
never cffi's bare OverflowError nor a value cut short by ``ffi.cast``; a value in range gets past
the check: to the driver ("ok", its DriverError) or to a limit of the device or kernel.
"""

from __future__ import annotations

import pytest

from tests._fake_tensor_map import tensor_map_library
from tests._support import scenario_json
from tests.scenarios.integer_ranges import SCALARS, VALUES

R = "refused"  # a ValueError or TypeError naming the value
OK = "ok"
LIMIT = "ValueError: k: "  # a limit of the device or the kernel, named with the kernel
OOM = "DriverError: cuMemHostAlloc"  # the recording driver's pinned memory is 64 KiB
PAGEABLE = "LaunchArgumentError: argument 0 (float* x) of p: _HostArray a host array does not " \
           "fit: it is host memory"  # an address the driver maps nowhere

# entry -> the outcome at -1, 2**31, 2**32, 2**63, 2**64
EXPECTED = {
    "alloc": (R, OK, OK, OK, R),
    "alloc stream": (R, OK, OK, OK, R),
    "alloc device": (R, R, R, R, R),
    "alloc_host": (R, OOM, OOM, OOM, R),
    "alloc_managed": (R, OK, OK, OK, R),
    "DeviceBuffer ptr": (R, OK, OK, OK, R),
    "DeviceBuffer nbytes": (R, OK, OK, OK, R),
    "HostBuffer host_ptr": (R, OK, OK, OK, R),
    "HostBuffer nbytes": (R, OK, OK, R, R),  # a memoryview's length: 0..2**63-1
    "copy_to_host nbytes": (R,) * 5,  # the buffer has 64 bytes: refused before a bytearray
    "copy_to_host out nbytes": (R,) * 5,
    "copy_from_host nbytes": (R,) * 5,
    "copy_from ptr": (R, OK, OK, OK, R),
    "copy_from nbytes": (R,) * 5,
    "copy_from_host stream": (R, OK, OK, OK, R),
    "fill uint32": (R, OK, R, R, R),
    "fill int16": (OK, R, R, R, R),
    "memset": (R,) * 5,
    "release_threshold": (R, OK, OK, OK, R),
    "memory_pool device": (R,) * 5,
    "prefetch device": (R,) * 5,
    "advise device": (R,) * 5,
    "MemoryPool device": (R,) * 5,
    "MemoryPool max_size": (R, OK, OK, OK, R),
    "MemoryPool release_threshold": (R, OK, OK, OK, R),
    "MemoryPool.trim": (R, OK, OK, OK, R),
    "alloc pool": (R, OK, OK, OK, R),
    "__dlpack__ stream": (OK, OK, OK, OK, R),  # -1: DLPack's "do not synchronize"
    "Device": (R,) * 5,
    "Device.attribute": (R, R, R, R, R),
    "device_for_rank": (R, OK, OK, OK, OK),  # modulo the devices: any rank of 0 or more
    "Stream priority": (OK, R, R, R, R),  # the recording driver's range: -5..0
    "Stream.from_handle": (R, OK, OK, OK, R),
    "Event.record stream": (R, OK, OK, OK, R),
    # grid x up to 2**31-1 and y up to 65535 on the device, block x up to 1024
    "grid x": (R, LIMIT, R, R, R),
    "grid y": (R, LIMIT, R, R, R),
    "block": (R, LIMIT, R, R, R),
    "cluster": (R, OK, R, R, R),  # cluster sizes are the driver's to refuse
    "RawKernel cluster z": (R, OK, R, R, R),
    "shared_mem": (R, LIMIT, R, R, R),
    "launch stream": (R, OK, OK, OK, R),
    "Graph.launch stream": (R, OK, OK, OK, R),
    "Graph.upload stream": (R, OK, OK, OK, R),
    "occupancy block": (R,) * 5,
    "occupancy shared_mem": (R, LIMIT, R, R, R),
    "max_potential_block_size limit": (R,) * 5,
    "max_potential_block_size shared_mem": (R, OK, R, R, R),
    "max_potential_block_size shared_mem()": (R, OK, R, R, R),
    "available_dynamic_shared_memory blocks": (R,) * 5,
    "available_dynamic_shared_memory block": (R,) * 5,
    "max_active_clusters cluster": (R, OK, R, R, R),
    "max_potential_cluster_size grid": (R, OK, R, R, R),
    "attributes.required_cluster_width": (OK, R, R, R, R),
    "argument pointer": (R, OK, OK, OK, R),
    "argument pointer interface": (R, OK, OK, OK, R),
    "argument host array": (R, PAGEABLE, PAGEABLE, PAGEABLE, R),  # __array_interface__
    "TensorMap address": (R, OK, OK, OK, R),
    "TensorMap shape": (R, OK, OK, R, R),  # each dimension 1..2**32
    "TensorMap strides": (R, OK, OK, R, R),  # below 2**40
    "TensorMap box": (R,) * 5,
    "TensorMap element_strides": (R,) * 5,
    "TensorMap im2col pixels": (R,) * 5,
}
# each scalar kernel argument by its C type: a LaunchArgumentError (a TypeError) naming its range
_FITS = {"signed char": (-128, 127), "unsigned char": (0, 255), "short": (-32768, 32767),
         "unsigned short": (0, 65535), "int": (-2 ** 31, 2 ** 31 - 1),
         "unsigned int": (0, 2 ** 32 - 1), "long long": (-2 ** 63, 2 ** 63 - 1),
         "unsigned long long": (0, 2 ** 64 - 1)}
EXPECTED.update({f"argument {ctype}": tuple(OK if low <= v <= high else R for v in VALUES)
                 for ctype, (low, high) in _FITS.items()})


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> dict:
    library = tensor_map_library(tmp_path_factory.mktemp("driver"))
    return scenario_json("integer_ranges", "recorded", env={"CUDALOAD_LIBCUDA": library},
                         timeout=300)


def judge(outcome: str, value: int, expected: str) -> None:
    assert "OverflowError" not in outcome, outcome
    if expected is not R:
        assert outcome.startswith(expected), outcome
        return
    kind = outcome.split(":", 1)[0]
    assert kind in ("ValueError", "TypeError", "RankError", "LaunchArgumentError"), outcome
    assert str(value) in outcome, f"the message does not name {value}: {outcome}"


def test_every_entry_is_called(outcomes):
    assert set(outcomes) == {*EXPECTED, "not integers", "integers", "larger host"}
    assert {f"argument {c}" for c in SCALARS} <= set(EXPECTED)


@pytest.mark.parametrize("index", range(len(VALUES)), ids=["-1", "2**31", "2**32", "2**63", "2**64"])
@pytest.mark.parametrize("entry", sorted(EXPECTED))
def test_an_integer_out_of_range_is_refused_by_name_and_one_in_range_passes(outcomes, entry,
                                                                            index):
    judge(outcomes[entry][index], VALUES[index], EXPECTED[entry][index])


def test_what_is_no_integer_is_a_type_error(outcomes):
    # a bool, a float, a str where an int is meant: TypeError, as integer() has always said
    assert all(o.startswith("TypeError: ") for o in outcomes["not integers"]), \
        outcomes["not integers"]


def test_an_integer_that_is_no_int_is_taken(outcomes):
    assert outcomes["integers"] == ["ok"] * 4


def test_a_host_buffer_larger_than_the_device_buffer_does_not_fit(outcomes):
    assert all(o.startswith("ValueError: copy of 65 bytes does not fit")
               for o in outcomes["larger host"]), outcomes["larger host"]


def test_a_value_out_of_range_is_refused_before_a_driver_without_a_device(libcuda_535):
    out = scenario_json("integer_ranges", "unavailable", env={"CUDALOAD_LIBCUDA": libcuda_535})
    for name, (minus, *_, past, in_range) in out.items():
        assert minus.startswith("ValueError") and "-1" in minus, (name, minus)
        assert past.startswith("ValueError") and str(2 ** 64) in past, (name, past)
        # in range: the driver is asked, and says there is no device
        assert in_range.startswith(("CudaUnavailableError", "DriverUnavailableError")), \
            (name, in_range)
