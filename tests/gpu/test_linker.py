"""Linked code on a real GPU: the A -> B -> C programs linked as relocatable CUBINs and as LTO IR
give the right numbers, a kernel launches kernels through libcudadevrt.a, a PTX program runs
(linked, and shipped in a bundle), the driver's linker (where nvJitLink is missing) links code
that runs, and it links for an arch nvJitLink refuses, or fails with both linkers named; each backend alone
links the same program to code that gives the same numbers."""

from __future__ import annotations

import time

import pytest

import cudaload

from tests._support import scenario_json
from ..scenarios.gpu_links import run_chain, run_dynamic
from ..scenarios.link_forms import A, B, C, DYNAMIC, KERNEL

np = pytest.importorskip("numpy")

CHAIN = [(i + 1) * 2 for i in range(64)]
DYNAMIC_VALUES = list(range(64))  # two blocks of 32: each child writes base + i, base 0 and 32


def _programs(tag, **kw):
    return [cudaload.Program(text + f"\n// {tag}", name=name, **kw)
            for text, name in ((A, "a.cu"), (B, "b.cu"), (C, "c.cu"))]


def _cudadevrt() -> str:
    try:
        return cudaload.Linker.cudadevrt()
    except cudaload.LibraryNotFoundError as err:
        pytest.skip(f"no libcudadevrt.a here: {err}")


def test_three_relocatable_programs_linked_give_the_right_numbers():
    cubins = [p.compile(output="cubin") for p in _programs(time.time_ns(), relocatable=True)]
    linker = cudaload.Linker(*cubins)  # arch=None: this GPU's, as the programs were compiled
    obj = linker.link()
    major, minor = cudaload.Device(0).compute_capability
    assert obj.kind == "cubin" and obj.arch == f"sm_{major}{minor}"
    assert obj.name == "a.cu+b.cu+c.cu" and linker.linker == "nvJitLink"
    assert run_chain(obj) == CHAIN


def test_both_backends_link_code_that_runs_and_gives_the_same_numbers():
    cubins = [p.compile(output="cubin") for p in _programs(time.time_ns(), relocatable=True)]
    results = {}
    for backend in ("nvjitlink", "driver"):
        linker = cudaload.Linker(*cubins, backend=backend)
        obj = linker.link()
        assert linker.linker == {"nvjitlink": "nvJitLink", "driver": "driver"}[backend]
        results[backend] = run_chain(obj)
    assert results["nvjitlink"] == results["driver"] == CHAIN


def test_an_lto_link_across_three_programs_runs_and_keeps_its_variables():
    tag = time.time_ns()
    ir = [p.compile(output="ltoir") for p in _programs(tag)]
    counter = cudaload.Program(f"__device__ int calls;\n// {tag}", name="calls.cu").compile(
        output="ltoir")
    obj = cudaload.Linker(*ir, counter, lto=True).link()
    assert obj.kind == "cubin" and not obj.linked
    assert run_chain(obj) == CHAIN
    # A Linker's link keeps the device variables (no -optimize-unused-variables): reachable.
    assert obj.load().get_global("calls").nbytes == 4


def test_lto_ir_linked_to_ptx_runs_where_the_driver_reads_that_ptx():
    ir = [p.compile(output="ltoir") for p in _programs(time.time_ns())]
    obj = cudaload.Linker(*ir, lto=True).link("ptx")
    assert obj.kind == "ptx" and b".entry ka" in obj.code
    try:
        values = run_chain(obj)
    except cudaload.DriverError as err:
        if err.name != "CUDA_ERROR_UNSUPPORTED_PTX_VERSION":
            raise
        pytest.skip(f"the driver is older than nvJitLink's PTX: {err}")
    assert values == CHAIN


@pytest.mark.parametrize("form", ["cubin", "ltoir"])
def test_a_kernel_launches_kernels_through_libcudadevrt(form):
    program = cudaload.Program(DYNAMIC + f"\n// {time.time_ns()}", name="dynamic.cu",
                               relocatable=True)
    obj = cudaload.Linker(program.compile(output=form), _cudadevrt(), lto=form == "ltoir").link()
    assert obj.name == "dynamic.cu+libcudadevrt.a"
    assert run_dynamic(obj) == DYNAMIC_VALUES


def test_a_ptx_program_runs():
    text = cudaload.Program(KERNEL + f"\n// {time.time_ns()}", name="fill.cu").compile(
        arch=75, output="ptx").code
    obj = cudaload.Program(text, name="fill.ptx", code_type="ptx").compile()
    major, minor = cudaload.Device(0).compute_capability
    assert obj.kind == "cubin" and obj.arch == f"sm_{major}{minor}" and obj.name == "fill.ptx"
    out = cudaload.alloc(64 * 4)
    out.memset(0)
    obj.load().get_kernel("fill")(1, 64, (out,))
    cudaload.Device(0).synchronize()
    assert (np.frombuffer(out.copy_to_host(), np.int32) == 7).all()


def test_a_ptx_program_shipped_in_a_bundle_runs(tmp_path):
    from cudaload.compile import cache

    kernel = 'extern "C" __global__ void put(int *p) { p[threadIdx.x] = 3 * threadIdx.x + 1; }'
    text = cudaload.Program(kernel + f"\n// {time.time_ns()}", name="put.cu").compile(
        arch=75, output="ptx").code.decode()
    major, minor = cudaload.Device(0).compute_capability
    made = cudaload.Program(text, name="put.ptx", code_type="ptx")
    bundle = cudaload.Bundle()
    bundle.add(made, made.compile(arch=f"sm_{major}{minor}"))  # as `cudaload precompile` does
    bundle.write(tmp_path / "put.bundle")
    cache.MEMORY.clear()  # as a fresh process: the bundle is asked before anything is linked
    program = cudaload.Program(text, name="put.ptx", code_type="ptx",
                               bundle=cudaload.Bundle.from_file(tmp_path / "put.bundle"))
    obj = program.compile()
    assert obj.cached == "bundle" and obj.kind == "cubin" and obj.name == "put.ptx"
    out = cudaload.alloc(64 * 4)
    out.memset(0)
    obj.load().get_kernel("put")(1, 64, (out,))
    cudaload.Device(0).synchronize()
    assert np.frombuffer(out.copy_to_host(), np.int32).tolist() == [3 * i + 1 for i in range(64)]


def test_the_driver_linker_links_code_that_runs_where_nvjitlink_is_missing(tmp_path):
    _cudadevrt()
    got = scenario_json("gpu_links", "fallback", time.time_ns(), timeout=300,
                        env={"CUDALOAD_LIBNVJITLINK": str(tmp_path / "no" / "libnvJitLink.so"),
                             "CUDALOAD_CACHE_DIR": str(tmp_path / "cache")})
    for label, expected in (("chain", CHAIN), ("dynamic", DYNAMIC_VALUES)):
        result = got[label]
        assert result["linker"] == "driver", result
        if "refused" in result:
            # The driver's linker is of the driver's CUDA release: code of a newer NVRTC may be
            # beyond it.  Anything else is a failure.
            driver, nvrtc = (tuple(map(int, got[k].split("."))) for k in ("driver", "nvrtc"))
            if driver >= nvrtc:
                pytest.fail(f"the driver's linker refused {label}: {result['refused']}")
            pytest.skip(f"driver {got['driver']} is older than NVRTC {got['nvrtc']}: "
                        f"{result['refused']}")
        assert result["values"] == expected, label


# PTX for sm_52, which nvJitLink 13 no longer supports (NVJITLINK_ERROR_UNSUPPORTED_ARCH) and
# libcuda 580 (CUDA 13.0) still links for; written by hand: NVRTC 13 makes no PTX for it.
SM52_PTX = (".version 7.0\n.target sm_52\n.address_size 64\n.visible .entry k52() {{ ret; }}\n"
            "// {}\n")


def _sm52_ptx():
    return cudaload.ObjectCode.from_bytes(SM52_PTX.format(time.time_ns()).encode(), "ptx",
                                          name="k52.ptx")


def test_an_arch_nvjitlink_no_longer_supports_is_linked_by_the_driver():
    ptx = _sm52_ptx()
    linker = cudaload.Linker(ptx, arch="sm_52")
    try:
        obj = linker.link()
    except cudaload.LinkError as err:  # a driver that dropped sm_52 too: the fallback was tried
        assert err.linker == "driver" and "Before it, nvJitLink could not link k52.ptx (" \
            "NVJITLINK_ERROR_UNSUPPORTED_ARCH" in str(err), str(err)
        pytest.skip(f"this driver does not link for sm_52 either: {err}")
    if linker.linker == "nvJitLink":
        pytest.skip("this nvJitLink still links for sm_52: the driver was not needed")
    assert linker.linker == "driver" and obj.kind == "cubin" and obj.arch == "sm_52"
    assert obj.code.startswith(b"\x7fELF") and obj.name == "k52.ptx"
    again = cudaload.Linker(ptx, arch="sm_52")
    assert again.link().cached == "memory" and again.linker == "driver"  # as its entry records


def test_an_arch_neither_linker_knows_is_a_link_error_naming_both():
    linker = cudaload.Linker(_sm52_ptx(), arch="sm_99")
    with pytest.raises(cudaload.LinkError) as info:
        linker.link()
    err = info.value
    assert err.linker == "driver" == linker.linker  # the fallback was tried
    # libcuda 580 refuses CU_JIT_TARGET 99 in cuLinkCreate
    assert err.result == "CUDA_ERROR_INVALID_VALUE" and "CU_JIT_TARGET=99" in str(err), str(err)
    assert "Before it, nvJitLink could not link k52.ptx (NVJITLINK_ERROR_UNRECOGNIZED_ARCH " \
        "(16): " in str(err) and "does not know the arch sm_99" in str(err), str(err)
    assert err.hint.startswith("install a newer nvJitLink that knows sm_99")
