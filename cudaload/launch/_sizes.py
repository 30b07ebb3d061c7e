"""Sizes, counts and dimensions given by the caller: integers only.

Layer 3, launch: may import the foundation, bindings, compile and launch.
"""

from __future__ import annotations

import operator

__all__ = ["integer", "byte_count"]


def integer(value, what: str) -> int:
    """``value`` as an int.  Raises TypeError for anything that is no integer: a float such as
    ``n / 256``, which ``int()`` would cut down silently (dropping the tail of the work or of
    the buffer), a string, or a bool."""
    if not isinstance(value, bool):
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise TypeError(f"{what} must be an integer, not {value!r}")


def byte_count(value, what: str, owner: str) -> int:
    """``value`` as a count of bytes, in a message about ``owner`` (a kernel's name).  Raises
    TypeError for anything that is no integer, ValueError for a negative count."""
    try:
        count = integer(value, what)
    except TypeError as exc:
        raise TypeError(f"{owner}: {exc} (a byte count)") from None
    if count < 0:
        raise ValueError(f"{owner}: {what}={count} is negative; pass a byte count")
    return count
