"""Stream handles from every kind of stream object (a look-alike driver with one device; no GPU)."""

from __future__ import annotations

from tests._fakelibs import one_device_driver  # noqa: F401  (fixture)
from tests.conftest import run_json


def test_handle_of_every_stream_kind(one_device_driver):
    out = run_json("""
import json
from cudaload.bindings import driver
from cudaload.launch.stream import Stream, handle_of

ffi = driver.api().ffi
ptr = lambda h: int(ffi.cast("uintptr_t", h))

class Torchish:  # torch.cuda.Stream's attribute
    cuda_stream = 0x5000

class Protocol:
    def __cuda_stream__(self):
        return (0, 0x6000)

wrapped = Stream.from_handle(0x7000)
result = {"none": ptr(handle_of(None)), "int": ptr(handle_of(0x4000)),
          "torch": ptr(handle_of(Torchish())), "protocol": ptr(handle_of(Protocol())),
          "stream": ptr(handle_of(wrapped)), "same": Stream.from_handle(wrapped) is wrapped}
try:
    handle_of("not a stream")
except TypeError as err:
    result["bad"] = str(err)
print(json.dumps(result))
""", env={"CUDALOAD_LIBCUDA": one_device_driver})
    assert out["none"] == 0 and out["int"] == 0x4000 and out["stream"] == 0x7000
    assert out["torch"] == 0x5000 and out["protocol"] == 0x6000 and out["same"] is True
    assert "cannot use str as a CUDA stream" in out["bad"]
