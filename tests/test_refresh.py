"""status(refresh=True) forgets what the process found about its machine: each module that keeps
a finding registers, at its import, how to forget it (lifetime.on_forget)."""

from __future__ import annotations

from tests._support import run_json

NO_CUDA = {"CUDALOAD_LIBCUDA": "/nonexistent/libcuda.so.1", "CUDALOAD_CACHE": "0"}

# (module, function): every place a finding is kept, and how it is forgotten
FORGETTERS = [("cudaload.bindings._loader", "forget_failures"),
              ("cudaload.bindings.driver", "forget_load_failure"),
              ("cudaload.bindings.thread_device", "_forget_unusable"),
              ("cudaload.compile.link._linker", "forget_found"),
              ("cudaload.compile._resources", "forget"),
              ("cudaload.compile.plan", "forget_no_device"),
              ("cudaload.compile.toolchain", "_forget_remembered")]


def test_each_module_that_keeps_a_finding_registers_how_to_forget_it():
    result = run_json(f"""
        import importlib, json
        from cudaload._base import lifetime

        registered = {{(hook.__module__, hook.__name__) for hook in lifetime._forget_hooks}}
        for module, _name in {FORGETTERS!r}:
            importlib.import_module(module)
        after = [(hook.__module__, hook.__name__) for hook in lifetime._forget_hooks]
        print(json.dumps([sorted(registered), after]))
    """)
    before, after = result
    assert before == []  # nothing imported, nothing to forget
    assert sorted(map(tuple, after)) == sorted(FORGETTERS)  # each once


def test_a_refresh_forgets_every_finding():
    # Each finding is planted as a process that found it would keep it; status(refresh=True)
    # must forget all of them, so that the next use looks again.
    result = run_json("""
        import json
        import cudaload
        from cudaload.bindings import _loader, driver
        from cudaload.compile.link import _linker
        from cudaload.compile import plan, toolchain
        from cudaload.errors import LibraryNotFoundError

        failed = LibraryNotFoundError("planted")
        _loader._results["nvjitlink"] = failed
        driver._init_result = failed
        _linker._found["planted"] = ("/nowhere/libnvJitLink.so.13", "planted")
        plan._no_device = True
        planted = toolchain.Toolchain("/nowhere/libnvrtc.so.13", (13, 0), "planted", (90,), ())
        toolchain._remembered = planted
        kept = cudaload.status().as_dict()["nvrtc"]["path"]
        fresh = cudaload.status(refresh=True).as_dict()["nvrtc"]["path"]
        print(json.dumps({"loader": _loader._results.get("nvjitlink") is failed,
                          "driver": driver._init_result is failed,
                          "linker": "planted" in _linker._found,
                          "no device": plan._no_device,
                          "toolchain": toolchain._remembered is planted,
                          "kept": kept, "fresh": fresh}))
    """, env=NO_CUDA)
    assert result.pop("kept") == "/nowhere/libnvrtc.so.13"  # without a refresh, kept
    assert result.pop("fresh") not in (None, "/nowhere/libnvrtc.so.13")  # NVRTC looked for again
    assert result == {"loader": False, "driver": False, "linker": False, "no device": False,
                      "toolchain": False}
