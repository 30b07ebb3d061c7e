"""Sizes, counts and dimensions given by the caller: integers only, dimensions of one to three.
"""

from __future__ import annotations

import operator

__all__ = ["integer", "byte_count", "dims", "constant"]


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


def allocation_size(nbytes) -> int:
    """``nbytes`` of an allocation as an int.  Raises TypeError for no integer, ValueError for a
    negative size."""
    nbytes = integer(nbytes, "nbytes")
    if nbytes < 0:
        raise ValueError(f"cannot allocate {nbytes} bytes")
    return nbytes


def constant(dims) -> bool:
    """Whether ``dims`` can never change: an int, or a tuple of ints (not of numpy arrays)."""
    return type(dims) is int or (type(dims) is tuple and all(type(d) is int for d in dims))


def dims(value, what: str) -> tuple[int, int, int]:
    """A grid, block or cluster as three ints.  Raises TypeError, ValueError."""
    try:
        dims: tuple[int, ...] = (integer(value, what), 1, 1)
    except TypeError:
        try:
            dims = tuple(integer(v, what) for v in value)
        except TypeError:
            raise TypeError(f"{what} must be an int or a tuple of up to three ints, "
                            f"not {value!r} (round a computed size up: (n + 255) // 256)") from None
        if not 1 <= len(dims) <= 3:
            raise ValueError(f"{what} must have one to three dimensions, not {value!r}")
        dims += (1,) * (3 - len(dims))
    if min(dims) < 1:
        raise ValueError(f"{what} dimensions must be at least 1, not {value!r}")
    return dims[0], dims[1], dims[2]
