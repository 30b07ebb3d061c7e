"""What NVRTC's first compilation in a process costs, and whether it starts a thread.

    python bench/nvrtc_first.py [--repeats 3]

Each figure from a fresh process that has loaded NVRTC (through cudaload's bindings) and
compiled nothing yet: a tiny kernel's first compilation and a second one (wall and CPU ms),
and the process's thread count after them (/proc/self/task); the same in a fork made before the
first compilation; and, after loading libcuda and asking its version first, whether that alone
starts a thread.  NVRTC 13.0 on a host with a CUDA driver loads the driver at its first
compilation and starts a thread of its own, after which compile_all may not fork the process
(compile/parallel/_fork.py): its first compilation calls ``cuInit``.  The cases ``hidden`` and
``fork_hidden`` ask whether a compile_all worker that saw no device would pay less: the process
started with CUDA_VISIBLE_DEVICES empty, and a fork that empties it before its first
compilation.  Prints one JSON document.  Needs NVRTC; Linux (reads /proc).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import ctypes, json, os, sys, time
from cudaload.compile import plan, toolchain
from cudaload.bindings import nvrtc
plan.assume_driver_version(None)  # nothing of cudaload's loads the driver
toolchain.current()
nvrtc.version()  # NVRTC loaded, nothing compiled

def threads():
    return len(os.listdir("/proc/self/task"))

def timed(tag):
    wall, cpu = time.perf_counter(), time.process_time()
    nvrtc.compile('extern "C" __global__ void k(float *x) { x[0] = 1; } // ' + tag, "k.cu",
                  ("-arch=sm_90",))
    return [round((time.perf_counter() - wall) * 1e3, 1), round((time.process_time() - cpu) * 1e3, 1)]

out = {"threads_loaded": threads()}
mode = sys.argv[1]
if mode == "driver_first":
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        version = ctypes.c_int()
        lib.cuDriverGetVersion(ctypes.byref(version))
        out["driver"] = version.value
    except OSError:
        out["driver"] = None
    out["threads_after_driver"] = threads()
if mode == "fork":
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        if sys.argv[2:] == ["hide"]:
            os.environ["CUDA_VISIBLE_DEVICES"] = ""  # before NVRTC's first compilation here
        first = timed("a")
        done = {"first_ms": first, "threads": threads(), "second_ms": timed("b")}
        os.write(write, json.dumps(done).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    out.update(json.loads(os.read(read, 4096)))
else:
    out["first_ms"] = timed("a")
    out["threads"] = threads()
    out["second_ms"] = timed("b")
print(json.dumps(out))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3, help="fresh processes per case")
    args = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    hidden = dict(env, CUDA_VISIBLE_DEVICES="")
    cases = {}
    for case, argv, case_env in (("plain", ["plain"], env), ("fork", ["fork"], env),
                                 ("driver_first", ["driver_first"], env),
                                 ("hidden", ["plain"], hidden),
                                 ("fork_hidden", ["fork", "hide"], env)):
        cases[case] = [json.loads(subprocess.run(
            [sys.executable, "-c", CHILD, *argv], env=case_env, capture_output=True, text=True,
            timeout=120, check=True).stdout) for _ in range(args.repeats)]
    # ``first_ms``/``second_ms``: [wall, CPU] of a tiny kernel's first and second compilation
    print(json.dumps({"python": sys.version.split()[0], "cases": cases}, indent=1))


if __name__ == "__main__":
    main()
