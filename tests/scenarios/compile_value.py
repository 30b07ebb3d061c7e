"""Compile one program to PTX in this process and print what it computed, as JSON.

    python -m tests.scenarios.compile_value SPEC.json

SPEC: ``source``, optional ``name``, ``headers``, ``options``, ``include_paths``; ``make_in`` (the
folder the Program is made in), ``compile_in`` (the folder compile() runs in, default the same),
``edit`` ({path: text} written between making the Program and compiling it), ``std``, and
``patch``, a list of what to change in cudaload for the run: "blind_scan" (the include scan finds
no include at all), "trace_refused" (NVRTC refuses the trace option, as one older than it does),
"no_room" (the trace folder's file system is full).  The kernel stores ``VAL``; the output says
which of the marker values 111/222/333 the PTX holds, and where the code came from (``cached``).
"""

from __future__ import annotations

import json
import os
import re
import sys


def main(spec_path: str) -> None:
    with open(spec_path) as f:
        spec = json.load(f)
    from cudaload import Program

    _patch(spec.get("patch", ()))
    os.chdir(spec["make_in"])
    program = Program(spec["source"], name=spec.get("name", "kernel.cu"),
                      headers=spec.get("headers"), options=tuple(spec.get("options", ())),
                      include_paths=tuple(spec.get("include_paths", ())),
                      **({"std": spec["std"]} if "std" in spec else {}))
    for path, text in spec.get("edit", {}).items():
        with open(path, "w") as f:
            f.write(text)
    os.chdir(spec.get("compile_in", spec["make_in"]))
    obj = program.compile(arch=90, output="ptx")
    values = sorted({int(v) for v in re.findall(rb"\b(111|222|333)\b", obj.code)})
    print(json.dumps({"value": values[0] if len(values) == 1 else values, "cached": obj.cached}))


def _patch(names) -> None:
    if not names:
        return
    from cudaload.compile.includes import _reads, search as includes

    if "blind_scan" in names:
        includes.scan = lambda text: ((), False)
    if "trace_refused" in names:
        made = _reads.request
        _reads.request = lambda: _refused(made())
    if "no_room" in names:
        _reads._ROOM = 1 << 62


def _refused(request):
    """``request`` with an option NVRTC does not know, spelled as the trace option begins."""
    if request is not None:
        request.option = "--fdevice-time-trace-of-a-newer-nvrtc=" + request.option.split("=")[1]
    return request


if __name__ == "__main__":
    main(sys.argv[1])
