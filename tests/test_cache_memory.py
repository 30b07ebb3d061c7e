"""The in-process kernel cache (compile/cache/memory.py) and the remembered Program arguments
(compile/_prepare.py): bounded, least recently used first, never dropping code in use."""

from __future__ import annotations

import gc

import pytest

from tests._support import scenario_json


def _code(n: int, tag: int = 0):
    from cudaload.compile.objectcode import ObjectCode

    return ObjectCode(b"\x7fELF" + bytes([tag % 256]) * n, "cubin", "sm_90")


def _cache(limit: int):
    from cudaload.compile.cache.memory import MemoryCache

    return MemoryCache(lambda: limit)


def test_held_bytes_stay_within_the_bound_and_the_least_recently_used_go_first():
    from cudaload.compile.cache.memory import ENTRY_OVERHEAD

    size = 1000 + ENTRY_OVERHEAD
    memory = _cache(5 * size)
    for i in range(50):
        memory.put(i, _code(996, i), (), 1000 - 4)  # 1000 bytes with the 4 of the ELF magic
        assert memory.nbytes <= 5 * size
        assert memory.get(0) is not None or i >= 5  # 0 is asked for every time: it stays
    gc.collect()
    assert len(memory) == 5 and memory.get(0) is not None
    assert [memory.get(i) is not None for i in range(45, 50)] == [False] + [True] * 4
    assert memory.get(1) is None  # dropped, and no longer alive anywhere


def test_the_same_key_object_asked_again_keeps_the_order_least_recently_used_first():
    # Program.compile asks with one key object per program: the most recent is not moved again
    size = 100
    memory, keys = _cache(3 * (size + _overhead())), [("digest", f"sm_90/{i}") for i in range(5)]
    objs = [_code(96, i) for i in range(5)]  # kept alive: dropped entries are still found
    for i in range(3):
        memory.put(keys[i], objs[i], (), size - 4)
    memory.get(keys[0])
    memory.get(keys[0])  # the newest already
    memory.get(keys[1])
    memory.get(keys[0])
    memory.put(keys[3], objs[3], (), size - 4)  # one too many: 2 is the least recently used
    assert list(memory._held) == [keys[1], keys[0], keys[3]]
    memory.pop(keys[3])  # the newest goes: the next get of 0 moves it again
    memory.get(keys[1])
    memory.put(keys[4], objs[4], (), size - 4)
    memory.put(keys[2], objs[2], (), size - 4)
    assert list(memory._held) == [keys[1], keys[4], keys[2]]
    memory.clear()
    memory.put(keys[0], objs[0], (), size - 4)
    memory.put(keys[1], objs[1], (), size - 4)
    memory.get(keys[0])
    memory.put(keys[2], objs[2], (), size - 4)  # now the newest: 0 must move when asked again
    memory.get(keys[0])
    assert list(memory._held) == [keys[1], keys[2], keys[0]]


def _overhead() -> int:
    from cudaload.compile.cache.memory import ENTRY_OVERHEAD

    return ENTRY_OVERHEAD


def test_code_alive_elsewhere_is_found_again_after_it_is_dropped():
    memory = _cache(3000)
    obj = _code(1500)
    entry = memory.put("key", obj, ("stamps",), 1500)
    for i in range(20):  # more than the bound: "key" is dropped from what the cache holds
        memory.put(i, _code(1500, i), (), 1500)
    assert "key" not in memory._held
    found = memory.get("key")
    assert found is not None and found.code is entry.code is obj._memory_copy
    assert found.code.cached == "memory" and found.stamps == ("stamps",)
    assert found.size == entry.size == 1500 + _overhead()
    assert "key" in memory._held  # held again: it was used
    del obj, found, entry
    for i in range(20, 40):
        memory.put(i, _code(1500, i), (), 1500)
    gc.collect()
    assert memory.get("key") is None  # neither held nor alive: gone


def test_a_bound_of_zero_holds_nothing_but_finds_live_code():
    memory = _cache(0)
    obj = _code(100)
    memory.put("k", obj, (), 100)
    assert len(memory) == 0 and memory.nbytes == 0
    assert memory.get("k").code is obj._memory_copy
    assert len(memory) == 0


def test_pop_and_clear_forget_held_and_live_entries():
    memory = _cache(10_000)
    a, b = _code(10), _code(10)
    memory.put("a", a, (), 10)
    memory.put("b", b, (), 10)
    assert memory.pop("a").code is a._memory_copy and memory.get("a") is None
    memory.clear()
    assert memory.get("b") is None and memory.nbytes == 0 and len(memory) == 0


def test_a_replaced_entry_whose_old_code_dies_keeps_the_new_one():
    memory = _cache(10_000)
    old = _code(10, 1)
    memory.put("k", old, (), 10)
    new = _code(10, 2)
    memory.put("k", new, (), 10)
    del old
    gc.collect()
    assert memory.get("k").code is new._memory_copy
    assert memory.nbytes == memory.get("k").size


@pytest.mark.parametrize("value, expected", [("", 64 << 20), ("1000", 1000), ("0", 0),
                                             (" 2048 ", 2048)])
def test_the_bound_comes_from_the_environment(monkeypatch, value, expected):
    from cudaload.compile.cache import memory as _memory

    monkeypatch.setenv("CUDALOAD_MEMORY_CACHE_MAX_BYTES", value)
    assert _memory.memory_max_bytes() == expected


def test_a_bound_that_is_no_number_warns_and_keeps_the_default(monkeypatch):
    from cudaload.compile.cache import memory as _memory

    monkeypatch.setenv("CUDALOAD_MEMORY_CACHE_MAX_BYTES", "lots")
    with pytest.warns(_memory.CacheWarning, match="not a number of bytes"):
        assert _memory.memory_max_bytes() == _memory.MEMORY_DEFAULT_BYTES


def test_compiling_beyond_the_bound_keeps_memory_flat_and_live_code_a_hit():
    bound = 350_000  # three of the scenario's 96 KiB kernels
    out = scenario_json("memory_cache", "beyond_the_bound", 12,
                        env={"CUDALOAD_MEMORY_CACHE_MAX_BYTES": str(bound)})
    assert out["code_bytes"] > 96_000
    assert max(out["held_bytes"]) <= bound
    assert out["grew"] < 150_000  # unbounded, the 7 compiles measured would add 700 KB
    assert out["again"][:2] == ["memory", "memory"] and out["same_copy"] == [True, True]
    assert "disk" in out["again"][2:] and None not in out["again"]  # dropped: read, not compiled
    assert out["entries"] <= 3


def test_architecture_spellings_are_one_entry(cache_dir):  # its own folder: others compile k
    out = scenario_json("memory_cache", "spellings")
    assert out == {"first": None, "asked": ["memory"] * 5, "one": True, "entries": 1}


@pytest.mark.parametrize("made_again", ["", "made again"])
def test_one_program_asked_for_archs_in_turn_gets_each_archs_code(made_again, tmp_path):
    # Programs made with equal arguments share the request asked last (Program.compile): each
    # still gets its arch's code, and a Program of another source its own.
    out = scenario_json("memory_cache", "one_program_many_archs", made_again,
                        env={"CUDALOAD_CACHE_DIR": str(tmp_path)})
    assert out == {"archs": ["sm_90", "sm_80", "sm_90", "sm_80", "sm_90"],
                   "cached": [None, None, "memory", "memory", "memory"], "same_90": True,
                   "same_80": True, "others": [True] if made_again else []}, out


def test_no_program_is_kept_once_its_code_is_dropped():
    out = scenario_json("memory_cache", "programs_go", 8,
                        env={"CUDALOAD_MEMORY_CACHE_MAX_BYTES": "350000"})
    assert out["alive"][:5] == [False] * 5


# ---- Program arguments, remembered ------------------------------------------------------------

def test_a_program_made_again_is_prepared_once(monkeypatch):
    from cudaload import Program
    from cudaload.compile import _prepare

    calls = []
    real = _prepare._prepare
    monkeypatch.setattr(_prepare, "_prepare", lambda *a: calls.append(a) or real(*a))
    src = 'extern "C" __global__ void once(int *x) { x[0] = 7; }'
    first = Program(src, options=["-DX=1"], headers={"h.h": "int y;"})
    again = Program(src, options=("-DX=1",), headers={"h.h": "int y;"})
    assert len(calls) == 1
    assert (first._digest, first.options, first.headers) == (again._digest, again.options,
                                                             again.headers)
    again.headers["h.h"] = "changed"  # each Program has its own dict
    assert first.headers == {"h.h": "int y;"}


@pytest.mark.parametrize("one, other", [
    ({"defines": {"N": 4}}, {"defines": {"N": 4.0}}),
    ({"defines": {"N": 1}}, {"defines": {"N": True}}),
])
def test_equal_but_different_arguments_are_not_mixed_up(one, other):
    from cudaload import Program

    src = 'extern "C" __global__ void mix(int *x) { x[0] = 1; }'
    a, b = Program(src, **one), Program(src, **other)
    assert a._digest != b._digest


def test_unhashable_arguments_are_prepared_every_time():
    from cudaload import Program

    src = bytearray(b'extern "C" __global__ void ba(int *x) { x[0] = 1; }')
    assert Program(src)._digest == Program(bytes(src))._digest
    assert Program("k", options=iter(["-DA"])).options == Program("k", options=["-DA"]).options


def test_the_remembered_arguments_are_bounded(monkeypatch):
    from cudaload import Program
    from cudaload.compile import _prepare

    monkeypatch.setattr(_prepare, "MAX_ENTRIES", 10)
    _prepare.forget()
    for i in range(50):
        Program(f"// {i}")
    assert len(_prepare._remembered.table) == 10
    monkeypatch.setattr(_prepare, "MAX_CHARS", 1000)
    Program("x" * 600)
    Program("y" * 600)
    assert _prepare._remembered.chars <= 1000


def test_the_prepared_arguments_are_read_by_name_and_the_last_request_is_shared():
    # Prepared: named fields, no tuple read by position; Asked: the one mutable part, shared by
    # every Program made with equal arguments (Program.compile finds its memory key there).
    from cudaload import Program
    from cudaload.compile import _prepare

    src = 'extern "C" __global__ void named(int *x) { x[0] = 2; }'
    one, two = Program(src, options=["-DN=1"]), Program(src, options=["-DN=1"])
    p = one._p
    assert isinstance(p, _prepare.Prepared) and not isinstance(p, tuple)
    assert not hasattr(p, "__getitem__") and not hasattr(p, "__dict__")
    assert (p.source, p.options, p.digest) == (src, one.options, one._digest)
    assert isinstance(p.asked, _prepare.Asked) and two._p.asked is p.asked
    assert Program(src, options=["-DN=2"])._p.asked is not p.asked


def test_a_memory_hit_asks_the_cache_for_the_key_and_nothing_else():
    """A hit reads the key once (MemoryCache.get) and never sizes the cache: ``_memory or ...``
    called MemoryCache.__len__ on every hit, some 20 % of one."""
    from tests._support import run_json

    got = run_json("""
        import json
        from cudaload import Program
        from cudaload.compile.cache import memory
        src = 'extern "C" __global__ void k(int *a) { a[0] = 1; }'
        prog = Program(src)
        prog.compile(arch=90)
        calls = {"len": 0, "get": 0}
        real_len, real_get = memory.MemoryCache.__len__, memory.MemoryCache.get
        def counted_len(self):
            calls["len"] += 1
            return real_len(self)
        def counted_get(self, key):
            calls["get"] += 1
            return real_get(self, key)
        memory.MemoryCache.__len__, memory.MemoryCache.get = counted_len, counted_get
        for _ in range(10):
            assert prog.compile(arch=90).cached == "memory"
            assert Program(src).compile(arch=90).cached == "memory"
        print(json.dumps(calls))
    """, env={"CUDALOAD_CACHE": "0"})
    assert got == {"len": 0, "get": 20}
