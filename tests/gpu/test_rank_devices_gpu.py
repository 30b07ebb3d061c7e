"""One device per process on two real GPUs: a process that uses only device 1 (by ``with
Device(1):``, ``set_current()`` or ``device_for_rank()``) leaves device 0 without a primary
context, as cuDevicePrimaryCtxGetState says through cudaload's own binding.  Each runs in a fresh
process: this one has contexts of its own."""

from __future__ import annotations

import pytest

import cudaload
from cudaload.launch import rank
from tests._support import scenario_json


@pytest.fixture(autouse=True)
def _two_gpus():
    if cudaload.device_count() < 2:
        pytest.skip("needs two GPUs")


def test_a_process_using_device_one_leaves_device_zero_without_a_context():
    out = scenario_json("rank_devices", "gpu_device_one", unset=rank.RANK_VARIABLES, timeout=180)
    assert out["work"] == [1, True] and out["thread"] == [1, True], out
    assert out["available"] is True and out["arch_before"].startswith("sm_")
    assert out["active"] == [0, 1], f"device 0 got a primary context: {out}"


def test_device_for_rank_one_leaves_device_zero_without_a_context():
    out = scenario_json("rank_devices", "gpu_rank", unset=rank.RANK_VARIABLES,
                        env={"LOCAL_RANK": "1"}, timeout=180)
    assert out["ordinal"] == 1
    assert out["work"] == [1, True] and out["thread"] == [1, True], out
    assert out["active"] == [0, 1], f"device 0 got a primary context: {out}"
