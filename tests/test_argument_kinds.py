"""Device addresses by where they come from (cudaload/launch/_addresses.py): a DeviceBuffer, a
PyTorch tensor, the CUDA Array Interface, DLPack; what each takes and what it refuses, against
synthetic layouts (no GPU: the driver's answer about who owns a pointer is stubbed)."""

from __future__ import annotations

import struct
from types import SimpleNamespace

import pytest

np = pytest.importorskip("numpy")

from cudaload.errors import LaunchArgumentError  # noqa: E402
from cudaload.launch import _addresses, arguments, signature  # noqa: E402
from cudaload.launch.memory import DeviceBuffer  # noqa: E402
from tests.test_arguments import FFI, _TorchTensor, pack, packer  # noqa: E402


def on_device(device: int, types=("float*",), layout=None):
    return arguments.Packer(FFI, "k", signature.build_params(list(types), layout), device)


# The owners the stubbed driver reports; 0xA000 is a pointer it cannot place; host memory 0x9000
# is pageable, 0xB000 pinned and mapped at 0xB0B000.
OWNERS = {0x7000: 0, 0x8000: 1, 0x9000: -1, 0xB000: -1}
MAPPED = {0xB000: 0xB0B000, 0xB0B000: 0xB0B000}


@pytest.fixture(autouse=True)
def owners(monkeypatch):
    def pointer_device(ptr):
        if type(ptr) is not int:  # what cffi says of anything but an int
            raise TypeError(f"an integer is required, not {type(ptr).__name__}")
        return OWNERS.get(ptr)

    monkeypatch.setattr(_addresses, "_pointer_device", pointer_device)
    monkeypatch.setattr(_addresses, "_mapped_pointer", MAPPED.get)


class Interface:
    def __init__(self, cai):
        self.cai = cai

    @property
    def __cuda_array_interface__(self):
        return self.cai


def cai(ptr=0x7000, **fields):
    return Interface({"data": (ptr, False), "shape": (4,), "typestr": "<f4", **fields})


def test_a_conversion_has_no_attribute_but_its_three():
    # one per pointer parameter of each plan: no per-instance dict, and no attribute misspelt
    with pytest.raises(AttributeError):
        _addresses.Inline("{a}", "True", None).gaurd = "True"


def test_a_device_buffer_for_a_parameter_known_only_by_size_packs_its_address():
    p = arguments.Packer(FFI, "k", signature.build_params(None, [(0, 8)]), 0)
    assert pack(p, (DeviceBuffer(0x7000, 16, SimpleNamespace(ordinal=0)),)) == \
        struct.pack("<Q", 0x7000)
    with pytest.raises(LaunchArgumentError, match="the buffer was freed"):
        pack(p, (DeviceBuffer(0, 16, SimpleNamespace(ordinal=0)),))
    with pytest.raises(LaunchArgumentError, match="the array is on device 1 but the kernel "
                                                  "launches on device 0"):
        pack(p, (DeviceBuffer(0x7000, 16, SimpleNamespace(ordinal=1)),))


def test_a_live_buffer_beside_a_bad_value_is_not_blamed():
    p = packer(["float*", "int"])
    err = p.fail((DeviceBuffer(0x7000, 16, SimpleNamespace(ordinal=0)), 2 ** 40), None)
    assert str(err).startswith("argument 1 (int) of k: int 1099511627776 does not fit")


def test_a_tensor_on_device_0_is_refused_by_a_kernel_on_device_1():
    with pytest.raises(LaunchArgumentError, match="the array is on device 0 but the kernel "
                                                  "launches on device 1"):
        pack(on_device(1), (_TorchTensor(0x7000, 0),))


def test_an_array_of_another_library_with_a_data_ptr_is_read_through_its_interface():
    class Other(Interface):  # not PyTorch: its data_ptr means something else
        def data_ptr(self):
            raise AssertionError("read as a PyTorch tensor")

    assert pack(packer(["float*"]), (Other(cai(0x7000).cai),)) == struct.pack("<Q", 0x7000)


@pytest.mark.parametrize("interface, device, packed", [
    (cai(0x7000), 0, 0x7000),
    (cai(0xA000), 0, 0xA000),  # the driver cannot say whose it is: taken, the launch will tell
    (cai(0x8000), 1, 0x8000),
    (cai(0xB000), 0, 0xB0B000),  # pinned host memory: the address the driver maps it at
    (cai(0xB000), 1, 0xB0B000),  # on any device
    # right but unusual: a list for data and shape, an integer that is no int
    (Interface({"data": [np.int64(0x7000), False], "shape": [4], "typestr": "<f4"}), 0, 0x7000),
    # right in kind: only the pointer is used, so the rest is not checked item by item
    (cai(0x7000, data=(0x7000, False, "extra"), shape=("n",)), 0, 0x7000),
])
def test_the_array_interface_gives_its_pointer_on_its_device(interface, device, packed):
    assert pack(on_device(device), (interface,)) == struct.pack("<Q", packed)


@pytest.mark.parametrize("interface, device, why", [
    (cai(0x8000), 0, "the array is on device 1 but the kernel launches on device 0"),
    (cai(0x7000), 1, "the array is on device 0 but the kernel launches on device 1"),
    (cai(0x9000), 0, "it is host memory, but the kernel needs device memory"),
    (Interface({}), 0, "lacks 'data', 'shape', 'typestr'"),
    (Interface({"data": None, "shape": (4,), "typestr": "<f4"}), 0, "['data'] is None"),
    (Interface({"data": (), "shape": (4,), "typestr": "<f4"}), 0, "['data'] is ()"),
    (cai("0x7000"), 0, "['data'] is ('0x7000', False)"),
    (cai(0x7000, shape=4), 0, "['shape'] is 4, not a tuple of ints"),
    (cai(0x7000, shape=[4.5]), 0, "['shape'] is [4.5], not a tuple of ints"),
    (cai(0x7000, typestr=4), 0, "['typestr'] is 4, not a str"),
])
def test_the_array_interface_refuses_another_device_host_memory_and_malformed_fields(
        interface, device, why):
    with pytest.raises(LaunchArgumentError) as err:
        pack(on_device(device), (interface,))
    assert str(err.value).startswith("argument 0 (float*) of k: ") and why in str(err.value)


class DLPackOnly:
    def __init__(self, device):
        self.device = device

    def __dlpack__(self, **_kwargs):
        raise AssertionError("no capsule is made for an array that is refused")

    def __dlpack_device__(self):
        return self.device


def test_dlpack_refuses_another_device_and_host_memory(monkeypatch):
    for device, why in (((2, 1), "the array is on device 1 but the kernel launches on device 0"),
                        ((13, 1), "the array is on device 1")):  # kDLCUDAManaged
        with pytest.raises(LaunchArgumentError, match=why):
            pack(packer(["float*"]), (DLPackOnly(device),))
    # host memory (kDLCPU, kDLCUDAHost): its capsule's address, mapped by the driver or refused
    monkeypatch.setattr(_addresses, "_dlpack_pointer", lambda value: value.address)
    for kind in (1, 3):
        pageable, pinned = DLPackOnly((kind, 0)), DLPackOnly((kind, 0))
        pageable.address, pinned.address = 0x9000, 0xB000
        with pytest.raises(LaunchArgumentError, match="it is host memory"):
            pack(packer(["float*"]), (pageable,))
        assert pack(packer(["float*"]), (pinned,)) == struct.pack("<Q", 0xB0B000)


def test_a_host_array_passes_the_address_the_driver_maps_it_at():
    class HostArray:  # the NumPy array interface only
        def __init__(self, address):
            self.address = address

        @property
        def __array_interface__(self):
            return {"data": (self.address, False), "shape": (4,), "typestr": "<f4"}

    assert pack(packer(["float*"]), (HostArray(0xB000),)) == struct.pack("<Q", 0xB0B000)
    with pytest.raises(LaunchArgumentError, match="it is host memory"):
        pack(packer(["float*"]), (HostArray(0x9000),))


def test_an_object_with_dlpack_but_no_device_is_no_array():
    class Half:
        def __dlpack__(self, **_kwargs):
            raise AssertionError("read as a DLPack array")

    with pytest.raises(LaunchArgumentError, match="a device pointer is needed"):
        pack(packer(["float*"]), (Half(),))
