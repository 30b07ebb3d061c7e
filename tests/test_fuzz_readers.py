"""Property tests of every reader of files another process may have written: a cache entry,
toolchain.json's records and a bundle's index.  Whatever the bytes, each gives the documented
result (None, {}, a Toolchain, a ValueError) or a correct one, never another exception.

Bounded for CI: a few hundred examples each, and a time limit per example.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from cudaload._base import _untrusted
from tests._support import run_json

from cudaload.compile import cache, toolchain
from cudaload.compile.bundle import BUNDLE_HEADER, FORMAT as BUNDLE_FORMAT, MAGIC as BUNDLE_MAGIC, Bundle
from cudaload.compile.bundle import _parse as parse_bundle
from cudaload.compile.objectcode import ObjectCode

FAST = settings(max_examples=200, deadline=timedelta(milliseconds=500),
                suppress_health_check=[HealthCheck.too_slow])
KEY, OTHER_KEY = "ab" * 32, "cd" * 32

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) \
    | st.text(max_size=12)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                           max_leaves=24)


def _depth(value) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


# --- bounded JSON ---------------------------------------------------------------------------

@FAST
@given(st.binary(max_size=300) | json_values.map(lambda v: json.dumps(v).encode()),
       st.integers(0, 6))
def test_load_json_gives_a_value_within_its_depth_or_a_value_error(data, depth):
    try:
        value = _untrusted.load_json(data, depth)
    except ValueError:
        return
    assert _depth(value) <= depth and value == json.loads(data)


@FAST
@given(st.integers(1, 5000), st.integers(0, 10), st.sampled_from(["[", "{\"a\":"]))
def test_load_json_refuses_exactly_what_nests_too_deeply(levels, depth, opener):
    close = "]" if opener == "[" else "}"
    text = (opener * levels + "1" + close * levels).encode()
    if levels > depth:
        with pytest.raises(ValueError, match="nested"):
            _untrusted.load_json(text, depth)
    else:
        assert _depth(_untrusted.load_json(text, depth)) == levels


@FAST
@given(json_values | st.floats() | st.text(), st.booleans())
def test_dump_json_writes_the_text_json_dumps_writes(value, sort_keys):
    # Cache keys hash this text (toolchain identities): it must never drift from json.dumps.
    assert _untrusted.dump_json(value, sort_keys) == json.dumps(value, sort_keys=sort_keys)
    if isinstance(value, (list, dict)):
        assert _untrusted.load_json(json.dumps(value).encode(), 99) == value


def test_dump_json_refuses_what_json_dumps_refuses():
    for value in ({1j: 1}, [object()], {"a": {b"x"}}):
        with pytest.raises(TypeError) as ours:
            _untrusted.dump_json(value)
        with pytest.raises(TypeError) as theirs:
            json.dumps(value)
        assert str(ours.value) == str(theirs.value)


_WITHOUT_JSON = r"""
import sys
before = set(sys.modules)  # an interpreter's start may import some (.pth files of site-packages)
from cudaload._base import _untrusted
texts = [b' {"a": [1, 2.5, "x\\u00e9", null, true, -Infinity]} ', b'[1]', b'{"a" 1}', b'[1,]',
         b'"abc', b'', b'[1] x', b'\xef\xbb\xbf[1]', b'[1', b'{"a": "\x01"}', b'\x00[1]']
got = []
for n, text in enumerate(texts):
    if n == 2:  # what is read and written whole imports nothing; an error may import json
        written = _untrusted.dump_json({"b": [1, None, "\u00e9"], "a": 1.5}, sort_keys=True)
        imported = [m for m in ("json", "re", "enum") if m in set(sys.modules) - before]
    try:
        got.append(["value", repr(_untrusted.load_json(text, 4))])
    except ValueError as exc:
        got.append(["error", type(exc).__name__, str(exc)])
import json
expected = []
for text in texts:
    try:
        expected.append(["value", repr(json.loads(text))])
    except ValueError as exc:
        expected.append(["error", type(exc).__name__, str(exc)])
print(json.dumps({"imported": imported, "same": got == expected, "got": got,
                  "written": written == json.dumps({"b": [1, None, "\u00e9"], "a": 1.5},
                                                   sort_keys=True)}))
"""


def test_json_read_and_written_without_importing_json_is_json_s_own():
    # A fresh process, json not imported: the C scanner reports its errors through
    # json.decoder, which it does not import itself; each value and each error must be
    # json.loads's all the same.
    out = run_json(_WITHOUT_JSON)
    assert out["same"] and out["written"], out
    assert out["imported"] == [], out


# --- cache entries --------------------------------------------------------------------------

def _sealed(meta: bytes, code: bytes, key: str | None) -> bytes:
    tag = bytes.fromhex(key) if key else bytes(32)
    return cache.HEADER.pack(cache.MAGIC, cache.FORMAT, len(meta), len(code), tag,
                             hashlib.sha256(tag + meta + code).digest()) + meta + code


def _sound(obj) -> bool:
    """Whether a decoded entry has the field types the driver and the callers expect."""
    return (obj.kind in ("cubin", "ptx") and isinstance(obj.code, bytes)
            and isinstance(obj.arch, (str, type(None))) and isinstance(obj.log, str)
            and all(isinstance(k, str) and isinstance(v, str)
                    for k, v in obj.lowered_names.items()))


@FAST
@given(st.binary(max_size=400), st.sampled_from([None, KEY]))
def test_decode_of_any_bytes_is_none_or_a_sound_entry(data, key):
    obj = cache.decode(data, key)
    assert obj is None or _sound(obj)


meta_fields = st.fixed_dictionaries(
    {"kind": st.sampled_from(["cubin", "ptx"]) | json_values,
     "arch": st.sampled_from(["sm_90", None]) | json_values,
     "log": st.text(max_size=20) | json_values,
     "lowered_names": st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3)
     | json_values})


@FAST
@given(meta_fields | json_values, st.binary(max_size=64), st.booleans())
def test_a_sealed_entry_is_a_sound_entry_under_its_own_key_only(meta, code, as_text):
    raw = json.dumps(meta).encode() if as_text else json.dumps(meta, indent=1).encode()
    entry = _sealed(raw, code, KEY)
    obj = cache.decode(entry, KEY)
    assert obj is None or (_sound(obj) and obj.code == code)
    assert cache.decode(entry, OTHER_KEY) is None


@FAST
@given(st.data())
def test_a_damaged_real_entry_is_a_miss_or_unchanged(data):
    obj = ObjectCode(b"\x7fELF" + b"c" * 40, "cubin", "sm_90", log="w",
                     lowered_names={"f<int>": "_Z1fIiEvv"})
    entry = bytearray(cache.encode(obj, KEY))
    for _ in range(data.draw(st.integers(1, 4))):
        where = data.draw(st.integers(0, len(entry)))
        how = data.draw(st.sampled_from(["flip", "insert", "delete", "cut"]))
        if how == "flip" and where < len(entry):
            entry[where] ^= data.draw(st.integers(1, 255))
        elif how == "insert":
            entry[where:where] = data.draw(st.binary(min_size=1, max_size=8))
        elif how == "delete":
            del entry[where:where + data.draw(st.integers(1, 8))]
        else:
            del entry[where:]
    got = cache.decode(bytes(entry), KEY)
    if bytes(entry) == cache.encode(obj, KEY):
        assert got.code == obj.code and got.lowered_names == obj.lowered_names
    else:
        assert got is None


# --- toolchain.json -------------------------------------------------------------------------

REAL_SHAPE = {"path": "/nonexistent/libnvrtc.so.13", "stat": [1, 2, 3, 4], "version": [13, 0],
              "build": "1-ab", "archs": [75, 90], "found_via": "search",
              "headers": [["cudart", "/nonexistent/include", "[1, null]"], ["cccl", None, None]],
              "search": None}


def _near(field_values: dict) -> dict:
    return {**REAL_SHAPE, **field_values}


entries = st.dictionaries(st.sampled_from(sorted(REAL_SHAPE)), json_values, max_size=3).map(_near) \
    | json_values


def _check_toolchain_readers(record) -> None:
    """Every use toolchain.py makes of a record read from disk, as current() and the probe do."""
    known = toolchain._entries(record).get(toolchain._selector())
    assert known is None or isinstance(known, dict)
    assert isinstance(toolchain._still_valid(known), bool)
    headers = toolchain._known_headers(known)
    assert headers is None or isinstance(headers, tuple)
    if known:  # what the probe reads of it
        known.get("path"), known.get("stat"), known["build"], known.get("found_via")
    found = toolchain._from_record(record)
    assert found is None or (isinstance(found, toolchain.Toolchain) and isinstance(found.key, str))


@FAST
@given(entries, st.booleans())
def test_any_remembered_nvrtc_is_used_or_ignored(entry, under_this_environment):
    env = toolchain._selector() if under_this_environment else "another environment"
    _check_toolchain_readers({"nvrtc": {env: entry}})


@FAST
@given(json_values)
def test_any_json_record_is_used_or_ignored(record):
    if isinstance(record, dict):
        _check_toolchain_readers(record)


@settings(FAST, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.binary(max_size=300) | st.builds(lambda v: json.dumps({"nvrtc": v}).encode(),
                                           json_values))
def test_any_toolchain_file_reads_as_a_dict(tmp_path, monkeypatch, data):
    monkeypatch.setenv("CUDALOAD_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("CUDALOAD_CACHE_SHARED", raising=False)
    (tmp_path / toolchain.RECORD).write_bytes(data)
    record = toolchain._read_record()
    assert isinstance(record, dict)
    _check_toolchain_readers(record)


# --- bundle index ---------------------------------------------------------------------------

index_entries = st.fixed_dictionaries(
    {"program": st.text(max_size=8) | json_values, "name": st.text(max_size=8) | json_values,
     "kind": st.sampled_from(["cubin", "ptx"]) | json_values,
     "arch": st.sampled_from(["sm_90", "sm_80", "sm_90a", "sm_0", "90"]) | json_values,
     "name_expressions": st.lists(st.text(max_size=4), max_size=2) | json_values,
     "offset": st.integers(-5, 200) | json_values, "length": st.integers(-5, 200) | json_values})


def _bundle(index, tail: bytes) -> bytes:
    text = json.dumps(index).encode()
    return BUNDLE_HEADER.pack(BUNDLE_MAGIC, BUNDLE_FORMAT, len(text)) + text + tail


@FAST
@given(st.binary(max_size=300)
       | st.builds(_bundle, st.builds(lambda e: {"entries": e}, st.lists(index_entries, max_size=3))
                   | json_values, st.binary(max_size=200)))
def test_any_bundle_parses_to_sound_entries_or_a_value_error(data):
    try:
        found = parse_bundle(data)
    except ValueError:
        return
    for (digest, kind, arch), e in found.items():
        assert kind == "cubin" and isinstance(digest, str) and isinstance(arch, str)
        assert 0 <= e["offset"] <= e["offset"] + e["length"] <= len(data)


class _Program:  # what Bundle.find reads of a Program
    _digest = hashlib.sha256(b"p").digest()

    def _bundle_digest(self):
        return self._digest


@FAST
@given(st.lists(index_entries, max_size=3), st.binary(max_size=200),
       st.sampled_from([90, 86, "sm_90a", 80]))
def test_finding_in_any_bundle_is_a_sound_entry_or_none(entries_, tail, arch):
    for e in entries_:
        e["program"] = _Program._digest.hex()  # so that find looks at every entry
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = Bundle(_bundle({"entries": entries_}, tail)).find(_Program(), arch)
    assert found is None or _sound(found)
