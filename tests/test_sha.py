"""compile/_prepare.py, its sha256: the interpreter's own sha256 for the first bytes, hashlib's after them."""

from __future__ import annotations

import hashlib

import pytest

from cudaload.compile import _prepare


@pytest.mark.parametrize("data", [b"", b"abc", bytes(range(256)) * 300])
def test_the_same_digest_as_hashlib_whichever_hashes(data):
    for left in (0, 1 << 30):  # hashlib's, then the builtin's
        hasher = _prepare._Hasher()
        hasher.left = left if hasher.builtin is not None else 0
        hashed = hasher(data[:10], len(data))
        hashed.update(data[10:])
        assert hashed.hexdigest() == hashlib.sha256(data).hexdigest()


def test_hashlib_takes_over_once_the_budget_is_spent():
    hasher = _prepare._Hasher()
    if hasher.builtin is None:
        pytest.skip("this interpreter has no sha256 of its own")
    hasher.left = 100
    assert type(hasher(b"x" * 50)) is type(hasher.builtin())
    assert type(hasher(b"x" * 60)) is type(hashlib.sha256())  # 50 + 60 > 100
    assert type(hasher(b"x")) is type(hashlib.sha256())  # from then on


def test_the_process_wide_hasher_starts_with_the_whole_budget():
    fresh = _prepare._Hasher()
    assert fresh.left == (_prepare.BUDGET if fresh.builtin is not None else 0)
    assert fresh.openssl is None
