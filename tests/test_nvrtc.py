"""NVRTC from the nvidia-cuda-nvrtc wheel: version, architectures, compilations, compile errors."""

from __future__ import annotations

import base64

from tests.conftest import run_json

KERNEL = r"""
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""

BROKEN = "\n".join([
    '#include "helper.h"',
    'extern "C" __global__ void k(float *x)',
    "{",
    "    x[0] = undefined_name;",
    "}",
])


def _nvrtc(code: str, **kw):
    return run_json("import json, base64\nfrom cudaload.bindings import nvrtc\n" + code,
                    unset=("CUDALOAD_LIBNVRTC",), **kw)


def test_version_and_supported_archs():
    result = _nvrtc("print(json.dumps([nvrtc.version(), nvrtc.supported_archs()]))")
    (major, minor), archs = result
    assert major >= 12 and minor >= 0
    assert archs == sorted(archs) and all(isinstance(a, int) for a in archs)
    assert 90 in archs and min(archs) >= 50


def test_compile_a_real_kernel_to_ptx_and_cubin():
    result = _nvrtc(f"""
src = {KERNEL!r}
ptx = nvrtc.compile(src, "saxpy.cu", options=("-arch=compute_75",), kind="ptx")
cubin = nvrtc.compile(src, "saxpy.cu", options=("-arch=sm_90",), kind="cubin")
print(json.dumps({{"ptx": ptx.code.decode(), "ptx_kind": ptx.kind, "cubin_kind": cubin.kind,
                  "cubin": base64.b64encode(cubin.code[:64]).decode(),
                  "cubin_size": len(cubin.code),
                  "log": cubin.log}}))
""")
    assert ".entry saxpy(" in result["ptx"] and ".target sm_75" in result["ptx"]
    assert not result["ptx"].endswith("\0")
    assert result["ptx_kind"] == "ptx" and result["cubin_kind"] == "cubin"
    assert base64.b64decode(result["cubin"]).startswith(b"\x7fELF")
    assert result["cubin_size"] > 1000
    assert result["log"] == ""


def test_headers_and_name_expressions():
    result = _nvrtc(r"""
src = '#include "scale.h"\ntemplate <typename T> __global__ void scale(T *x) { x[0] *= FACTOR; }\n'
out = nvrtc.compile(src, "t.cu", options=("-arch=sm_90",),
                    headers={"scale.h": "#define FACTOR 3\n"},
                    name_expressions=("scale<float>", "scale<double>"), kind="ptx")
print(json.dumps(out.lowered_names))
""")
    assert result == {"scale<float>": "_Z5scaleIfEvPT_", "scale<double>": "_Z5scaleIdEvPT_"}


def test_compile_error_carries_log_and_numbered_source_lines():
    result = _nvrtc(f"""
import pickle
from cudaload.errors import CompileError
try:
    nvrtc.compile({BROKEN!r}, "broken.cu", options=("-arch=sm_90",),
                  headers={{"helper.h": "// empty"}}, kind="cubin")
except CompileError as err:
    back = pickle.loads(pickle.dumps(err))
    print(json.dumps({{"message": str(err), "log": err.log, "name": err.name,
                      "options": list(err.options), "source": err.source, "code": err.code,
                      "pickled": str(back) == str(err) and back.log == err.log}}))
""")
    assert result["name"] == "broken.cu" and result["options"] == ["-arch=sm_90"]
    assert result["code"] == 6 and result["pickled"]
    assert "undefined_name" in result["log"] and "broken.cu(4)" in result["log"]
    message = result["message"]
    assert "> 4 |     x[0] = undefined_name;" in message
    assert "  3 | {" in message
    assert "options: -arch=sm_90" in message


def test_an_invalid_option_is_a_compile_error():
    result = _nvrtc(f"""
from cudaload.errors import CompileError
try:
    nvrtc.compile({KERNEL!r}, "k.cu", options=("--no-such-option",), kind="ptx")
    print(json.dumps(None))
except CompileError as err:
    print(json.dumps([err.code, err.log]))
""")
    assert result is not None and result[0] == 5
    assert "no-such-option" in result[1]


def test_error_excerpt_shows_only_lines_of_the_program_counted_as_nvrtc_counts():
    out = run_json(r'''
        import json
        from cudaload import Program, CompileError
        src = '#include "util.h"\n// a form feed \f here, and \u2028 here\n__device__ int x = nope;\n'
        try:
            Program(src, headers={"util.h": "__device__ int a = bad1;\n"}).compile(arch=90)
        except CompileError as err:
            print(json.dumps(str(err)))
    ''')
    marked = [line for line in out.splitlines() if line.startswith(">")]
    assert marked == ["> 3 | __device__ int x = nope;"], out  # not line 1, where util.h's error is
    assert 'util.h(1): error: identifier "bad1" is undefined' in out


def test_a_missing_cuda_header_says_where_cuda_headers_come_from():
    out = run_json(r'''
        import json
        from cudaload import Program, CompileError
        try:
            Program('#include <no_such_cuda_header.h>\n').compile(arch=90)
        except CompileError as err:
            print(json.dumps(str(err)))
    ''')
    assert "include_paths" in out and "nvidia-cuda-runtime" in out and "cudaload doctor" in out


def test_error_names_the_code_with_or_without_nvrtc():
    code = """
        import json
        from cudaload.bindings import nvrtc
        err = nvrtc.error(3, "nvrtcCreateProgram")
        print(json.dumps([err.name, err.code, err.function]))
    """
    expected = ["NVRTC_ERROR_INVALID_INPUT", 3, "nvrtcCreateProgram"]
    assert run_json(code, unset=("CUDALOAD_LIBNVRTC",)) == expected
    assert run_json(code, env={"CUDALOAD_LIBNVRTC": "/nonexistent/libnvrtc.so"}) == expected
