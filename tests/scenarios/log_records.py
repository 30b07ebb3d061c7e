"""The records of the ``cudaload`` loggers in a fresh process (which library is loaded, and
whether logging is imported, are per process).

    python -m tests.scenarios.log_records SCENARIO

Each prints the records it kept as JSON on its last line.  Neither logging nor cudaload is
imported until a scenario runs.
"""

from __future__ import annotations

import json
import sys

KERNEL = 'extern "C" __global__ void k(float *x) { x[0] = 1.0f; }'


def _recording() -> list:
    """A list that receives every record of the ``cudaload`` loggers, from DEBUG up."""
    import logging

    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append({"logger": record.name, "level": record.levelname,
                            "text": record.getMessage(), "key": getattr(record, "key", None),
                            "library": getattr(record, "library", None),
                            "path": getattr(record, "path", None)})

    logging.getLogger("cudaload").addHandler(Keep())
    logging.getLogger("cudaload").setLevel(logging.DEBUG)
    return records


def compile_twice() -> None:
    """Every record of KERNEL compiled, then compiled again (a memory hit: no record)."""
    records = _recording()
    from cudaload import Program

    program = Program(KERNEL)
    program.compile(arch=90)
    program.compile(arch=90)  # a memory hit: no record
    print(json.dumps(records))


def driver_load() -> None:
    """The loader's records of loading the driver (or failing to)."""
    records = _recording()
    from cudaload.bindings import _loader

    try:
        _loader.driver()
    except Exception:
        pass
    print(json.dumps([r for r in records if r["logger"] == "cudaload.loader"]))


def recompile_after_refusal() -> None:
    """The compile records of KERNEL compiled to PTX and then recompiled as if the driver refused
    it, and the kind recompiled."""
    records = _recording()
    from cudaload import Program
    from cudaload.compile.program import recompile_refused

    refused = Program(KERNEL).compile(arch=90, output="ptx")
    again = recompile_refused(refused)  # what Module does when the driver refuses the PTX
    print(json.dumps([r for r in records if r["logger"] == "cudaload.compile"] + [again.kind]))


SCENARIOS = {f.__name__: f for f in (compile_twice, driver_load, recompile_after_refusal)}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
