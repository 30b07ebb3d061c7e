"""Stream handles from every kind of stream object (a look-alike driver with one device; no GPU)."""

from __future__ import annotations

from tests._fakelibs import one_device_driver  # noqa: F401  (fixture)
from tests._support import scenario_json


def test_handle_of_every_stream_kind(one_device_driver):
    out = scenario_json("driver_calls", "stream_handles",
                        env={"CUDALOAD_LIBCUDA": one_device_driver})
    assert out["none"] == 0 and out["int"] == 0x4000 and out["stream"] == 0x7000
    assert out["torch"] == 0x5000 and out["protocol"] == 0x6000 and out["same"] is True
    assert "cannot use str as a CUDA stream" in out["bad"]
