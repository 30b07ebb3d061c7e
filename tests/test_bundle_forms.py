"""Bundles of the forms of device code other than a C++ program's CUBIN: a PTX program
(``code_type="ptx"``) precompiled to CUBINs, and LTO IR (``precompile --ltoir``), each used in a
fresh process that links and compiles nothing, with the real NVRTC and nvJitLink wheels."""

from __future__ import annotations

import os

import pytest

from cudaload.compile import cache
from cudaload.compile.bundle import Bundle
from cudaload.compile.objectcode import ObjectCode
from tests._support import ROOT, run_json, scenario_json
from tests.test_bundle import precompile
from tests.test_cli_link import cli

KERNEL = 'extern "C" __global__ void fill(int *p, int v) { p[threadIdx.x] = v; }\n'
# Every library named by a path that holds none, and the cache a folder of its own: what a
# bundle does not hold has to be linked, which fails, and says so.
NOTHING = "/nonexistent"


@pytest.fixture
def ptx_file(tmp_path):
    """fill.ptx, NVRTC's PTX of KERNEL for compute_75 (written by ``cudaload compile``)."""
    (tmp_path / "fill.cu").write_text(KERNEL)
    proc = cli(tmp_path, "compile", "fill.cu", "--ptx", "--arch", "compute_75")
    assert proc.returncode == 0, proc.stderr
    return tmp_path / "fill.ptx"


def _entries(path) -> dict:
    bundle = Bundle.from_file(path)
    return {e["arch"]: cache.decode(bundle._data[e["offset"]:e["offset"] + e["length"]])
            for e in bundle._entries().values()}


def test_a_ptx_program_is_filed_under_its_digest_without_the_include_scan(monkeypatch):
    from cudaload import Program
    from cudaload.compile import request

    ptx = ".version 8.0\n.target sm_75\n.address_size 64\n.visible .entry k() { ret; }\n"
    program = Program(ptx, name="k.ptx", code_type="ptx")

    def scanned(prepared, tc):
        raise AssertionError("PTX is no C++ source: nothing to scan for #include")

    monkeypatch.setattr(request, "inputs_of", scanned)
    assert program._bundle_digest() == program._digest
    assert Program(ptx + "// other\n", name="k.ptx", code_type="ptx")._bundle_digest() \
        != program._digest


def test_a_ptx_program_precompiled_is_used_in_a_fresh_process_that_links_nothing(ptx_file,
                                                                                 tmp_path):
    out = tmp_path / "k.bundle"
    proc = precompile(str(ptx_file), "--arch", "sm_80", "--arch", "sm_90", "-o", str(out),
                      env={"CUDALOAD_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stderr
    assert "fill.ptx: cubin for sm_90" in proc.stdout and "wrote 2 entries" in proc.stdout
    shipped = _entries(out)
    assert sorted(shipped) == ["sm_80", "sm_90"]
    for arch, obj in shipped.items():  # CUBINs linked from the PTX, each for its arch
        assert obj.kind == "cubin" and ObjectCode.from_bytes(obj.code, "cubin").arch == arch
    assert [e["name"] for e in Bundle.from_file(out).entries()] == ["fill.ptx"] * 2

    got = scenario_json("bundle_uses", "ptx_shipped", out, ptx_file, timeout=300, env={
        "CUDALOAD_LIBNVRTC": NOTHING, "CUDALOAD_LIBNVJITLINK": NOTHING,
        "CUDALOAD_LIBCUDA": NOTHING, "CUDALOAD_CACHE_DIR": str(tmp_path / "empty")})
    assert got["found"] == [["bundle", "sm_90", "fill.ptx", shipped["sm_90"].code.hex()],
                            ["memory", "sm_90", "fill.ptx", shipped["sm_90"].code.hex()],
                            ["bundle", "sm_80", "fill.ptx", shipped["sm_80"].code.hex()]]
    assert not got["nvrtc_mapped"] and not got["nvjitlink_mapped"] and not got["pathfinder"]
    # The entry is filed under the PTX text, the link options and the name, for its arch: any
    # other is a miss, linked, which needs the nvJitLink this process has not.
    assert got["misses"] == dict.fromkeys(("text", "options", "name", "arch"),
                                          "LibraryNotFoundError")


def test_a_ptx_program_no_entry_matches_is_linked_where_nvjitlink_is(ptx_file, tmp_path):
    out = tmp_path / "k.bundle"
    proc = precompile(str(ptx_file), "--arch", "sm_90", "-o", str(out),
                      env={"CUDALOAD_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stderr
    got = scenario_json("bundle_uses", "ptx_mismatches", out, ptx_file, timeout=300,
                        unset=("CUDALOAD_LIBNVJITLINK",),
                        env={"CUDALOAD_CACHE_DIR": str(tmp_path / "fresh")})
    assert got == [["bundle", "sm_90", True], [None, "sm_90", True], [None, "sm_100", True]]


def test_precompile_ltoir_is_used_in_a_fresh_process_that_compiles_nothing(tmp_path):
    source = tmp_path / "fill.cu"
    source.write_text(KERNEL)
    out = tmp_path / "ir.bundle"
    proc = precompile(str(source), "--arch", "sm_90", "--ltoir", "-o", str(out),
                      env={"CUDALOAD_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stderr
    assert _entries(out)["sm_90"].kind == "ltoir"
    nvjitlink = run_json("""
        import json
        from cudaload.bindings import _sites
        print(json.dumps(_sites.library("nvjitlink")))
    """, unset=("CUDALOAD_LIBNVJITLINK",))
    got = scenario_json("bundle_uses", "ltoir_shipped", out, source, timeout=300, env={
        "CUDALOAD_LIBNVRTC": NOTHING, "CUDALOAD_LIBNVJITLINK": nvjitlink,
        "CUDALOAD_CACHE_DIR": str(tmp_path / "empty")})
    assert got == {"ir": ["bundle", "ltoir", "sm_90", "fill.cu"], "nvrtc_mapped": False,
                   "linked": ["cubin", None]}


def test_precompile_refuses_lto_ir_of_a_ptx_program_and_writes_no_bundle(ptx_file, tmp_path):
    out = tmp_path / "k.bundle"
    proc = precompile(str(ptx_file), "--arch", "sm_90", "--ltoir", "-o", str(out),
                      env={"CUDALOAD_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 1 and "compiles to CUBIN, not 'ltoir'" in proc.stderr
    assert not os.path.exists(out)


def test_a_package_ships_ptx_and_its_bundle_and_runs_without_nvrtc_or_nvjitlink(ptx_file,
                                                                                tmp_path):
    # package data of a host package: kernels as PTX, and the bundle precompile made of them
    pkg = tmp_path / "site" / "ppkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "fill.ptx").write_bytes(ptx_file.read_bytes())
    env = {"PYTHONPATH": f"{tmp_path / 'site'}{os.pathsep}{ROOT}",
           "CUDALOAD_CACHE_DIR": str(tmp_path / "cache")}
    proc = precompile("--package", "ppkg", "--resource", "fill.ptx", "--arch", "sm_90", "-o",
                      str(pkg / "k.bundle"), env=env)
    assert proc.returncode == 0, proc.stderr
    assert "fill.ptx: cubin for sm_90" in proc.stdout  # linked from the PTX, not given to NVRTC
    got = run_json("""
        import json
        import cudaload
        program = cudaload.Program.from_resource(
            "ppkg", "fill.ptx", bundle=cudaload.Bundle.from_resource("ppkg", "k.bundle"))
        obj = program.compile(arch="sm_90")
        print(json.dumps([obj.cached, obj.kind, obj.name, program.source.startswith("//")]))
    """, env={**env, "CUDALOAD_LIBNVRTC": NOTHING, "CUDALOAD_LIBNVJITLINK": NOTHING,
              "CUDALOAD_LIBCUDA": NOTHING, "CUDALOAD_CACHE_DIR": str(tmp_path / "empty")})
    assert got == ["bundle", "cubin", "fill.ptx", True]
