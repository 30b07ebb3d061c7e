"""Sizes, counts and dimensions given by the caller: integers only, dimensions of one to three,
each within the range of the C type the driver takes it as.

Every integer that reaches the driver is checked here first: cffi would raise a bare
OverflowError for one its C type cannot hold, and ``ffi.cast`` would cut it short silently (a
stream handle of ``2**64`` would become the legacy default stream).
"""

from __future__ import annotations

import operator

__all__ = ["C_INT", "C_UINT", "C_UINT64", "integer", "bounded", "byte_count", "allocation_size",
           "dims", "constant"]

# (least, greatest) of the C integer types the driver's entry points take
C_INT = (-(1 << 31), (1 << 31) - 1)  # int: ordinals, attribute values, block sizes, priorities
C_UINT = (0, (1 << 32) - 1)  # unsigned int: grid, block and cluster dimensions, shared memory
C_UINT64 = (0, (1 << 64) - 1)  # size_t, CUdeviceptr, cuuint64_t: sizes, addresses, handles


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


def bounded(value, what: str, low: int, high: int) -> int:
    """``value`` as an int in ``low..high`` (a C type's range such as :data:`C_UINT64`, or a
    narrower one).  Raises TypeError for anything that is no integer, ValueError outside the
    range, naming the range and the value."""
    n = integer(value, what)
    if not low <= n <= high:
        raise ValueError(f"{what} = {n} is out of range: it must be {_bound(low)}..{_bound(high)}")
    return n


def _bound(n: int) -> str:
    """A range's end as written in a message: ``2**64-1`` rather than twenty digits."""
    if n > 1 << 16 and (n + 1) & n == 0:
        return f"2**{n.bit_length()}-1"
    if n < -(1 << 16) and -n & (-n - 1) == 0:
        return f"-2**{(-n).bit_length() - 1}"
    return str(n)


def byte_count(value, what: str, owner: str) -> int:
    """``value`` as a count of bytes of shared memory (an unsigned int for the driver), in a
    message about ``owner`` (a kernel's name).  Raises TypeError for anything that is no integer,
    ValueError for a negative count or one past 2**32-1."""
    try:
        return bounded(value, what, *C_UINT)
    except TypeError as exc:
        raise TypeError(f"{owner}: {exc} (a byte count)") from None
    except ValueError as exc:
        raise ValueError(f"{owner}: {exc} bytes") from None


def allocation_size(nbytes) -> int:
    """``nbytes`` of an allocation as an int (a size_t).  Raises TypeError for no integer,
    ValueError for a negative size or one past 2**64-1."""
    return bounded(nbytes, "nbytes", *C_UINT64)


def constant(dims) -> bool:
    """Whether ``dims`` can never change: an int, or a tuple of ints (not of numpy arrays)."""
    return type(dims) is int or (type(dims) is tuple and all(type(d) is int for d in dims))


def dims(value, what: str) -> tuple[int, int, int]:
    """A grid, block or cluster as three ints, each 1..2**32-1 (the driver's unsigned int; a
    device's own limits are the driver's or the launch's to check).  Raises TypeError,
    ValueError."""
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
    if max(dims) > C_UINT[1]:
        raise ValueError(f"{what} {value!r} is out of range: each dimension must be "
                         f"1..{_bound(C_UINT[1])}")
    return dims[0], dims[1], dims[2]
