"""``cudaload compile --ltoir``, ``cudaload compile FILE.ptx``, ``cudaload link`` and
``cudaload precompile --ltoir``: the forms of device code from the command line, with the real
NVRTC and nvJitLink wheels, no GPU."""

from __future__ import annotations

import os
import subprocess
import sys

import cudaload
from tests._support import child_env

CALLER = ('extern __device__ int b(int);\n'
          'extern "C" __global__ void ka(int *out) { out[threadIdx.x] = b(threadIdx.x); }\n')
CALLED = "__device__ int b(int x) { return x * 2; }\n"
KERNEL = 'extern "C" __global__ void k(int *p) { p[0] = 1; }\n'


def cli(folder, *words) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cudaload", *map(str, words)], cwd=folder,
                          env=child_env({"CUDALOAD_CACHE_DIR": str(folder / "cache")},
                                        unset=("CUDALOAD_LIBNVRTC", "CUDALOAD_LIBNVJITLINK")),
                          capture_output=True, text=True, timeout=300)


def _ok(proc) -> str:
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_lto_ir_files_compile_and_link_into_one_cubin(tmp_path):
    (tmp_path / "a.cu").write_text(CALLER)
    (tmp_path / "b.cu").write_text(CALLED)
    assert "a.ltoir: ltoir for sm_90" in _ok(cli(tmp_path, "compile", "a.cu", "--ltoir",
                                                "--arch", "sm_90"))
    _ok(cli(tmp_path, "compile", "b.cu", "--ltoir", "--arch", "sm_90"))
    assert cudaload.ObjectCode.from_file(tmp_path / "a.ltoir").kind == "ltoir"
    out = _ok(cli(tmp_path, "link", "a.ltoir", "b.ltoir", "--lto", "--arch", "sm_90", "-o",
                  "ab.cubin"))
    assert "ab.cubin: cubin for sm_90" in out and "a.ltoir+b.ltoir, by nvJitLink" in out
    linked = cudaload.ObjectCode.from_file(tmp_path / "ab.cubin")
    assert linked.kind == "cubin" and linked.arch == "sm_90" and b"ka" in linked.code
    again = _ok(cli(tmp_path, "link", "a.ltoir", "b.ltoir", "--lto", "--arch", "sm_90", "-o",
                    "ab.cubin"))
    assert "from the disk cache" in again
    ptx = _ok(cli(tmp_path, "link", "a.ltoir", "b.ltoir", "--lto", "--ptx", "--arch", "sm_90",
                  "-o", "ab.ptx"))
    assert "ab.ptx: ptx" in ptx and b".entry ka" in (tmp_path / "ab.ptx").read_bytes()


def test_a_link_that_misses_a_symbol_exits_1_naming_it(tmp_path):
    (tmp_path / "a.cu").write_text(CALLER)
    _ok(cli(tmp_path, "compile", "a.cu", "-rdc=true", "--arch", "sm_90"))
    proc = cli(tmp_path, "link", "a.cubin", "--arch", "sm_90", "-o", "a.linked")
    assert proc.returncode == 1 and not (tmp_path / "a.linked").exists()
    assert "b(int) (mangled _Z1bi) is not defined in any input" in proc.stderr
    assert "Undefined reference to '_Z1bi'" in proc.stderr
    bad = cli(tmp_path, "link", "a.cubin", "--arch", "sm_90", "--option=-fast", "-o", "x")
    assert bad.returncode == 1 and "'-fast' is no link option" in bad.stderr


def test_link_backend_picks_one_linker_and_refuses_others(tmp_path):
    (tmp_path / "b.cu").write_text(CALLED)
    _ok(cli(tmp_path, "compile", "b.cu", "--ltoir", "--arch", "sm_90"))
    out = _ok(cli(tmp_path, "link", "b.ltoir", "--lto", "--arch", "sm_90", "--backend",
                  "nvjitlink", "-o", "b.cubin"))
    assert "by nvJitLink" in out
    driver = cli(tmp_path, "link", "b.ltoir", "--lto", "--arch", "sm_90", "--backend", "driver",
                 "-o", "d.cubin")
    assert driver.returncode == 1 and "does no link-time optimisation" in driver.stderr
    bad = cli(tmp_path, "link", "b.ltoir", "--backend", "nvcc", "-o", "x.cubin")
    assert bad.returncode == 2 and "invalid choice: 'nvcc'" in bad.stderr


def test_a_ptx_file_compiles_to_cubin(tmp_path):
    (tmp_path / "k.cu").write_text(KERNEL)
    _ok(cli(tmp_path, "compile", "k.cu", "--ptx", "--arch", "compute_75"))
    out = _ok(cli(tmp_path, "compile", "k.ptx", "--arch", "sm_90", "-lineinfo"))
    assert "k.cubin: cubin for sm_90" in out
    assert cudaload.ObjectCode.from_file(tmp_path / "k.cubin").arch == "sm_90"


def test_a_ptx_file_without_arch_or_driver_links_for_its_own_target(tmp_path):
    (tmp_path / "k.cu").write_text(KERNEL)
    _ok(cli(tmp_path, "compile", "k.cu", "--ptx", "--arch", "compute_75"))
    proc = subprocess.run([sys.executable, "-m", "cudaload", "compile", "k.ptx"], cwd=tmp_path,
                          env=child_env({"CUDALOAD_CACHE_DIR": str(tmp_path / "cache"),
                                         "CUDALOAD_LIBCUDA": "/nonexistent/libcuda.so.1"},
                                        unset=("CUDALOAD_LIBNVRTC", "CUDALOAD_LIBNVJITLINK")),
                          capture_output=True, text=True, timeout=300)
    # no GPU to ask: the PTX's own .target, as for Linker(arch=None); NVRTC never reads PTX
    assert "k.cubin: cubin for sm_75" in _ok(proc)
    assert cudaload.ObjectCode.from_file(tmp_path / "k.cubin").arch == "sm_75"


def test_precompile_writes_lto_ir_into_a_bundle(tmp_path):
    (tmp_path / "b.cu").write_text(CALLED)
    out = _ok(cli(tmp_path, "precompile", "b.cu", "--arch", "sm_90", "--arch", "sm_100",
                  "--ltoir", "-o", "ir.bundle"))
    assert "b.cu: ltoir for sm_90" in out and "wrote 2 entries" in out
    entries = cudaload.Bundle.from_file(os.path.join(tmp_path, "ir.bundle")).entries()
    assert sorted((e["kind"], e["arch"]) for e in entries) == [("ltoir", "sm_100"),
                                                               ("ltoir", "sm_90")]
