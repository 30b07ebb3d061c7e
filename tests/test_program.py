"""Program: real kernels compiled by the NVRTC wheel (no GPU needed), each scenario in a subprocess."""

from __future__ import annotations

import base64
import pickle
import textwrap

import pytest

from tests.conftest import run_json, run_py


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("CUDALOAD_CACHE_DIR", str(folder))
    for name in ("CUDALOAD_CACHE", "CUDALOAD_CACHE_MAX_BYTES"):
        monkeypatch.delenv(name, raising=False)
    return folder


def test_cuda_headers_compile_without_include_paths():
    out = run_json(r'''
        import json
        from cudaload import Program
        src = """
        #include <cuda_fp16.h>
        #include <cuda_bf16.h>
        #include <cuda/std/limits>
        extern "C" __global__ void k(__half *h, __nv_bfloat16 *b) {
            h[0] = __float2half(cuda::std::numeric_limits<float>::epsilon());
            b[0] = __float2bfloat16(1.0f);
        }"""
        obj = Program(src).compile(arch=90)
        print(json.dumps({"kind": obj.kind, "arch": obj.arch, "elf": obj.code[:4] == b"\x7fELF"}))
    ''')
    assert out == {"kind": "cubin", "arch": "sm_90", "elf": True}


def test_name_expressions_and_warnings_log():
    out = run_json(r'''
        import json
        from cudaload import Program
        src = """
        template <class T> __global__ void scale(T *x, T a) { x[threadIdx.x] *= a; }
        extern "C" __global__ void w(int *x) { int unused = 3; x[0] = 1; }"""
        obj = Program(src, name_expressions=["scale<float>", "scale<double>"]).compile(arch=80)
        print(json.dumps({"names": obj.lowered_names, "log": obj.log}))
    ''')
    assert out["names"] == {"scale<float>": "_Z5scaleIfEvPT_S0_",
                            "scale<double>": "_Z5scaleIdEvPT_S0_"}
    assert "unused" in out["log"] and "warning" in out["log"]


def test_compile_error_carries_log_options_and_numbered_lines():
    proc = run_py(r'''
        import base64, pickle
        from cudaload import Program, CompileError
        src = "// line 1\n// line 2\nextern \"C\" __global__ void k(float *x) {\n  x[0] = nope;\n}\n"
        try:
            Program(src, name="bad.cu", defines={"N": 4}).compile(arch=90)
        except CompileError as err:
            print(base64.b64encode(pickle.dumps(err)).decode())
    ''')
    err = pickle.loads(base64.b64decode(proc.stdout.strip()))
    message = str(err)
    assert 'identifier "nope" is undefined' in err.log
    assert "> 4 |   x[0] = nope;" in message and "  3 | extern" in message
    assert "-DN=4" in err.options and "--gpu-architecture=sm_90" in err.options
    assert err.name == "bad.cu" and "nope" in err.source


def test_arch_choice():
    out = run_json(r'''
        import json
        from cudaload import Program, NvrtcError
        from cudaload.compile import program
        program._no_device = True  # as on a machine without a GPU, also when run on one
        p = Program('extern "C" __global__ void k(int *x) { x[0] = 1; }')
        def kind(arch, output="auto"):
            try:
                o = p.compile(arch=arch, output=output)
                return [o.kind, o.arch]
            except NvrtcError as err:
                return ["error", str(err)]
        archs = program.toolchain.live().archs
        out = {"none": kind(None), "max": max(archs), "min": min(archs),
               "sm_90": kind("sm_90"), "tuple": kind((8, 6)), "ptx": kind(90, "ptx"),
               "newer": kind(max(archs) + 30), "older": kind(min(archs) - 5),
               "between": kind(91)}
        program._driver_version = lambda: 12020  # a driver older than NVRTC: its PTX cannot load
        out["newer_old_driver"] = kind(max(archs) + 20)
        out["same_major_old_driver"] = kind(max(archs) + 3)
        print(json.dumps(out))
    ''')
    top = out["max"]
    assert out["none"] == ["cubin", f"sm_{top}"]  # no device here: NVRTC's newest
    assert out["sm_90"] == ["cubin", "sm_90"] and out["tuple"] == ["cubin", "sm_86"]
    assert out["ptx"] == ["ptx", "sm_90"]
    assert out["newer"] == ["ptx", f"sm_{top}"]
    assert out["between"] == ["cubin", "sm_90"]
    assert out["older"][0] == "error" and "older than anything NVRTC" in out["older"][1]
    assert out["newer_old_driver"][0] == "error" and "upgrade the NVIDIA driver" in \
        out["newer_old_driver"][1]
    assert out["same_major_old_driver"] == ["cubin", f"sm_{top}"]


def test_memory_hit_is_the_same_object():
    out = run_json(r'''
        import json
        from cudaload import Program
        p = Program('extern "C" __global__ void k(int *x) { x[0] = 1; }')
        first = p.compile(arch=90)
        hits = [p.compile(arch=90) for _ in range(3)]
        other = Program('extern "C" __global__ void k(int *x) { x[0] = 1; }').compile(arch=90)
        print(json.dumps({"first": first.cached, "hits": [h.cached for h in hits],
                          "same": hits[0] is hits[2], "other": other.cached}))
    ''')
    assert out["first"] is None and out["hits"] == ["memory"] * 3 and out["same"]
    assert out["other"] == "memory"  # same content, new Program: same entry


def test_from_file_and_from_resource_follow_includes(tmp_path):
    pkg = tmp_path / "site" / "kpkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "ops.cu").write_text('#include "common.cuh"\n#include "sub/more.cuh"\n'
                                'extern "C" __global__ void k(float *x) { x[0] = A + B; }\n')
    (pkg / "common.cuh").write_text("#define A 1.0f\n")
    (pkg / "sub" / "more.cuh").write_text('#include "deeper.cuh"\n#define B C\n')
    (pkg / "sub" / "deeper.cuh").write_text("#define C 2.0f\n")
    code = r'''
        import json, sys
        sys.path.insert(0, sys.argv[1])
        from cudaload import Program
        r = Program.from_resource("kpkg", "ops.cu")
        f = Program.from_file(sys.argv[1] + "/kpkg/ops.cu")
        print(json.dumps({"headers": sorted(r.headers), "res": r.compile(arch=90).kind,
                          "file": f.compile(arch=90).kind, "digest": r._digest.hex()}))
    '''
    run = lambda: run_json(f"import sys; sys.argv[1:] = [{str(pkg.parent)!r}]\n"
                           + textwrap.dedent(code))
    out = run()
    assert out["headers"] == ["common.cuh", "deeper.cuh", "sub/more.cuh"]
    assert out["res"] == out["file"] == "cubin"
    (pkg / "sub" / "deeper.cuh").write_text("#define C 3.0f\n")
    assert run()["digest"] != out["digest"]  # an edited sibling is a new program


def test_keyword_options():
    from cudaload.compile import options
    from cudaload.compile.program import Program

    built = options.build(("-DX",), defines={"N": 4, "FLAG": None}, fast_math=True,
                          line_info=True, debug=True, max_registers=32, relocatable=True,
                          include_paths=("/inc",))
    assert built == ("-std=c++17", "-DN=4", "-DFLAG", "-I/inc", "--use_fast_math", "-lineinfo",
                     "-G", "--maxrregcount=32", "-rdc=true", "-DX")
    assert options.build(("-std=c++20",))[0] == "-std=c++20"
    assert options.build((), std=None) == ()
    with pytest.raises(ValueError, match="compile\\(arch"):
        Program("x", options=("-arch=sm_90",))
    with pytest.raises(TypeError):
        Program("x", options="-DX")
    assert options.parse_arch("sm_90a") == (90, "a") and options.parse_arch("compute_80") == (80, "")
    with pytest.raises(ValueError):
        options.parse_arch("volta")
    assert options.split_cli(["-I", "/a", "-D", "X=1", "-std=c++17"]) == \
        ["-I/a", "-DX=1", "-std=c++17"]


def test_recompile_after_refusal_gives_loadable_code():
    out = run_json(r'''
        import json
        from cudaload import Program, ObjectCode
        from cudaload.compile import program
        program._no_device = True
        p = Program('extern "C" __global__ void k(int *x) { x[0] = 1; }')
        ptx = p.compile(arch=90, output="ptx")
        cubin = ptx._recompile_after_refusal()   # PTX refused: CUBIN for the arch
        again = p.compile(arch=90, output="ptx")  # the request now gives what loads
        older = cubin._recompile_after_refusal()  # CUBIN refused: PTX for an arch <= it
        foreign = ObjectCode.from_bytes(cubin.code, "cubin")._recompile_after_refusal()
        print(json.dumps({"cubin": [cubin.kind, cubin.arch], "again": [again.kind, again.cached],
                          "older": [older.kind, older.arch], "foreign": foreign}))
    ''')
    assert out["cubin"] == ["cubin", "sm_90"]
    assert out["again"] == ["cubin", "memory"]
    assert out["older"] == ["ptx", "sm_90"]
    assert out["foreign"] is None


def compile_command(*args):
    """``cudaload compile ARGS`` in a fresh interpreter."""
    cli = "import sys; from cudaload.cli import main; sys.exit(main(sys.argv[1:]))"
    return run_py(f"import sys; sys.argv[1:] = {['compile', *args]!r}\n{cli}", check=False)


def test_cli_compile_like_nvcc(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text('#include "v.cuh"\nextern "C" __global__ void k(float *x) { x[0] = V; }\n')
    (tmp_path / "v.cuh").write_text("#define V W\n")
    assert compile_command(str(src), "--arch", "sm_90", "-D", "W=2.0f").returncode == 0
    assert (tmp_path / "k.cubin").read_bytes()[:4] == b"\x7fELF"
    assert compile_command("--ptx", str(src), "-DW=1.0f", "-o", str(tmp_path / "out.ptx")).returncode == 0
    assert b".entry k" in (tmp_path / "out.ptx").read_bytes()
    failed = compile_command(str(src), "--arch", "sm_90")  # W undefined
    assert failed.returncode == 1 and 'identifier "W" is undefined' in failed.stderr
    assert compile_command().returncode == 2


def test_a_new_kernel_in_a_new_process_loads_the_remembered_nvrtc_without_searching(tmp_path):
    """After one compile, another process compiling another kernel needs no cuda.pathfinder."""
    env = {"CUDALOAD_CACHE_DIR": str(tmp_path)}
    code = """
import json, sys, cudaload
from cudaload.bindings import _loader
obj = cudaload.Program('extern "C" __global__ void k%d(int *p) { *p = %d; }').compile(arch=90)
lib = _loader.loaded("nvrtc")
print(json.dumps({"cached": obj.cached, "pathfinder": "cuda.pathfinder" in sys.modules,
                  "path": lib.path, "how": lib.found_via,
                  "report": cudaload.status().as_dict()["nvrtc"]["found_via"]}))
"""
    first = run_json(code % (1, 1), env=env, unset=("CUDALOAD_LIBNVRTC",))
    second = run_json(code % (2, 2), env=env, unset=("CUDALOAD_LIBNVRTC",))
    assert first["cached"] is None and second["cached"] is None  # both really compiled
    assert first["pathfinder"] is True and "pathfinder" in first["how"]
    assert second["pathfinder"] is False and second["how"].startswith("remembered")
    assert second["path"] == first["path"]
    assert second["report"] == first["report"] == first["how"]  # where it was first found
    # An override always wins over what is remembered.
    third = run_json(code % (3, 3), env={**env, "CUDALOAD_LIBNVRTC": first["path"]})
    assert third["how"] == "CUDALOAD_LIBNVRTC"


_SRC = 'extern "C" __global__ void k(float *x) { x[0] = 1; }'


@pytest.mark.parametrize("kw, words", [
    ({"source": None}, "source must be CUDA C\\+\\+ source as str"),
    ({"headers": {"a.h": None}}, "header a.h must be"),
    ({"headers": ["a.h"]}, "headers must map names"),
    ({"include_paths": "/tmp"}, "include_paths must be a sequence of folders"),
    ({"options": b"-G"}, "options must be a sequence of strings"),
    ({"options": ("-G", 3)}, "options must hold strings"),
    ({"name_expressions": [1]}, "name_expressions must hold strings"),
])
def test_arguments_of_the_wrong_type_are_refused(kw, words):
    from cudaload import Program

    kw = {"source": _SRC, **kw}
    with pytest.raises(TypeError, match=words):
        Program(kw.pop("source"), **kw)


def test_arch_spellings_compile_requests():
    out = run_json(r'''
        import json
        from cudaload import Program
        p = Program('extern "C" __global__ void k(float *x) { x[0] = 1; }')
        got = {}
        for arch in ([9, 0], "sm_900", "compute_80", "sm_80"):
            try:
                obj = p.compile(arch=arch)
                got[str(arch)] = [obj.kind, obj.arch]
            except Exception as exc:
                got[str(arch)] = [type(exc).__name__, str(exc)]
        print(json.dumps(got))
    ''')
    assert out["[9, 0]"][0] == "TypeError" and "(major, minor) tuple" in out["[9, 0]"][1]
    assert out["sm_900"][0] == "ValueError" and "Did you mean sm_90?" in out["sm_900"][1]
    assert out["compute_80"] == ["ptx", "sm_80"]  # a virtual arch asks for PTX, as with nvcc
    assert out["sm_80"] == ["cubin", "sm_80"]


def test_compile_command_input_errors_are_one_line(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text('extern "C" __global__ void k(float *x) { x[0] = 1; }\n')
    for out, words in ((tmp_path / "no" / "such" / "k.cubin", "No such file"),
                       (tmp_path, "Is a directory")):
        proc = compile_command(str(src), "--arch", "sm_80", "-o", str(out))
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert f"cannot write {out}: {words}" in proc.stderr and "Next step" in proc.stderr
    proc = compile_command(str(src), "--arch", "sm_900")
    assert proc.returncode == 1 and "Did you mean sm_90?" in proc.stderr
    proc = compile_command(str(src), "--arch", "compute_80", "-o", str(tmp_path / "v.out"))
    assert proc.returncode == 0 and (tmp_path / "v.out").read_bytes().lstrip().startswith(b"//")


def test_from_resource_follows_no_include_that_could_leave_the_package(tmp_path):
    pkg = tmp_path / "site" / "winpkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    # On Windows these names would climb out of the package or name a drive; here they are
    # plain file names, which lets the test see whether they are followed at all.
    (pkg / "ops.cu").write_text('#include "sub\\..\\..\\up.cuh"\n#include "C:evil.cuh"\n'
                                '#include "fine.cuh"\n')
    (pkg / "sub\\..\\..\\up.cuh").write_text("// outside\n")
    (pkg / "C:evil.cuh").write_text("// drive\n")
    (pkg / "fine.cuh").write_text("// inside\n")
    out = run_json(f"""
        import json, sys
        sys.path.insert(0, {str(pkg.parent)!r})
        from cudaload.compile import includes
        print(json.dumps(sorted(includes.from_package("winpkg", "ops.cu")[1])))
    """)
    assert out == ["fine.cuh"]


def test_compile_command_takes_options_before_or_after_the_file_as_nvcc_does(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text('extern "C" __global__ void k(float *x) { x[0] = W; }\n')
    proc = compile_command("-D", "W=2.0f", "-arch", "sm_80", "--ptx", "-o", str(tmp_path / "a.ptx"), str(src))
    assert proc.returncode == 0, proc.stderr
    assert b".target sm_80" in (tmp_path / "a.ptx").read_bytes()
    proc = compile_command(str(src), "-DW=1.0f", "-c")  # "-c" is no abbreviation of -cubin: NVRTC's to judge
    assert proc.returncode == 1 and "-c" in proc.stderr and "Next step" in proc.stderr
    proc = compile_command(str(src), str(src))
    assert proc.returncode == 2 and "give one FILE.cu, not 2" in proc.stderr
    proc = compile_command("--ptx", "--cubin", str(src))
    assert proc.returncode == 2 and "not both" in proc.stderr


def test_includes_naming_a_device_or_a_nul_neither_hang_nor_raise_while_keying(tmp_path):
    out = run_json(r'''
        import json
        from cudaload import Program
        got = []
        for name in ("/dev/zero", "/dev/stdin", "bad\0name.h"):
            try:
                Program('#include "%s"\nextern "C" __global__ void k() {}\n' % name)
                got.append("keyed")
            except Exception as exc:
                got.append(type(exc).__name__)
        print(json.dumps(got))
    ''', timeout=60)
    assert out == ["keyed"] * 3  # what NVRTC makes of them is its to say, at compile time


def test_ptx_without_a_device_is_for_the_oldest_arch_and_cubin_for_the_newest():
    # PTX is compiled forward by the driver for every newer GPU, so with no device to ask, the
    # portable PTX is the oldest arch's; a CUBIN runs only on its own major, so it is the newest.
    out = run_json("""
        import json
        from cudaload import Program
        from cudaload.bindings import nvrtc
        p = Program('extern "C" __global__ void k(int *x) { *x = 1; }')
        archs = sorted(nvrtc.supported_archs())
        print(json.dumps({"ptx": p.compile(output="ptx").arch, "auto": p.compile().arch,
                          "oldest": f"sm_{archs[0]}", "newest": f"sm_{archs[-1]}"}))
    """, env={"CUDALOAD_LIBCUDA": "/nonexistent/libcuda.so.1"})
    assert out["ptx"] == out["oldest"] and out["auto"] == out["newest"], out
