"""Compiled code pickles as plain data and crosses process pools; GPU state refuses, saying what to
send instead.  Each process is a fresh one (tests/scenarios/pickled_code.py)."""

from __future__ import annotations

import base64
import pickle
import sys

import pytest

from cudaload.compile.objectcode import ObjectCode
from tests._fakelibs import recording_driver  # noqa: F401  (fixture)
from tests._support import scenario_json

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")


def test_objectcode_round_trips_its_data_and_leaves_this_process_behind():
    obj = ObjectCode(b"\x7fELF" + bytes(60), "cubin", "sm_90", log="warning: x",
                     lowered_names={"k<int>": "_Z1kIiEvv"}, cached="disk", source="src",
                     origin=object())
    back = pickle.loads(pickle.dumps(obj))
    assert (back.code, back.kind, back.arch, back.log, back.lowered_names, back.source) == (
        obj.code, "cubin", "sm_90", "warning: x", {"k<int>": "_Z1kIiEvv"}, "src")
    # How this process's caches found it, its origin and its loaded module stay here.
    assert back.cached is None and back.origin is None and back._module.module is None
    assert back._module is not obj._module and back.lowered_names is not obj.lowered_names
    again = pickle.loads(pickle.dumps(back, protocol=0))
    assert again.code == obj.code and again.lowered_names == obj.lowered_names


def test_a_program_pickles_for_a_receiver_that_compiles_itself():
    from cudaload import Program

    prog = Program('extern "C" __global__ void k(int *x) {}', name_expressions=["k"],
                   options=("-DN=4",))
    back = pickle.loads(pickle.dumps(prog))
    assert (back.source, back.options, back.name_expressions) == (
        prog.source, prog.options, prog.name_expressions)
    assert back._digest == prog._digest  # the same cache entries


def test_objectcode_from_a_newer_cudaload_with_more_fields_still_loads():
    from cudaload.compile import objectcode

    fields = {"code": b"x", "kind": "ptx", "arch": "sm_75", "log": "", "lowered_names": {},
              "source": None, "added_later": 1}
    data = pickle.dumps(objectcode._rebuild(fields))
    assert pickle.loads(data).arch == "sm_75"
    assert objectcode._rebuild(fields).kind == "ptx"


@linux_only
def test_unpickling_in_a_fresh_process_loads_no_cuda_library(tmp_path):
    path = tmp_path / "obj.pickle"
    sent = scenario_json("pickled_code", "dump", path)
    assert sent["kind"] == "cubin" and sent["arch"] == "sm_80"
    got = scenario_json("pickled_code", "unpickle", path)
    assert got["mapped"] == [] and got["modules"] == []
    assert got["type"] == "cudaload.compile.objectcode.ObjectCode"
    for key in ("code", "kind", "arch", "log", "lowered_names", "source"):
        assert got[key] == sent[key], key
    assert list(got["lowered_names"]) == ["scale<float>"]
    assert got["lowered_names"]["scale<float>"].startswith("_Z5scale")
    assert "template <typename T>" in got["source"]
    assert got["cached"] is None and got["origin"] is False


@linux_only
def test_compiled_code_crosses_spawned_process_pools_and_comes_back():
    out = scenario_json("pickled_code", "pools", timeout=300)
    sent = out["sent"]
    for where in ("executor", "pool", "process", "back"):
        got = out[where]
        assert [got[k] for k in ("code", "kind", "arch", "lowered_names", "source")] == \
            [sent[k] for k in ("code", "kind", "arch", "lowered_names", "source")], where
    for where in ("executor", "pool", "process"):  # the workers: spawned, no CUDA library mapped
        assert out[where]["mapped"] == [] and out[where]["modules"] == [], where
    assert out["back_same_code"] and base64.b64decode(sent["code"]).startswith(b"\x7fELF")


def test_objects_holding_gpu_state_refuse_with_what_to_send(recording_driver):
    out = scenario_json("pickled_code", "refusals", env={"CUDALOAD_LIBCUDA": recording_driver},
                        timeout=300)
    expected = {  # what each refusal tells the user to send instead
        "Module": "module.code", "Kernel": "get_kernel(name)", "RawKernel": "the source",
        "DeviceBuffer": "copy_to_host", "Stream": "new cudaload.Stream()",
        "Event": "new cudaload.Event()", "Graph": "capture the launches again",
    }
    for name, hint in expected.items():
        pickled, copied, deep = out[name]
        kind, is_type_error, message, given = pickled
        assert (kind, is_type_error) == ("NotPicklableError", True), name
        assert f"a cudaload.{name} cannot be pickled" in message and hint in given, name
        assert hint in message  # the next step is part of the message too
        if name == "DeviceBuffer":  # its own copy refusal says how to copy the memory
            assert "alloc(buf.nbytes).copy_from(buf)" in copied[2] and deep == copied
        else:
            assert copied == deep == pickled, name
    assert out["pool"][0] == "NotPicklableError" and "get_kernel(name)" in out["pool"][1]
