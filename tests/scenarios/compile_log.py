"""Importing this appends a line ``<pid> <key>`` to the file ``$TESTS_COMPILE_LOG`` for each NVRTC
compilation this process makes, read from the ``cudaload.compile`` DEBUG log (nothing when the
variable is unset), with the process id of the record: compile_all's workers send their records
to the process that started them.  Tests that count compilations across independent processes
import it in each one."""

from __future__ import annotations

import logging
import os


class AppendKeys(logging.Handler):
    """Appends ``<pid> <key>`` to ``path`` for each record that carries a cache key."""

    def __init__(self, path: str):
        super().__init__(logging.DEBUG)
        self.path = path

    def emit(self, record: logging.LogRecord) -> None:
        key = getattr(record, "key", None)
        if key:
            with open(self.path, "a") as f:  # one short write per line: O_APPEND keeps lines whole
                f.write(f"{record.process} {key}\n")


def install(path: str) -> None:
    log = logging.getLogger("cudaload.compile")
    log.setLevel(logging.DEBUG)
    log.addHandler(AppendKeys(path))


if os.environ.get("TESTS_COMPILE_LOG"):
    install(os.environ["TESTS_COMPILE_LOG"])
