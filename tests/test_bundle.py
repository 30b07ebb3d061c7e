"""Bundles of precompiled kernels: the file format, matching, the precompile command, and use with
NVRTC hidden.  Scenarios that load a library run in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings

import pytest

from cudaload.compile import cache
from cudaload.compile.bundle import Bundle, BundleWarning
from cudaload.compile.objectcode import ObjectCode
from cudaload.compile.program import Program
from tests._support import ROOT, run_json, scenario_json

pytestmark = pytest.mark.usefixtures("cache_dir")  # each test compiles into a folder of its own

SRC = 'template <class T> __global__ void scale(T *x, T a) { x[threadIdx.x] *= a; }\n'
HEADER = "#pragma once\n#define FACTOR 2\n"
KERNEL = '#include "common.cuh"\n' + SRC.replace("*= a", "*= a * FACTOR")


def fake_cubin(arch: str) -> ObjectCode:
    return ObjectCode(b"\x7fELF" + arch.encode() * 8, "cubin", arch,
                      lowered_names={"scale<float>": "_Z5scaleIfEvPT_S0_"})


@pytest.fixture
def package(tmp_path):
    """A host package ``kpkg`` with a kernel that includes a sibling header, on sys.path."""
    root = tmp_path / "site"
    pkg = root / "kpkg"
    pkg.mkdir(parents=True)
    (pkg / "ops.cu").write_text(KERNEL)
    (pkg / "common.cuh").write_text(HEADER)
    (pkg / "__init__.py").write_text(textwrap.dedent('''
        from cudaload import Program
        def programs():
            return [Program.from_resource("kpkg", "ops.cu", name_expressions=[e])
                    for e in ("scale<float>", "scale<double>")]
    '''))
    return root


def precompile(*args, cwd=None, env=None):
    full_env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "cudaload", "precompile", *args], cwd=cwd,
                          env=full_env, capture_output=True, text=True, timeout=300)


# ---- format and matching, without NVRTC -----------------------------------------------------------

def test_round_trip_and_arch_matching():
    prog = Program(SRC, name_expressions=["scale<float>"])
    made = Bundle()
    for arch in ("sm_80", "sm_90", "sm_90a"):
        made.add(prog, fake_cubin(arch))
    assert len(made) == 3
    bundle = Bundle(made.to_bytes())
    assert sorted(e["arch"] for e in bundle.entries()) == ["sm_80", "sm_90", "sm_90a"]
    hit = bundle.find(prog, "sm_90")
    assert hit.code == fake_cubin("sm_90").code and hit.cached == "bundle"
    assert hit.lowered_names == {"scale<float>": "_Z5scaleIfEvPT_S0_"}
    assert hit.origin is None and hit.source is None  # plain data: Program adds those
    assert bundle.find(prog, 90).arch == "sm_90" and bundle.find(prog, "sm_90a").arch == "sm_90a"
    # a CUBIN runs on later minors of its major: sm_80 code on sm_86 and sm_89, never on sm_90+
    assert bundle.find(prog, "sm_86").arch == "sm_80" and bundle.find(prog, 89).arch == "sm_80"
    assert bundle.find(prog, "sm_86", output="cubin") is None  # asked for sm_86 code exactly
    assert bundle.find(prog, "sm_100") is None and bundle.find(prog, "sm_75") is None
    assert bundle.find(prog, "sm_90", output="ptx") is None


def test_any_change_to_the_program_is_a_miss():
    prog = Program(SRC, name_expressions=["scale<float>"])
    made = Bundle()
    made.add(prog, fake_cubin("sm_90"))
    bundle = Bundle(made.to_bytes())
    assert bundle.find(Program(SRC, name_expressions=["scale<float>"]), "sm_90") is not None
    for other in (Program(SRC, name_expressions=["scale<float>"], options=("-DX=1",)),
                  Program(SRC, name_expressions=["scale<double>"]),
                  Program(SRC, name_expressions=["scale<float>"], std="c++20"),
                  Program(SRC + "\n", name_expressions=["scale<float>"]),
                  Program(SRC, name="other.cu", name_expressions=["scale<float>"])):
        assert bundle.find(other, "sm_90") is None, other.options


def test_adding_replaces_the_same_arch_and_append_keeps_older_entries(tmp_path):
    prog = Program(SRC)
    first = Bundle()
    first.add(prog, fake_cubin("sm_80"))
    first.add(prog, ObjectCode(b"\x7fELF-new", "cubin", "sm_80"))
    assert len(first) == 1
    path = tmp_path / "k.bundle"
    first.write(path)
    assert oct(os.stat(path).st_mode & 0o777) == "0o644"
    more = Bundle.from_file(path)
    more.add(prog, fake_cubin("sm_90"))
    more.write(path)
    again = Bundle.from_file(path)
    assert {e["arch"] for e in again.entries()} == {"sm_80", "sm_90"}
    assert again.find(prog, "sm_80").code == b"\x7fELF-new"
    with pytest.raises(ValueError, match="CUBIN"):
        Bundle().add(prog, ObjectCode(b".version 8.0", "ptx", "sm_90"))


def test_missing_file_is_empty_without_a_warning(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bundle = Bundle.from_file(tmp_path / "absent.bundle")
        assert len(bundle) == 0 and bundle.find(Program(SRC), "sm_90") is None
        assert len(Bundle.from_resource("tests", "absent.bundle")) == 0


@pytest.mark.parametrize("damage", ["foreign", "truncated", "index", "version"])
def test_damaged_file_warns_once_and_is_empty(tmp_path, damage):
    prog = Program(SRC)
    made = Bundle()
    made.add(prog, fake_cubin("sm_90"))
    data = made.to_bytes()
    data = {"foreign": b"\x7fELF" + data[4:], "truncated": data[:-5],
            "index": data[:14] + b"#" + data[15:], "version": data[:8] + b"\x09\x00" + data[10:]
            }[damage]
    path = tmp_path / "k.bundle"
    path.write_bytes(data)
    bundle = Bundle.from_file(path)
    with pytest.warns(BundleWarning, match="cudaload precompile") as caught:
        assert bundle.find(prog, "sm_90") is None
        assert bundle.find(prog, "sm_90") is None
    assert len(caught) == 1


def test_damaged_entry_is_a_miss_and_its_neighbours_still_work():
    prog = Program(SRC)
    made = Bundle()
    made.add(prog, fake_cubin("sm_80"))
    made.add(prog, fake_cubin("sm_90"))
    data = bytearray(made.to_bytes())
    entry = next(e for e in Bundle(bytes(data))._entries().values() if e["arch"] == "sm_90")
    data[entry["offset"] + entry["length"] - 1] ^= 0xFF
    bundle = Bundle(bytes(data))
    assert bundle.find(prog, "sm_90") is None
    assert bundle.find(prog, "sm_80").code == fake_cubin("sm_80").code


def test_entries_are_kernel_cache_entries():
    prog = Program(SRC)
    made = Bundle()
    made.add(prog, fake_cubin("sm_90"))
    bundle = Bundle(made.to_bytes())
    (entry,) = bundle._entries().values()
    blob = bundle._data[entry["offset"]:entry["offset"] + entry["length"]]
    assert blob == cache.encode(fake_cubin("sm_90"))


# ---- cudaload precompile and the run-time hook, with the NVRTC wheel -------------------------------

def test_precompile_writes_real_cubins_used_with_nvrtc_hidden(package, tmp_path):
    out = tmp_path / "k.bundle"
    proc = precompile("--package", "kpkg", "--resource", "ops.cu", "--arch", "sm_80",
                      "--arch", "sm_90", "--arch", "sm_100", "--name-expression", "scale<float>",
                      "-o", str(out), env={"PYTHONPATH": f"{package}{os.pathsep}{ROOT}"})
    assert proc.returncode == 0, proc.stderr
    assert "wrote 3 entries" in proc.stdout
    bundle = Bundle.from_file(out)
    assert sorted(e["arch"] for e in bundle.entries()) == ["sm_100", "sm_80", "sm_90"]
    for e in bundle._entries().values():
        obj = cache.decode(bundle._data[e["offset"]:e["offset"] + e["length"]])
        assert obj.code[:4] == b"\x7fELF" and obj.kind == "cubin"
        assert ObjectCode.from_bytes(obj.code, "cubin").arch == e["arch"]  # the ELF's own arch
        assert e["name_expressions"] == ["scale<float>"]
    expected = next(e for e in bundle._entries().values() if e["arch"] == "sm_90")
    expected = cache.decode(bundle._data[expected["offset"]:][:expected["length"]]).code.hex()

    env = {"PYTHONPATH": f"{package}{os.pathsep}{ROOT}", "CUDALOAD_LIBNVRTC": "/nonexistent"}
    got = scenario_json("bundle_uses", "with_nvrtc_hidden", out, env=env)
    assert got["code"] == expected and got["cached"] == "bundle" and got["arch"] == "sm_90"
    assert got["again"] == "memory" and got["names"] == {"scale<float>": "_Z5scaleIfEvPT_S0_"}
    assert got["nvrtc_mapped"] is False and got["pathfinder"] is False
    # options differ: no entry matches, so the program is compiled, which needs the hidden NVRTC
    assert got["fallback"].startswith("LibraryNotFoundError") and "/nonexistent" in got["fallback"]


def test_mismatch_compiles_when_nvrtc_is_there(package, tmp_path):
    out = tmp_path / "k.bundle"
    env = {"PYTHONPATH": f"{package}{os.pathsep}{ROOT}"}
    proc = precompile("--package", "kpkg", "--resource", "ops.cu", "--arch", "sm_90",
                      "--name-expression", "scale<float>", "-o", str(out), env=env)
    assert proc.returncode == 0, proc.stderr
    got = scenario_json("bundle_uses", "mismatches", out, env=env)
    assert got == [["bundle", "sm_90", True], [None, "sm_90", True], [None, "sm_80", True]]


def test_refused_bundle_code_is_compiled_instead():
    got = scenario_json("bundle_uses", "refused_code")
    assert got == ["bundle", None, "sm_90", True, True]


def test_precompile_programs_from_the_package(package, tmp_path):
    out = tmp_path / "k.bundle"
    proc = precompile("--programs", "kpkg:programs", "--arch", "sm_90", "-o", str(out),
                      cwd=package)
    assert proc.returncode == 0, proc.stderr
    bundle = Bundle.from_file(out)
    assert sorted(tuple(e["name_expressions"]) for e in bundle.entries()) == [
        ("scale<double>",), ("scale<float>",)]
    got = run_json(f'''
        import json, kpkg
        from cudaload.compile.bundle import Bundle
        bundle = Bundle.from_file({str(out)!r})
        print(json.dumps([bundle.find(p, "sm_90") is not None for p in kpkg.programs()]))
    ''', env={"PYTHONPATH": f"{package}{os.pathsep}{ROOT}", "CUDALOAD_LIBNVRTC": "/nonexistent"})
    assert got == [True, True]


def test_precompile_without_o_fills_the_cache(package, cache_dir):
    proc = precompile(str(package / "kpkg" / "ops.cu"), "--arch", "sm_80",
                      "--name-expression", "scale<float>")
    assert proc.returncode == 0, proc.stderr
    assert "cubin for sm_80 (compiled)" in proc.stdout
    assert len(list((cache_dir / f"v{cache.FORMAT}").glob("*.bin"))) == 1


@pytest.mark.parametrize("args, message", [
    (["--resource", "ops.cu"], "--resource needs --package"),
    (["--programs", "kpkg"], "MODULE:NAME"),
    (["--programs", "no_such_module_here:programs"], "No module named"),
    ([], "nothing to compile"),
])
def test_precompile_usage_errors(args, message):
    proc = precompile(*args, "--arch", "sm_90")
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr


def test_precompile_reports_an_arch_nvrtc_lacks(package, tmp_path):
    proc = precompile(str(package / "kpkg" / "ops.cu"), "--arch", "sm_20", "-o",
                      str(tmp_path / "k.bundle"))
    assert proc.returncode == 1 and "sm_20" in proc.stderr
    assert not (tmp_path / "k.bundle").exists()


def test_bundle_file_lists_what_it_holds(package, tmp_path):
    out = tmp_path / "k.bundle"
    # ops.cu's kernel is a template: without its instantiation the entry would hold no kernel
    proc = precompile("--package", "kpkg", "--resource", "ops.cu", "--arch", "sm_90",
                      "--name-expression", "scale<float>", "-o", str(out),
                      env={"PYTHONPATH": f"{package}{os.pathsep}{ROOT}"})
    assert proc.returncode == 0, proc.stderr
    (entry,) = Bundle.from_file(out).entries()
    assert entry["name"] == "ops.cu" and entry["kind"] == "cubin" and entry["arch"] == "sm_90"
    assert entry["name_expressions"] == ["scale<float>"]
    assert json.loads(json.dumps(entry)) == entry


def test_precompile_append_leaves_a_file_that_is_no_bundle(package, tmp_path):
    victim = tmp_path / "notes.cu"
    victim.write_text("// not a bundle\n")
    proc = precompile(str(package / "kpkg" / "ops.cu"), "--arch", "sm_90", "-o", str(victim),
                      "--append")
    assert proc.returncode == 1 and "not a kernel bundle" in proc.stderr, proc.stderr
    assert victim.read_text() == "// not a bundle\n"


@pytest.mark.parametrize("change", [
    lambda e: e.update(offset=1e400),  # JSON's 1e400 reads as infinity
    lambda e: e.pop("name"),
    lambda e: e.pop("name_expressions"),
    lambda e: e.update(offset=-16),
    lambda e: e.update(length=-1),
])
def test_hostile_index_entries_make_the_bundle_unusable_not_compiles_fail(change, tmp_path):
    import json

    from cudaload.compile.bundle import BUNDLE_HEADER

    prog = Program(SRC)
    made = Bundle()
    made.add(prog, fake_cubin("sm_90"))
    data = made.to_bytes()
    magic, version, length = BUNDLE_HEADER.unpack_from(data)
    index = json.loads(data[BUNDLE_HEADER.size:BUNDLE_HEADER.size + length])
    change(index["entries"][0])
    text = json.dumps(index).encode()
    path = tmp_path / "k.bundle"
    path.write_bytes(BUNDLE_HEADER.pack(magic, version, len(text)) + text
                     + data[BUNDLE_HEADER.size + length:])
    with pytest.raises(ValueError):
        Bundle.from_file(path).check()
    with pytest.warns(BundleWarning, match="cannot be used"):
        assert Bundle.from_file(path).find(prog, "sm_90") is None


def test_a_bundle_that_cannot_be_opened_is_unusable_not_a_failed_compile(tmp_path):
    # A path through a file (NotADirectoryError): the bundle cannot be opened, by root too.
    (tmp_path / "file").write_text("x")
    path = tmp_path / "file" / "k.bundle"
    with pytest.raises(OSError):
        Bundle.from_file(path).check()  # the command line names the reason
    with pytest.warns(BundleWarning, match="cannot be used.*Not a directory"):
        assert Bundle.from_file(path).find(Program(SRC), "sm_90") is None
