"""Entry points declared with their 13.0 ABI resolve, on an older driver, to the function of that
ABI (the real libcuda 535, CUDA 12.2, without a GPU)."""

from __future__ import annotations

from tests._support import scenario_json


def test_prefetch_resolves_to_the_versioned_symbol_on_a_12_2_driver(libcuda_535):
    out = scenario_json("driver_abi", "prefetch_symbol", env={"CUDALOAD_LIBCUDA": libcuda_535})
    assert out["version"] == 12020
    # The function of the 13.0 ABI is the versioned symbol (a driver before 12.2 lacks it, and
    # gives the 4-argument function for the base name: refused as a missing symbol instead).
    assert out["resolved"] == out["exported"] != 0
    assert out["base"] == out["exported"]  # 12.2 maps the base name at its version to it too
