"""Hostile library files: every bad override gives a typed error that says what to do, never a crash.

Each case loads in a fresh interpreter (dlopen is per process) and reports what it raised; a case
that kills the interpreter (SIGBUS from a truncated library, SIGSEGV) fails with the signal named.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys

import pytest

from tests._fakelibs import build_shared_library, no_symbols_library  # noqa: F401  (fixture)
from tests._support import run_py, run_scenario

def probe(which: str, path: str, compile_too: bool = False) -> dict:
    """What loading ``path`` as the driver ("driver") or NVRTC ("nvrtc") gives, in a subprocess."""
    variable = "CUDALOAD_LIBCUDA" if which == "driver" else "CUDALOAD_LIBNVRTC"
    env = {variable: path, "WHICH": which, "CUDALOAD_CACHE": "0"}
    if compile_too:
        env["COMPILE"] = "1"
    proc = run_scenario("library_loads", "load_named", env=env, check=False, timeout=120)
    assert proc.returncode == 0, (
        f"loading {path} as {which} killed the interpreter "
        f"({_signal(proc.returncode)}):\n{proc.stderr[-2000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if "mro" in result:
        result["which"] = which
    return result


def _signal(rc: int) -> str:
    import signal

    return f"signal {signal.Signals(-rc).name}" if rc < 0 else f"exit {rc}"


def assert_typed(result: dict, kind: str, *words: str) -> None:
    assert "loaded" not in result, result
    assert kind in result["mro"], result
    assert "CudaLoadError" in result["mro"]
    # Without a driver CUDA cannot be used at all; without NVRTC only compiling stops.
    assert ("CudaUnavailableError" in result["mro"]) == (result["which"] == "driver"), result
    assert "Next step" in result["message"], result["message"]
    for word in words:
        assert word in result["message"], (word, result["message"])


def _nvrtc_path() -> str:
    out = run_py("from cudaload.bindings import _loader; print(_loader.nvrtc().path)",
                 unset=("CUDALOAD_LIBNVRTC",))
    return out.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def real_nvrtc() -> str:
    return os.path.realpath(_nvrtc_path())


@pytest.fixture
def real_driver(libcuda_535) -> str:
    return os.path.realpath(libcuda_535)


def _prefix(source: str, dest: str, length: int) -> str:
    with open(source, "rb") as src, open(dest, "wb") as out:
        remaining = length
        while remaining:
            chunk = src.read(min(remaining, 1 << 22))
            if not chunk:
                break
            out.write(chunk)
            remaining -= len(chunk)
    return dest


# --- paths that are not libraries --------------------------------------------------------------

WHICH = ["driver", "nvrtc"]


@pytest.mark.parametrize("which", WHICH)
def test_missing_path(which, tmp_path):
    result = probe(which, str(tmp_path / "nothing-here.so"))
    assert_typed(result, "LibraryNotFoundError", "not found", str(tmp_path))


@pytest.mark.parametrize("which", WHICH)
def test_directory(which, tmp_path):
    assert_typed(probe(which, str(tmp_path)), "LibraryLoadError", "is a directory")


@pytest.mark.parametrize("which", WHICH)
def test_empty_file(which, tmp_path):
    path = tmp_path / "lib.so"
    path.write_bytes(b"")
    assert_typed(probe(which, str(path)), "LibraryLoadError", "empty file")


@pytest.mark.parametrize("which", WHICH)
@pytest.mark.parametrize("content", [b"not a library\n", b"\x7fEL", b"\x7fELF" + b"\0" * 12,
                                     bytes(range(256)) * 64], ids=["text", "3-bytes-of-magic",
                                                                   "bare-ident", "binary"])
def test_not_a_shared_library(which, content, tmp_path):
    path = tmp_path / "lib.so"
    path.write_bytes(content)
    assert_typed(probe(which, str(path)), "LibraryLoadError", "could not be loaded")


# --- truncated copies of the real libraries ------------------------------------------------------

CUTS = ["1", "16", "63", "64", "65", "4096", "65536", "1MiB", "half", "size-65536", "size-4096",
        "size-1"]


def _length(cut: str, size: int) -> int:
    if cut == "half":
        return size // 2
    if cut.startswith("size-"):
        return size - int(cut[5:])
    return 1 << 20 if cut == "1MiB" else int(cut)


@pytest.mark.parametrize("cut", CUTS)
def test_truncated_nvrtc(cut, real_nvrtc, tmp_path):
    length = _length(cut, os.path.getsize(real_nvrtc))
    path = _prefix(real_nvrtc, str(tmp_path / "libnvrtc.so.13"), length)
    result = probe("nvrtc", path, compile_too=True)
    assert_typed(result, "LibraryLoadError", "truncated or damaged", str(length), "reinstall")


@pytest.mark.parametrize("cut", CUTS)
def test_truncated_driver(cut, real_driver, tmp_path):
    length = _length(cut, os.path.getsize(real_driver))
    path = _prefix(real_driver, str(tmp_path / "libcuda.so.1"), length)
    assert_typed(probe("driver", path), "LibraryLoadError", "truncated or damaged", str(length))


def test_intact_copy_of_the_driver_still_loads(real_driver, tmp_path):
    # The truncation check must not refuse a whole file.
    path = shutil.copyfile(real_driver, tmp_path / "libcuda.so.1")
    assert probe("driver", str(path)) == {"loaded": str(path)}


# --- libraries of another architecture -----------------------------------------------------------

_TINY = "int cuInit(unsigned f) { return 0; }\nint nvrtcVersion(int *a, int *b) { return 0; }\n"


def _elf_32(tmp_path) -> str:
    cc = shutil.which("gcc") or shutil.which("cc")
    out = tmp_path / "lib32.so"
    if cc:
        src = tmp_path / "lib32.c"
        src.write_text(_TINY)
        # -nostdlib: the 32-bit libgcc is rarely installed, and this library calls nothing.
        built = subprocess.run([cc, "-m32", "-shared", "-fPIC", "-nostdlib", "-o", str(out),
                                str(src)], capture_output=True)
        if built.returncode == 0:
            return str(out)
    # No 32-bit compiler: a 64-bit library with its ELF class byte set to 32-bit.
    data = bytearray((tmp_path / _native(tmp_path)).read_bytes())
    data[4] = 1
    out.write_bytes(data)
    return str(out)


def _native(tmp_path) -> str:
    build_shared_library(str(tmp_path), "native.so", _TINY)
    return "native.so"


def _foreign_machine(tmp_path, machine: int) -> str:
    data = bytearray((tmp_path / _native(tmp_path)).read_bytes())
    data[18:20] = struct.pack("<H", machine)
    out = tmp_path / f"machine{machine}.so"
    out.write_bytes(data)
    return str(out)


@pytest.mark.parametrize("which", WHICH)
def test_32_bit_library(which, tmp_path):
    assert_typed(probe(which, _elf_32(tmp_path)), "LibraryLoadError", "32-bit")


@pytest.mark.parametrize("which", WHICH)
def test_a_library_of_the_other_byte_order(which, tmp_path):
    # Its machine field then reads as another number: the byte order is what to report.
    data = bytearray((tmp_path / _native(tmp_path)).read_bytes())
    data[5] = 3 - data[5]
    path = tmp_path / "swapped.so"
    path.write_bytes(data)
    ours = "little" if sys.byteorder == "little" else "big"
    theirs = "big" if ours == "little" else "little"
    assert_typed(probe(which, str(path)), "LibraryLoadError",
                 f"is a {theirs}-endian library, this process is {ours}-endian")


@pytest.mark.parametrize("which", WHICH)
def test_a_library_whose_class_byte_is_neither_32_nor_64_bits(which, tmp_path):
    # Such a header is damaged, not "a 64-bit library" in a 64-bit process.
    data = bytearray((tmp_path / _native(tmp_path)).read_bytes())
    data[4] = 7
    path = tmp_path / "class7.so"
    path.write_bytes(data)
    result = probe(which, str(path))
    assert_typed(result, "LibraryLoadError", "neither 32 nor 64 bits", "reinstall")
    assert "-bit library" not in json.dumps(result)


@pytest.mark.parametrize("which", WHICH)
@pytest.mark.parametrize("machine, label", [(183, "aarch64"), (21, "ppc64"), (243, "RISC-V"),
                                            (0x1234, "machine 4660")])
def test_library_of_another_machine(which, machine, label, tmp_path):
    # glibc reports this as "No such file or directory"; the file exists, so it must not be
    # reported as missing.
    result = probe(which, _foreign_machine(tmp_path, machine))
    assert_typed(result, "LibraryLoadError", label, "this process runs on")


# --- real libraries that are not the one asked for ------------------------------------------------

def test_library_without_driver_symbols(no_symbols_library):  # noqa: F811
    assert_typed(probe("driver", no_symbols_library), "MissingSymbolError", "lacks cuInit")


def test_nvrtc_given_as_the_driver(real_nvrtc):
    assert_typed(probe("driver", real_nvrtc), "MissingSymbolError", "lacks cuInit",
                 "not the CUDA driver")


def test_driver_given_as_nvrtc(real_driver):
    assert_typed(probe("nvrtc", real_driver), "MissingSymbolError", "lacks nvrtcVersion",
                 "not NVRTC")


# --- NVRTC without its builtins library -----------------------------------------------------------

def _builtins_reachable_by_name(real_nvrtc: str) -> bool:
    """Whether the system loader finds libnvrtc-builtins without NVRTC's folder (e.g. a toolkit
    in the loader's cache): then a lone libnvrtc is not missing it, and the case cannot be made."""
    names = [n for n in os.listdir(os.path.dirname(real_nvrtc))
             if n.startswith("libnvrtc-builtins.so.")]
    code = "import ctypes, sys\nfor n in sys.argv[1:]:\n    try: ctypes.CDLL(n); print('yes'); break\n" \
           "    except OSError: pass"
    out = subprocess.run([sys.executable, "-c", code, *names], capture_output=True, text=True)
    return "yes" in out.stdout


def test_nvrtc_without_builtins_says_so(real_nvrtc, tmp_path):
    if _builtins_reachable_by_name(real_nvrtc):
        pytest.skip("the system loader finds libnvrtc-builtins outside NVRTC's folder here")
    lone = tmp_path / os.path.basename(real_nvrtc)
    try:
        os.link(real_nvrtc, lone)  # no 140 MB copy where the file system allows
    except OSError:
        shutil.copyfile(real_nvrtc, lone)
    result = probe("nvrtc", str(lone), compile_too=True)
    assert result["type"] == "NvrtcError" and result["code"] == 7, result
    message = result["message"]
    assert "builtins" in message and "is missing" in message and str(tmp_path) in message
    assert "Next step" in message and "libnvrtc-builtins.so." in message
    # status() reports the same, without raising.
    report = json.loads(run_py(
        "import json, cudaload; print(json.dumps(cudaload.status().as_dict()['nvrtc']))",
        env={"CUDALOAD_LIBNVRTC": str(lone), "CUDALOAD_CACHE": "0"}).stdout.splitlines()[-1])
    assert report["builtins"] is False and "is missing" in report["error"]


# --- a driver older than the NVRTC in use ---------------------------------------------------------

def test_driver_older_than_nvrtc_never_gets_ptx_it_cannot_load(libcuda_535, tmp_path):
    out = json.loads(run_scenario("program_compiles", "old_driver",
                                  env={"CUDALOAD_LIBCUDA": libcuda_535,
                                       "CUDALOAD_CACHE_DIR": str(tmp_path)}
                                  ).stdout.splitlines()[-1])
    assert out["nvrtc"][0] >= 13  # the case needs an NVRTC newer than the 12.2 driver
    assert out["ptx_loadable"] is False
    assert any("PTX" in p and "12.2" in p for p in out["problems"])
    # Archs NVRTC knows: CUBIN.  Archs it does not know but of a known major: CUBIN of that
    # major.  Anything else would need PTX this driver cannot JIT: refused, saying what to do.
    assert out["90"] == ["cubin", "sm_90"]
    assert out["121"] == ["cubin", "sm_121"]
    assert out["122"] == ["cubin", "sm_121"]
    for arch in ("130", "150"):
        kind, message = out[arch]
        assert kind == "NvrtcError" and "12.2" in message and "Next step" in message
        assert "upgrade the NVIDIA driver" in message
    # PTX asked for explicitly is still produced (to ship or inspect), with an ISA above 8.2
    # (CUDA 12.2's): the status report above is what says it cannot load here.
    assert float(out["ptx_isa"]) > 8.2
