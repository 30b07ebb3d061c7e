"""Hostile compile requests: each gives a typed error whose message says what to do, never a crash.

The requests run together in one subprocess (it dlopens NVRTC) under a time limit, so a hang fails
the test instead of stalling the run; option handling is also checked by property tests here.
"""

from __future__ import annotations

import json
import os
import random

import pytest
from hypothesis import given, settings, strategies as st

from cudaload.compile import options
from tests._support import run_scenario

KERNEL = 'extern "C" __global__ void k(int *x) { x[0] = 1; }\n'
MB10 = 10 * 1024 * 1024


def _garbage_text(seed: int, n: int = 4096) -> str:
    rng = random.Random(seed)
    return "".join(chr(rng.randrange(1, 0x2FFF)) for _ in range(n))


def _garbage_bytes(seed: int, n: int = 4096) -> bytes:
    return random.Random(seed).randbytes(n)


# name -> (Program keywords, compile keywords, expected type, words the message must hold)
CASES = {
    # syntax errors
    "missing semicolon": ({"source": KERNEL.replace("= 1;", "= 1")}, {}, "CompileError",
                          ["expected a \";\"", "> 1 |"]),
    "unbalanced brace": ({"source": KERNEL + "}\n"}, {}, "CompileError", ["> 2 |"]),
    "undefined name": ({"source": KERNEL.replace("= 1", "= y")}, {}, "CompileError",
                       ["identifier \"y\" is undefined", "> 1 |"]),
    "error on line 500": ({"source": "\n" * 499 + "int bad = ;\n" + KERNEL}, {}, "CompileError",
                          ["> 500 |", "  499 |"]),
    "200 errors": ({"source": KERNEL + "int @@ ;\n" * 200}, {}, "CompileError",
                   [">  2 |", "Error limit reached"]),
    "host code in device": ({"source": '#include <iostream>\n' + KERNEL}, {}, "CompileError",
                            ["iostream", "Next step"]),
    # unknown options
    "unknown option": ({"source": KERNEL, "options": ("--no-such-option",)}, {}, "CompileError",
                       ["unrecognized option --no-such-option", "Next step"]),
    "gcc option": ({"source": KERNEL, "options": ("-fno-exceptions",)}, {}, "CompileError",
                   ["-fno-exceptions", "Next step"]),
    "nvcc-only option": ({"source": KERNEL, "options": ("-o",)}, {}, "CompileError",
                         ["unrecognized option -o", "Next step"]),
    "int as option": ({"source": KERNEL, "options": (5,)}, {}, "TypeError",
                      ["options must hold strings", "int"]),
    # options of the wrong form
    "bare -I": ({"source": KERNEL, "options": ("-I",)}, {}, "ValueError", ["'-IVALUE'"]),
    "bare --include-path": ({"source": KERNEL, "options": ("--include-path",)}, {}, "ValueError",
                            ["has no value"]),
    "bare -D": ({"source": KERNEL, "options": ("-D",)}, {}, "ValueError", ["has no value"]),
    "bare -Xptxas": ({"source": KERNEL, "options": ("-Xptxas",)}, {}, "ValueError",
                     ["swallow"]),
    "maxrregcount not a number": ({"source": KERNEL, "options": ("--maxrregcount=abc",)}, {},
                                  "CompileError", ["expects an integer value"]),
    "std unknown": ({"source": KERNEL, "options": ("-std=c++99",)}, {}, "CompileError",
                    ["invalid value for --std"]),
    "fmad not a bool": ({"source": KERNEL, "options": ("--fmad=maybe",)}, {}, "CompileError",
                        ["--fmad"]),
    "empty option": ({"source": KERNEL, "options": ("",)}, {}, "ValueError", ["empty option"]),
    "NUL in option": ({"source": KERNEL, "options": ("-DX=\0",)}, {}, "ValueError", ["NUL"]),
    "options as one string": ({"source": KERNEL, "options": "-DX=1"}, {}, "TypeError",
                              ["not one string"]),
    "arch as option": ({"source": KERNEL, "options": ("-arch=sm_90",)}, {}, "ValueError",
                       ["compile(arch=...)"]),
    "LTO with a device function not defined": (
        {"source": '__device__ float f(float);\n' + KERNEL.replace("{", "{ (void)f(1.0f);", 1),
         "options": ("-dlto",)}, {}, "CompileError",
        ["nvJitLink could not link", "Unresolved extern function", "must be defined in it"]),
    # architectures NVRTC does not support
    "sm_35": ({"source": KERNEL}, {"arch": 35}, "NvrtcError", ["sm_35", "Next step"]),
    "sm_52 as cubin": ({"source": KERNEL}, {"arch": "sm_52", "output": "cubin"}, "NvrtcError",
                       ["cannot compile for sm_52", "Next step"]),
    "sm_130 as cubin": ({"source": KERNEL}, {"arch": 130, "output": "cubin"}, "NvrtcError",
                        ["cannot compile for sm_130"]),
    "sm_999": ({"source": KERNEL}, {"arch": 999}, "ValueError",
               ["is no GPU architecture", "NVRTC knows up to"]),
    "arch not a number": ({"source": KERNEL}, {"arch": "sm_xx"}, "ValueError",
                          ["not a compute capability", "'sm_90'"]),
    "arch negative": ({"source": KERNEL}, {"arch": -90}, "ValueError", ["not a compute"]),
    "output unknown": ({"source": KERNEL}, {"arch": 90, "output": "sass"}, "ValueError",
                       ["output must be one of"]),
    # name expressions that do not exist
    "missing template": ({"source": KERNEL, "name_expressions": ("nothere<int>",)}, {},
                         "CompileError", ["nothere", "must name a __global__ function"]),
    "not a function": ({"source": KERNEL + "int v;\n", "name_expressions": ("v",)}, {},
                       "CompileError", ["must name a __global__ function"]),
    "garbage expression": ({"source": KERNEL, "name_expressions": (")(",)}, {},
                           "CompileError", ["must name a __global__ function"]),
    "expressions as one string": ({"source": KERNEL, "name_expressions": "k"}, {},
                                  "TypeError", ["not one string"]),
    # missing includes
    "missing quoted include": ({"source": '#include "nothere.h"\n' + KERNEL}, {},
                               "CompileError", ["nothere.h", "include_paths"]),
    "missing system include": ({"source": "#include <nothere/deep.h>\n" + KERNEL}, {},
                               "CompileError", ["nothere/deep.h", "include_paths"]),
    "include through a header": ({"source": '#include "a.h"\n' + KERNEL,
                                  "headers": {"a.h": '#include "b.h"\n'}}, {}, "CompileError",
                                 ["b.h", "include_paths"]),
    # binary garbage as source
    "NUL bytes": ({"source": b"\0" * 100}, {}, "ValueError", ["NUL character at offset 0"]),
    "NUL in the middle": ({"source": KERNEL + "\0junk"}, {}, "ValueError",
                          [f"offset {len(KERNEL)}"]),
    "non-UTF-8 header": ({"source": KERNEL, "headers": {"h.h": b"\xff\xfe"}}, {}, "ValueError",
                         ["header h.h is not UTF-8"]),
    **{f"random bytes {seed}": ({"source": _garbage_bytes(seed)}, {}, "ValueError",
                                ["not UTF-8 text"]) for seed in range(4)},
    **{f"random text {seed}": ({"source": _garbage_text(seed).replace("\0", "")}, {},
                               "CompileError", ["compilation failed"]) for seed in range(4)},
    # 10 MB sources
    "10 MB of errors": ({"source": KERNEL + "int @@@ ;\n" * (MB10 // 10)}, {}, "CompileError",
                        [">  2 |", "Error limit reached"]),
    "10 MB comment": ({"source": KERNEL + "/*" + "x" * MB10 + "*/\n"}, {}, "ok", []),
    "10 MB of defines": ({"source": KERNEL + "".join(f"#define M{i} {i}\n"
                                                      for i in range(MB10 // 18))}, {}, "ok", []),
}

@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    import pickle

    folder = tmp_path_factory.mktemp("compile")
    data = folder / "cases.pickle"
    data.write_bytes(pickle.dumps({name: case[:2] for name, case in CASES.items()}))
    proc = run_scenario("program_compiles", "compile_cases", data,
                        env={"CUDALOAD_CACHE_DIR": str(folder / "cache")}, check=False, timeout=300)
    assert proc.returncode == 0, f"the compile cases crashed ({proc.returncode}):\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_compile_request(name, outcomes):
    _kw, _ckw, expected, words = CASES[name]
    got = outcomes[name]
    assert got["type"] == expected, got
    if expected == "ok":
        assert got["kind"] == "cubin" and got["size"] > 0
        return
    message = got["message"]
    if expected in ("CompileError", "NvrtcError"):
        assert "CudaLoadError" in got["mro"]
    for word in words:
        assert word in message, (word, message[:3000])
    assert got["seconds"] < 60, got  # slow means something is quadratic


def test_a_compile_error_names_the_options_it_was_given(outcomes):
    assert "options: -std=c++17 --no-such-option" in outcomes["unknown option"]["message"]


# --- property tests: option handling ----------------------------------------------------------

_words = st.one_of(
    st.text(max_size=20),
    st.sampled_from(sorted(options._NEEDS_VALUE) + ["-G", "-lineinfo", "-std=c++20", "-DX=1",
                                                    "-I/tmp", "--use_fast_math", "-w"]))


@settings(max_examples=400, deadline=None)
@given(user=st.lists(_words, max_size=8), std=st.sampled_from([None, "c++17", "c++20"]),
       defines=st.dictionaries(st.from_regex(r"[A-Z_][A-Z0-9_]{0,6}", fullmatch=True),
                               st.one_of(st.none(), st.integers(-5, 5)), max_size=3),
       fast=st.booleans(), line=st.booleans(), debug=st.booleans(),
       regs=st.one_of(st.none(), st.integers(1, 255)), rdc=st.booleans())
def test_build_gives_the_options_in_order_or_a_value_error(user, std, defines, fast, line, debug,
                                                           regs, rdc):
    try:
        built = options.build(user, std=std, defines=defines, fast_math=fast, line_info=line,
                              debug=debug, max_registers=regs, relocatable=rdc)
    except ValueError as err:
        bad = [w for w in user if not w.strip() or "\0" in w or w in options._NEEDS_VALUE]
        assert bad, f"refused options with nothing wrong: {user}: {err}"
        return
    assert isinstance(built, tuple) and all(isinstance(o, str) for o in built)
    assert built[len(built) - len(user):] == tuple(user)  # the user's options last, unchanged
    keywords = built[:len(built) - len(user)]
    assert all(o and "\0" not in o and o not in options._NEEDS_VALUE for o in keywords)
    user_std = any(o.startswith(("-std", "--std")) for o in user)
    assert (f"-std={std}" in keywords) == bool(std and not user_std)
    assert ("--use_fast_math" in keywords) == fast and ("-G" in keywords) == debug
    assert ("-rdc=true" in keywords) == rdc and ("-lineinfo" in keywords) == line
    assert (f"--maxrregcount={regs}" in keywords) == (regs is not None)
    assert len([o for o in keywords if o.startswith("-D")]) == len(defines)


@settings(max_examples=300, deadline=None)
@given(words=st.lists(st.one_of(st.sampled_from(sorted(options._JOINED)), st.text(max_size=8)),
                      max_size=10))
def test_split_cli_then_build_never_lets_a_flag_swallow_the_next_option(words):
    joined = options.split_cli(words)
    assert len(joined) <= len(words)
    for i, word in enumerate(words[:-1]):  # a flag followed by a value is joined with it
        if word in options._JOINED and words[i + 1] and (i == 0 or words[i - 1] not in
                                                         options._JOINED):
            assert options._JOINED[word] + words[i + 1] in joined, (words, joined)
    try:
        built = options.build(joined, std=None)
    except ValueError:
        assert any(not w.strip() or "\0" in w or w in options._NEEDS_VALUE for w in joined)
        return
    assert not set(built) & options._NEEDS_VALUE


@settings(max_examples=500, deadline=None)
@given(arch=st.one_of(st.integers(-1000, 1000), st.text(max_size=12),
                      st.tuples(st.integers(0, 20), st.integers(0, 9)),
                      st.from_regex(r"(sm_|compute_)?[0-9]{2,3}[af]?", fullmatch=True)))
def test_parse_arch_gives_an_arch_or_a_value_error(arch):
    try:
        parsed = options.parse_arch(arch)
    except ValueError as err:
        assert "compute capability" in str(err)
        return
    assert isinstance(parsed, options.Arch) and parsed.number >= 0
    assert parsed.sm().startswith("sm_") and parsed.compute().startswith("compute_")
    assert options.parse_arch(parsed.sm()) == parsed  # its own spelling parses back the same


def test_hypothesis_is_not_silently_skipped():
    # The property tests above are part of the counted cases; fail loudly if they did not run.
    assert os.environ.get("HYPOTHESIS_PROFILE", "") != "skip"
