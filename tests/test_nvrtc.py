"""NVRTC from the nvidia-cuda-nvrtc wheel: version, architectures, compilations, compile errors."""

from __future__ import annotations

import base64
import sys

import pytest

from tests._support import run_json, scenario_json


def _nvrtc(code: str, **kw):
    """Run ``code`` with json, base64 and cudaload.bindings.nvrtc imported; its last line is JSON."""
    return run_json("import json, base64\nfrom cudaload.bindings import nvrtc\n" + code,
                    unset=("CUDALOAD_LIBNVRTC",), **kw)


def _compiles(name: str):
    """The JSON of the scenario ``name`` of nvrtc_compiles, NVRTC found by a search."""
    return scenario_json("nvrtc_compiles", name, unset=("CUDALOAD_LIBNVRTC",))


def test_version_and_supported_archs():
    result = _nvrtc("print(json.dumps([nvrtc.version(), nvrtc.supported_archs()]))")
    (major, minor), archs = result
    assert major >= 12 and minor >= 0
    assert archs == sorted(archs) and all(isinstance(a, int) for a in archs)
    assert 90 in archs and min(archs) >= 50


def test_compile_a_real_kernel_to_ptx_and_cubin():
    result = _compiles("ptx_and_cubin")
    assert ".entry saxpy(" in result["ptx"] and ".target sm_75" in result["ptx"]
    assert not result["ptx"].endswith("\0")
    assert result["ptx_kind"] == "ptx" and result["cubin_kind"] == "cubin"
    assert base64.b64decode(result["cubin"]).startswith(b"\x7fELF")
    assert result["cubin_size"] > 1000
    assert result["log"] == ""


def test_headers_and_name_expressions():
    result = _compiles("headers_and_names")
    assert result == {"scale<float>": "_Z5scaleIfEvPT_", "scale<double>": "_Z5scaleIdEvPT_"}


def test_compile_error_carries_log_and_numbered_source_lines():
    result = _compiles("compile_error")
    assert result["name"] == "broken.cu" and result["options"] == ["-arch=sm_90"]
    assert result["code"] == 6 and result["pickled"]
    assert "undefined_name" in result["log"] and "broken.cu(4)" in result["log"]
    message = result["message"]
    assert "> 4 |     x[0] = undefined_name;" in message
    assert "  3 | {" in message
    assert "options: -arch=sm_90" in message


def test_an_invalid_option_is_a_compile_error():
    result = _compiles("invalid_option")
    assert result is not None and result[0] == 5
    assert "no-such-option" in result[1]


def test_error_excerpt_shows_only_lines_of_the_program_counted_as_nvrtc_counts():
    out = scenario_json("nvrtc_compiles", "excerpt_lines")
    marked = [line for line in out.splitlines() if line.startswith(">")]
    assert marked == ["> 3 | __device__ int x = nope;"], out  # not line 1, where util.h's error is
    assert 'util.h(1): error: identifier "bad1" is undefined' in out


def test_a_missing_cuda_header_says_where_cuda_headers_come_from():
    out = scenario_json("nvrtc_compiles", "missing_header")
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


# A program NVRTC takes seconds over, compiled in the main thread while another thread watches
# the main thread's blocked signals and, once SIGINT is among them, sends it.
_HELD_DURING_NVRTC = r"""
import json
from cudaload.bindings import nvrtc
from cudaload.compile import toolchain
from tests import _sigint_watch as watched
options = ["-arch=sm_90", *toolchain.current().include_options]
print(json.dumps(watched.interrupted(lambda: nvrtc.compile(watched.CUB, "cub.cu", options))))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_during_a_compilation_waits_for_nvrtc_and_raises_keyboard_interrupt():
    """SIGINT that reached a process inside nvrtcCompileProgram (NVRTC 13.0) ended it at once,
    with no KeyboardInterrupt.  It is now held off the compiling thread while NVRTC compiles
    and delivered when NVRTC returns: KeyboardInterrupt, and SIGINT unblocked again."""
    before, seen_held, interrupted, after = run_json(_HELD_DURING_NVRTC, timeout=300)
    assert before is False and seen_held is True
    assert interrupted is True and after is False


# CPython runs the handlers of signals already pending once pthread_sigmask has changed the mask,
# so a Ctrl-C that came just before NVRTC's call raised KeyboardInterrupt there, SIGINT blocked
# by then: injected here on the call that blocks it (and on each later call, in turn).
_INTERRUPTED_AS_SIGINT_IS_BLOCKED = r"""
import json, signal, sys
import _signal
from cudaload._base import _sigint
from cudaload.bindings import nvrtc
from cudaload.compile import toolchain

class Interrupting:
    def __init__(self, at):
        self.at, self.calls = at, 0
    def __getattr__(self, name):
        return getattr(_signal, name)
    def pthread_sigmask(self, how, mask):
        before = _signal.pthread_sigmask(how, mask)
        self.calls += 1
        if self.calls == self.at:
            raise KeyboardInterrupt
        return before

options = ["-arch=sm_90", *toolchain.current().include_options]
nvrtc.compile('extern "C" __global__ void warm() {}', "warm.cu", options)  # NVRTC loaded first
out = []
for at in (1, 2, 3):
    _sigint._signal = Interrupting(at)
    try:
        nvrtc.compile('extern "C" __global__ void k() {}', "k.cu", options)
        raised = False
    except KeyboardInterrupt:
        raised = True
    _sigint._signal = _signal
    out.append([raised, signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, ())])
print(json.dumps(out))
"""


def test_ctrl_c_as_sigint_is_blocked_for_nvrtc_leaves_it_unblocked():
    """A KeyboardInterrupt raised by the call that blocks SIGINT before NVRTC (or by the one
    that unblocks it) left SIGINT blocked in that thread for good: the value to restore was
    lost with the call's return.  Now each thread's mask is kept until release, which a
    ``finally`` makes: at each of the three calls, KeyboardInterrupt, then SIGINT unblocked."""
    assert run_json(_INTERRUPTED_AS_SIGINT_IS_BLOCKED, timeout=120) == [[True, False]] * 3


_NESTED_HOLDS = r"""
import json, signal
from cudaload._base import _sigint

def blocked():
    return signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, ())

seen = [blocked()]
_sigint.hold()
_sigint.hold()  # a hold inside another, as a compiler call made while one is held would
seen.append(blocked())
_sigint.release()
seen.append(blocked())
_sigint.release()
seen.append(blocked())
_sigint.release()  # one too many: nothing held, nothing changed
seen.append(blocked())
print(json.dumps(seen))
"""


def test_a_hold_inside_another_keeps_sigint_blocked_until_the_outer_release():
    """The inner release restored the mask the outer hold had found: SIGINT reached the thread
    while it was still inside the outer hold's compiler."""
    assert run_json(_NESTED_HOLDS, timeout=60) == [False, True, True, False, False]
