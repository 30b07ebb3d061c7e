"""Argument layout, C types and packing, against synthetic layouts (no GPU, no driver)."""

from __future__ import annotations

import math
import struct

import cffi
import pytest

np = pytest.importorskip("numpy")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings, strategies as st  # noqa: E402

from cudaload.launch import _addresses, arguments, signature  # noqa: E402
from cudaload.errors import LaunchArgumentError  # noqa: E402

FFI = cffi.FFI()


@pytest.fixture(autouse=True)
def _no_host_memory_mapped(monkeypatch):
    """No driver here: asked for the device address of host memory, it has none (pageable)."""
    monkeypatch.setattr(_addresses, "_mapped_pointer", lambda ptr: None)


def packer(types, layout=None, names=None):
    return arguments.Packer(FFI, "k", signature.build_params(types, layout, names), 0)


def pack(p, args):
    """What a launch does: the plan packs, or a failed guard or conversion gives the precise error."""
    plan = p.plan(tuple(map(type, args)))
    try:
        if not plan(args):
            raise p.fail(args, None)
    except LaunchArgumentError:
        raise
    except arguments.PACK_ERRORS as exc:
        raise p.fail(args, exc) from None
    return bytes(p.buffer)


def test_packs_exact_bytes_at_offsets_and_pointers_point_into_buffer():
    p = packer(["const float*", "float", "int"])
    data = pack(p, (0x1122334455667788, 2.5, -3))
    assert data == struct.pack("<QfI", 0x1122334455667788, 2.5, (-3) & 0xFFFFFFFF)
    base = int(FFI.cast("uintptr_t", p.pointers[0]))
    assert int(FFI.cast("uintptr_t", p.pointers[2])) - base == 12


def test_overflow_names_parameter_and_signature():
    p = packer(["float*", "int"], names=["x", "n"])
    with pytest.raises(LaunchArgumentError) as err:
        pack(p, (0, 2 ** 40))
    text = str(err.value)
    assert "argument 1 (int n)" in text and "k(float* x, int n)" in text and "2147483647" in text


def test_wrong_count_and_kinds_are_refused():
    p = packer(["float*", "int"])
    with pytest.raises(LaunchArgumentError, match="takes 2 arguments, 1 given"):
        pack(p, (0,))
    with pytest.raises(LaunchArgumentError, match="integer is needed"):
        pack(p, (0, 1.5))
    with pytest.raises(LaunchArgumentError, match="host memory"):
        pack(p, (np.zeros(4, np.float32), 1))
    with pytest.raises(LaunchArgumentError, match="device pointer is needed"):
        pack(p, ("text", 1))
    with pytest.raises(LaunchArgumentError, match="does not fit"):
        pack(p, (-1, 1))  # a negative address


def test_numpy_scalars_bool_half_and_structs():
    p = packer(["short", "double", "bool", "__half", "Pair"], [(0, 2), (8, 8), (16, 1), (18, 2),
                                                               (24, 8)])
    pair = np.array((1, 2.0), dtype=[("a", "<i4"), ("b", "<f4")])[()]
    data = pack(p, (np.int16(-5), np.float32(0.5), True, 1.5, pair))
    assert data == struct.pack("<h6xd?xe4x", -5, 0.5, True, 1.5) + pair.tobytes()
    assert pack(p, (1, 1, 1, 1, b"\0" * 8))[16] == 1
    with pytest.raises(LaunchArgumentError, match="0 or 1"):
        pack(p, (1, 1, 2, 1, b"\0" * 8))
    with pytest.raises(LaunchArgumentError, match="7 bytes given"):
        pack(p, (1, 1, True, 1, b"\0" * 7))


def test_plan_rejects_other_types_so_caller_replans():
    p = packer(["int"])
    plan = p.plan((int,))
    assert plan((3,)) is True
    assert plan((3.0,)) is False
    assert plan((1, 2)) is False


def test_unknown_types_need_driver_layout():
    with pytest.raises(LaunchArgumentError, match="without the driver"):
        signature.build_params(["MyStruct"], None)
    with pytest.raises(LaunchArgumentError, match="types are unknown"):
        signature.build_params(None, None)
    p = arguments.Packer(FFI, "k", signature.build_params(None, [(0, 4), (8, 8)]), 0)
    assert pack(p, (-1, 2.0)) == struct.pack("<i4xd", -1, 2.0)


INT_CODES = {"char": "b", "unsigned char": "B", "short": "h", "unsigned short": "H", "int": "i",
             "unsigned int": "I", "long long": "q", "unsigned long long": "Q", "float": "f",
             "double": "d", "const int*": "Q"}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(sorted(INT_CODES)),
                          st.one_of(st.integers(-2 ** 70, 2 ** 70),
                                    st.floats(allow_nan=False, width=32), st.booleans())),
                min_size=1, max_size=8))
def test_random_values_against_random_layouts(cases):
    types = [t for t, _ in cases]
    values = tuple(v for _, v in cases)
    p = packer(types)
    expected = bytearray(len(p.buffer))
    ok = True
    for param, value in zip(p.params, values):
        code = INT_CODES[param.ctype]
        is_int = isinstance(value, int)
        if code in "fd":
            fits = not isinstance(value, bool) or False
            # float32 holds its finite range and the infinities; a finite value beyond it does not fit
            fits = fits and (code == "d" or abs(float(value)) <= 3.4028234663852886e38
                             or math.isinf(value))
        else:
            fits = is_int and not (code == "Q" and param.ctype.endswith("*") and isinstance(value, bool))
            if fits:
                bits = struct.calcsize(code) * 8
                lo, hi = (-(1 << bits - 1), (1 << bits - 1) - 1) if code.islower() else (0, (1 << bits) - 1)
                fits = lo <= value <= hi
        if not fits:
            ok = False
            break
        struct.pack_into("<" + code, expected, param.offset, value)
    if ok:
        assert pack(p, values) == bytes(expected)
    else:
        with pytest.raises(LaunchArgumentError):
            pack(p, values)


def test_device_buffers_pack_their_pointer_and_freed_or_foreign_ones_are_refused():
    from types import SimpleNamespace

    from cudaload.launch.memory import DeviceBuffer

    p = packer(["float*"])
    live = DeviceBuffer(0x7000, 16, SimpleNamespace(ordinal=0))
    assert pack(p, (live,)) == struct.pack("<Q", 0x7000)
    freed = DeviceBuffer(0, 16, SimpleNamespace(ordinal=0))  # what free() leaves behind
    with pytest.raises(LaunchArgumentError, match="was freed"):
        pack(p, (freed,))
    other = DeviceBuffer(0x7000, 16, SimpleNamespace(ordinal=1))
    with pytest.raises(LaunchArgumentError, match="device 1"):
        pack(p, (other,))


def _bf16_nearest(value: float) -> int:
    """The bfloat16 nearest to ``value`` by exact arithmetic over neighbouring candidates."""
    from fractions import Fraction

    top = struct.unpack("<I", struct.pack("<f", value))[0] >> 16
    candidates = []
    for bits in ((top + d) & 0xFFFF for d in range(-2, 3)):
        if bits & 0x7F80 != 0x7F80:
            near = struct.unpack("<f", struct.pack("<I", bits << 16))[0]
            candidates.append((abs(Fraction(near) - Fraction(value)), bits & 1, bits))
    return min(candidates)[2]


@settings(max_examples=3000, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False, width=64,
                 min_value=-3.3895e38, max_value=3.3895e38)
       # near a midpoint between two bfloat16 values, where rounding to float first can land
       # exactly on it and then go the wrong way
       | st.builds(lambda k, d, e: (1 + (2 * k + 1) * 2.0 ** -8 + d * 2.0 ** -34) * 2.0 ** e,
                   st.integers(0, 126), st.integers(-2 ** 9, 2 ** 9), st.integers(-120, 120)))
def test_bfloat16_is_rounded_once_to_nearest_even(value):
    p = packer(["__nv_bfloat16"])
    assert struct.unpack("<H", pack(p, (value,)))[0] == _bf16_nearest(value)


def test_bfloat16_overflow_is_refused_not_infinity():
    p = packer(["__nv_bfloat16"])
    assert pack(p, (1 + 2 ** -8 + 2 ** -30,)) == struct.pack("<H", 0x3F81)  # not 0x3f80
    assert pack(p, (float("inf"),)) == struct.pack("<H", 0x7F80)  # infinity given stays
    assert struct.unpack("<H", pack(p, (float("nan"),)))[0] & 0x7FC0 == 0x7FC0
    with pytest.raises(LaunchArgumentError, match="does not fit"):
        pack(p, (3.4e38,))


def test_integer_like_values_into_int_and_pointer_parameters():
    import enum

    class Mode(enum.IntEnum):
        FAST = 3

    p = packer(["int", "const float*", "unsigned char"])
    assert pack(p, (Mode.FAST, np.uint64(0x7000), np.bool_(True))) == \
        struct.pack("<i4xQB", 3, 0x7000, 1)
    with pytest.raises(LaunchArgumentError, match="device pointer is needed"):
        pack(p, (1, True, 1))  # a bool is no address


def test_grid_and_block_sizes_must_be_integers():
    from cudaload.launch.kernel import _constant, _dims

    assert _dims(np.int64(3), "grid") == (3, 1, 1) and _dims([2, 3], "block") == (2, 3, 1)
    for bad in (1000 / 256, (3.9,), "256", ("2",), True, (1, True)):
        with pytest.raises(TypeError, match="int or a tuple"):
            _dims(bad, "grid")
    # only a grid that cannot change is remembered by identity between launches
    assert _constant((4, 2)) and _constant(5)
    assert not _constant((np.int64(4),)) and not _constant([4])


def test_an_array_whose_interface_refuses_is_a_launch_argument_error():
    class CpuArray:  # some libraries raise AttributeError from the property for host arrays
        @property
        def __cuda_array_interface__(self):
            raise AttributeError("not a CUDA array; use .cuda() first")

    p = packer(["float*"], names=["x"])
    with pytest.raises(LaunchArgumentError, match=r"argument 0 \(float\* x\).*use .cuda\(\) first"):
        pack(p, (CpuArray(),))


# --- what each parameter kind takes, and what it refuses ------------------------------------------

class _TorchTensor:
    """What the packer reads of a torch tensor (``get_device``: -1 on the CPU; ``data_ptr``;
    ``is_pinned``), so these run where torch is not installed."""

    __module__ = "torch"

    def __init__(self, ptr: int, index: int, pinned: bool = False):
        self.ptr, self.index, self.pinned = ptr, index, pinned

    def get_device(self) -> int:
        return self.index

    def is_pinned(self) -> bool:
        return self.pinned

    def data_ptr(self) -> int:
        return self.ptr


class _CupyArray:
    """What the packer reads of a CuPy array: ``data.ptr`` and ``data.device_id``."""

    __module__ = "cupy"
    __cuda_array_interface__: dict = {}

    def __init__(self, ptr: int, device_id: int):
        from types import SimpleNamespace

        self.memory = SimpleNamespace(ptr=ptr, device_id=device_id)

    @property
    def data(self):  # a property, as CuPy's: the packer looks for it on the type
        return self.memory


def test_a_kernel_without_parameters_takes_only_no_arguments():
    p = packer([])
    assert p.signature == "k()"
    plan = p.plan(())
    assert plan(()) is True and plan((1,)) is False
    with pytest.raises(LaunchArgumentError, match="takes 0 arguments, 1 given"):
        p.plan((int,))
    assert len(p.buffer) == 1 and p.pointers[0] == FFI.NULL  # room for nothing, never empty


@pytest.mark.parametrize("array, other", [(_TorchTensor, 1), (_CupyArray, 1)])
def test_arrays_of_torch_and_cupy_pack_their_pointer_on_their_device_only(array, other):
    p = packer(["float*"])
    assert pack(p, (array(0x7000, 0),)) == struct.pack("<Q", 0x7000)
    with pytest.raises(LaunchArgumentError, match=f"on device {other} but the kernel launches "
                                                  "on device 0"):
        pack(p, (array(0x7000, other),))


def test_a_torch_tensor_in_host_memory_is_refused_with_the_way_to_copy_it():
    with pytest.raises(LaunchArgumentError, match="it is host memory"):
        pack(packer(["float*"]), (_TorchTensor(0x7000, -1),))


def test_a_pinned_torch_tensor_packs_its_address_inline():
    # pin_memory(): page-locked, which kernels reach at its host address under unified addressing
    p = packer(["float*"])
    assert pack(p, (_TorchTensor(0x9000, -1, pinned=True),)) == struct.pack("<Q", 0x9000)
    assert p.pieces((_TorchTensor,))[0] == [
        ("a0.data_ptr()", "(a0.get_device() == D or a0.is_pinned())")]


def test_bool_parameters_take_bools_numpy_bools_and_the_integers_0_and_1():
    p = packer(["bool"])
    assert pack(p, (np.bool_(True),)) == b"\x01"
    assert pack(p, (np.bool_(False),)) == b"\x00"
    assert pack(p, (np.int32(1),)) == b"\x01" and pack(p, (np.uint8(0),)) == b"\x00"
    assert pack(p, (1,)) == b"\x01"
    with pytest.raises(LaunchArgumentError, match="0 or 1"):
        pack(p, (np.uint8(2),))
    for bad in (1.0, "1", None):
        with pytest.raises(LaunchArgumentError, match="a bool is needed"):
            pack(p, (bad,))


def test_real_parameters_refuse_what_is_no_number():
    for bad in ("1.5", b"1", None):
        with pytest.raises(LaunchArgumentError, match="a real number is needed"):
            pack(packer(["float"]), (bad,))


def test_parameters_known_only_by_size_take_ints_floats_bytes_and_arrays():
    """A kernel whose types are unknown (the driver reports offsets and sizes): ints and floats
    are written in the parameter's size, bytes as they are, an array's address in 8 bytes."""
    p = arguments.Packer(FFI, "k", signature.build_params(None, [(0, 8), (8, 4), (12, 4),
                                                                 (16, 2)]), 0)
    data = pack(p, (_CupyArray(0x7000, 0), np.float64(1.5), b"\1\2\3\4", 2.0))
    assert data == struct.pack("<Qf", 0x7000, 1.5) + b"\1\2\3\4" + struct.pack("<e", 2.0)
    assert pack(p, (_TorchTensor(0x7100, 0), np.float32(0.5), b"\0" * 4, 1))[:12] == \
        struct.pack("<Qf", 0x7100, 0.5)
    with pytest.raises(LaunchArgumentError, match="on device 1"):
        pack(p, (_CupyArray(0x7000, 1), 1.5, b"\0" * 4, 1))
    odd = arguments.Packer(FFI, "k", signature.build_params(None, [(0, 4), (4, 3)]), 0)
    with pytest.raises(LaunchArgumentError, match="_CupyArray cannot be passed"):
        pack(odd, (_CupyArray(0x7000, 0), b"\0" * 3))  # an address needs 8 bytes
    with pytest.raises(LaunchArgumentError, match="float cannot be passed"):
        pack(odd, (1, 1.5))  # no float has 3 bytes


def test_an_array_is_no_integer():
    with pytest.raises(LaunchArgumentError, match="an integer is needed"):
        pack(packer(["long long"]), (_CupyArray(0x7000, 0),))


def test_a_struct_parameter_takes_exactly_its_bytes_and_nothing_else():
    p = packer(["Pair"], [(0, 2)])
    assert pack(p, (np.int16(0x0102),)) == b"\x02\x01"  # the scalar's bytes, not bytes(258)
    assert pack(p, (memoryview(b"\5\6"),)) == b"\5\6"
    for bad in (258, 2.5, "ab"):
        with pytest.raises(LaunchArgumentError, match=f"{type(bad).__name__} cannot be passed as"):
            pack(p, (bad,))


def test_a_plan_is_made_once_per_tuple_of_types():
    p = packer(["int", "float"])
    assert p.plan((int, float)) is p.plan((int, float))
    assert p.plan((int, int)) is not p.plan((int, float))


def test_errors_name_the_type_when_no_value_is_seen_yet_and_the_signature_otherwise():
    with pytest.raises(LaunchArgumentError, match=r"argument 0 \(bool\) of k: a float does not "
                                                  "fit: a bool is needed; signature: k\\(bool\\)"):
        pack(packer(["bool"]), (1.0,))
    p = packer(["int"])
    err = p.fail((3,), RuntimeError("no room"))  # every argument fits: the packing itself failed
    assert str(err) == "k(int): arguments could not be packed: no room"


def test_a_generated_packer_reads_as_a_named_file_for_as_long_as_it_lives():
    import gc
    import inspect
    import linecache
    import traceback

    p = arguments.Packer(FFI, "scale<float>", signature.build_params(["S", "int"], [(0, 8), (8, 4)]), 0)
    plan = p.plan((bytes, int))
    name = plan.__code__.co_filename
    assert name.startswith("<cudaload packer scale<float>#") and name in linecache.cache
    assert inspect.getsource(plan) == "".join(linecache.cache[name][2])
    assert "pack_into(buf, 0, c0(a0), a1)" in inspect.getsource(plan)
    with pytest.raises(LaunchArgumentError) as err:
        plan((b"abc", 1))  # the converter raises from inside the generated function
    shown = "".join(traceback.format_exception(err.value))
    assert f'File "{name}", line 7, in pack\n    pack_into(buf, 0, c0(a0), a1)\n' in shown
    del plan, p, err
    gc.collect()
    assert name not in linecache.cache


# --- the fast paths a plan takes, and the edges of each conversion -----------------------------

def test_an_int_address_is_packed_as_it_is_and_none_as_a_null_pointer():
    p = packer(["float*", "const int*"])
    conversions, _order, _env = p.pieces((int, type(None)))
    assert conversions[0] == (None, None)  # no conversion call in the generated packer
    assert pack(p, (0x7000, None)) == struct.pack("<QQ", 0x7000, 0)


def test_host_memory_without_dlpack_is_refused_with_the_way_to_copy_it():
    class HostArray:  # the NumPy array interface only, as older array libraries have
        __array_interface__: dict = {}

    for host in (b"\0" * 8, bytearray(8), memoryview(b"\0" * 8), HostArray()):
        with pytest.raises(LaunchArgumentError, match=r"it is host memory, but the kernel needs "
                                                      r"device memory: copy it with cudaload"):
            pack(packer(["float*"]), (host,))


def test_a_device_buffer_is_read_inline_and_a_failed_guard_packs_nothing():
    from types import SimpleNamespace

    from cudaload.launch.memory import DeviceBuffer

    p = packer(["float*"])
    conversions, _order, env = p.pieces((DeviceBuffer,))
    assert conversions == [("a0.ptr", "a0.ptr and a0.device.ordinal == D")] and env["D"] == 0
    plan = p.plan((DeviceBuffer,))
    assert plan((DeviceBuffer(0x7000, 16, SimpleNamespace(ordinal=0)),)) is True
    # a freed buffer fails the guard: the plan says no (the caller asks fail() why), packs nothing
    assert plan((DeviceBuffer(0, 16, SimpleNamespace(ordinal=0)),)) is False
    assert bytes(p.buffer) == struct.pack("<Q", 0x7000)


def test_a_numpy_float32_beyond_bfloat16_is_refused_as_a_python_float_is():
    # the rounding reads the value as a double: in float32 arithmetic 2**128 is infinity, and the
    # largest float32 values would round down to the largest bfloat16 instead of being refused
    p = packer(["__nv_bfloat16"])
    assert pack(p, (np.float32(1.5),)) == pack(p, (1.5,)) == struct.pack("<H", 0x3FC0)
    for big in (np.float32(3.4e38), np.float32(-3.4e38)):
        with pytest.raises(LaunchArgumentError, match="holds magnitudes up to 3.3895e38"):
            pack(p, (big,))


def test_parameters_known_only_by_size_take_numpy_integers():
    p = arguments.Packer(FFI, "k", signature.build_params(None, [(0, 4), (4, 2)]), 0)
    assert pack(p, (np.int32(-2), np.uint16(7))) == struct.pack("<ih", -2, 7)


def test_types_of_other_libraries_never_make_the_packer_import_numpy(monkeypatch):
    """A program that does not use NumPy does not pay for importing it at its first launch."""
    import builtins

    imported = []
    real = builtins.__import__

    def spy(name, *args, **kwargs):
        if name == "numpy":
            imported.append(name)
        return real(name, *args, **kwargs)

    class Tensor(_TorchTensor):  # an array type of another library, with a dtype of its own
        __module__ = "torch"
        dtype = "torch.float32"

    p = packer(["int", "float", "bool", "float*", "const int*", "Pair"], [(0, 4), (4, 4), (8, 1),
                                                                         (16, 8), (24, 8), (32, 2)])
    monkeypatch.setattr(builtins, "__import__", spy)
    data = pack(p, (1, 2.0, True, Tensor(0x7000, 0), None, b"ab"))
    assert imported == [] and data[16:] == struct.pack("<QQ", 0x7000, 0) + b"ab"


def test_a_numpy_that_cannot_be_imported_makes_no_type_a_numpy_scalar(monkeypatch):
    import sys

    class Scalar:  # what a NumPy type looks like from outside
        __module__ = "numpy"
        dtype = None

    monkeypatch.setitem(sys.modules, "numpy", None)  # import numpy raises ImportError
    with pytest.raises(LaunchArgumentError, match="an integer is needed"):
        pack(packer(["int"]), (Scalar(),))


def test_an_array_is_no_struct_value():
    # a NumPy array has a dtype but is no scalar: an address was meant, or one element (a[()])
    with pytest.raises(LaunchArgumentError, match="ndarray cannot be passed as Pair"):
        pack(packer(["Pair"], [(0, 8)]), (np.zeros(2, np.float32),))


@pytest.mark.parametrize("ctype, value, holds", [
    ("int", 2 ** 31, "int holds -2147483648..2147483647"),
    ("short", -2 ** 15 - 1, "short holds -32768..32767"),
    ("unsigned char", 256, "unsigned char holds 0..255"),
    ("unsigned int", -1, "unsigned int holds 0..4294967295"),
])
def test_an_integer_out_of_range_is_told_the_range_of_its_parameter(ctype, value, holds):
    with pytest.raises(LaunchArgumentError) as err:
        pack(packer([ctype]), (value,))
    assert f"does not fit: {holds}; signature: k({ctype})" in str(err.value)
