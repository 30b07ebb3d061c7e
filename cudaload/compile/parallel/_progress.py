"""compile_all's built-in progress display (``compile_all(progress=True)``, ``cudaload
precompile``): how many programs of how many are done and about how long the rest take, one line
on stderr redrawn with a carriage return, ended with a newline once all are done.  Nothing is
written where stderr is no terminal (a pipe, a file, a CI log), which a redrawn line would fill
with every state of it.

Imports of cudaload: nothing.
"""

from __future__ import annotations

import sys
import time

__all__ = ["Line"]


class Line:
    """A callback ``line(done, total)`` drawing the line (see the module's docstring)."""

    def __init__(self, stream=None) -> None:
        self._stream = sys.stderr if stream is None else stream
        try:
            self._on = bool(self._stream.isatty())
        except (AttributeError, ValueError, OSError):  # no isatty, or closed
            self._on = False
        self._first: tuple[float, int] | None = None  # when the first count came, and it
        self._width = 0  # of the line drawn last, to clear what a shorter one leaves
        self.open = False  # drawn and not yet ended with a newline

    def __call__(self, done: int, total: int) -> None:
        if not self._on:
            return
        now = time.monotonic()
        if self._first is None:
            self._first = (now, done)  # what was found compiled says nothing of the rate
        text = f"cudaload: {done} of {total} programs compiled"
        began, before = self._first
        if before < done < total:
            left = (now - began) / (done - before) * (total - done)
            text += f", about {_duration(left)} left"
        self._draw(text.ljust(self._width))
        self._width = len(text)
        if done >= total:
            self.end()

    def end(self) -> None:
        """End the line drawn (a newline), where one is open: also when compile_all raised."""
        if self.open:
            self._draw("\n")
            self.open = False

    def _draw(self, text: str) -> None:
        try:
            self._stream.write(text if text == "\n" else "\r" + text)
            self._stream.flush()
        except (OSError, ValueError):  # the terminal went away: the compilation goes on
            self._on = False
            return
        self.open = text != "\n"


def _duration(seconds: float) -> str:
    """``seconds`` as a person reads it: 45 s, 3 min 20 s, 2 h 5 min."""
    seconds = int(seconds + 0.5)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"
