"""Compiles that meet read-only cache tiers (``CUDALOAD_CACHE_READ_DIRS``), one process each run.

    python -m tests.scenarios.cache_tiers SCENARIO ARGS...

cudaload is imported inside each scenario, so importing this module does nothing.
"""

from __future__ import annotations

import json
import logging
import sys


class _Kept(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def compile_files(*paths: str) -> None:
    """Compile each file as ``Program.from_file(path)`` for sm_90, as ``cudaload precompile
    FILE --arch sm_90`` does; print where each came from, its size, the cache's warnings and its
    DEBUG log."""
    import warnings

    import tests.scenarios.compile_log  # noqa: F401  (counts the compilations)
    from cudaload import Program
    from cudaload.compile import cache
    from cudaload.compile.cache import writer

    kept = _Kept()
    log = logging.getLogger("cudaload.cache")
    log.setLevel(logging.DEBUG)
    log.addHandler(kept)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = [Program.from_file(p).compile(arch="sm_90") for p in paths]
        writer.DEFAULT.wait()  # copies made from a tier are on disk when this returns
    print(json.dumps({"cached": [o.cached for o in got], "sizes": [len(o.code) for o in got],
                      "warnings": [str(w.message) for w in caught
                                   if issubclass(w.category, cache.CacheWarning)],
                      "log": kept.lines}))


SCENARIOS = {f.__name__: f for f in (compile_files,)}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
