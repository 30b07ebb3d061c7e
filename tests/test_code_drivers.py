"""Which drivers load compiled code (releases.loads_on): PTX by its ISA version, a CUBIN by the
CUDA major that made it (its toolkit note, its ELF ABI, or the NVRTC release the bundle
records) and its arch; what `cudaload precompile` and `check-wheel --arch` say of each entry."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cudaload._base import releases
from cudaload.compile.bundle import Bundle
from cudaload.compile.objectcode import ObjectCode
from cudaload.compile.program import Program
from tests import _wheels
from tests._support import ROOT
from tests.test_wheelcheck import check_wheel

pytestmark = pytest.mark.usefixtures("cache_dir")

KERNEL = 'extern "C" __global__ void k(float *x) { x[0] = 1; }\n'
# The ELF identification of a CUBIN made before CUDA 13 (EI_OSABI 0x33, EI_ABIVERSION 7), as
# NVRTC 12.9 writes it, with a 64-bit header that is otherwise empty: no toolkit note.
CUBIN_12 = b"\x7fELF\x02\x01\x01\x33\x07" + bytes(55)
NVRTC12 = os.environ.get("CUDALOAD_TEST_NVRTC12")  # a libnvrtc.so.12, where one is installed


@pytest.mark.parametrize("isa, release", [
    ("6.5", (10, 2)), ("7.0", (11, 0)), ("7.8", (11, 8)), ("8.0", (12, 0)), ("8.2", (12, 2)),
    ("8.5", (12, 5)), ("8.6", (12, 7)), ("8.7", (12, 8)), ("8.8", (12, 9)), ("9.0", (13, 0)),
    ("9.1", (13, 1)), ("9.5", (13, 5)),
])
def test_ptx_loads_on_drivers_that_know_its_isa(isa, release):
    ptx = f"//\n.version {isa}\n.target sm_75\n.address_size 64\n".encode()
    assert releases.loads_on(ptx, "ptx", "compute_75")[0] == release
    assert releases.loads_on(ptx, "ptx", "compute_75")[1].startswith(
        f"drivers for CUDA {release[0]}.{release[1]} or newer")


def test_ptx_of_an_unknown_isa_or_for_a_newer_arch():
    unknown = releases.loads_on(b".version 9.9\n.target sm_90\n", "ptx", "compute_90")
    assert unknown == (None, releases._UNKNOWN["ptx"])
    # The driver must know the arch as well as the ISA: sm_100 came with CUDA 12.8.
    assert releases.loads_on(b".version 8.0\n.target sm_100\n", "ptx", "compute_100")[0] == (12, 8)


@pytest.mark.parametrize("arch, nvrtc, release", [
    ("sm_80", "12.9", (12, 0)), ("sm_90", "12.9", (12, 0)), ("sm_90a", "12.2", (12, 0)),
    ("sm_100", "12.9", (12, 8)), ("sm_120", "12.8", (12, 8)), ("sm_80", "11.8", (11, 0)),
    ("sm_89", "11.8", (11, 8)),
])
def test_a_cubin_made_before_cuda_13_loads_on_drivers_of_its_nvrtcs_major(arch, nvrtc, release):
    assert releases.code_toolkit(CUBIN_12, "cubin") is None  # the CUBIN does not say
    assert releases.loads_on(CUBIN_12, "cubin", arch, nvrtc)[0] == release
    assert releases.loads_on(CUBIN_12, "cubin", arch)[0] is None


def test_a_cubin_from_nvrtc_13_names_its_toolkit_and_loads_on_cuda_13_drivers():
    tc = _nvrtc_version()
    for arch in ("sm_80", "sm_90", "sm_100"):
        code = Program(KERNEL).compile(arch=arch, output="cubin").code
        assert releases.code_toolkit(code, "cubin") == tc  # its .note.nv.tkinfo
        assert releases.loads_on(code, "cubin", arch) == (
            (13, 0), "drivers for CUDA 13.0 or newer (Linux 580 or newer)")
        assert releases.loads_on(code, "cubin", arch, "12.9")[0] == (13, 0)  # the code says
    ptx = Program(KERNEL).compile(arch="sm_90", output="ptx").code
    assert releases.loads_on(ptx, "ptx", "compute_90")[0] == tc


def _nvrtc_version() -> tuple[int, int]:
    from cudaload.compile import toolchain

    version = tuple(toolchain.current().version)
    if version[0] != 13:
        pytest.skip(f"NVRTC {version} is not NVRTC 13")
    return version  # type: ignore[return-value]


def test_the_driver_here_loads_cuda_12_code_but_not_cuda_13s(libcuda_535):
    """Debian's 535 driver library is CUDA 12.2: it loads CUBINs of CUDA 12 and PTX up to ISA
    8.2, and neither NVRTC 13's CUBIN nor its PTX."""
    proc = subprocess.run([sys.executable, "-c", "import cudaload, json; print(json.dumps("
                           "cudaload.status().as_dict()['driver']['version']))"],
                          env={**os.environ, "PYTHONPATH": ROOT, "CUDALOAD_LIBCUDA": libcuda_535,
                               "CUDA_VISIBLE_DEVICES": ""}, capture_output=True, text=True,
                          timeout=120)
    here = tuple(int(x) for x in json.loads(proc.stdout.strip().splitlines()[-1]).split("."))
    assert here == (12, 2)
    loads = {what: releases.loads_on(code, kind, "sm_90", nvrtc)[0] <= here
             for what, code, kind, nvrtc in [
                 ("cubin 12", CUBIN_12, "cubin", "12.9"),
                 ("ptx 8.2", b".version 8.2\n.target sm_90\n", "ptx", None),
                 ("ptx 8.3", b".version 8.3\n.target sm_90\n", "ptx", None),
                 ("cubin 13", b"\x7fELF\x02\x01\x01\x41\x08" + bytes(55), "cubin", None)]}
    assert loads == {"cubin 12": True, "ptx 8.2": True, "ptx 8.3": False, "cubin 13": False}


def test_ltoir_is_linked_by_an_nvjitlink_of_its_major():
    text = releases.loads_on(b"\xedCN\x7f", "ltoir", "sm_90", "13.5")
    assert text == ((13, 0), "linked by nvJitLink 13.5 or a newer 13.x at run time, into a "
                             "CUBIN that loads on drivers for CUDA 13.0 or newer (Linux 580 or "
                             "newer)")


def precompile(*args, cwd, env=None):
    return subprocess.run([sys.executable, "-m", "cudaload", "precompile", *args], cwd=cwd,
                          env={**os.environ, "PYTHONPATH": ROOT, **(env or {})},
                          capture_output=True, text=True, timeout=300)


def test_precompile_and_check_wheel_say_which_drivers_load_each_entry(tmp_path):
    tc = _nvrtc_version()
    (tmp_path / "k.cu").write_text(KERNEL)
    proc = precompile("k.cu", "--arch", "sm_90", "-o", "k.bundle", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == ("k.cu: cubin for sm_90 (compiled); drivers for CUDA "
                                          "13.0 or newer (Linux 580 or newer)")
    (entry,) = Bundle.from_file(tmp_path / "k.bundle").entries()
    assert entry["nvrtc"] == f"{tc[0]}.{tc[1]}"
    # A CUBIN of CUDA 12, as NVRTC 12 makes them, added to the same bundle for sm_80.
    bundle = Bundle.from_file(tmp_path / "k.bundle")
    bundle.add(Program(KERNEL, name="k.cu"), ObjectCode(CUBIN_12, "cubin", "sm_80"), "12.9")
    wheel = _wheels.write_wheel(tmp_path, "kpkg", {"kpkg/__init__.py": b"",
                                                   "kpkg/k.bundle": bundle.to_bytes()})
    out = check_wheel(wheel, "--arch", "sm_80", "--arch", "sm_90")
    assert out.returncode == 0, out.stdout
    assert ("  sm_80 cubin (NVRTC 12.9), 1 program: loads on drivers for CUDA 12.0 or newer "
            "(Linux 525.60.13 or newer)\n"
            f"  sm_90 cubin (NVRTC {tc[0]}.{tc[1]}), 1 program: loads on drivers for CUDA 13.0 "
            "or newer (Linux 580 or newer)") in out.stdout
    report = json.loads(check_wheel(wheel, "--arch", "sm_90", "--json").stdout)
    assert sorted((e["arch"], e["driver"]) for p in report["bundles"][0]["programs"]
                  for e in p["entries"]) == [("sm_80", "12.0"), ("sm_90", "13.0")]


@pytest.mark.skipif(not NVRTC12, reason="set CUDALOAD_TEST_NVRTC12 to a libnvrtc.so.12 "
                    "(pip install --target DIR nvidia-cuda-nvrtc-cu12)")
def test_precompile_with_nvrtc_12_says_cuda_12_drivers_load_its_cubins(tmp_path):
    (tmp_path / "k.cu").write_text(KERNEL)
    proc = precompile("k.cu", "--arch", "sm_90", "--arch", "sm_100", "-o", "k.bundle",
                      cwd=tmp_path, env={"CUDALOAD_LIBNVRTC": NVRTC12})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[:2] == [
        "k.cu: cubin for sm_90 (compiled); drivers for CUDA 12.0 or newer (Linux 525.60.13 or "
        "newer)", "k.cu: cubin for sm_100 (compiled); drivers for CUDA 12.8 or newer"]
    for entry in Bundle.from_file(tmp_path / "k.bundle").entries():
        assert entry["nvrtc"].startswith("12.")
