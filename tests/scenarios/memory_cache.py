"""The bounded memory cache as compiles in one process meet it, for tests/test_cache_memory.py.

    python -m tests.scenarios.memory_cache SCENARIO ARGS...

Each prints what it found as JSON on its last line.  cudaload is imported inside each scenario,
so importing this module compiles nothing.
"""

from __future__ import annotations

import gc
import json
import sys

# A kernel whose CUBIN holds a 96 KiB initialised table: a few of them outgrow a small bound.
BIG = """
__device__ unsigned char table_{i}[98304] = {{{i}, 1, 2, 3}};
extern "C" __global__ void k{i}(unsigned char *out) {{ out[threadIdx.x] = table_{i}[threadIdx.x]; }}
"""


def beyond_the_bound(count: str) -> None:
    """Compile ``count`` programs of 96 KiB code each under a bound of three (set by the caller
    in CUDALOAD_MEMORY_CACHE_MAX_BYTES), keeping the code of the first two alive: the bytes the
    cache holds, how much memory the compiles after the fifth added, where the live ones and the
    dropped ones come from when asked again."""
    import tracemalloc

    from cudaload import Program
    from cudaload.compile import cache

    n = int(count)
    kept = []
    held = []
    tracemalloc.start()  # from the start: what is freed must have been traced when allocated
    for i in range(n):
        obj = Program(BIG.format(i=i)).compile(arch=90)
        if i < 2:
            kept.append(obj)  # as a Module holding its code would
        del obj
        gc.collect()
        held.append(cache.MEMORY.nbytes)
        if i == 4:
            before = tracemalloc.get_traced_memory()[0]
    gc.collect()
    grew = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    again = [Program(BIG.format(i=i)).compile(arch=90) for i in range(n)]
    print(json.dumps({
        "held_bytes": held, "code_bytes": len(kept[0].code), "grew": grew,
        "again": [o.cached for o in again],
        "same_copy": [again[i] is kept[i]._memory_copy for i in range(2)],
        "entries": len(cache.MEMORY)}))


def spellings() -> None:
    """One program compiled for 90, then asked for "90", "sm_90", (9, 0), "SM_90": where each
    result came from, whether it is one object, and how many entries the cache holds."""
    from cudaload import Program
    from cudaload.compile import cache

    src = 'extern "C" __global__ void k(int *x) { x[0] = 1; }'
    first = Program(src).compile(arch=90)
    asked = [Program(src).compile(arch=a) for a in ("90", "sm_90", (9, 0), "SM_90", 90)]
    print(json.dumps({"first": first.cached, "asked": [o.cached for o in asked],
                      "one": all(o is asked[0] for o in asked), "entries": len(cache.MEMORY)}))


def one_program_many_archs(made_again: str = "") -> None:
    """One Program compiled for 90, 80, "sm_90", 80 and 90 in turn (each asked as the one before
    it was not), or with ``made_again`` a Program made anew with the same arguments for each, and
    between them one of another source asked for 90: the arch of each result, where it came
    from, and whether the asks of one arch got its code."""
    from cudaload import Program

    src = 'extern "C" __global__ void k(int *x) { x[0] = 2; }'
    prog = Program(src)
    got, other = [], []
    for a in (90, 80, "sm_90", 80, 90):
        got.append((Program(src) if made_again else prog).compile(arch=a))
        if made_again:
            other.append(Program(src.replace("2", "3")).compile(arch=90))
    print(json.dumps({"archs": [o.arch for o in got], "cached": [o.cached for o in got],
                      "same_90": got[2] is got[4] and got[0].code == got[2].code,
                      "same_80": got[1].code == got[3].code != got[0].code,
                      "others": sorted({o.code != got[0].code for o in other})}))


def programs_go(count: str) -> None:
    """Whether Programs (and their code) compiled and dropped stay alive once more than the
    bound has been compiled after them: the memory cache keeps no Program forever."""
    import weakref

    from cudaload import Program

    refs = []
    for i in range(int(count)):
        prog = Program(BIG.format(i=i))
        refs.append(weakref.ref(prog))
        prog.compile(arch=90)
        del prog
    gc.collect()
    print(json.dumps({"alive": [r() is not None for r in refs]}))


SCENARIOS = {"one_program_many_archs": one_program_many_archs, "beyond_the_bound": beyond_the_bound, "spellings": spellings,
             "programs_go": programs_go}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
