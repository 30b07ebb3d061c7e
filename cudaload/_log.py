"""What cudaload did, at DEBUG, through the standard ``logging`` module.

Loggers: ``cudaload.loader`` (each library file loaded, and how it was found; each that failed),
``cudaload.toolchain`` (the NVRTC and CUDA header folders chosen), ``cudaload.cache`` (hits,
misses, evictions) and ``cudaload.compile`` (each NVRTC compilation with its cache key, each
recompilation after the driver refused an image), all children of ``cudaload``.  Nothing is
logged above DEBUG, and the launch and memory-hit paths log nothing at all.

``logging`` is not imported here: importing it took about 20 ms on a 2-core machine (threading,
traceback, string, ...), several times the whole ``status()`` of a machine without CUDA.  A
process that has not imported it cannot have asked for DEBUG records, so until then there is
nothing to do.  Imports nothing of cudaload.

Foundation: imports only other foundation modules of cudaload, if any.
"""

from __future__ import annotations

import sys

__all__ = ["enabled", "debug"]

_loggers: dict = {}


def _logger(topic: str):
    """The logger ``cudaload.<topic>`` when DEBUG is on for it, else None."""
    logging = sys.modules.get("logging")
    if logging is None:
        return None
    log = _loggers.get(topic)
    if log is None:
        log = _loggers[topic] = logging.getLogger(f"cudaload.{topic}")
    return log if log.isEnabledFor(logging.DEBUG) else None


def enabled(topic: str) -> bool:
    """Whether a DEBUG record of ``cudaload.<topic>`` would go anywhere: a guard for messages
    whose arguments cost something to build."""
    return _logger(topic) is not None


def debug(topic: str, message: str, *args, **fields) -> None:
    """Log ``message % args`` at DEBUG to ``cudaload.<topic>``; ``fields`` become attributes of
    the record (``record.key``), for handlers that want data rather than text."""
    log = _logger(topic)
    if log is not None:
        log.debug(message, *args, extra=fields or None, stacklevel=2)
