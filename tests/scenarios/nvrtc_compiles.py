"""Compilations by the NVRTC wheel in a fresh process, for the NVRTC tests.

    python -m tests.scenarios.nvrtc_compiles SCENARIO

Each prints what it found as JSON on its last line.  cudaload is imported inside each scenario,
so importing this module loads nothing.
"""

from __future__ import annotations

import base64
import json
import sys

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


def ptx_and_cubin() -> None:
    """KERNEL compiled to PTX and to CUBIN: the PTX, the kinds, the CUBIN's start and size, the
    log."""
    from cudaload.bindings import nvrtc

    ptx = nvrtc.compile(KERNEL, "saxpy.cu", options=("-arch=compute_75",), kind="ptx")
    cubin = nvrtc.compile(KERNEL, "saxpy.cu", options=("-arch=sm_90",), kind="cubin")
    print(json.dumps({"ptx": ptx.code.decode(), "ptx_kind": ptx.kind, "cubin_kind": cubin.kind,
                      "cubin": base64.b64encode(cubin.code[:64]).decode(),
                      "cubin_size": len(cubin.code),
                      "log": cubin.log}))


def headers_and_names() -> None:
    """The lowered names of a template given an in-memory header."""
    from cudaload.bindings import nvrtc

    src = ('#include "scale.h"\n'
           'template <typename T> __global__ void scale(T *x) { x[0] *= FACTOR; }\n')
    out = nvrtc.compile(src, "t.cu", options=("-arch=sm_90",),
                        headers={"scale.h": "#define FACTOR 3\n"},
                        name_expressions=("scale<float>", "scale<double>"), kind="ptx")
    print(json.dumps(out.lowered_names))


def compile_error() -> None:
    """The fields of the CompileError of BROKEN, and whether it survives pickling."""
    import pickle

    from cudaload.bindings import nvrtc
    from cudaload.errors import CompileError

    try:
        nvrtc.compile(BROKEN, "broken.cu", options=("-arch=sm_90",),
                      headers={"helper.h": "// empty"}, kind="cubin")
    except CompileError as err:
        back = pickle.loads(pickle.dumps(err))
        print(json.dumps({"message": str(err), "log": err.log, "name": err.name,
                          "options": list(err.options), "source": err.source, "code": err.code,
                          "pickled": str(back) == str(err) and back.log == err.log}))


def invalid_option() -> None:
    """[code, log] of the CompileError an unknown option gives (null if none)."""
    from cudaload.bindings import nvrtc
    from cudaload.errors import CompileError

    try:
        nvrtc.compile(KERNEL, "k.cu", options=("--no-such-option",), kind="ptx")
        print(json.dumps(None))
    except CompileError as err:
        print(json.dumps([err.code, err.log]))


def _compile_error_message(source: str, headers=None) -> None:
    from cudaload import CompileError, Program

    try:
        Program(source, headers=headers).compile(arch=90)
    except CompileError as err:
        print(json.dumps(str(err)))


def excerpt_lines() -> None:
    """The message of an error in a program with a form feed and a line separator, and one in
    its header."""
    _compile_error_message(
        '#include "util.h"\n// a form feed \f here, and \u2028 here\n__device__ int x = nope;\n',
        headers={"util.h": "__device__ int a = bad1;\n"})


def missing_header() -> None:
    """The message of the error an unknown system header gives."""
    _compile_error_message('#include <no_such_cuda_header.h>\n')


def real_code() -> None:
    """A CUBIN for sm_80 and PTX for compute_90 of a small kernel, in base64."""
    from cudaload.bindings import nvrtc

    src = 'extern "C" __global__ void k(int *x) { x[0] = 1; }'
    cubin = nvrtc.compile(src, "k.cu", ["--gpu-architecture=sm_80"]).code
    ptx = nvrtc.compile(src, "k.cu", ["--gpu-architecture=compute_90"], kind="ptx").code
    print(json.dumps([base64.b64encode(cubin).decode(), base64.b64encode(ptx).decode()]))


SCENARIOS = {f.__name__: f for f in (real_code, ptx_and_cubin, headers_and_names, compile_error,
                                     invalid_option, excerpt_lines, missing_header)}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
