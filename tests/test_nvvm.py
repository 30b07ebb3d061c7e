"""Programs of NVVM IR (``Program(ir, code_type="nvvm")``): compiled by the real libNVVM to PTX
and linked to CUBIN by the real nvJitLink, cached, and refused with the reason; each scenario in
a fresh process (tests/scenarios/nvvm_compiles.py), no GPU.

libNVVM is the nvidia-nvvm wheel where the test environment has it, else the file
$CUDALOAD_TEST_LIBNVVM names (given to the scenarios as CUDALOAD_LIBNVVM); without either the
tests that compile skip, saying so.  The refusals need no library; the error of a compile that
libNVVM refuses is also checked on a look-alike of it (:data:`REFUSING_NVVM`).
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

import cudaload
from tests._fakelibs import build_shared_library
from tests._support import run_json, scenario_json
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
    assert got["function"] in ("nvvmVerifyProgram", "nvvmCompileProgram")  # libNVVM's, not NVRTC's


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


# A libNVVM look-alike that takes and verifies any module but refuses to compile it
# (NVVM_ERROR_COMPILATION, 9), with a log.
REFUSING_NVVM = r"""
#include <string.h>
static const char log_text[] = "error: the look-alike compiles nothing";
int nvvmVersion(int *major, int *minor) { *major = 2; *minor = 0; return 0; }
int nvvmIRVersion(int *a, int *b, int *c, int *d) { *a = 2; *b = 0; *c = 3; *d = 1; return 0; }
int nvvmCreateProgram(void **p) { *p = (void *)16; return 0; }
int nvvmDestroyProgram(void **p) { return 0; }
int nvvmAddModuleToProgram(void *p, const char *ir, size_t n, const char *name) { return 0; }
int nvvmVerifyProgram(void *p, int n, const char **options) { return 0; }
int nvvmCompileProgram(void *p, int n, const char **options) { return 9; }
int nvvmGetProgramLogSize(void *p, size_t *n) { *n = sizeof log_text; return 0; }
int nvvmGetProgramLog(void *p, char *out) { memcpy(out, log_text, sizeof log_text); return 0; }
int nvvmGetCompiledResultSize(void *p, size_t *n) { *n = 1; return 0; }
int nvvmGetCompiledResult(void *p, char *out) { *out = 0; return 0; }
const char *nvvmGetErrorString(int rc) { return rc == 9 ? "NVVM_ERROR_COMPILATION" : "?"; }
"""


def test_a_compile_libnvvm_refuses_names_libnvvm_s_call(tmp_path):
    library = build_shared_library(str(tmp_path), "libnvvm.so", REFUSING_NVVM)
    got = run_json("""
import json
from cudaload.bindings import nvvm
from cudaload.errors import CompileError
try:
    nvvm.compile_ptx(b"define void @k() { ret void }", "k.ll", ["-arch=compute_90"])
except CompileError as err:
    print(json.dumps({"function": err.function, "code": err.code, "log": err.log,
                      "message": str(err)}))
""", env={"CUDALOAD_LIBNVVM": library})
    assert got["function"] == "nvvmCompileProgram" and got["code"] == 9
    assert got["log"] == "error: the look-alike compiles nothing"
    assert "nvrtc" not in got["message"].lower()
