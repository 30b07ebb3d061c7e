"""The cache key follows what NVRTC reads at compile(): a changed input is never served old code.

Each case compiles in one process, changes one input, and compiles again in a fresh process (the
disk cache is what would serve stale code); the kernel stores a marker value its headers define.
"""

from __future__ import annotations

import json
import os

import pytest

from ._support import ROOT, scenario_json

KERNEL = 'extern "C" __global__ void k(int *p) { *p = VAL; }\n'



def compile_value(tmp_path, **spec) -> dict:
    spec.setdefault("make_in", str(tmp_path))
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    return scenario_json("compile_value", path, cwd=ROOT)


def write(path, text: str) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return str(path)


def val(n: int) -> str:
    return f"#define VAL {n}\n"


def test_the_current_folder_is_read_at_compile_not_when_the_program_is_made(cache_dir, tmp_path):
    write(tmp_path / "x" / "inc" / "v.h", val(111))
    write(tmp_path / "y" / "inc" / "v.h", val(222))
    spec = dict(source='#include "v.h"\n' + KERNEL, include_paths=["inc"],
                make_in=str(tmp_path / "x"))
    assert compile_value(tmp_path, **spec)["value"] == 111
    moved = compile_value(tmp_path, **spec, compile_in=str(tmp_path / "y"))
    assert moved == {"value": 222, "cached": None}


def test_a_header_edited_after_the_program_is_made_is_read_as_edited(cache_dir, tmp_path):
    header = write(tmp_path / "v.h", val(111))
    spec = dict(source='#include "v.h"\n' + KERNEL)
    assert compile_value(tmp_path, **spec)["value"] == 111
    edited = compile_value(tmp_path, **spec, edit={header: val(222)})
    assert edited == {"value": 222, "cached": None}
    # Reverted, the first entry is right again, and served from disk.
    assert compile_value(tmp_path, **spec, edit={header: val(111)}) == {"value": 111,
                                                                         "cached": "disk"}


def test_a_macro_include_inside_a_header_on_disk_keeps_the_program_off_the_disk(cache_dir,
                                                                               tmp_path):
    write(tmp_path / "a.h", '#define WHICH "v.h"\n#include WHICH\n')
    header = write(tmp_path / "v.h", val(111))
    spec = dict(source='#include "a.h"\n' + KERNEL)
    assert compile_value(tmp_path, **spec) == {"value": 111, "cached": None}
    write(header, val(222))
    assert compile_value(tmp_path, **spec) == {"value": 222, "cached": None}


def test_an_in_memory_header_that_includes_a_file_of_the_current_folder(cache_dir, tmp_path):
    header = write(tmp_path / "v.h", val(111))
    spec = dict(source='#include "m.h"\n' + KERNEL, headers={"m.h": '#include "v.h"\n'})
    assert compile_value(tmp_path, **spec)["value"] == 111
    write(header, val(222))
    assert compile_value(tmp_path, **spec) == {"value": 222, "cached": None}


@pytest.mark.parametrize("line", ['#include /**/ "v.h"\n', '#include \\\n"v.h"\n',
                                  '# /* a */ include "v.h" // b\n', '%:include "v.h"\n',
                                  '#\\\ninclude "v.h"\n'],
                         ids=["comment", "splice", "comments-around", "digraph", "split-hash"])
def test_includes_written_with_comments_splices_or_digraphs(cache_dir, tmp_path, line):
    header = write(tmp_path / "v.h", val(111))
    spec = dict(source=line + KERNEL)
    assert compile_value(tmp_path, **spec)["value"] == 111
    write(header, val(222))
    assert compile_value(tmp_path, **spec) == {"value": 222, "cached": None}


def test_include_next_reaches_the_next_folder(cache_dir, tmp_path):
    write(tmp_path / "inc1" / "n.h", "#include_next <n.h>\n")
    header = write(tmp_path / "inc2" / "n.h", val(111))
    spec = dict(source="#include <n.h>\n" + KERNEL,
                include_paths=[str(tmp_path / "inc1"), str(tmp_path / "inc2")])
    assert compile_value(tmp_path, **spec)["value"] == 111
    write(header, val(222))
    assert compile_value(tmp_path, **spec) == {"value": 222, "cached": None}


def test_a_header_that_appears_earlier_in_the_search_shadows_the_old_one(cache_dir, tmp_path):
    write(tmp_path / "inc2" / "v.h", val(111))
    spec = dict(source="#include <v.h>\n" + KERNEL,
                include_paths=[str(tmp_path / "inc1"), str(tmp_path / "inc2")])
    assert compile_value(tmp_path, **spec)["value"] == 111
    write(tmp_path / "inc1" / "v.h", val(222))
    assert compile_value(tmp_path, **spec) == {"value": 222, "cached": None}


def test_has_include_answers_are_in_the_key(cache_dir, tmp_path):
    source = ('#if __has_include("v.h")\n#include "v.h"\n#else\n#define VAL 333\n#endif\n'
              + KERNEL)
    assert compile_value(tmp_path, source=source)["value"] == 333
    write(tmp_path / "v.h", val(222))
    assert compile_value(tmp_path, source=source) == {"value": 222, "cached": None}


def test_in_one_process_an_edited_header_is_compiled_again(cache_dir, tmp_path, monkeypatch):
    from cudaload import Program
    from cudaload.compile import cache

    monkeypatch.chdir(tmp_path)
    header = tmp_path / "v.h"
    header.write_text(val(111))
    program = Program('#include "v.h"\n' + KERNEL)
    first = program.compile(arch=90, output="ptx")
    assert b"111" in first.code
    assert program.compile(arch=90, output="ptx").cached == "memory"
    header.write_text(val(222))
    second = program.compile(arch=90, output="ptx")
    assert b"222" in second.code and second.cached is None
    cache.MEMORY.clear()


def test_a_file_changed_while_nvrtc_compiles_is_not_kept(cache_dir, tmp_path, monkeypatch):
    from cudaload import Program
    from cudaload.compile import cache
    from cudaload.bindings import nvrtc

    monkeypatch.chdir(tmp_path)
    header = tmp_path / "v.h"
    header.write_text(val(111))
    real = nvrtc.compile

    def edited_meanwhile(*args, **kw):
        result = real(*args, **kw)
        header.write_text(val(222))  # after NVRTC read it: its result is for the old text
        return result

    monkeypatch.setattr(nvrtc, "compile", edited_meanwhile)
    program = Program('#include "v.h"\n' + KERNEL)
    assert b"111" in program.compile(arch=90, output="ptx").code
    monkeypatch.setattr(nvrtc, "compile", real)
    cache.MEMORY.clear()
    # Neither the disk nor the memory cache kept the 111 compiled from a file that now says 222.
    again = program.compile(arch=90, output="ptx")
    assert b"222" in again.code and again.cached is None
    cache.MEMORY.clear()


@pytest.mark.timeout(60)
def test_a_fifo_named_by_an_include_is_a_clear_error_not_a_hang(cache_dir, tmp_path,
                                                                  monkeypatch):
    from cudaload import Program

    monkeypatch.chdir(tmp_path)
    os.mkfifo(tmp_path / "v.h")
    with pytest.raises(ValueError, match="not a regular file"):
        Program('#include "v.h"\n' + KERNEL).compile(arch=90, output="ptx")


def test_a_program_reading_no_file_keys_as_before(tmp_path, monkeypatch):
    """Code shipped in bundles is filed under the program's digest: a program that reads no file
    outside CUDA's headers keeps the digest it had, wherever it is compiled."""
    from cudaload import Program

    monkeypatch.chdir(tmp_path)
    program = Program("#include <cuda_fp16.h>\n" + KERNEL, headers={"m.h": "#define VAL 1\n"})
    assert program._bundle_digest() == program._digest
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    assert program._bundle_digest() == program._digest


def test_angle_includes_alone_read_nothing_outside_the_toolchain_but_macros_still_count(tmp_path):
    from cudaload.compile.includes import search as includes

    plain = includes.resolve("#include <cuda_fp16.h>\n" + KERNEL, "k.cu", {}, (), [])
    assert plain.path_states == () and plain.includes_known
    computed = includes.resolve("#include <cuda_fp16.h>\n#include WHICH\n" + KERNEL, "k.cu", {},
                                (), [])
    assert not computed.includes_known
    header = write(tmp_path / "v.h", val(111))
    absolute = includes.resolve(f"#include <{header}>\n" + KERNEL, "k.cu", {}, (), [])
    assert [path for path, _state in absolute.path_states] == [header]


def test_an_include_name_with_a_nul_in_a_header_on_disk_is_nvrtcs_to_judge(cache_dir, tmp_path,
                                                                          monkeypatch):
    # A header file may hold any byte; a NUL in an include name read from it names no file.
    # The cache's look at it must not raise: NVRTC's own error is what the user gets.
    from cudaload import Program
    from cudaload.errors import CompileError

    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.h").write_bytes(b'#include "b\0c.h"\n' + val(111).encode())
    with pytest.raises(CompileError):
        Program('#include "a.h"\n' + KERNEL).compile(arch=90, output="ptx")


def test_code_compiled_again_after_a_refusal_is_not_filed_under_older_inputs(cache_dir, tmp_path,
                                                                              monkeypatch):
    from cudaload import Program
    from cudaload.compile import cache
    from cudaload.compile.program import recompile_refused

    monkeypatch.chdir(tmp_path)
    header = tmp_path / "v.h"
    header.write_text(val(111))
    program = Program('#include "v.h"\n' + KERNEL)
    refused = program.compile(arch=90, output="cubin")
    header.write_text(val(222))  # edited after the first compile
    again = recompile_refused(refused)  # as Module does when the driver refuses it
    assert again.kind == "ptx" and b"222" in again.code
    header.write_text(val(111))  # back as it was: the first entry must still mean 111
    cache.MEMORY.clear()
    back = program.compile(arch=90, output="cubin")
    assert b"222" not in back.code
    cache.MEMORY.clear()
