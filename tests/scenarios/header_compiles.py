"""Compiles that need CUDA's headers, and the report of where they were found, in a fresh
process of whichever Python environment a test made.

    python -m tests.scenarios.header_compiles SCENARIO ARGS...

Each prints what it found as JSON on its last line; cudaload is imported inside each scenario, so
importing this module loads nothing.
"""

from __future__ import annotations

import json
import os
import sys


def compile_all(headers: str, toolkits: str) -> None:
    """One program including every header of the JSON list ``headers``, compiled: the end of the
    error (empty if none), the report's header folders and problems, and which folders of the JSON
    list ``toolkits`` have an include folder in sight."""
    import cudaload

    failed = ""
    source = "".join(f"#include <{header}>\n" for header in json.loads(headers))
    source += "__global__ void k() {}\n"
    try:
        cudaload.Program(source, name="all.cu").compile(arch="sm_90", output="cubin")
    except cudaload.errors.CompileError as err:
        failed = str(err)[-3000:]
    nvrtc = cudaload.status().as_dict()["nvrtc"]
    print(json.dumps({"failed": failed, "header_dirs": nvrtc["header_dirs"],
                      "problems": cudaload.status().problems,
                      "hidden": {d: os.path.exists(os.path.join(d, "include"))
                                 for d in json.loads(toolkits)}}))


def report() -> None:
    """The report's NVRTC section, its problems, and its text."""
    import cudaload

    st = cudaload.status()
    print(json.dumps({"nvrtc": st.as_dict()["nvrtc"], "problems": st.problems, "text": str(st)}))


def compile_one(source: str, arch: str, output: str) -> None:
    """``source`` compiled for ``arch`` to ``output``: the NvrtcError's message and type, if
    any."""
    import cudaload

    try:
        cudaload.Program(source, name="hint.cu").compile(arch=arch, output=output)
        print(json.dumps({"error": None}))
    except cudaload.errors.NvrtcError as err:
        print(json.dumps({"error": str(err), "type": type(err).__name__}))


SCENARIOS = {f.__name__: f for f in (compile_all, report, compile_one)}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
