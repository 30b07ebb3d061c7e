"""The commit a benchmark's figures belong to, for its record.

``CUDALOAD_COMMIT`` first (``CUDALOAD_BENCH_COMMIT`` too): a copy of the checkout made elsewhere
(a GPU host's, say) may carry another commit's ``.git``, or none, so the one who runs it says
which tree it is.  Else git's short HEAD, with ``+local changes`` where ``cudaload/`` differs
from it; None where neither says.
"""

from __future__ import annotations

import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def commit() -> str | None:
    for name in ("CUDALOAD_COMMIT", "CUDALOAD_BENCH_COMMIT"):
        if os.environ.get(name):
            return os.environ[name]
    try:
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "cudaload"],
                               capture_output=True, text=True).stdout.strip()
    except OSError:
        return None
    return (head + (" +local changes" if dirty else "")) if head else None
