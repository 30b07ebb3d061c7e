"""compile/_sha.py: the interpreter's own sha256 for the first bytes, hashlib's after them."""

from __future__ import annotations

import hashlib

import pytest


@pytest.mark.parametrize("data", [b"", b"abc", bytes(range(256)) * 300])
def test_the_same_digest_as_hashlib_whichever_hashes(monkeypatch, data):
    from cudaload.compile import _sha

    for left in (0, 1 << 30):  # hashlib's, then the builtin's
        monkeypatch.setattr(_sha, "_left", [left if _sha._builtin is not None else 0])
        hashed = _sha.sha256(data[:10], len(data))
        hashed.update(data[10:])
        assert hashed.hexdigest() == hashlib.sha256(data).hexdigest()


def test_hashlib_takes_over_once_the_budget_is_spent(monkeypatch):
    from cudaload.compile import _sha

    if _sha._builtin is None:
        pytest.skip("this interpreter has no sha256 of its own")
    monkeypatch.setattr(_sha, "_left", [100])
    monkeypatch.setattr(_sha, "_openssl", [])
    assert type(_sha.sha256(b"x" * 50)) is type(_sha._builtin())
    assert type(_sha.sha256(b"x" * 60)) is type(hashlib.sha256())  # 50 + 60 > 100
    assert type(_sha.sha256(b"x")) is type(hashlib.sha256())  # from then on
