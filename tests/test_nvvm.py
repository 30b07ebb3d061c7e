"""Programs of NVVM IR (``Program(ir, code_type="nvvm")``): compiled by the real libNVVM to PTX
and linked to CUBIN by the real nvJitLink, cached, and refused with the reason; each scenario in
a fresh process (tests/scenarios/nvvm_compiles.py), no GPU.

libNVVM is the nvidia-nvvm wheel where the test environment has it, else the file
$CUDALOAD_TEST_LIBNVVM names (given to the scenarios as CUDALOAD_LIBNVVM); without either the
tests that compile skip, saying so.  The refusals need no library.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

import cudaload
from tests._support import scenario_json
from tests.scenarios.nvvm_compiles import TWICE

UNSET = ("CUDALOAD_LIBNVRTC", "CUDALOAD_LIBNVJITLINK", "CUDALOAD_LIBNVVM")


def _libnvvm() -> dict:
    """The environment that names libNVVM to a scenario; skips where there is none."""
    from cudaload.bindings import _sites

    if _sites.library("nvvm") is not None:
        return {}
    named = os.environ.get("CUDALOAD_TEST_LIBNVVM")
    if named and os.path.isfile(named):
        return {"CUDALOAD_LIBNVVM": named}
    pytest.skip("no libNVVM: pip install nvidia-nvvm into the test environment, or set "
                "CUDALOAD_TEST_LIBNVVM to the full path of libnvvm.so")


def _run(tmp_path, *args, env=None):
    return scenario_json("nvvm_compiles", *args, timeout=300, unset=UNSET,
                         env={"CUDALOAD_LIBCUDA": str(tmp_path / "no" / "libcuda.so.1"),
                              "CUDALOAD_CACHE_DIR": str(tmp_path / "cache"), **(env or {})})


def test_nvvm_ir_compiles_to_ptx_and_cubin_and_a_second_process_finds_both_on_disk(tmp_path):
    nvvm = _libnvvm()
    got = _run(tmp_path, "forms", env=nvvm)
    assert got["ptx"] == {"kind": "ptx", "arch": "sm_90", "name": "twice.ll", "cached": None,
                          "entry": True, "elf": False, "size": got["ptx"]["size"]}
    assert got["cubin"]["kind"] == "cubin" and got["cubin"]["elf"] and got["cubin"]["arch"] \
        == "sm_90" and got["cubin"]["name"] == "twice.ll"
    assert got["bytes"] is True  # the IR as bytes is the same program as the IR as text
    assert got["nvrtc"] is False  # no NVRTC: libNVVM compiles, nvJitLink links
    again = _run(tmp_path, "forms", env=nvvm)
    assert again["ptx"]["cached"] == "disk" and again["cubin"]["cached"] == "disk"


def test_the_key_covers_the_options(tmp_path):
    nvvm = _libnvvm()
    _run(tmp_path, "forms", env=nvvm)
    first = _run(tmp_path, "forms", env=nvvm)
    other = _run(tmp_path, "forms", "-opt=0", env=nvvm)
    assert first["ptx"]["cached"] == "disk" and other["ptx"]["cached"] is None
    assert other["ptx"]["size"] != first["ptx"]["size"]  # unoptimised: libNVVM took the option


def test_bitcode_compiles_as_its_text_does(tmp_path):
    nvvm = _libnvvm()
    # LLVM 14's assembler writes typed pointers, which NVVM IR 2.0 has
    assembler = shutil.which("llvm-as-14") or shutil.which("llvm-as")
    if assembler is None:
        pytest.skip("no llvm-as to assemble the IR to bitcode")
    (tmp_path / "twice.ll").write_text(TWICE)
    subprocess.run([assembler, str(tmp_path / "twice.ll"), "-o", str(tmp_path / "twice.bc")],
                   check=True, timeout=60)
    got = _run(tmp_path, "bitcode", str(tmp_path / "twice.bc"), env=nvvm)
    assert got["magic"] == "4243c0de" and got["kind"] == "ptx" and got["entry"]
    assert got["same"] and got["cached"] == [None, None]  # other bytes: another entry


def test_ir_libnvvm_refuses_is_a_compile_error_with_its_log(tmp_path):
    got = _run(tmp_path, "broken", env=_libnvvm())
    assert got["compile_error"] and got["name"] == "broken.ll"
    assert got["log"] and got["log"] in got["message"]
    assert "libNVVM could not compile it" in got["message"]


def test_without_libnvvm_the_error_names_the_wheel_and_the_variable(tmp_path):
    got = _run(tmp_path, "unavailable", "sm_90",
               env={"CUDALOAD_LIBNVVM": str(tmp_path / "no" / "libnvvm.so")})
    assert got["type"] == "LibraryNotFoundError" and "libnvvm not found" in got["message"]
    assert "pip install nvidia-nvvm" in got["hint"] and "CUDALOAD_LIBNVVM" in got["hint"]


def test_arch_none_without_a_device_compiles_nothing(tmp_path):
    got = _run(tmp_path, "unavailable", "none")
    assert got["unavailable"] and got["nvvm"] is False


@pytest.mark.parametrize("kw, compile_kw, error, words", [
    ({"options": ("-arch=compute_90",)}, None, ValueError, "the arch is compile"),
    ({"fast_math": True}, None, ValueError, "fast_math: keywords for CUDA C\\+\\+ source"),
    ({"source": 42}, None, TypeError, "text \\(LLVM IR\\) or bytes \\(bitcode\\), not int"),
    ({"source": "  "}, None, ValueError, "the NVVM IR is empty"),
    ({}, {"output": "ltoir", "arch": 90}, ValueError, "not 'ltoir'"),
    ({"code_type": "fortran"}, None, ValueError, "code_type must be one of c\\+\\+, ptx, nvvm"),
])
def test_a_nvvm_program_with_wrong_arguments_is_refused_before_anything_loads(kw, compile_kw,
                                                                                error, words):
    kw = {"source": TWICE, "code_type": "nvvm", **kw}
    with pytest.raises(error, match=words):
        cudaload.Program(kw.pop("source"), **kw).compile(**compile_kw) if compile_kw else \
            cudaload.Program(kw.pop("source"), **kw)
