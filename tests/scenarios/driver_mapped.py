"""Importing this (``sitecustomize`` does, in every process a test starts, compile_all's workers
included) appends ``<pid> <whether libcuda is mapped>`` to ``$TESTS_DRIVER_LOG`` for each NVRTC
compilation made in this process, read from the ``cudaload.compile`` DEBUG log."""

from __future__ import annotations

import logging
import os


def _maps() -> str:
    try:
        with open("/proc/self/maps") as f:
            return f.read()
    except OSError:
        return ""


class DriverMapped(logging.Handler):
    """Writes this process's id and whether libcuda is mapped, for each compilation made here."""

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, "key", None) and record.process == os.getpid():
            mapped = os.environ.get("CUDALOAD_LIBCUDA", "libcuda") in _maps()
            with open(os.environ["TESTS_DRIVER_LOG"], "a") as f:
                f.write(f"{os.getpid()} {int(mapped)}\n")


if os.environ.get("TESTS_DRIVER_LOG"):
    logging.getLogger("cudaload.compile").setLevel(logging.DEBUG)
    logging.getLogger("cudaload.compile").addHandler(DriverMapped(logging.DEBUG))
