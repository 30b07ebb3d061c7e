"""Warnings that point at the caller's line: the first frame outside cudaload, however deep in
cudaload the warning is raised (a fixed ``stacklevel`` points at cudaload's own source from
some of the paths that reach it; Python 3.11 has no ``skip_file_prefixes``).
"""

from __future__ import annotations

import os
import sys

__all__ = ["warn"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def warn(message: str, category: type[Warning]) -> None:
    """Warn ``message`` as ``category``, attributed to the first caller outside cudaload."""
    import warnings  # deferred: a process that is never warned never imports it

    # stacklevel 1 is this function's frame, 2 its caller's: count up to the first one outside
    level, frame = 2, sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        level, frame = level + 1, frame.f_back
    warnings.warn(message, category, stacklevel=level)
