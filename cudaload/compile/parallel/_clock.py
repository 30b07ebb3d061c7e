"""The timeout of compile_all's jobs on its worker processes (``compile_all(timeout=...)``):
when each busy process began its job, and which are past their time.  A job's time begins when
its process has it and is ready (the process's own start is not counted: a program is timed
from when its worker starts compiling it), so a job waiting for a process never times out.

Imports of cudaload: nothing.
"""

from __future__ import annotations

import time

__all__ = ["Clock"]


class Clock:
    """When each busy process was given its job (ready, the job sent), for the ``timeout`` of
    ``_workers.Workers.run`` (None: nothing is timed)."""

    def __init__(self, timeout: float | None) -> None:
        self.timeout = timeout
        self.started: dict[int, float] = {}  # answers' descriptor -> when its job began
        self.ended: set[int] = set()  # the descriptors of processes past their timeout

    def sent(self, worker) -> None:
        """``worker`` has its job, and begins it if it is ready."""
        if self.timeout is not None and worker.ready:
            self.started[worker.answers] = time.monotonic()

    def wait(self) -> int | None:
        """How long poll() may wait, in ms: until the first job's time is up (None: forever)."""
        if not self.started:
            return None
        first = min(self.started.values()) + self.timeout  # type: ignore[operator]
        return max(0, int((first - time.monotonic()) * 1000) + 1)

    def late(self, busy: dict) -> list:
        """The (descriptor, 0) of each process in ``busy`` past its timeout, noted as ended."""
        now = time.monotonic()
        late = [fd for fd, begun in self.started.items()
                if fd in busy and now - begun >= self.timeout]  # type: ignore[operator]
        self.ended.update(late)
        return [(fd, 0) for fd in late]

    def done(self, fd: int) -> None:
        """The process at ``fd`` has answered (or was ended)."""
        self.started.pop(fd, None)
        self.ended.discard(fd)
