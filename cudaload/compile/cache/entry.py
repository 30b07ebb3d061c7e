"""The bytes of one kernel cache entry, which bundles also hold.

An entry is ``HEADER`` (magic, format version, metadata length, code length, the key it was stored
under, sha256 of key, metadata and code), then the metadata as JSON (kind, arch, log, lowered
names), then the code.  The key makes an entry prove where it belongs: one copied or renamed to
another key's file is a miss there.  Bundle entries are stored under no key (zeros), and a bundle
written before keys were recorded holds entries of format 1, which lack the field; both are read
only when no key is asked for.

Imports of cudaload: _cache_folder (the format's number), _sha, _untrusted, objectcode.

Layer 2, compile: may import the foundation, bindings and compile.
"""

from __future__ import annotations

import json
import struct

from .._cache_folder import FORMAT
from .._sha import sha256
from ..objectcode import ObjectCode
from ... import _untrusted

__all__ = ["FORMAT", "MAGIC", "HEADER", "MAX_ENTRY_BYTES", "encode", "decode"]

MAX_ENTRY_BYTES = 1 << 30  # far beyond any CUBIN; a larger file is not an entry
MAGIC = b"CUDALDKC"
HEADER = struct.Struct("<8sHIQ32s32s")
_KEYLESS_FORMAT = 1  # entries without a key, still found in older bundles
_KEYLESS_HEADER = struct.Struct("<8sHIQ32s")
_PREFIX = struct.Struct("<8sH")
_NO_KEY = bytes(32)
_KINDS = ("cubin", "ptx", "ltoir")  # what compiles and links make
_META_DEPTH = 3  # {"lowered_names": {...}}: anything deeper is not what this version writes


def _key_bytes(key: str | None) -> bytes:
    if key is None:
        return _NO_KEY
    if len(key) == 64:
        try:
            return bytes.fromhex(key)  # the cache's keys are sha256 hex digests
        except ValueError:
            pass
    return sha256(key.encode()).digest()


def encode(obj: ObjectCode, key: str | None = None) -> bytes:
    """The bytes of the cache entry holding ``obj`` stored under ``key`` (None: a bundle's)."""
    # "linked" only where true: the entries of other programs stay as earlier versions wrote them.
    meta = json.dumps({"kind": obj.kind, "arch": obj.arch, "log": obj.log,
                       "lowered_names": obj.lowered_names, **({"linked": True} if obj.linked else {})},
                      sort_keys=True).encode()
    tag = _key_bytes(key)
    digest = sha256(tag + meta + obj.code).digest()
    return HEADER.pack(MAGIC, FORMAT, len(meta), len(obj.code), tag, digest) + meta + obj.code


def decode(data: bytes, key: str | None = None) -> ObjectCode | None:
    """The ObjectCode in a cache entry, or None if the entry is truncated, corrupt, foreign, or
    (with ``key``) stored under another key."""
    if len(data) < _KEYLESS_HEADER.size:
        return None
    magic, version = _PREFIX.unpack_from(data)
    if magic != MAGIC:
        return None
    if version == FORMAT and len(data) >= HEADER.size:
        _m, _v, meta_len, code_len, tag, digest = HEADER.unpack_from(data)
        if key is not None and tag != _key_bytes(key):
            return None
        start = HEADER.size
    elif version == _KEYLESS_FORMAT and key is None:
        _m, _v, meta_len, code_len, digest = _KEYLESS_HEADER.unpack_from(data)
        tag, start = None, _KEYLESS_HEADER.size
    else:
        return None
    if len(data) != start + meta_len + code_len:
        return None
    body = memoryview(data)[start:]
    hashed = sha256(tag or b"", len(body))
    hashed.update(body)
    if hashed.digest() != digest:
        return None
    try:
        meta = _untrusted.load_json(bytes(body[:meta_len]), _META_DEPTH)
        kind, arch, log, names = meta["kind"], meta["arch"], meta["log"], meta["lowered_names"]
        linked = meta.get("linked", False)
    except (ValueError, KeyError, TypeError):
        return None
    # An entry whose hash matches but whose fields are not what this version writes (another
    # writer using the same format number) is a miss, not an ObjectCode the driver chokes on.
    if kind not in _KINDS or not isinstance(arch, (str, type(None))) \
            or not isinstance(log, str) or not isinstance(names, dict) or type(linked) is not bool \
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in names.items()):
        return None
    return ObjectCode(bytes(body[meta_len:]), kind, arch, log=log, lowered_names=dict(names),
                      cached="disk", linked=linked is True)
