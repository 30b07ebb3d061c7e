"""What the README's CPU fallback costs after its first call: the reason CUDA cannot be used is
remembered and raised again without a call into the driver (until status(refresh=True) or a
fork), and Program.from_resource gives the Program it made before (a changed file of a source
tree, as in an editable install, is read again).  Each case runs in a fresh interpreter."""

from __future__ import annotations

import pytest

from tests._support import run_json
from tests.test_readme import run_readme_fallback

NO_DRIVER = "/nonexistent/libcuda.so.1"

# Counts the calls into the driver's layer (driver.init, which every use of the driver makes
# first, and the loader) made by the README's function after its first call.
_COUNT = """
    from cudaload.bindings import _loader, driver
    calls = {"init": 0, "load": 0}
    def counted(name, fn):
        def wrapper(*args, **kw):
            calls[name] += 1
            return fn(*args, **kw)
        return wrapper
    driver.init = counted("init", driver.init)
    _loader._load = counted("load", _loader._load)
    def again():
        before = dict(calls)
        assert (scale(x, 2.0) == x * 2).all()
        return {k: calls[k] - before[k] for k in calls}
"""


@pytest.mark.parametrize("driver", ["libcuda 535, no GPU", "no driver"])
def test_the_second_call_makes_no_driver_look_up_until_a_refresh_or_a_fork(request, tmp_path,
                                                                           driver):
    libcuda = request.getfixturevalue("libcuda_535") if driver != "no driver" else NO_DRIVER
    out = run_readme_fallback(tmp_path, {"CUDALOAD_LIBCUDA": libcuda}, unset=(
        "CUDALOAD_LIBNVRTC",), then=_COUNT + """
    import os
    first = again()  # the reason was found by the call before
    second = again()
    cudaload.status(refresh=True)
    refreshed = again()
    after = again()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(w, json.dumps([again(), again()]).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = json.loads(os.read(r, 1000))
    out.update(first=first, second=second, refreshed=refreshed, after=after, child=child)
    """)
    assert out["right"] and not out["gpu"], out
    assert out["first"] == out["second"] == {"init": 0, "load": 0}, out
    assert out["refreshed"]["init"] >= 1, out  # asked again after the refresh...
    assert out["after"] == {"init": 0, "load": 0}, out  # ...and then remembered again
    assert out["child"][0]["init"] >= 1, out  # a forked child asks its own driver once
    assert out["child"][1] == {"init": 0, "load": 0}, out
    if driver == "no driver":  # the child looks for the library itself again, not only cuInit
        assert out["child"][0]["load"] == 1, out


def test_the_remembered_reason_is_the_same_typed_error_with_its_message(libcuda_535):
    out = run_json("""
        import json
        import cudaload
        program = cudaload.Program('extern "C" __global__ void k(float *x) { *x = 1; }')
        seen = []
        for _ in range(3):
            try:
                program.compile()
            except cudaload.CudaUnavailableError as exc:
                seen.append([type(exc).__name__, str(exc), exc.hint])
        print(json.dumps(seen))
    """, env={"CUDALOAD_LIBCUDA": libcuda_535, "CUDALOAD_CACHE": "0"})
    assert len(out) == 3 and out[0] == out[1] == out[2], out
    assert out[0][0] == "DriverUnavailableError" and "CUDA_ERROR_NO_DEVICE" in out[0][1], out


def test_from_resource_gives_the_program_it_made_and_sees_a_changed_source_file(tmp_path):
    out = run_json(f"""
        import json, os, sys, time
        root = {str(tmp_path)!r}
        for where in ("site-packages", "src"):
            os.makedirs(os.path.join(root, where, "pkg_" + where[:3]))
            for name in ("__init__.py", "k.cu", "k.h"):
                with open(os.path.join(root, where, "pkg_" + where[:3], name), "w") as f:
                    f.write('#include "k.h"\\n' if name == "k.cu" else "")
            sys.path.insert(0, os.path.join(root, where))
        import cudaload
        P = cudaload.Program
        src = P.from_resource("pkg_src", "k.cu")
        same = P.from_resource("pkg_src", "k.cu") is src
        defines = P.from_resource("pkg_src", "k.cu", defines={{"N": 4}})
        same_defines = P.from_resource("pkg_src", "k.cu", defines={{"N": 4}}) is defines
        other_type = P.from_resource("pkg_src", "k.cu", defines={{"N": 4.0}}) is defines
        with open(os.path.join(root, "src", "pkg_src", "k.h"), "w") as f:
            f.write("// edited, in a source tree")
        from cudaload.compile import _resources
        soon = P.from_resource("pkg_src", "k.cu") is src  # looked at again once a second
        time.sleep(_resources.CHECK_SECONDS + 0.05)
        edited = P.from_resource("pkg_src", "k.cu")
        installed = P.from_resource("pkg_sit", "k.cu")
        with open(os.path.join(root, "site-packages", "pkg_sit", "k.h"), "w") as f:
            f.write("// edited, installed")
        kept = P.from_resource("pkg_sit", "k.cu") is installed
        cudaload.status(refresh=True)
        fresh = P.from_resource("pkg_sit", "k.cu")
        print(json.dumps({{"same": same, "soon": soon, "same_defines": same_defines, "other_type": other_type,
                          "edited": [edited is src, edited.headers],
                          "kept": kept, "fresh": [fresh is installed, fresh.headers]}}))
    """, env={"CUDALOAD_LIBCUDA": NO_DRIVER, "CUDALOAD_CACHE": "0"})
    assert out == {"same": True, "soon": True, "same_defines": True, "other_type": False,
                   "edited": [False, {"k.h": "// edited, in a source tree"}],
                   "kept": True, "fresh": [False, {"k.h": "// edited, installed"}]}, out
