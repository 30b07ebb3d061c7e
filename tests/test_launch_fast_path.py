"""The fast-path launch (cudaload/launch/_fast_path.py) without a GPU: after two launches a kernel's
calls run one generated function; what reaches the recording driver, what is refused, and which
thread and device it serves must be what the ordinary path gives."""

from __future__ import annotations

import pytest

from tests._fakelibs import recording_driver  # noqa: F401  (fixture)
from tests._support import run_json, scenario_json

pytest.importorskip("numpy")


def run(recording_driver, scenario: str) -> dict:
    return scenario_json("fast_path_launches", scenario, env={"CUDALOAD_LIBCUDA": recording_driver})


def test_repeated_and_changed_arguments_reach_the_driver(recording_driver):
    out = run(recording_driver, "express_path")
    assert out["before"] and out["installed"]
    assert out["same"] == [out["ptr"], 7, 0.5]
    assert out["changed"] == [out["other_ptr"], 8, 0.0] and str(out["changed"][2]) == "-0.0"
    assert out["express_calls"] == 1  # a new grid: the ordinary path; an equal computed one: not
    assert out["numpy"] == [out["other_ptr"], 9, 2.0]
    # the ordinary path packed other values meanwhile: the fast-path function packs its own again
    assert out["back"] == [out["other_ptr"], 8, 0.0] and out["calls"] == 2


def test_what_does_not_fit_is_refused_as_precisely_as_on_the_ordinary_path(recording_driver):
    out = run(recording_driver, "refusals")
    assert out["installed"]
    signature = "signature: k(float* x, int n, float a)"
    assert out["count"][0] == "LaunchArgumentError" and "takes 3 arguments, 2 given" in out["count"][1]
    assert "argument 2 (float a)" in out["bool_for_float"][1]  # a bool where a float was
    assert "argument 1 (int n)" in out["float_for_int"][1] and "integer is needed" in \
        out["float_for_int"][1]
    assert "host memory" in out["host_array"][1]
    assert "argument 1 (int n)" in out["overflow"][1] and "2147483647" in out["overflow"][1]
    assert "was freed" in out["freed"][1]
    for key in ("count", "bool_for_float", "float_for_int", "host_array", "overflow", "freed"):
        assert out[key][0] == "LaunchArgumentError" and signature in out[key][1], key
    # a packing that failed halfway is not taken for the last good arguments
    assert out["good_again"] == out["after_overflow"][0] == [out["after_overflow"][1], 7, 0.5]
    assert "three positional arguments" in out["fourth"]
    assert out["launches"] == 4  # three before, one good one after: no refused launch ran


def test_each_thread_launches_its_own_arguments_and_ownership_passes_on(recording_driver):
    out = run(recording_driver, "threads")
    assert out["owner"][:3] == [1, True, True]  # the first thread to launch owns the function
    assert out["owner_gone"] == [True, True]  # its end gives the ordinary path back
    assert out["main"][:2] == [2, True]  # the next thread to launch owns it
    # another thread: the ordinary path, with its own parameter buffer, not the owner's
    assert out["second"][:3] == [3, True, False] and out["second"][3] != out["main"][2]
    assert out["main_again"] == 2


def test_a_device_made_current_later_gets_the_launch(recording_driver):
    out = run(recording_driver, "devices")
    assert out["installed"]
    assert (out["first"], out["second"], out["back"]) == \
        ([0x1000, 0x4000], [0x1100, 0x4100], [0x1000, 0x4000])


def test_a_kernel_with_an_express_function_is_freed_without_the_cycle_collector(recording_driver):
    out = run(recording_driver, "freed_at_once")
    assert out["installed"] and out["freed"]


def test_closing_a_stream_keeps_the_launch_shapes_of_other_streams(recording_driver):
    out = run(recording_driver, "closed_streams")
    assert out["installed"] == [True, True]
    assert out["ordinary_calls"] == 0 and out["kept"]  # other's launches stay on the fast path
    # The shape the fast path knew of the closed stream is forgotten: the launch is refused.
    assert "the stream on device 0 is closed" in out["on_closed"]
    assert out["launched_on_closed"] == 0


def test_generated_launcher_and_packer_show_their_text_and_go_with_the_kernel(recording_driver):
    out = run(recording_driver, "generated_source")
    assert out["installed"]
    launcher = [n for n in out["registered"] if n.startswith("<cudaload launcher s#")]
    packer = [n for n in out["registered"] if n.startswith("<cudaload packer s#")]
    assert len(launcher) == 1 and len(packer) == 1, out["registered"]
    assert out["launcher_source"].startswith("def launch(grid, block, args,")
    assert "rc = cuLaunchKernelEx(CONFIG, FUNC, PTRS, NULL)" in out["launcher_source"]
    assert out["packer_source"].startswith("def pack(args):")
    # each generated frame names its file and shows the line it was running
    lines = out["traceback"].splitlines()
    frames = {line.split('"')[1]: lines[i + 1].strip() for i, line in enumerate(lines)
              if line.strip().startswith('File "<cudaload ')}
    assert frames[launcher[0]].startswith("return kernel_state().launch(grid, block, args,"), frames
    assert frames[packer[0]] == "pack_into(buf, 0, c0(a0))", frames
    assert "4 bytes given, the parameter has 8" in out["traceback"]
    assert out["left"] == []  # the texts live as long as the functions, no longer


def test_the_launch_layer_imports_linecache_only_with_its_first_generated_function():
    # linecache imports tokenize: a process that loads kernels but builds no launcher need not.
    # Where the interpreter has them already at start (a site hook of the environment, as on
    # Python 3.12 with some packages), what the launch layer adds is what is compared.
    out = run_json("""
import json, sys
import cffi
names = ("linecache", "tokenize")
before = [m in sys.modules for m in names]
from cudaload.launch import arguments, kernel, signature
seen = [m in sys.modules for m in names]
p = arguments.Packer(cffi.FFI(), "k", signature.build_params(["int"], None), 0)
p.plan((int,))
print(json.dumps({"before": before, "seen": seen, "after": [m in sys.modules for m in names]}))
""")
    assert out["seen"] == out["before"]  # importing the launch layer added neither
    assert out["after"] == [True, True]
