"""Check headers/cuda.h, nvrtc.h, nvJitLink.h and nvvm.h against the official NVIDIA headers.

The cdef headers in ``headers/`` are hand-curated transcriptions.  These tests
compile small C programs against the real ``cuda.h`` / ``nvrtc.h`` found on the
machine and compare, with cffi's view of our headers:

* the value of every enum constant we declare,
* sizeof/alignof of every typedef we declare, and sizeof/offsetof of every
  (nested) member of every struct/union we declare (CUlaunchConfig,
  CUlaunchAttribute, CUlaunchAttributeValue, ...),
* every function prototype we declare (assigned to a pointer of our declared
  type, compiled with -Werror=incompatible-pointer-types).

The checks against real headers are skipped, with a reason, when no official
header or no C compiler is available.
"""

import glob
import importlib.util
import os
import pathlib
import re
import shutil
import subprocess

import pytest

cffi = pytest.importorskip("cffi")

ROOT = pathlib.Path(__file__).resolve().parents[1]
HEADERS = ROOT / "headers"
CUDA_H = HEADERS / "cuda.h"
NVRTC_H = HEADERS / "nvrtc.h"
NVJITLINK_H = HEADERS / "nvJitLink.h"
NVVM_H = HEADERS / "nvvm.h"

# headers/cuda.h was transcribed from the CUDA 13.0 cuda.h.
CUDA_SOURCE_VERSION = 13000

# Count sentinels whose value grows with each release; headers/cuda.h leaves
# them out on purpose, so the completeness check must not ask for them.
OMITTED_SENTINELS = {
    "CU_DEVICE_ATTRIBUTE_MAX", "CU_FUNC_ATTRIBUTE_MAX", "CU_JIT_NUM_OPTIONS",
    "CU_JIT_NUM_INPUT_TYPES", "CU_LIBRARY_NUM_OPTIONS", "CU_LIMIT_MAX",
}


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------

def _read(path):
    return pathlib.Path(path).read_text()


def _ffi(*paths):
    ffi = cffi.FFI()
    for p in paths:
        ffi.cdef(_read(p))
    return ffi


def _compiler():
    for cand in (os.environ.get("CC"), "cc", "gcc"):
        if cand:
            found = shutil.which(cand)
            if found:
                return found
    return None


def _nvidia_include_dirs():
    """Include dirs of the nvidia-* pip wheels (nvidia/cu13/include, ...)."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return []
    out = []
    for loc in spec.submodule_search_locations:
        out.extend(sorted(glob.glob(os.path.join(loc, "*", "include"))))
    return out


def _unique(paths):
    seen, out = set(), []
    for p in paths:
        rp = os.path.realpath(p)
        if os.path.isfile(rp) and rp not in seen:
            seen.add(rp)
            out.append(rp)
    return out


def _cuda_headers():
    paths = sorted(glob.glob("/usr/local/cuda*/include/cuda.h"))
    paths += [os.path.join(d, "cuda.h") for d in _nvidia_include_dirs()]
    return _unique(paths)


def _nvrtc_headers():
    paths = [os.path.join(d, "nvrtc.h") for d in _nvidia_include_dirs()]
    paths += sorted(glob.glob("/usr/local/cuda*/include/nvrtc.h"))
    return _unique(paths)


def _nvjitlink_headers():
    paths = [os.path.join(d, "nvJitLink.h") for d in _nvidia_include_dirs()]
    paths += sorted(glob.glob("/usr/local/cuda*/include/nvJitLink.h"))
    return _unique(paths)


def _nvvm_headers():
    paths = [os.path.join(d, "nvvm.h") for d in _nvidia_include_dirs()]
    paths += sorted(glob.glob("/usr/local/cuda*/nvvm/include/nvvm.h"))
    named = os.environ.get("CUDALOAD_TEST_LIBNVVM")  # the wheel's lib/ file: include/ beside it
    if named:
        paths.append(os.path.join(os.path.dirname(os.path.dirname(named)), "include", "nvvm.h"))
    return _unique(paths)


def _params(paths, what):
    if not paths:
        return [pytest.param(None, marks=pytest.mark.skip(
            reason="no official %s found (looked in /usr/local/cuda*/include "
                   "and the nvidia pip wheels)" % what))]
    return [pytest.param(p, id=p) for p in paths]


def _strip_comments(text):
    return re.sub(r"/\*.*?\*/", " ", text, flags=re.S)


def _declared_functions(header_path):
    """(name, return type, parameter list) of each prototype in our header."""
    text = re.sub(r"\s+", " ", _strip_comments(_read(header_path)))
    while True:  # drop struct/union/enum bodies, innermost first
        text, n = re.subn(r"\{[^{}]*\}", " ", text)
        if not n:
            break
    out = []
    for stmt in text.split(";"):
        stmt = stmt.strip()
        if not stmt or stmt.startswith("typedef"):
            continue
        m = re.match(r"^(.*?)\b(\w+)\s*\((.*)\)$", stmt)
        assert m, "cannot parse declaration: %r" % stmt
        out.append((m.group(2), m.group(1).strip(), m.group(3).strip()))
    return out


def _declared_enums(ffi):
    """{enum typedef name: {member: value}} as cffi sees our header."""
    out = {}
    for name in ffi.list_types()[0]:
        t = ffi.typeof(name)
        if t.kind == "enum":
            out[name] = dict(t.relements)
    return out


def _preprocess(cc, include_dir, header_name):
    res = subprocess.run(
        [cc, "-E", "-P", "-I", include_dir, "-x", "c", "-"],
        input="#include <%s>\n" % header_name,
        capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return res.stdout


def _real_enum_members(preprocessed):
    """{enum typedef name: [member names]} from the preprocessed real header."""
    out = {}
    for m in re.finditer(r"typedef\s+enum\s*\w*\s*\{(.*?)\}\s*(\w+)\s*;",
                         preprocessed, re.S):
        members = [p.split("=")[0].strip() for p in m.group(1).split(",")]
        out[m.group(2)] = [x for x in members if x]
    return out


def _layout_checks(ffi):
    """[(label, C expression, cffi value)] for typedef sizes and struct layouts."""
    checks = []
    for name in ffi.list_types()[0]:
        t = ffi.typeof(name)
        checks.append(("sizeof(%s)" % name, "sizeof(%s)" % name, ffi.sizeof(t)))
        checks.append(("alignof(%s)" % name, "_Alignof(%s)" % name, ffi.alignof(t)))
        if t.kind in ("struct", "union"):
            _walk_fields(ffi, name, t, [], checks)
    return checks


def _walk_fields(ffi, tname, ctype, path, checks):
    for fname, field in ctype.fields:
        p = path + [fname]
        dotted = ".".join(p)
        checks.append(("offsetof(%s, %s)" % (tname, dotted),
                       "offsetof(%s, %s)" % (tname, dotted),
                       ffi.offsetof(tname, *p)))
        checks.append(("sizeof(%s.%s)" % (tname, dotted),
                       "sizeof(((%s *)0)->%s)" % (tname, dotted),
                       ffi.sizeof(field.type)))
        if field.type.kind in ("struct", "union"):
            _walk_fields(ffi, tname, field.type, p, checks)


def _c_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _compile_and_run(cc, include_dir, header_name, body_lines, tmp_path, stem):
    src = tmp_path / (stem + ".c")
    exe = tmp_path / stem
    src.write_text("\n".join(
        ["#include <%s>" % header_name, "#include <stddef.h>",
         "#include <stdio.h>", "int main(void) {"]
        + ["    " + line for line in body_lines]
        + ["    return 0;", "}", ""]))
    res = subprocess.run([cc, "-std=gnu11", "-I", include_dir, str(src),
                          "-o", str(exe)], capture_output=True, text=True)
    assert res.returncode == 0, "compiling %s failed:\n%s" % (src, res.stderr)
    run = subprocess.run([str(exe)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    values = {}
    for line in run.stdout.splitlines():
        key, _, val = line.rpartition("\t")
        values[key] = int(val)
    return values


# Declared by their base name with the ABI of an older CUDA, which cuda.h now maps to a _v2 by a
# macro: checked against the declaration the header keeps for the driver's own build.
_OLDER_ABI = {"cuMemcpyBatchAsync"}


def _check_prototypes(cc, include_dir, header_name, our_header, tmp_path, stem):
    declared = _declared_functions(our_header)
    older = [d for d in declared if d[0] in _OLDER_ABI]
    if older and header_name == "cuda.h":
        _compile_prototypes(cc, include_dir, header_name, our_header, older, tmp_path,
                            stem + "_older", "#define __CUDA_API_VERSION_INTERNAL 1")
        declared = [d for d in declared if d[0] not in _OLDER_ABI]
    _compile_prototypes(cc, include_dir, header_name, our_header, declared, tmp_path, stem, "")


def _compile_prototypes(cc, include_dir, header_name, our_header, declared, tmp_path, stem,
                        prelude):
    lines = [prelude, "#include <%s>" % header_name]
    for name, ret, params in declared:
        lines.append("%s (*cudaload_fp_%s)(%s) = %s;" % (ret, name, params, name))
    src = tmp_path / (stem + ".c")
    src.write_text("\n".join(lines) + "\n")
    res = subprocess.run(
        [cc, "-std=gnu11", "-fsyntax-only",
         "-Werror=incompatible-pointer-types",
         "-Werror=implicit-function-declaration",
         "-I", include_dir, str(src)],
        capture_output=True, text=True)
    assert res.returncode == 0, (
        "declared prototypes in %s disagree with %s:\n%s"
        % (our_header, os.path.join(include_dir, header_name), res.stderr))


def _cuda_version(header_path):
    m = re.search(r"^\s*#\s*define\s+CUDA_VERSION\s+(\d+)", _read(header_path), re.M)
    return int(m.group(1)) if m else None


def _require_cc():
    cc = _compiler()
    if cc is None:
        pytest.skip("no C compiler (cc/gcc) available")
    return cc


def _check_enums_and_layout(cc, real_header, our_header, tmp_path, stem,
                            strict_missing, complete):
    """Compare enum constants and layouts; returns a list of mismatch strings."""
    include_dir, header_name = os.path.split(real_header)
    ffi = _ffi(our_header)
    ours = _declared_enums(ffi)
    real_members = _real_enum_members(_preprocess(cc, include_dir, header_name))

    problems = []
    body = []
    for tname, members in sorted(ours.items()):
        if tname not in real_members:
            problems.append("enum %s not found in %s" % (tname, real_header))
            continue
        for m in real_members[tname]:
            body.append('printf("%%s\\t%%lld\\n", %s, (long long)%s);'
                        % (_c_string("enum " + m), m))
    layout = _layout_checks(ffi)
    for label, expr, _ in layout:
        body.append('printf("%%s\\t%%lld\\n", %s, (long long)(%s));'
                    % (_c_string(label), expr))
    real = _compile_and_run(cc, include_dir, header_name, body, tmp_path, stem)

    for tname, members in sorted(ours.items()):
        if tname not in real_members:
            continue
        real_vals = {m: real["enum " + m] for m in real_members[tname]}
        for m, v in sorted(members.items()):
            if m in real_vals:
                if real_vals[m] != v:
                    problems.append("%s.%s: declared %d, real %d"
                                    % (tname, m, v, real_vals[m]))
            elif strict_missing or not real_vals or v <= max(real_vals.values()):
                problems.append("%s.%s (= %d) is not in %s"
                                % (tname, m, v, real_header))
        if complete:
            missing = sorted(set(real_vals) - set(members) - OMITTED_SENTINELS)
            if missing:
                problems.append("%s lacks members of the source header: %s"
                                % (tname, ", ".join(missing)))
    for label, _, ours_val in layout:
        if real[label] != ours_val:
            problems.append("%s: cffi %d, C %d" % (label, ours_val, real[label]))
    return problems


# --------------------------------------------------------------------------
# tests that need nothing but cffi
# --------------------------------------------------------------------------

@pytest.mark.parametrize("path", [CUDA_H, NVRTC_H, NVJITLINK_H],
                         ids=["cuda.h", "nvrtc.h", "nvJitLink.h"])
def test_header_is_plain_cdef(path):
    text = _read(path)
    for i, line in enumerate(text.splitlines(), 1):
        assert not line.lstrip().startswith("#"), "%s:%d preprocessor line" % (path, i)
    code = _strip_comments(text)
    for word in ("__attribute__", "CUDAAPI", "__stdcall", "__declspec"):
        assert word not in code, "%s contains %s" % (path, word)
    _ffi(path)  # cffi must accept it


def test_headers_parse_together():
    ffi = _ffi(CUDA_H, NVRTC_H)
    if ffi.sizeof("void *") != 8:
        pytest.skip("expected sizes below are for 64-bit platforms")
    assert ffi.sizeof("CUlaunchAttributeValue") == 64
    assert ffi.sizeof("CUlaunchAttribute") == 72
    assert ffi.offsetof("CUlaunchAttribute", "value") == 8
    assert ffi.sizeof("CUlaunchConfig") == 56
    assert ffi.offsetof("CUlaunchConfig", "hStream") == 32
    assert ffi.offsetof("CUlaunchConfig", "numAttrs") == 48


def test_cuda_functions_use_real_exported_names():
    """Functions renamed by a macro in cuda.h must use the real symbol name."""
    names = {n for n, _, _ in _declared_functions(CUDA_H)}
    renamed = {"cuMemAlloc", "cuMemFree", "cuMemcpyHtoD", "cuMemcpyDtoH",
               "cuMemGetInfo", "cuDeviceTotalMem", "cuCtxPushCurrent",
               "cuCtxPopCurrent", "cuStreamDestroy", "cuEventDestroy",
               "cuModuleGetGlobal", "cuGetProcAddress", "cuEventElapsedTime",
               "cuStreamBeginCapture", "cuDevicePrimaryCtxRelease",
               "cuGraphInstantiate"}
    assert not names & renamed


# --------------------------------------------------------------------------
# tests against the official headers
# --------------------------------------------------------------------------

def _require_cuda_version(real_header) -> int:
    """The header's CUDA_VERSION; skips when it is older than the one headers/cuda.h follows."""
    version = _cuda_version(real_header)
    if version is None or version < CUDA_SOURCE_VERSION:
        pytest.skip("%s is CUDA_VERSION %s; headers/cuda.h is transcribed from %d"
                    % (real_header, version, CUDA_SOURCE_VERSION))
    return version


@pytest.mark.parametrize("real_header", _params(_cuda_headers(), "cuda.h"))
def test_cuda_enums_and_layout_match_official_header(real_header, tmp_path):
    cc = _require_cc()
    version = _require_cuda_version(real_header)
    problems = _check_enums_and_layout(
        cc, real_header, CUDA_H, tmp_path, "cuda_values",
        strict_missing=True, complete=(version == CUDA_SOURCE_VERSION))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("real_header", _params(_cuda_headers(), "cuda.h"))
def test_cuda_prototypes_match_official_header(real_header, tmp_path):
    cc = _require_cc()
    _require_cuda_version(real_header)
    include_dir, header_name = os.path.split(real_header)
    _check_prototypes(cc, include_dir, header_name, CUDA_H, tmp_path, "cuda_protos")


# NVRTC's and nvJitLink's official headers against ours: (official header, ours) pairs.
_TOOLKIT_HEADERS = ([(p, NVRTC_H) for p in _nvrtc_headers()]
                    + [(p, NVJITLINK_H) for p in _nvjitlink_headers()]
                    + [(p, NVVM_H) for p in _nvvm_headers()])
_TOOLKIT_PARAMS = ([pytest.param(real, ours, id=real) for real, ours in _TOOLKIT_HEADERS] or
                   [pytest.param(None, None, marks=pytest.mark.skip(
                       reason="no official nvrtc.h or nvJitLink.h found"))])


@pytest.mark.parametrize("real_header, ours", _TOOLKIT_PARAMS)
def test_toolkit_enums_match_official_header(real_header, ours, tmp_path):
    cc = _require_cc()
    # NVRTC and nvJitLink only append result codes; codes newer than an installed
    # older header are tolerated, anything else missing or renumbered is an error.
    problems = _check_enums_and_layout(
        cc, real_header, ours, tmp_path, ours.stem + "_values",
        strict_missing=False, complete=False)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("real_header, ours", _TOOLKIT_PARAMS)
def test_toolkit_prototypes_match_official_header(real_header, ours, tmp_path):
    cc = _require_cc()
    include_dir, header_name = os.path.split(real_header)
    _check_prototypes(cc, include_dir, header_name, ours, tmp_path, ours.stem + "_protos")

