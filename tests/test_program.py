"""Program: real kernels compiled by the NVRTC wheel (no GPU needed), each scenario in a subprocess."""

from __future__ import annotations

import base64
import functools
import pickle
import re

import pytest

from tests._fakelibs import pretend_driver
from tests._support import run_py, run_scenario, scenario_json


pytestmark = pytest.mark.usefixtures("cache_dir")  # each test compiles into a folder of its own


def test_cuda_headers_compile_without_include_paths():
    out = scenario_json("program_compiles", "cuda_headers")
    assert out == {"kind": "cubin", "arch": "sm_90", "elf": True}


def test_name_expressions_and_warnings_log():
    out = scenario_json("program_compiles", "names_and_log")
    assert out["names"] == {"scale<float>": "_Z5scaleIfEvPT_S0_",
                            "scale<double>": "_Z5scaleIdEvPT_S0_"}
    assert "unused" in out["log"] and "warning" in out["log"]


def test_compile_error_carries_log_options_and_numbered_lines():
    proc = run_scenario("program_compiles", "compile_error")
    err = pickle.loads(base64.b64decode(proc.stdout.strip()))
    message = str(err)
    assert 'identifier "nope" is undefined' in err.log
    assert "> 4 |   x[0] = nope;" in message and "  3 | extern" in message
    assert "-DN=4" in err.options and "--gpu-architecture=sm_90" in err.options
    assert err.name == "bad.cu" and "nope" in err.source


def arch_choices(tmp_path, driver_version: int) -> dict:
    """The arch_choice scenario on a machine with no GPU and a driver of ``driver_version``."""
    driver = pretend_driver(tmp_path, driver_version)
    return scenario_json("program_compiles", "arch_choice", env={"CUDALOAD_LIBCUDA": driver})


def test_arch_choice(tmp_path):
    out = arch_choices(tmp_path, 99000)  # a driver that loads this NVRTC's PTX
    top = out["max"]
    assert out["none"][0] == "error", out["none"]  # no device here: nothing to compile for
    assert out["sm_90"] == ["cubin", "sm_90"] and out["tuple"] == ["cubin", "sm_86"]
    assert out["ptx"] == ["ptx", "sm_90"]
    assert out["newer"] == ["ptx", f"sm_{top}"]
    assert out["between"] == ["cubin", "sm_90"]
    assert out["older"][0] == "error" and "older than anything NVRTC" in out["older"][1]


def test_arch_choice_with_a_driver_older_than_nvrtc(tmp_path):
    out = arch_choices(tmp_path, 12020)  # its PTX cannot load there
    top = out["max"]
    assert out["newer"][0] == "error" and "upgrade the NVIDIA driver" in out["newer"][1]
    assert out["same_major"] == ["cubin", f"sm_{top}"]
    assert out["sm_90"] == ["cubin", "sm_90"]


def test_memory_hit_is_the_same_object():
    out = scenario_json("program_compiles", "memory_hit")
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
    run = lambda: scenario_json("program_compiles", "package_includes", pkg.parent)
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


def test_recompile_after_refusal_gives_loadable_code(tmp_path):
    out = scenario_json("program_compiles", "recompile_after_refusal",
                        env={"CUDALOAD_LIBCUDA": pretend_driver(tmp_path, 99000)})
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
    unset = ("CUDALOAD_LIBNVRTC",)
    first = scenario_json("program_compiles", "new_kernel", 1, env=env, unset=unset)
    second = scenario_json("program_compiles", "new_kernel", 2, env=env, unset=unset)
    assert first["cached"] is None and second["cached"] is None  # both really compiled
    # The first finds NVRTC in the wheel where cuda.pathfinder looks first, without importing it
    # (bindings/_sites.py); where no wheel holds it, it asks cuda.pathfinder.
    assert "pathfinder" in first["how"]
    assert first["pathfinder"] is first["how"].startswith("cuda.pathfinder")
    assert second["pathfinder"] is False and second["how"].startswith("remembered")
    # Telling this NVRTC build from others (toolchain.fingerprint) hashes a few KiB with the
    # interpreter's sha256: importing hashlib loads OpenSSL, milliseconds of a first compile.
    assert first["hashlib"] is False and second["hashlib"] is False
    assert second["path"] == first["path"]
    assert second["report"] == first["report"] == first["how"]  # where it was first found
    # An override always wins over what is remembered.
    third = scenario_json("program_compiles", "new_kernel", 3,
                          env={**env, "CUDALOAD_LIBNVRTC": first["path"]})
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
    out = scenario_json("program_compiles", "arch_spellings")
    assert out["[9, 0]"][0] == "TypeError" and "(major, minor) tuple" in out["[9, 0]"][1]
    assert out["sm_900"][0] == "ValueError" and "Did you mean sm_90?" in out["sm_900"][1]
    assert out["compute_80"] == ["ptx", "sm_80"]  # a virtual arch asks for PTX, as with nvcc
    assert out["sm_80"] == ["cubin", "sm_80"]


@pytest.mark.parametrize("arch", [9.0, True, b"sm_90", (9,), (9, 0, 0), ("9", "0")])
def test_an_arch_of_the_wrong_type_is_a_type_error_naming_the_types_taken(arch):
    # Read as text, 9.0 was refused as a bad value and b"sm_90" as "b'sm_90'": the rule is a
    # TypeError, for Program.compile and plan alike (refused before any library is loaded).
    from cudaload.compile import options
    from cudaload.compile.program import Program

    with pytest.raises(TypeError, match=r"an int such as 90, a str such as 'sm_90' or a \(major"):
        options.parse_arch(arch)
    with pytest.raises(TypeError, match=type(arch).__name__):
        Program('extern "C" __global__ void k() {}').plan(arch, "auto")


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
    out = scenario_json("program_compiles", "package_headers", pkg.parent)
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
    out = scenario_json("program_compiles", "device_includes", timeout=60)
    assert out == ["keyed"] * 3  # what NVRTC makes of them is its to say, at compile time


def test_no_arch_without_a_device_compiles_nothing_and_says_why():
    # Code for no device would be thrown away: compile(arch=None) raises the reason there is no
    # device, a CudaUnavailableError, before NVRTC is loaded (plan() too).
    out = scenario_json("program_compiles", "default_archs",
                        env={"CUDALOAD_LIBCUDA": "/nonexistent/libcuda.so.1"})
    assert out == {"ptx": "DriverNotFoundError", "auto": "DriverNotFoundError",
                   "plan": "DriverNotFoundError", "nvrtc_loaded": False}, out


# A wrong argument of each compile entry point and what it raises on every machine, before any
# device or library is asked (tests/scenarios/program_compiles.py's arch_rule makes each).
WRONG = {
    "output='invalid_target'": ("ValueError", "output must be one of auto, cubin, ptx, ltoir"),
    "output=['cubin']": ("ValueError", "output must be one of"),
    "arch=90, output=['cubin']": ("ValueError", "output must be one of"),  # not "arch must be"
    "arch=9.0": ("TypeError", "arch must be an int"),
    "arch=[90]": ("TypeError", "arch must be an int"),
    "arch='sm_9x'": ("ValueError", "is not a compute capability"),
    "arch=(8, 10)": ("ValueError", "is not a compute capability"),
    "PTX program, output='ptx'": ("ValueError", "a PTX program compiles to CUBIN, not 'ptx'"),
    "PTX program, output='ltoir'": ("ValueError", "a PTX program compiles to CUBIN, not 'ltoir'"),
    "PTX program, arch=90, output='ptx'": ("ValueError", "compiles to CUBIN, not 'ptx'"),
    "plan(output='invalid_target')": ("ValueError", "output must be one of"),
    "compile_all output='invalid_target'": ("ValueError", "output must be one of"),
    "compile_all PTX program, output='ptx'": ("ValueError", "compiles to CUBIN, not 'ptx'"),
    "compile_all arch=9.0": ("TypeError", "arch must be an int"),
    "Linker arch='sm_9x'": ("ValueError", "is not a compute capability"),
    "Linker.link('invalid_target')": ("ValueError", "output must be one of"),
}
NO_DEVICE = ["no driver", "libcuda 535, no device"]


@functools.lru_cache(maxsize=None)
def arch_rule(driver: str = "") -> dict:
    """The arch_rule scenario with ``driver`` as libcuda (""; the machine's own), run once."""
    env = {"CUDALOAD_LIBCUDA": driver} if driver else {}
    return scenario_json("program_compiles", "arch_rule", env=env, timeout=300)


def _no_device(where: str, request) -> dict:
    driver = "/nonexistent/libcuda.so.1" if where == "no driver" else \
        request.getfixturevalue("libcuda_535")
    return arch_rule(driver)


@pytest.mark.parametrize("where", NO_DEVICE)
def test_without_a_device_only_machine_code_for_this_gpu_raises_why(where, request):
    # LTO IR and a PTX program's CUBIN name no GPU's machine code: NVRTC's newest arch and the
    # PTX's own .target serve; CUBIN, PTX or "auto" for "this GPU" raise the reason there is none.
    out = _no_device(where, request)
    made, newest = out["made"], out["newest"]
    for name in ("ltoir", "plan ltoir"):
        assert made[name] == [["ltoir", newest]], (name, made[name])
    assert made["compile_all ltoir"] == [["ltoir", newest]] * 2
    for name in ("PTX program", "PTX program, output='cubin'", "compile_all PTX program"):
        assert made[name] == [["cubin", "sm_80"]], (name, made[name])  # linked by nvJitLink
    unavailable = "DriverNotFoundError" if where == "no driver" else "DriverUnavailableError"
    for name in ("auto", "cubin", "ptx", "compile_all auto"):  # compile_all: the C++ program's
        assert made[name][:2] == [unavailable, True], (name, made[name])


@pytest.mark.parametrize("case", sorted(WRONG))
@pytest.mark.parametrize("where", NO_DEVICE)
def test_a_wrong_argument_is_the_same_error_without_a_device(where, case, request):
    # The same TypeError/ValueError as with a GPU (tests/gpu/test_default_arch_gpu.py), never
    # the reason there is no device.
    got = _no_device(where, request)["wrong"][case]
    error, words = WRONG[case]
    assert got[:2] == [error, False] and words in got[2], got


@pytest.mark.parametrize("where", NO_DEVICE)
def test_wrong_arguments_are_refused_before_any_library_is_loaded(where, request):
    assert _no_device(where, request)["loaded"] == []  # libcuda, NVRTC, nvJitLink


@pytest.mark.parametrize("kw, error, words", [
    # NVRTC takes these silently: -1 as no limit, 0 as the fewest registers ptxas allows.
    ({"max_registers": -1}, ValueError, "max_registers=-1 is no register count"),
    ({"max_registers": 0}, ValueError, "max_registers=0 is no register count"),
    ({"max_registers": True}, TypeError, "max_registers must be a number of registers"),
    ({"max_registers": 32.5}, TypeError, "max_registers must be an int such as 64, not float"),
    ({"max_registers": "32"}, TypeError, "max_registers must be an int such as 64, not str"),
    # str(object()) holds its address: a macro, and a cache key, different in every process.
    ({"defines": {"X": object()}}, TypeError, r"defines\['X'\]: the value must be a str, a number"),
    ({"headers": {1: "int x;"}}, TypeError, "a header's name must be a str, not int"),
    ({"name": 5}, TypeError, "name must be a str, not int"),
    ({"name": "k\0.cu"}, ValueError, "NUL character"),
])
def test_arguments_nvrtc_would_take_for_something_else_are_refused(kw, error, words):
    from cudaload import Program

    with pytest.raises(error, match=words) as info:
        Program(_SRC, **kw)
    assert re.search(r"(e\.g\. .+|None for NVRTC's choice|remove it)$", str(info.value)), info.value


def test_a_refused_value_equal_to_an_accepted_one_is_refused_after_it():
    from cudaload import Program

    # True == 1 and hash(True) == hash(1): the remembered arguments must not let one stand for
    # the other.
    assert "--maxrregcount=1" in Program(_SRC, max_registers=1).options
    with pytest.raises(TypeError, match="max_registers"):
        Program(_SRC, max_registers=True)


def test_define_values_that_read_the_same_everywhere_are_taken():
    from fractions import Fraction

    from cudaload import Program

    options = Program(_SRC, defines={"N": 4, "F": 0.5, "S": "x", "B": True, "Q": Fraction(1, 2),
                                     "D": None}).options
    assert options[1:] == ("-DN=4", "-DF=0.5", "-DS=x", "-DB=True", "-DQ=1/2", "-DD")
