"""ObjectCode: wrapping code made elsewhere, reading files, and the kind/arch it reports."""

from __future__ import annotations

import base64
import json

import pytest

from cudaload.compile.objectcode import ObjectCode
from tests._support import scenario_json


@pytest.fixture(scope="module")
def real_code():
    """A CUBIN for sm_80 and PTX for compute_90 from NVRTC (compiled in a subprocess)."""
    out = scenario_json("nvrtc_compiles", "real_code")
    return base64.b64decode(out[0]), base64.b64decode(out[1])


def test_from_bytes_reads_kind_and_arch(real_code):
    cubin, ptx = real_code
    a = ObjectCode.from_bytes(cubin, "cubin")
    b = ObjectCode.from_bytes(bytearray(ptx + b"\0"), "ptx")
    assert (a.kind, a.arch, a.cached, a.log, a.lowered_names) == ("cubin", "sm_80", None, "", {})
    assert (b.kind, b.arch, b.code) == ("ptx", "sm_90", ptx)
    with pytest.raises(ValueError, match="kind"):
        ObjectCode.from_bytes(cubin, "elf")
    with pytest.raises(ValueError, match="not a CUBIN"):
        ObjectCode.from_bytes(ptx, "cubin")


def test_from_file_by_extension_or_contents(real_code, tmp_path):
    cubin, ptx = real_code
    (tmp_path / "k.cubin").write_bytes(cubin)
    (tmp_path / "k.ptx").write_bytes(ptx)
    (tmp_path / "k.bin").write_bytes(cubin)
    (tmp_path / "k.txt").write_bytes(ptx)
    kinds = [ObjectCode.from_file(tmp_path / n).kind for n in ("k.cubin", "k.ptx", "k.bin", "k.txt")]
    assert kinds == ["cubin", "ptx", "cubin", "ptx"]
    with pytest.raises(OSError):
        ObjectCode.from_file(tmp_path / "missing.cubin")


def test_repr_and_recompile_without_program(real_code):
    from cudaload.compile.program import recompile_refused

    obj = ObjectCode.from_bytes(real_code[0], "cubin")
    assert repr(obj) == f"<ObjectCode cubin sm_80 {len(real_code[0])} bytes>"
    assert recompile_refused(obj) is None


def test_load_hands_the_object_to_module(real_code, monkeypatch):
    from cudaload.bindings import driver
    from cudaload.launch import module

    made = []
    monkeypatch.setattr(module, "Module", lambda o: made.append(o) or "module")
    monkeypatch.setattr(driver, "init", lambda: None)  # no driver here
    obj = ObjectCode.from_bytes(real_code[0], "cubin")
    assert obj.load() == "module" and made == [obj]
    assert obj._as("memory").load() == "module" and made == [obj]  # a copy shares the load
    assert json.dumps(obj.lowered_names) == "{}"


@pytest.mark.parametrize("data, kind, words", [
    (b"", "ptx", "no bytes"),
    (b"", "cubin", "no bytes"),
    (b"junk", "fatbin", "not a fatbin"),
    (b"\xff\xfe", "ptx", "not PTX"),
    (b'extern "C" __global__ void k(int *x) { x[0] = 1; }', "ptx", "cudaload.Program"),
])
def test_from_bytes_refuses_what_is_no_device_code(data, kind, words):
    with pytest.raises(ValueError, match=words):
        ObjectCode.from_bytes(data, kind)


def test_from_file_of_source_says_to_compile_it(tmp_path):
    (tmp_path / "k.cu").write_text('extern "C" __global__ void k(int *x) { x[0] = 1; }\n')
    with pytest.raises(ValueError, match="cudaload.Program"):
        ObjectCode.from_file(tmp_path / "k.cu")


def test_a_dropped_program_is_collected_while_its_code_lives_on():
    """The code holds what compiled it as data (ObjectCode.origin), not the Program: the memory
    cache keeps no Program alive, and a refusal still compiles again (PTX refused: CUBIN)."""
    assert scenario_json("program_compiles", "dropped_program") == {"collected": True,
                                                                     "again": "cubin"}


def test_copies_of_code_share_one_place_for_its_module():
    # The memory cache's copy, and the code a compile returns, load one Module between them:
    # both hold the same ModuleSlot (its module and the lock of its one load), by name.
    from cudaload.compile.objectcode import ModuleSlot

    obj = ObjectCode(b"\x7fELF" + bytes(60), "cubin", "sm_90")
    copy = obj._as("memory")
    assert isinstance(obj._module, ModuleSlot) and copy._module is obj._module
    assert obj._module.module is None and obj._module.lock.acquire(blocking=False)
    obj._module.lock.release()
    other = ObjectCode(obj.code, "cubin", "sm_90")  # equal bytes, its own load
    assert other._module is not obj._module
