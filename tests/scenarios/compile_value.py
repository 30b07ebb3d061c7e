"""Compile one program to PTX in this process and print what it computed, as JSON.

    python -m tests.scenarios.compile_value SPEC.json

SPEC: ``source``, optional ``name``, ``headers``, ``options``, ``include_paths``; ``make_in`` (the
folder the Program is made in), ``compile_in`` (the folder compile() runs in, default the same),
``edit`` ({path: text} written between making the Program and compiling it).  The kernel stores
``VAL``; the output says which of the marker values 111/222/333 the PTX holds, and where the code
came from (``cached``).
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

    os.chdir(spec["make_in"])
    program = Program(spec["source"], name=spec.get("name", "kernel.cu"),
                      headers=spec.get("headers"), options=tuple(spec.get("options", ())),
                      include_paths=tuple(spec.get("include_paths", ())))
    for path, text in spec.get("edit", {}).items():
        with open(path, "w") as f:
            f.write(text)
    os.chdir(spec.get("compile_in", spec["make_in"]))
    obj = program.compile(arch=90, output="ptx")
    values = sorted({int(v) for v in re.findall(rb"\b(111|222|333)\b", obj.code)})
    print(json.dumps({"value": values[0] if len(values) == 1 else values, "cached": obj.cached}))


if __name__ == "__main__":
    main(sys.argv[1])
