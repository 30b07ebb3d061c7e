"""Hostile input to the parsers and option building: each case is read in linear time, within
bounds, or refused with a typed error that names the argument; never a hang or a wrong type."""

from __future__ import annotations

import struct

import cffi
import pytest

from cudaload._base import _demangle
from cudaload.launch import arguments, signature

from cudaload.compile import options
from cudaload.errors import LaunchArgumentError
from tests._fakelibs import build_shared_library, recording_driver  # noqa: F401  (fixture)
from tests._support import run_json, scenario_json

LONG = "f" * 200  # a function-pointer parameter's name: 26 characters once took 5 s, 40 forever


# --- signatures and sources ------------------------------------------------------------------------

@pytest.mark.timeout(10)
def test_a_long_function_pointer_name_is_read_as_a_pointer_promptly():
    types, names = signature.signature_types(f"float* x, float (*{LONG})(float), int n")
    assert types == ["float*", "float (*)(float)", "int"] and names == ["x", LONG, "n"]
    assert [signature.classify(t) for t in types] == [("ptr", "Q"), ("ptr", "Q"), ("int", "i")]


@pytest.mark.timeout(10)
@pytest.mark.parametrize("decl, ctype, name", [
    (f"void (* const {LONG})(int, float*)", "void (*)(int, float*)", LONG),
    ("int (&rows)[4]", "int (&)[4]", "rows"),
    ("float (*tile)[16]", "float (*)[16]", "tile"),
    ("void (*(*pick)(int))(float)", "void (*(*)(int))(float)", "pick"),
    ("void (*)(int)", "void (*)(int)", None),
])
def test_declarators_in_parentheses_are_pointers_with_their_names(decl, ctype, name):
    assert signature.signature_types(decl) == ([ctype], [name])
    assert signature.classify(ctype) == ("ptr", "Q")


def test_a_function_pointer_in_a_template_argument_is_not_a_pointer():
    assert signature.classify("W<void (*)(int)>") == (None, None)


def test_only_the_parentheses_around_a_whole_signature_are_removed():
    assert signature.signature_types("(float (*f)(float), int n)") == (
        ["float (*)(float)", "int"], ["f", "n"])


def test_a_signature_that_is_not_text_is_a_launch_argument_error():
    with pytest.raises(LaunchArgumentError, match="signature must be a str"):
        signature.signature_types(["float*"])


@pytest.mark.timeout(20)
@pytest.mark.parametrize("source, close", [
    ("__global__ " * 50_000, ";"),  # each __global__ once scanned to the end: quadratic
    ("/* " * 50_000, "*/"),  # as did each unterminated comment
], ids=["many __global__", "unterminated comments"])
def test_sources_that_were_quadratic_are_read_promptly(source, close):
    assert signature.source_types(source, "k") is None
    kernel = '\nextern "C" __global__ void k(int *p) {}'
    assert signature.source_types(source + close + kernel, "k") == (["int*"], ["p"])


# --- mangled names ---------------------------------------------------------------------------------

def _base36(n: int) -> str:
    digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    out = ""
    while True:
        out, n = digits[n % 36] + out, n // 36
        if not n:
            return out


def _tripling(steps: int) -> str:
    """f(A<int, int>, X1, X2, ...): each Xi is the type before it with itself twice as template
    arguments, so the text triples at each step of about eleven characters."""
    return "_Z1f1AIiiE" + "".join("S{0}_IS{0}_S{0}_E".format(_base36(i)) for i in range(steps))


@pytest.mark.timeout(20)
def test_a_name_that_stands_for_millions_of_characters_is_not_read():
    bomb = _tripling(13)
    assert len(bomb) < 160
    assert signature.mangled_types(bomb) is None  # 20 million characters: past the bound


def test_a_name_within_the_bound_is_read_whole():
    types = signature.mangled_types(_tripling(8))
    assert types[0] == "A<int, int>" and types[1] == "A<int, int><A<int, int>, A<int, int>>"
    lengths = [len(t) for t in types]
    assert all(b == 3 * a + 4 for a, b in zip(lengths, lengths[1:]))  # "<", ", ", ">": 4 more
    assert sum(lengths) < _demangle.MAX_CHARS


@pytest.mark.timeout(20)
def test_a_long_nested_name_is_not_quadratic():
    assert signature.mangled_types("_ZN" + "1a" * 100_000 + "E") is None


def test_a_kernel_whose_name_is_past_the_bound_takes_its_types_from_the_source(monkeypatch):
    from cudaload.launch import kernel

    bomb = _tripling(13) + "Pf"

    class Module:  # what _KernelState asks of a module: the symbol and the code
        code = None

        def symbol(self, name):
            return bomb

    source = "__global__ void f(float* x) {}"
    monkeypatch.setattr(kernel, "_driver_layout", lambda func: [(0, 8)] * 15)
    core = kernel._KernelState(Module(), "f", source=source)
    params = core._params_for(None, None)  # the source has one parameter, the layout fifteen
    assert [(p.kind, p.ctype) for p in params] == [("raw", None)] * 15
    monkeypatch.setattr(kernel, "_driver_layout", lambda func: [(0, 8)])
    params = kernel._KernelState(Module(), "f", source=source)._params_for(None, None)
    assert [(p.kind, p.ctype, p.name) for p in params] == [("ptr", "float*", "x")]


def test_function_and_array_types_read_from_nvrtc_names():
    expressions = {
        "fp<float>": ["float*", "float (*)(float)", "int"],
        "fq<double>": ["void (*)(double*, const double*)", "void (*)(double*, const double*)",
                       "double (*)()"],
        "apply": ["float*", "float (*)(float)", "int"],
        "fr<int>": ["int (&)[4]", "int (&)[4]", "int**"],
    }
    source = """
    template <class T> __global__ void fp(T* x, T (*f)(T), int n) {}
    template <class T> __global__ void fq(void (*g)(T*, const T*), void (*h)(T*, const T*),
                                          double (*u)()) {}
    __global__ void apply(float* x, float (*f)(float), int n) {}
    template <class T> __global__ void fr(int (&a)[4], int (&b)[4], T** p) {}
    """
    lowered = run_json(f"""
        import json
        from cudaload.bindings import nvrtc
        out = nvrtc.compile({source!r}, "f.cu", ["--gpu-architecture=compute_80"],
                            name_expressions={list(expressions)!r}, kind="ptx")
        print(json.dumps(out.lowered_names))
    """)
    for expression, declared in expressions.items():
        assert signature.mangled_types(lowered[expression]) == declared, lowered[expression]


# --- the launch that hung --------------------------------------------------------------------------

@pytest.mark.timeout(120)
def test_a_kernel_with_a_long_function_pointer_parameter_launches(recording_driver):  # noqa: F811
    out = scenario_json("recorded_launches", "long_function_pointer",
                        env={"CUDALOAD_LIBCUDA": recording_driver}, timeout=100)
    packed = struct.pack("<QQi", 0x1000, 0x2000, 7)
    types, data, symbol = out["apply"]  # extern "C": the types come from the source
    assert types == ["float*", "float (*)(float)", "int"] and symbol == "apply"
    assert bytes.fromhex(data) == packed
    types, data, symbol = out["tapply<float>"]  # the types come from the mangled name
    assert types == ["float*", "float (*)(float)", "int"] and symbol.startswith("_Z6tapply")
    assert bytes.fromhex(data) == packed
    assert "NUL" in out["nul"] and "'apply'" in out["nul"]


# --- names given to the driver ---------------------------------------------------------------------

def _module():
    from cudaload.launch.module import Module

    return Module.__new__(Module)  # get_kernel and get_global check the name before the driver


@pytest.mark.parametrize("call", [
    lambda: _module().get_kernel("k\0evil"),
    lambda: _module().get_global("table\0x"),
    lambda: __import__("cudaload").RawKernel("__global__ void k() {}", "k\0evil"),
    lambda: __import__("cudaload").Program("__global__ void k() {}",
                                           name_expressions=("k<int>\0x",)),
], ids=["get_kernel", "get_global", "RawKernel", "name_expressions"])
def test_a_nul_in_a_name_is_refused(call):
    with pytest.raises(ValueError, match="NUL"):
        call()


def test_a_kernel_name_that_is_not_text_is_a_type_error():
    with pytest.raises(TypeError, match="kernel name must be a str"):
        _module().get_kernel(b"k")


# --- options ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("kw, words", [
    ({"include_paths": [""]}, ["include_paths[0]", "'.'"]),
    ({"include_paths": ["inc", "a\0b"]}, ["include_paths[1]", "NUL"]),
    ({"defines": {"": None}}, ["defines", "not a macro name"]),
    ({"defines": {"A B": 1}}, ["defines", "'A B'"]),
    ({"defines": {"1X": 1}}, ["defines", "'1X'"]),
    ({"defines": {"X=": 2}}, ["defines", "'X='"]),
    ({"defines": {"F(x": 2}}, ["defines", "'F(x'"]),
    ({"defines": {"N": "4\n#include <x>"}}, ["defines['N']", "line break"]),
    ({"defines": {"N": "4\0"}}, ["defines['N']", "NUL"]),
    ({"options": ["-DN=4", "  "]}, ["options[1]", "empty option"]),
    ({"options": ["-DN=4", "-D"]}, ["options[1]", "has no value"]),
], ids=lambda v: repr(v) if isinstance(v, dict) else None)
def test_options_that_would_swallow_or_cut_the_next_are_value_errors(kw, words):
    from cudaload import Program

    with pytest.raises(ValueError) as err:
        Program('extern "C" __global__ void k() {}', **kw)
    for word in words:
        assert word in str(err.value), str(err.value)


def test_defines_that_are_macros_become_their_options():
    built = options.build((), std=None, defines={"N": 4, "SQ(x)": "((x)*(x))", "LOG(f, ...)": "",
                                                 "ON": None}, include_paths=(".", "inc"))
    assert built == ("-DN=4", "-DSQ(x)=((x)*(x))", "-DLOG(f, ...)=", "-DON", "-I.", "-Iinc")


def test_defines_of_the_wrong_type_are_type_errors():
    with pytest.raises(TypeError, match="defines must map"):
        options.build((), defines=["N=4"])
    with pytest.raises(TypeError, match="macro name must be a str"):
        options.build((), defines={4: None})


# --- __cuda_array_interface__ ----------------------------------------------------------------------

class _Interface:
    def __init__(self, cai):
        self.cai = cai

    @property
    def __cuda_array_interface__(self):
        return self.cai


@pytest.mark.parametrize("cai, why", [
    ({}, "lacks 'data', 'shape', 'typestr'"),
    ({"data": (0x1000, False)}, "lacks 'shape', 'typestr'"),
    ([0x1000], "is a list, not a dict"),
    ({"data": None, "shape": (4,), "typestr": "<f4"}, "['data'] is None"),
    ({"data": (), "shape": (4,), "typestr": "<f4"}, "['data'] is ()"),
    ({"data": ("0x1000", False), "shape": (4,), "typestr": "<f4"}, "['data'] is ('0x1000'"),
    ({"data": (0x1000, False), "shape": 4, "typestr": "<f4"}, "['shape'] is 4"),
    ({"data": (0x1000, False), "shape": (4,), "typestr": 4}, "['typestr'] is 4"),
])
def test_a_malformed_array_interface_is_a_launch_argument_error(cai, why):
    packer = arguments.Packer(cffi.FFI(), "k", signature.build_params(["int", "float*"], None,
                                                                       ["n", "x"]), 0)
    args = (3, _Interface(cai))
    with pytest.raises(LaunchArgumentError) as err:
        plan = packer.plan(tuple(map(type, args)))
        try:  # what a launch does with a plan
            plan(args)
        except arguments.PACK_ERRORS as exc:
            raise packer.fail(args, exc) from None
    message = str(err.value)
    assert message.startswith("argument 1 (float* x) of k") and why in message, message


# --- an NVRTC older than CUDA 11.2 -----------------------------------------------------------------

_OLD_NVRTC = r"""
int nvrtcVersion(int *major, int *minor) { *major = 11; *minor = 1; return 0; }
int nvrtcCreateProgram(void **p, const char *s, const char *n, int k, const char **h,
                       const char **hn) { return 3; }
int nvrtcCompileProgram(void *p, int n, const char **o) { return 3; }
const char *nvrtcGetErrorString(int rc) { return "NVRTC_ERROR_INVALID_INPUT"; }
"""


def test_an_nvrtc_without_the_architecture_query_says_to_upgrade(tmp_path):
    lib = build_shared_library(str(tmp_path), "libnvrtc.so", _OLD_NVRTC)
    out = scenario_json("library_loads", "old_nvrtc_calls",
                        env={"CUDALOAD_LIBNVRTC": lib, "CUDALOAD_CACHE": "0"})
    for kind, message, symbol in out.values():
        assert kind == "MissingSymbolError" and symbol == "nvrtcGetNumSupportedArchs"
        assert "CUDA 11.2" in message and "Next step: pip install -U 'nvidia-cuda-nvrtc" in message
