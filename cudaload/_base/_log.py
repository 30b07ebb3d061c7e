"""What cudaload did, at DEBUG, through the standard ``logging`` module.

Loggers: ``cudaload.loader`` (each library file loaded, and how it was found; each that failed),
``cudaload.toolchain`` (the NVRTC and CUDA header folders chosen), ``cudaload.cache`` (hits,
misses, evictions) and ``cudaload.compile`` (each NVRTC compilation with its cache key, each
recompilation after the driver refused an image), all children of ``cudaload``.  Nothing is
logged above DEBUG, and the launch and memory-hit paths log nothing at all.

A compile worker of ``compile_all`` keeps the records of the topics its caller has on
(:func:`keep_for_parent`) and sends them with each result; the caller hands them to its own loggers
(:func:`replay`), so its log shows what every worker did, under the worker's process id.

``logging`` is not imported here: importing it took about 20 ms on a 2-core machine (threading,
traceback, string, ...), several times the whole ``status()`` of a machine without CUDA.  A
process that has not imported it cannot have asked for DEBUG records, so until then there is
nothing to do.  Imports nothing of cudaload.
"""

from __future__ import annotations

import sys

__all__ = ["TOPICS", "debug", "enabled", "enabled_topics", "keep_for_parent", "replay", "taken"]

TOPICS = ("loader", "toolchain", "cache", "compile")
_loggers: dict = {}
_kept: list = []  # in a compile worker: the records of its job, not yet sent (keep_for_parent)


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


def enabled_topics() -> tuple:
    """The topics whose DEBUG records would go somewhere in this process."""
    return tuple(topic for topic in TOPICS if enabled(topic))


def keep_for_parent(topics, forked: bool = False) -> None:
    """In a worker process: keep the DEBUG records of ``topics`` for :func:`taken` from now on;
    ``forked``: a fork of the caller, whose handlers (its copies) then get none of them."""
    if not topics:
        return
    import logging  # deferred: only this path needs it

    class Keep(logging.Handler):
        def emit(self, record) -> None:
            try:
                _kept.append(_plain(record))
            except Exception:  # as logging's own handlers do: reported, and the work goes on
                self.handleError(record)

    for topic in topics:
        logging.getLogger(f"cudaload.{topic}").setLevel(logging.DEBUG)
    root = logging.getLogger("cudaload")
    if forked:  # the caller's handlers would have every record twice: here, and replayed there
        for name in TOPICS:
            logging.getLogger(f"cudaload.{name}").handlers = []
        root.handlers = []
        root.propagate = False
    root.addHandler(Keep(logging.DEBUG))


def taken() -> list:
    """The records kept since the last call, as picklable dicts."""
    records = _kept[:]
    del _kept[:len(records)]
    return records


def replay(records) -> None:
    """Hand ``records`` (from :func:`taken` in a worker) to this process's loggers, as if logged
    here; each keeps the worker's process id and time."""
    if not records:
        return
    import logging  # deferred: only this path needs it

    for fields in records:
        record = logging.makeLogRecord(fields)
        log = logging.getLogger(record.name)
        if log.isEnabledFor(record.levelno):
            log.handle(record)


def _plain(record) -> dict:
    """``record``'s attributes with its message formatted, each value that does not pickle as
    plain data (the ``fields`` given to :func:`debug` are strings, numbers and dicts of them) as
    its repr."""
    fields = {name: value if _pickles(value) else repr(value)
              for name, value in vars(record).items()}
    fields.update(msg=record.getMessage(), args=None, exc_info=None)
    return fields


def _pickles(value) -> bool:
    if value is None or isinstance(value, (str, int, float)):
        return True
    if not isinstance(value, (dict, tuple, list)):
        return False
    import pickle  # deferred: only this path needs it

    try:
        pickle.dumps(value)
    except Exception:
        return False
    return True
