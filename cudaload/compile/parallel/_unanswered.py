"""The answers of compile_all's jobs that their process never answered (_workers.py): it died
(:class:`Died`), or the job was past its timeout (:class:`Late`).

Imports of cudaload: nothing.
"""

from __future__ import annotations

__all__ = ["Died", "Late"]


class Died:
    """The answer of a job whose process died before answering."""

    __slots__ = ("exitcode",)
    # the hint of the error its program gets
    HINT = ("compile this program alone with Program.compile() to see why (NVRTC may have "
            "crashed on it)")

    def __init__(self, exitcode: int | None) -> None:
        self.exitcode = exitcode  # as subprocess says: -N for signal N

    def __str__(self) -> str:
        if self.exitcode is not None and self.exitcode < 0:
            import signal  # deferred: only a death's message names the signal

            try:
                name = signal.Signals(-self.exitcode).name
            except ValueError:
                name = "signal"
            return f"it was killed by {name} ({-self.exitcode})"
        return f"it exited with status {self.exitcode}"


class Late:
    """The answer of a job not answered within ``timeout`` seconds: its process was ended
    (``ended``), or its future cancelled (an executor's, _executor.py)."""

    __slots__ = ("timeout", "ended")
    # the hint of the error its program gets
    HINT = ("compile this program alone with Program.compile() to see whether it finishes, or "
            "give compile_all a longer timeout (None: no limit)")

    def __init__(self, timeout: float, ended: bool = True) -> None:
        self.timeout, self.ended = timeout, ended

    def __str__(self) -> str:
        then = "its process was ended" if self.ended else "its future was cancelled"
        return f"it was not done within the timeout of {self.timeout:g} s; {then}"
