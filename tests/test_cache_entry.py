"""The bytes of one cache entry (cudaload/compile/objectcode.py, encode/decode), field by
field: what is written, and each way an entry read back is refused."""

from __future__ import annotations

import hashlib
import json
import struct

import pytest

from cudaload.compile import objectcode as _entry
from cudaload.compile.objectcode import ObjectCode

KEY = "ab" * 32
CODE = b"\x7fELF" + b"c" * 40


def _obj(**kw) -> ObjectCode:
    fields = dict(log="a warning", lowered_names={"f<1>": "_Z1fILi1EEvv"})
    fields.update(kw)
    return ObjectCode(CODE, "cubin", "sm_90", **fields)


def _sealed(meta: dict, code: bytes = CODE, key: str | None = KEY, version: int = 2,
            magic: bytes = _entry.MAGIC) -> bytes:
    """An entry of ``meta`` and ``code`` whose hash is right, whatever its fields say."""
    raw = json.dumps(meta).encode()
    tag = _entry._key_bytes(key)
    digest = hashlib.sha256(tag + raw + code).digest()
    return _entry.HEADER.pack(magic, version, len(raw), len(code), tag, digest) + raw + code


META = {"kind": "cubin", "arch": "sm_90", "log": "", "lowered_names": {}}


def test_an_entry_is_its_header_then_its_metadata_then_its_code():
    data = _entry.encode(_obj(), KEY)
    magic, version, meta_len, code_len, tag, digest = _entry.HEADER.unpack_from(data)
    assert (magic, version, code_len) == (b"CUDALDKC", 2, len(CODE))
    assert tag == bytes.fromhex(KEY)
    meta = data[_entry.HEADER.size:_entry.HEADER.size + meta_len]
    assert json.loads(meta) == {"kind": "cubin", "arch": "sm_90", "log": "a warning",
                                "lowered_names": {"f<1>": "_Z1fILi1EEvv"}}  # no "linked"
    assert data[_entry.HEADER.size + meta_len:] == CODE
    assert digest == hashlib.sha256(tag + meta + CODE).digest()
    assert len(data) == _entry.HEADER.size + meta_len + len(CODE)


def test_what_is_written_is_read_back_as_a_disk_entry():
    for linked in (False, True):
        obj = _entry.decode(_entry.encode(_obj(linked=linked), KEY), KEY)
        assert (obj.code, obj.kind, obj.arch, obj.log) == (CODE, "cubin", "sm_90", "a warning")
        assert obj.lowered_names == {"f<1>": "_Z1fILi1EEvv"} and obj.cached == "disk"
        assert obj.linked is linked
    ptx = ObjectCode(b".version 8.0", "ptx", None)
    assert _entry.decode(_entry.encode(ptx, KEY), KEY).arch is None
    data = _entry.encode(_obj(linked=True), KEY)
    meta_len = _entry.HEADER.unpack_from(data)[2]
    assert json.loads(data[_entry.HEADER.size:_entry.HEADER.size + meta_len])["linked"] is True


def test_keys_are_recorded_as_their_digest_or_hashed():
    assert _entry._key_bytes(None) == bytes(32)
    assert _entry._key_bytes(KEY) == bytes.fromhex(KEY)
    odd = "z" * 64  # 64 characters, not hex
    assert _entry._key_bytes(odd) == hashlib.sha256(odd.encode()).digest()
    assert _entry._key_bytes("short") == hashlib.sha256(b"short").digest()
    data = _entry.encode(_obj(), odd)
    assert _entry.decode(data, odd) is not None and _entry.decode(data, "z" * 63 + "y") is None
    assert _entry.decode(_entry.encode(_obj(), "short"), "short") is not None


def test_an_entry_under_another_key_or_none_is_a_miss_where_a_key_is_asked_for():
    data = _entry.encode(_obj(), KEY)
    assert _entry.decode(data, "cd" * 32) is None
    assert _entry.decode(data, None) is not None  # a bundle asks for no key
    keyless = _entry.encode(_obj())  # a bundle's entry
    assert _entry.HEADER.unpack_from(keyless)[4] == bytes(32)
    assert _entry.decode(keyless, None) is not None and _entry.decode(keyless, KEY) is None


def _keyless(meta: dict, code: bytes = CODE) -> bytes:
    raw = json.dumps(meta).encode()
    return _entry._KEYLESS_HEADER.pack(_entry.MAGIC, 1, len(raw), len(code),
                                       hashlib.sha256(raw + code).digest()) + raw + code


def test_entries_of_format_1_are_read_only_without_a_key():
    old = _keyless(META)
    assert _entry.decode(old, None).code == CODE
    assert _entry.decode(old, KEY) is None
    assert _entry.decode(old[:-1], None) is None
    assert _entry.decode(_keyless(META)[:-1] + b"\0", None) is None  # hash


def test_short_foreign_or_unknown_entries_are_misses():
    good = _entry.encode(_obj(), KEY)
    assert _entry.decode(b"", KEY) is None
    assert _entry.decode(good[:_entry._KEYLESS_HEADER.size - 1], KEY) is None
    assert _entry.decode(good[:_entry.HEADER.size], KEY) is None
    assert _entry.decode(b"NOTCUDAL" + good[8:], KEY) is None
    assert _entry.decode(good[:8] + struct.pack("<H", 3) + good[10:], KEY) is None
    assert _entry.decode(good + b"\0", KEY) is None and _entry.decode(good[:-1], KEY) is None
    flipped = bytearray(good)
    flipped[-1] ^= 1
    assert _entry.decode(bytes(flipped), KEY) is None
    assert _entry.decode(_sealed(META, magic=b"CUDALDKX"), KEY) is None
    assert _entry.decode(_sealed(META, version=3), KEY) is None
    assert _entry.decode(_sealed(META), KEY) is not None  # the control


@pytest.mark.parametrize("meta", [
    {**META, "kind": "sass"}, {**META, "arch": 90}, {**META, "log": None},
    {**META, "lowered_names": []}, {**META, "lowered_names": {"f": 1}},
    {**META, "lowered_names": {"f": "g", "h": None}}, {**META, "linked": 1},
    {**META, "linked": "yes"}, {**META, "linker": "nvcc"}, {**META, "linker": ""},
    {**META, "linker": ["driver"]}, {k: v for k, v in META.items() if k != "log"},
    {k: v for k, v in META.items() if k != "kind"}, [1, 2], "text"])
def test_an_entry_whose_fields_are_not_what_this_version_writes_is_a_miss(meta):
    assert _entry.decode(_sealed(meta), KEY) is None


@pytest.mark.parametrize("meta", [
    META, {**META, "kind": "ptx", "arch": None}, {**META, "linked": False},
    {**META, "linked": True}, {**META, "lowered_names": {"a": "b", "c": "d"}}])
def test_an_entry_whose_fields_are_what_this_version_writes_is_read(meta):
    obj = _entry.decode(_sealed(meta), KEY)
    assert (obj.kind, obj.arch, obj.lowered_names) == (meta["kind"], meta["arch"],
                                                       meta["lowered_names"])
    assert obj.linked is meta.get("linked", False)


def test_the_linker_that_made_the_code_is_recorded_and_read_back_and_none_where_unrecorded():
    for linker in ("nvJitLink", "driver"):
        obj = _obj()
        obj._linker = linker
        data = _entry.encode(obj, KEY)
        meta_len = _entry.HEADER.unpack_from(data)[2]
        assert json.loads(data[_entry.HEADER.size:_entry.HEADER.size + meta_len])["linker"] \
            == linker
        again = _entry.decode(data, KEY)
        assert again._linker == linker and again._as("memory")._linker == linker
    # compiled code, and an entry written before the linker was recorded: none recorded
    assert _entry.decode(_entry.encode(_obj(), KEY), KEY)._linker is None
    assert _entry.decode(_sealed(META), KEY)._linker is None


def test_metadata_that_is_not_json_is_a_miss():
    code = CODE
    raw = b"{not json"
    digest = hashlib.sha256(bytes.fromhex(KEY) + raw + code).digest()
    data = _entry.HEADER.pack(_entry.MAGIC, 2, len(raw), len(code), bytes.fromhex(KEY),
                              digest) + raw + code
    assert _entry.decode(data, KEY) is None


def test_a_key_of_another_length_is_hashed_even_when_it_is_hex():
    assert _entry._key_bytes("abcd") == hashlib.sha256(b"abcd").digest()
    assert _entry._key_bytes("ab" * 33) == hashlib.sha256(b"ab" * 33).digest()


def test_the_same_entry_gives_the_same_bytes_whatever_order_its_names_were_made_in():
    """Bundles and caches built twice from the same compiles are identical, byte for byte."""
    one = _obj(lowered_names={"b": "_Z1bv", "a": "_Z1av"}, log="")
    two = _obj(lowered_names={"a": "_Z1av", "b": "_Z1bv"}, log="")
    assert _entry.encode(one, KEY) == _entry.encode(two, KEY)


def test_an_entry_whose_lengths_disagree_with_its_size_is_a_miss_though_its_hash_holds():
    raw = json.dumps(META).encode()
    tag = bytes.fromhex(KEY)
    digest = hashlib.sha256(tag + raw + CODE).digest()
    for meta_len, code_len in ((len(raw), len(CODE) - 1), (len(raw) - 1, len(CODE)),
                               (len(raw), len(CODE) + 1)):
        data = _entry.HEADER.pack(_entry.MAGIC, 2, meta_len, code_len, tag, digest) + raw + CODE
        assert _entry.decode(data, KEY) is None


def test_an_entry_file_beyond_the_bound_is_no_entry(tmp_path, monkeypatch):
    from cudaload.compile import cache
    from cudaload.compile.cache import disk as _disk

    assert _entry.MAX_ENTRY_BYTES == cache.MAX_ENTRY_BYTES == 1 << 30  # far beyond any CUBIN
    disk = cache.DiskCache(tmp_path)
    disk.store(KEY, _obj())
    assert disk.lookup(KEY) is not None
    monkeypatch.setattr(_disk, "MAX_ENTRY_BYTES", len(_entry.encode(_obj(), KEY)) - 1)
    assert disk.lookup(KEY) is None
