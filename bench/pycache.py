"""cudaload's modules compiled to bytecode before a benchmark times fresh processes.

Installing cudaload's wheel compiles every module (pip does, by default), so a user's process
reads bytecode.  A benchmark run from a source checkout with ``PYTHONDONTWRITEBYTECODE=1`` (so
set on the H200 host) compiled cudaload's source again in every fresh process instead: 45 ms of
a first compile that took 63-98 ms there, against 31-47 ms with the bytecode written first.
Each benchmark that times fresh processes calls :func:`ensure` first; ``compileall`` writes the
bytecode whatever that variable says, and skips modules whose bytecode is current.
"""

from __future__ import annotations

import compileall
import importlib.util


def ensure() -> str:
    """Compile the cudaload that ``import cudaload`` finds (without importing it); say what was
    done, for the results."""
    spec = importlib.util.find_spec("cudaload")
    if spec is None or not spec.submodule_search_locations:
        return "cudaload not found"
    folder = list(spec.submodule_search_locations)[0]
    ok = compileall.compile_dir(folder, quiet=1)
    return f"bytecode of {folder} compiled ahead" if ok else f"compiling {folder} failed"
