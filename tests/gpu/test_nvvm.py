"""A kernel written in NVVM IR (``Program(ir, code_type="nvvm")``) compiled by libNVVM, linked,
launched on a real GPU, its result checked: as CUBIN, and as PTX the driver compiles.

libNVVM is the nvidia-nvvm wheel where the environment has it, else the file
$CUDALOAD_TEST_LIBNVVM names; without either the test skips, saying so."""

from __future__ import annotations

import os

import pytest

import cudaload

from ..scenarios.nvvm_compiles import TWICE

np = pytest.importorskip("numpy")


@pytest.fixture
def libnvvm(monkeypatch):
    from cudaload.bindings import _sites

    if _sites.library("nvvm") is None:
        named = os.environ.get("CUDALOAD_TEST_LIBNVVM")
        if not (named and os.path.isfile(named)):
            pytest.skip("no libNVVM: pip install nvidia-nvvm, or set CUDALOAD_TEST_LIBNVVM to "
                        "the full path of libnvvm.so")
        monkeypatch.setenv("CUDALOAD_LIBNVVM", named)


@pytest.mark.parametrize("output", ["cubin", "ptx"])
def test_an_nvvm_ir_kernel_compiles_launches_and_gives_the_right_numbers(libnvvm, output):
    n = 100
    obj = cudaload.Program(TWICE, code_type="nvvm", name="twice.ll").compile(output=output)
    major, minor = cudaload.Device(0).compute_capability
    assert obj.kind == output and obj.arch == f"sm_{major}{minor}"
    out = cudaload.alloc(4 * 128)
    out.memset(0)
    obj.load().get_kernel("twice")((2,), (64,), (out, np.int32(n)))
    got = np.frombuffer(out.copy_to_host(), dtype=np.int32)
    assert got[:n].tolist() == [2 * i for i in range(n)] and not got[n:].any()
