"""`cudaload check-wheel` without --import: the ELF and PE readers, CUDA library names, the
report on wheels whose extension links a stub libcudart.so.12 or opens the driver at run time,
bundles against architectures, and bad input as one line naming the file and the reason."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import zipfile
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from cudaload.compile.bundle import Bundle
from cudaload.compile.objectcode import ObjectCode
from cudaload.compile.program import Program
from cudaload.wheelcheck import elf, pe
from cudaload.wheelcheck.libraries import cuda_library
from tests import _wheels
from tests._support import ROOT

FAST = settings(max_examples=300, deadline=timedelta(milliseconds=500),
                suppress_health_check=[HealthCheck.too_slow])


def check_wheel(*words, env=None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "cudaload", "check-wheel", *map(str, words)],
                          env=full_env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Extensions built once: one linked to a stub libcudart.so.12, one that dlopens libcuda."""
    return _wheels.extensions(tmp_path_factory.mktemp("extensions"))


def ext_wheel(folder, name, ext_path, **kw) -> str:
    """A wheel of package ``name`` holding the extension ``ext_path``."""
    with open(ext_path, "rb") as f:
        data = f.read()
    ext = os.path.basename(ext_path)
    files = {f"{name}/__init__.py": f"from .{ext.split('.')[0]} import probe\n".encode(),
             f"{name}/{ext}": data}
    return _wheels.write_wheel(folder, name, files, tag=_wheels.PLATFORM_TAG, **kw)


def one_line_error(proc: subprocess.CompletedProcess, *wanted: str) -> str:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for text in wanted:
        assert text in lines[0], lines[0]
    return lines[0]


# ---- readers ---------------------------------------------------------------------------------

def test_the_elf_reader_finds_what_readelf_finds(built):
    for path, want in ((built["bad"], ["libcudart.so.12"]), (built["good"], []),
                       (sys.executable, [])):
        with open(path, "rb") as f:
            needed = elf.needed(f.read())
        readelf = subprocess.run(["readelf", "-d", path], capture_output=True, text=True)
        if readelf.returncode == 0:
            listed = [line.split("[", 1)[1].rstrip("]") for line in readelf.stdout.splitlines()
                      if "(NEEDED)" in line]
            assert needed == listed
        assert [n for n in needed if cuda_library(n)] == want


def _strtab_entry(data: bytes) -> int:
    """Where the DT_STRTAB entry of an ELF64 little-endian file sits."""
    phoff, = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    for i in range(phnum):
        kind, _flags, offset, _v, _p, size = struct.unpack_from("<IIQQQQ", data,
                                                                phoff + i * phentsize)
        if kind == 2:
            for at in range(offset, offset + size, 16):
                if struct.unpack_from("<q", data, at)[0] == 5:
                    return at
    raise AssertionError("no DT_STRTAB")


def test_a_corrupt_dynamic_section_is_an_elf_error(built):
    with open(built["bad"], "rb") as f:
        data = bytearray(f.read())
    at = _strtab_entry(bytes(data))
    moved = bytes(data[:at + 8]) + struct.pack("<Q", 0x7FFF0000) + bytes(data[at + 16:])
    with pytest.raises(elf.ElfError, match="string table .* in no loaded part"):
        elf.needed(moved)
    with pytest.raises(elf.ElfError, match="corrupt dynamic section|truncated"):
        elf.needed(bytes(data[:at]))
    with pytest.raises(elf.ElfError, match="shorter than an ELF header"):
        elf.needed(bytes(data[:40]))


def pe_image(dlls: list[str]) -> bytes:
    """A minimal PE32+ file whose import table names ``dlls``: one section at RVA 0x1000."""
    image = bytearray(0x400)
    image[:2] = b"MZ"
    struct.pack_into("<I", image, 0x3C, 0x40)
    image[0x40:0x44] = b"PE\0\0"
    struct.pack_into("<HHIIIHH", image, 0x44, 0x8664, 1, 0, 0, 0, 240, 0x2022)
    optional = 0x58
    struct.pack_into("<H", image, optional, 0x20B)
    struct.pack_into("<I", image, optional + 108, 16)
    struct.pack_into("<II", image, optional + 112 + 8, 0x1000, 20 * (len(dlls) + 1))
    struct.pack_into("<8sIIII", image, optional + 240, b".idata", 0x200, 0x1000, 0x200, 0x200)
    names = 0x200 + 20 * (len(dlls) + 1)
    for i, dll in enumerate(dlls):
        struct.pack_into("<IIIII", image, 0x200 + 20 * i, 0, 0, 0, 0x1000 + names - 0x200, 0)
        image[names:names + len(dll)] = dll.encode()
        names += len(dll) + 1
    return bytes(image)


def test_the_pe_reader_lists_the_import_table():
    dlls = ["KERNEL32.dll", "nvcuda.dll", "cudart64_12.dll", "python311.dll"]
    assert pe.imports(pe_image(dlls)) == dlls
    assert [d for d in dlls if cuda_library(d)] == ["nvcuda.dll", "cudart64_12.dll"]
    assert pe.imports(pe_image([])) == []
    with pytest.raises(pe.PeError, match="section table|truncated"):
        pe.imports(pe_image(dlls)[:0x150])


@FAST
@given(st.binary(max_size=600), st.integers(0, 599), st.binary(min_size=1, max_size=8))
def test_the_readers_raise_only_their_error_whatever_the_bytes(noise, at, patch):
    with open(sys.executable, "rb") as f:
        real_elf = f.read(4096)
    # Noise after the headers a reader checks first (ELF: magic, class, order; PE: up to the
    # PE signature), one patch anywhere, or the file cut short.
    for reader, error, base, keep in ((elf.needed, elf.ElfError, real_elf, 6),
                                      (pe.imports, pe.PeError, pe_image(["a.dll"]), 0x44)):
        for data in (base[:keep] + noise, base[:at] + patch + base[at + len(patch):],
                     base[:at]):
            try:
                assert all(isinstance(n, str) for n in reader(data))
            except error:
                pass


@pytest.mark.parametrize("name, cuda", [
    ("libcuda.so.1", True), ("libcudart.so.12", True), ("libcudart-1a2b3c4d.so.12.4.127", True),
    ("libnvrtc.so.13", True), ("libnvJitLink.so.12", True), ("libcublasLt.so.12", True),
    ("libcudnn_ops.so.9", True), ("libnccl.so.2", True), ("libnvidia-ml.so.1", True),
    ("nvcuda.dll", True), ("nvrtc64_120_0.dll", True), ("cublas64_12.dll", True),
    ("libc.so.6", False), ("libcudaload.so", False), ("libstdc++.so.6", False),
    ("python311.dll", False), ("KERNEL32.dll", False), ("libpython3.11.so.1.0", False)])
def test_cuda_library_names(name, cuda):
    assert cuda_library(name) is cuda


# ---- the report ------------------------------------------------------------------------------

def test_a_wheel_whose_extension_links_libcudart_fails_naming_file_and_library(built, tmp_path):
    wheel = ext_wheel(tmp_path, "badpkg", built["bad"])
    proc = check_wheel(wheel)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    ext = os.path.basename(built["bad"])
    fails = [line for line in proc.stdout.splitlines() if line.startswith("FAIL")]
    assert fails == [f"FAIL badpkg/{ext} needs libcudart.so.12 (DT_NEEDED), a CUDA library: it "
                     "cannot load where CUDA is absent"]
    report = json.loads(check_wheel(wheel, "--json").stdout)
    assert report["ok"] is False and report["imports"] is None
    assert [(f["path"], f["cuda"]) for f in report["files"]] == [(f"badpkg/{ext}",
                                                                  ["libcudart.so.12"])]


def test_a_wheel_that_opens_the_driver_at_run_time_passes(built, tmp_path):
    wheel = ext_wheel(tmp_path, "goodpkg", built["good"])
    proc = check_wheel(wheel)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ext = os.path.basename(built["good"])
    assert f"ELF goodpkg/{ext}: needs libc.so.6" in proc.stdout
    assert proc.stdout.strip().endswith("all checks passed")
    pure = _wheels.write_wheel(tmp_path, "purepkg", {"purepkg/__init__.py": b""})
    proc = check_wheel(pure)
    assert proc.returncode == 0 and "compiled files: none" in proc.stdout


def test_a_vendored_library_and_a_pe_import_are_found(built, tmp_path):
    with open(built["cudart"], "rb") as f:
        cudart = f.read()
    files = {"vpkg/__init__.py": b"",
             "vpkg.libs/libcudart-0a1b2c3d.so.12": cudart,  # as auditwheel repair names it
             "vpkg/_win.pyd": pe_image(["KERNEL32.dll"]),
             "vpkg/data.bin": b"MZ but not a program"}
    report = json.loads(check_wheel(_wheels.write_wheel(tmp_path, "vpkg", files), "--json").stdout)
    assert report["ok"] is True  # the vendored library itself needs nothing of CUDA
    assert sorted((f["path"], f["format"], f["needed"]) for f in report["files"]) == [
        ("vpkg.libs/libcudart-0a1b2c3d.so.12", "ELF", []),
        ("vpkg/_win.pyd", "PE", ["KERNEL32.dll"])]
    linked = _wheels.extension(tmp_path, "_vend", _wheels.CUDART_CALL, link=[built["cudart"]])
    with open(linked, "rb") as f:
        files["vpkg/_vend.so"] = f.read()
    files["vpkg/_win.pyd"] = pe_image(["KERNEL32.dll", "nvcuda.dll"])
    report = json.loads(check_wheel(_wheels.write_wheel(tmp_path, "vpkg", files), "--json").stdout)
    assert sorted(report["failures"]) == [
        "vpkg/_vend.so needs libcudart.so.12 (DT_NEEDED), a CUDA library: it cannot load where "
        "CUDA is absent",
        "vpkg/_win.pyd needs nvcuda.dll (import table), a CUDA library: it cannot load where "
        "CUDA is absent"]


# ---- bundles ---------------------------------------------------------------------------------

def bundle_bytes(code: bytes, archs=("sm_80", "sm_90")) -> bytes:
    made = Bundle()
    for expr in ("scale<float>", "scale<double>"):
        for arch in archs:
            made.add(Program("template <class T> __global__ void scale(T *x) {}",
                             name_expressions=[expr]), ObjectCode(code, "cubin", arch))
    return made.to_bytes()


def test_arch_reports_which_programs_each_gpu_finds_precompiled(built, tmp_path):
    with open(built["good"], "rb") as f:
        files = {"kpkg/__init__.py": b"", "kpkg/_kernels.bundle": bundle_bytes(f.read())}
    wheel = _wheels.write_wheel(tmp_path, "kpkg", files)
    proc = check_wheel(wheel, "--arch", "sm_80", "--arch", "86", "--arch", "sm_90",
                       "--arch", "sm_75")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "bundle kpkg/_kernels.bundle: 2 programs" in proc.stdout
    assert "  sm_80: 2 of 2 programs precompiled\n" in proc.stdout
    assert "  sm_86: 2 of 2 programs precompiled (using sm_80 code)" in proc.stdout
    assert ("  sm_75: 0 of 2 programs precompiled; compiled with NVRTC at run time: "
            "kernel.cu (scale<double>), kernel.cu (scale<float>)") in proc.stdout
    report = json.loads(check_wheel(wheel, "--arch", "sm_86", "--arch", "sm_100", "--json").stdout)
    (bundle,) = report["bundles"]
    assert [p["code"] for p in bundle["programs"]] == [{"sm_86": "sm_80", "sm_100": None}] * 2
    bare = check_wheel(_wheels.write_wheel(tmp_path, "nopkg", {"nopkg/__init__.py": b""}),
                       "--arch", "sm_90")
    assert "bundles: none" in bare.stdout and bare.returncode == 0
    bad_arch = check_wheel(wheel, "--arch", "sm_x")
    assert bad_arch.returncode == 2 and "is not a compute capability" in bad_arch.stderr


def test_require_bundle_fails_a_wheel_the_bundle_was_left_out_of(built, tmp_path):
    # A bundle git ignores is left out of the wheel by the build backend: "bundles: none" passed.
    bare = _wheels.write_wheel(tmp_path, "nopkg", {"nopkg/__init__.py": b""})
    proc = check_wheel(bare, "--arch", "sm_90", "--require-bundle")
    assert proc.returncode == 1, proc.stdout
    assert "FAIL the wheel ships no cudaload.Bundle, and --require-bundle asks for one" \
        in proc.stdout and "git check-ignore" in proc.stdout
    assert check_wheel(bare, "--require-bundle").returncode == 1  # without --arch too
    with open(built["good"], "rb") as f:
        files = {"kpkg/__init__.py": b"", "kpkg/_kernels.bundle": bundle_bytes(f.read())}
    wheel = _wheels.write_wheel(tmp_path, "kpkg", files)
    covered = check_wheel(wheel, "--arch", "sm_90", "--arch", "sm_86", "--require-bundle")
    assert covered.returncode == 0, covered.stdout  # sm_86 runs the sm_80 code
    short = check_wheel(wheel, "--arch", "sm_90", "--arch", "sm_75", "--require-bundle")
    assert short.returncode == 1, short.stdout
    assert "FAIL kpkg/_kernels.bundle: no code for sm_75 for 2 of 2 programs" in short.stdout
    # The fix names the bundle where the package's tree has it: only --programs is left to fill.
    assert ("add their code: run `cudaload precompile --programs MODULE:NAME --arch sm_75 -o "
            "kpkg/_kernels.bundle --append` from the folder that holds the package") \
        in short.stdout
    # A member of NAME-VERSION.data/purelib/ is installed (and kept in the tree) without it.
    (tmp_path / "data").mkdir()
    data = _wheels.write_wheel(tmp_path / "data", "kpkg", {
        f"kpkg-1.0.data/purelib/{name}": value for name, value in files.items()})
    moved = check_wheel(data, "--arch", "sm_75", "--require-bundle")
    assert "FAIL kpkg-1.0.data/purelib/kpkg/_kernels.bundle: no code for sm_75" in moved.stdout
    assert "--arch sm_75 -o kpkg/_kernels.bundle --append`" in moved.stdout, moved.stdout
    assert check_wheel(wheel, "--arch", "sm_75").returncode == 0  # only reported, by default


def test_a_damaged_bundle_or_entry_fails(built, tmp_path):
    with open(built["good"], "rb") as f:
        data = bytearray(bundle_bytes(f.read()))
    data[-100] ^= 0xFF  # inside the last entry: its integrity hash no longer matches
    wheel = _wheels.write_wheel(tmp_path, "kpkg", {"kpkg/_kernels.bundle": bytes(data)})
    report = json.loads(check_wheel(wheel, "--arch", "sm_90", "--json").stdout)
    assert len(report["failures"]) == 1 and "is damaged" in report["failures"][0]
    assert report["failures"][0].startswith("kpkg/_kernels.bundle: the sm_90 entry of kernel.cu")
    cut = _wheels.write_wheel(tmp_path, "kpkg", {"kpkg/_kernels.bundle": bytes(data[:200])})
    proc = check_wheel(cut, "--arch", "sm_90")
    assert proc.returncode == 1
    assert "FAIL kpkg/_kernels.bundle: the bundle cannot be read (" in proc.stdout
    with open(built["bad"], "rb") as f:
        linked = bundle_bytes(f.read(), archs=("sm_90",))
    wheel = _wheels.write_wheel(tmp_path, "kpkg", {"kpkg/_kernels.bundle": linked})
    report = json.loads(check_wheel(wheel, "--arch", "sm_90", "--json").stdout)
    assert all("holds a CUBIN that needs libcudart.so.12" in f for f in report["failures"])


# ---- bad input: one line, the file and the reason ---------------------------------------------

def test_bad_input_is_one_line_naming_the_file_and_the_reason(built, tmp_path):
    text = tmp_path / "notes-1.0-py3-none-any.whl"
    text.write_text("not a zip\n")
    one_line_error(check_wheel(text), str(text), "not a wheel: not a zip archive")
    good = ext_wheel(tmp_path, "goodpkg", built["good"])
    with open(good, "rb") as f:
        whole = f.read()
    cut = tmp_path / "cut-1.0-py3-none-any.whl"
    cut.write_bytes(whole[:len(whole) // 2])
    one_line_error(check_wheel(cut), str(cut), "truncated")
    plain = tmp_path / "plain.zip"
    with zipfile.ZipFile(plain, "w") as archive:
        archive.writestr("a.txt", "a")
    one_line_error(check_wheel(plain), "without a .dist-info/WHEEL file")
    one_line_error(check_wheel(tmp_path / "missing.whl"), "missing.whl: no such file")
    one_line_error(check_wheel(tmp_path), "a folder, not a wheel file")
    os.mkfifo(tmp_path / "pipe.whl")  # opened, it would wait for a writer forever
    one_line_error(check_wheel(tmp_path / "pipe.whl"), "pipe.whl: a pipe, not a wheel file")


def test_a_damaged_member_or_a_corrupt_elf_names_the_file(built, tmp_path):
    with open(built["bad"], "rb") as f:
        data = f.read()
    ext = os.path.basename(built["bad"])
    stored = tmp_path / "stored-1.0-py3-none-any.whl"
    with zipfile.ZipFile(stored, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("stored-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\n")
        archive.writestr(f"stored/{ext}", data)
    raw = bytearray(stored.read_bytes())
    raw[raw.index(data[:64]) + 2000] ^= 0xFF
    stored.write_bytes(bytes(raw))
    one_line_error(check_wheel(stored), str(stored), f"stored/{ext} cannot be read from the "
                   "archive", "CRC")
    at = _strtab_entry(data)
    corrupt = data[:at + 8] + struct.pack("<Q", 0x7FFF0000) + data[at + 16:]
    wheel = _wheels.write_wheel(tmp_path, "cpkg", {"cpkg/_c.so": corrupt,
                                                   "cpkg/_text.so": b"INPUT(-lfoo)\n"})
    proc = check_wheel(wheel)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert sorted(line for line in proc.stdout.splitlines() if line.startswith("FAIL")) == [
        "FAIL cpkg/_c.so: ELF file cannot be read: corrupt dynamic section: its string table "
        "(DT_STRTAB 0x7fff0000) is in no loaded part of the file",
        "FAIL cpkg/_text.so: named like a compiled library but neither ELF nor PE (13 bytes)"]
