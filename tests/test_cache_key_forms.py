"""Include forms the scan once misread, and NVRTC's own account of what it read keeping the disk
honest where the scan is wrong.

Each case compiles in one process, again in a fresh one (the disk answers), then edits the header
NVRTC reads and compiles in a third: the disk must never answer with the old value.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ._support import ROOT, child_env
from .test_cache_key import KERNEL, compile_value, val, write


def _tree(tmp_path, files: dict) -> None:
    for path, text in files.items():
        full = tmp_path / path
        os.makedirs(full.parent, exist_ok=True)
        if text.startswith("->"):
            os.symlink(text[2:], full)
        else:
            full.write_text(text)


# (files, the one NVRTC reads and the test edits, Program arguments)
FORMS = {
    "form feed before the directive": (
        {"v.h": val(111)}, "v.h", dict(source='\f#include "v.h"\n' + KERNEL)),
    "vertical tab inside the directive": (
        {"v.h": val(111)}, "v.h", dict(source='#\vinclude\v"v.h"\n' + KERNEL)),
    "trigraph with c++14": (
        {"t.h": val(111)}, "t.h", dict(source='??=include "t.h"\n' + KERNEL, std="c++14")),
    "--no-source-include": (
        {"h.h": val(333), "inc/h.h": val(111)}, "inc/h.h",
        dict(source='#include "h.h"\n' + KERNEL, options=["-Iinc", "--no-source-include"])),
    "'..' after a symlinked include folder": (
        {"real/sub/y.h": '#include "../x.h"\n', "real/x.h": val(111), "inc/x.h": val(333),
         "inc/link": "->../real/sub"}, "real/x.h",
        dict(source='#include "link/y.h"\n' + KERNEL, include_paths=["inc"])),
    "include_paths=['link/..']": (
        {"real/sub/x.h": val(333), "real/x.h": val(111), "link": "->real/sub", "x.h": val(333)},
        "real/x.h", dict(source="#include <x.h>\n" + KERNEL, include_paths=["link/.."])),
    "-I=folder": (
        {"inc/v.h": val(111)}, "inc/v.h", dict(source="#include <v.h>\n" + KERNEL,
                                                options=["-I=inc"])),
}


@pytest.mark.parametrize("form", FORMS)
def test_an_include_form_is_keyed_by_the_file_nvrtc_reads(cache_dir, tmp_path, form):
    files, edited, spec = FORMS[form]
    _tree(tmp_path, files)
    assert compile_value(tmp_path, **spec) == {"value": 111, "cached": None}
    assert compile_value(tmp_path, **spec) == {"value": 111, "cached": "disk"}  # still cacheable
    write(tmp_path / edited, val(222))
    assert compile_value(tmp_path, **spec) == {"value": 222, "cached": None}


def test_a_file_the_scan_misses_keeps_the_result_off_the_disk(cache_dir, tmp_path):
    """The scan made blind: NVRTC's trace names v.h, which the key lacks."""
    header = write(tmp_path / "v.h", val(111))
    spec = dict(source='#include "v.h"\n' + KERNEL, patch=["blind_scan"])
    assert compile_value(tmp_path, **spec) == {"value": 111, "cached": None}
    assert compile_value(tmp_path, **spec) == {"value": 111, "cached": None}
    write(header, val(222))
    assert compile_value(tmp_path, **spec) == {"value": 222, "cached": None}


def test_a_trace_nvrtc_cannot_write_keeps_the_result_off_the_disk(cache_dir, tmp_path):
    write(tmp_path / "v.h", val(111))
    spec = dict(source='#include "v.h"\n' + KERNEL, patch=["no_room"])
    assert compile_value(tmp_path, **spec) == {"value": 111, "cached": None}
    assert compile_value(tmp_path, **spec) == {"value": 111, "cached": None}


def test_an_nvrtc_without_the_trace_compiles_and_the_scan_is_trusted(cache_dir, tmp_path):
    header = write(tmp_path / "v.h", val(111))
    spec = dict(source='#include "v.h"\n' + KERNEL, patch=["trace_refused"])
    assert compile_value(tmp_path, **spec) == {"value": 111, "cached": None}
    assert compile_value(tmp_path, **spec) == {"value": 111, "cached": "disk"}
    write(header, val(222))
    assert compile_value(tmp_path, **spec) == {"value": 222, "cached": None}


def test_a_trace_the_caller_asks_for_is_written_and_the_result_not_kept_on_disk(cache_dir,
                                                                                 tmp_path):
    write(tmp_path / "v.h", val(111))
    trace = tmp_path / "mine"
    spec = dict(source='#include "v.h"\n' + KERNEL, options=[f"--fdevice-time-trace={trace}"])
    assert compile_value(tmp_path, **spec) == {"value": 111, "cached": None}
    assert '"v.h"' in (tmp_path / "mine.json").read_text()
    assert compile_value(tmp_path, **spec) == {"value": 111, "cached": None}


CODE_WITH_AND_WITHOUT_TRACE = r"""
import json, sys
from cudaload.bindings import nvrtc
from cudaload.compile.includes import _reads
from cudaload.compile import toolchain
src = '#include <cuda_fp16.h>\n__global__ void k(__half *p) { *p = __hadd(*p, *p); }\n'
options = ("--gpu-architecture=sm_90", *toolchain.current().include_options)
plain = nvrtc.compile(src, "k.cu", options, kind="cubin")
request = _reads.request()
traced = nvrtc.compile(src, "k.cu", options, kind="cubin", own_options=(request.option,))
names = request.names()
print(json.dumps({"same": plain.code == traced.code, "log": traced.log,
                  "fp16": [n for n in names if n.endswith("cuda_fp16.h")]}))
"""


def test_the_trace_changes_nothing_in_the_code_and_names_the_headers_read():
    import json

    proc = subprocess.run([sys.executable, "-c", CODE_WITH_AND_WITHOUT_TRACE], cwd=ROOT,
                          env=child_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout.splitlines()[-1])
    assert found["same"] is True and found["log"] == ""
    assert len(found["fp16"]) == 1


def test_an_include_that_fails_to_read_is_no_error_of_the_scan(cache_dir, tmp_path):
    """/proc/self/mem opens but answers EIO to a read: NVRTC says what it makes of it."""
    from cudaload.compile.includes import search as includes

    found = includes.resolve('#include "/proc/self/mem"\n', "k.cu", {}, (), [])
    assert found.path_states == (("/proc/self/mem", "error:EIO"),)


def _family_header() -> str:
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    try:
        import family_header
    finally:
        sys.path.pop(0)
    return family_header.header()


REAL = {  # what real kernels include, each beside a header of the user's own folder
    "CUB": "#include <cub/block/block_reduce.cuh>\n",
    "cooperative groups": "#include <cooperative_groups.h>\n",
    "cuda_fp16 and cuda/std": "#include <cuda_fp16.h>\n#include <cuda/std/limits>\n",
    "a large operator header on disk": '#include "family.cuh"\n',
}


@pytest.mark.parametrize("which", REAL)
def test_real_headers_stay_cacheable_on_disk(cache_dir, tmp_path, which):
    """NVRTC's trace names every toolchain header these read; none of them keeps code off the
    disk, also with a user include folder, which makes the scan follow the toolchain's headers."""
    write(tmp_path / "inc" / "v.h", val(111))
    if "family" in REAL[which]:
        write(tmp_path / "inc" / "family.cuh", _family_header())
    spec = dict(source=REAL[which] + '#include "v.h"\n' + KERNEL, include_paths=["inc"])
    assert compile_value(tmp_path, **spec) == {"value": 111, "cached": None}
    assert compile_value(tmp_path, **spec) == {"value": 111, "cached": "disk"}


@pytest.mark.parametrize("source, sure", [
    ('extern "C" __global__ void k() {}\n', True),
    ("#include <cuda_fp16.h>\n#include <cuda/std/limits>\n", True),
    ("#include <cuda_fp16.h>\n// include \"v.h\" once it exists\n", False),
    ('\f#include <cuda_fp16.h>\n#\vinclude "v.h"\n', False),
    ("??=include <a.h>\n", False),
    ("#\\u0069nclude <a.h>\n", False),
    ("#inc\\ \nlude <a.h>\n", False),
    ("#inc\\\nlude <a.h>\n", True),  # a splice the scan joins: the include it took
    ("#import <a.h>\n", False),
    ("#if __has_include(<a.h>)\n#endif\n", False),
    ("#include <include/a.h>\n", False),
])
def test_a_trace_is_skipped_only_where_nothing_outside_the_toolchain_can_be_read(source, sure):
    from cudaload.compile.includes import search as includes

    assert includes.resolve(source, "k.cu", {}, (), []).sure is sure
    # Any user folder, pre-included file or in-memory header makes a trace needed.
    assert includes.resolve(source, "k.cu", {"m.h": ""}, (), []).sure is False
    assert includes.resolve(source, "k.cu", {}, ("-Iinc",), []).sure is False
    assert includes.resolve(source, "k.cu", {}, ("--pre-include=p.h",), []).sure is False


def test_a_source_file_that_is_not_utf8_is_a_value_error_naming_it(tmp_path):
    from cudaload import Program

    path = tmp_path / "latin1.cu"
    path.write_bytes(b"// caf\xe9\n__global__ void k() {}\n")
    with pytest.raises(ValueError, match=r"latin1\.cu is not UTF-8 text \(byte 0xe9 at offset 6\)"):
        Program.from_file(path)


@pytest.mark.parametrize("patch, source", [
    ([], '#include "v.h"\n' + KERNEL),
    (["trace_refused"], '#include "v.h"\n' + KERNEL),
    ([], '#include "v.h"\n' + KERNEL + "this is no CUDA;\n"),
])
def test_no_trace_folder_is_left_behind(cache_dir, tmp_path, monkeypatch, patch, source):
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setenv("TMPDIR", str(temporary))
    write(tmp_path / "v.h", val(111))
    spec = dict(source=source, patch=patch)
    if "no CUDA" in source:
        with pytest.raises(AssertionError, match="CompileError"):
            compile_value(tmp_path, **spec)
    else:
        assert compile_value(tmp_path, **spec)["value"] == 111
    assert os.listdir(temporary) == []



COMPILE_ALL_THEN_EDIT = r"""
import json, os, re, sys
os.chdir(sys.argv[1])
import cudaload
kernel = 'extern "C" __global__ void k(int *p) { *p = VAL; }\n'
programs = [cudaload.Program('#define H "h.h"\n#include H\n' + kernel + f"// {i}\n",
                             options=["-Iinc"]) for i in range(4)]
cudaload.compile_all(programs, arch=90, output="ptx", workers=2)  # more than 3: the workers' alone
with open("inc/h.h", "w") as f:
    f.write("#define VAL 222\n")
obj = programs[0].compile(arch=90, output="ptx")
print(json.dumps({"value": int(re.findall(rb"\b(111|222)\b", obj.code)[0]), "cached": obj.cached}))
"""


def test_compile_all_keeps_in_memory_what_its_workers_saw_nvrtc_read(cache_dir, tmp_path):
    """An include named by a macro: only NVRTC's trace, taken in the worker, names inc/h.h; the
    caller's memory cache must watch it too."""
    import json

    write(tmp_path / "inc" / "h.h", val(111))
    proc = subprocess.run([sys.executable, "-c", COMPILE_ALL_THEN_EDIT, str(tmp_path)],
                          cwd=ROOT, env=child_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1]) == {"value": 222, "cached": None}


AFTER_A_FAILURE_IN_A_HEADER = r"""
import json, os, re, sys
os.chdir(sys.argv[1])
import cudaload
from cudaload.compile.includes import _reads
kernel = 'extern "C" __global__ void k(int *p) { *p = VAL; }\n'
try:  # NVRTC abandons it inside pp.h: its profiler stays broken in this process
    cudaload.Program('#include "v.h"\n' + kernel, options=["--pre-include=pp.h"]).compile(
        arch=90, output="ptx")
except cudaload.CompileError:
    pass
program = cudaload.Program('#include "v.h"\n' + kernel + "// after\n")
obj = program.compile(arch=90, output="ptx")
print(json.dumps({"untraced": _reads.untraced(),
                  "value": int(re.findall(rb"\b(111|222)\b", obj.code)[0])}))
"""


def test_after_a_traced_failure_nvrtc_traces_no_more_and_the_scan_is_trusted(cache_dir, tmp_path):
    """NVRTC 13.5's traces after a compilation it abandoned inside a header omit headers it
    read: none is asked for after that, and a program the scan is sure of still goes to disk."""
    import json

    write(tmp_path / "v.h", val(111))
    write(tmp_path / "pp.h", '#include "missing.h"\n')
    proc = subprocess.run([sys.executable, "-c", AFTER_A_FAILURE_IN_A_HEADER, str(tmp_path)],
                          cwd=ROOT, env=child_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1]) == {"untraced": True, "value": 111}
    spec = dict(source='#include "v.h"\n' + KERNEL + "// after\n")  # the same program
    assert compile_value(tmp_path, **spec) == {"value": 111, "cached": "disk"}


def test_a_trace_folder_removed_after_the_program_was_made_is_refused_not_an_abort(tmp_path):
    """NVRTC aborts the process when it cannot write its trace: the path is checked again at
    compile(), not only when the Program is made."""
    code = (f"import os, shutil, cudaload\n"
            f"p = cudaload.Program('__global__ void k() {{}}', options=["
            f"'--fdevice-time-trace={tmp_path}/gone/t'])\n"
            f"shutil.rmtree('{tmp_path}/gone')\n"
            f"try:\n    p.compile(arch=90, output='ptx')\n"
            f"except ValueError as exc:\n    print('refused:', exc)\n")
    (tmp_path / "gone").mkdir()
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=child_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "refused:" in proc.stdout and "fdevice-time-trace" in proc.stdout


def test_a_trace_asked_for_through_ptxas_is_the_callers_too():
    from cudaload.compile.includes import _reads

    assert _reads.asked_by(["-Xptxas=--fdevice-time-trace=/tmp/x"])
    assert not _reads.asked_by(["-Xptxas=-v", "-DTRACE=1"])


def test_a_request_the_memory_cache_answered_has_every_field():
    """compile_all's workers read a lookup's key, kept and stamps whatever answered it."""
    from cudaload import ObjectCode, Program
    from cudaload.compile import request
    from cudaload.compile.cache import MEMORY

    asked = Program('extern "C" __global__ void k() {}').plan(90, "auto")
    MEMORY.put(asked.memory_key, ObjectCode(b"code", "cubin", "sm_90"), None, 10)
    try:
        found = request.lookup(asked)
    finally:
        MEMORY.pop(asked.memory_key, None)
    assert (found.code.code, found.where, found.key, found.kept, found.stamps, found.kind) == \
        (b"code", "memory", None, True, None, None)


NO_JSON_AFTER_A_FAILURE = r"""
import json, os, sys
os.chdir(sys.argv[1])
import cudaload
try:  # traced, and abandoned by NVRTC: its profiler stays on in this process
    cudaload.Program('#include "nothere.h"\n__global__ void k() {}\n').compile(arch=90,
                                                                              output="ptx")
except cudaload.CompileError:
    pass
cudaload.Program('extern "C" __global__ void k(int *p) { *p = 1; }\n').compile(arch=90,
                                                                             output="ptx")
cudaload.Program('#include "v.h"\nextern "C" __global__ void k(int *p) { *p = VAL; }\n').compile(
    arch=90, output="ptx")
print(json.dumps(sorted(os.listdir("."))))
"""


def test_after_a_traced_failure_nothing_is_written_to_the_current_folder(cache_dir, tmp_path):
    """NVRTC 13.5 keeps its profiler on after a traced compilation it abandoned, and writes the
    trace of each later compilation that names none to ./.json."""
    import json

    write(tmp_path / "v.h", val(111))
    proc = subprocess.run([sys.executable, "-c", NO_JSON_AFTER_A_FAILURE, str(tmp_path)],
                          cwd=ROOT, env=child_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1]) == ["cache", "v.h"]


WITHOUT_THE_TRACE_OPTION = r"""
import json, os, sys
os.chdir(sys.argv[1])
import cudaload
from cudaload.bindings import nvrtc
from cudaload.compile.includes import _reads
from cudaload.compile import cache
real, asked = nvrtc.compile, []

def older_nvrtc(*args, own_options=(), **kw):  # an NVRTC that has no --fdevice-time-trace
    if any(o.startswith(_reads.OPTION) for o in own_options):
        asked.append(1)
        raise cudaload.CompileError("refused", code=nvrtc.INVALID_OPTION,
                                    log="nvrtc error: unrecognized option " + own_options[0])
    return real(*args, **kw)
nvrtc.compile = older_nvrtc
for n in range(3):  # quoted includes: the scan is not sure of them, a trace would be asked for
    cudaload.Program('#include "v.h"\nextern "C" __global__ void k(int *p) { *p = VAL + %d; }\n'
                     % n).compile(arch=90, output="ptx")
cache.default().writer.wait()
print(json.dumps({"asked": len(asked), "unsupported": _reads.unsupported(),
                  "on_disk": len([e for e in os.listdir(cache.default().folder)
                                  if e.endswith(".bin")])}))
"""


def test_an_nvrtc_without_the_trace_option_is_asked_for_it_once_per_process(cache_dir, tmp_path):
    """It refuses the option (NVRTC_ERROR_INVALID_OPTION): the compilation runs again without
    it, no later one asks, and the scan alone keys what goes to disk."""
    import json

    write(tmp_path / "v.h", val(111))
    proc = subprocess.run([sys.executable, "-c", WITHOUT_THE_TRACE_OPTION, str(tmp_path)],
                          cwd=ROOT, env=child_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1]) == {"asked": 1, "unsupported": True,
                                                        "on_disk": 3}
