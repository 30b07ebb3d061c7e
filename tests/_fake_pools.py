"""The memory-logging recording driver of tests/_fake_memory.py, with memory pools and managed
memory advice: each call logged (``fake_memory_log``) with its arguments as the driver got them.

Pools: device d's current pool is 0xa000 + 0x10 d, those ``cuMemPoolCreate`` makes 0xb000 +
0x10 k; each keeps its attributes, so that a value set reads back, and an allocation from it
counts as used and reserved (the high-water marks follow) until freed (``cuMemFreeAsync``), and
a trim gives back what is reserved beyond what is used and kept.  Advice is kept for the range
attributes to answer, as the driver's legacy attributes do (ordinals, -1 the host, -2 none); the
last prefetch location is MEMORY_CALLS' own.  Built without cuMemAdvise_v2 where NO_ADVISE_V2 is
defined, as a driver before CUDA 12.2.
"""

from __future__ import annotations

import pytest

from tests._fake_memory import MEMORY_CALLS
from tests._fakelibs import RECORDING_DRIVER, build_shared_library

POOL_CALLS = r"""
static unsigned long long pool_values[8][9];  /* by pool, by CUmemPool_attribute (1..8) */
static int pools_made;
static int pool_index(void *pool) {
    size_t p = (size_t)pool;
    return p >= 0xb000 ? 2 + (int)((p - 0xb000) / 0x10) % 6 : (int)((p - 0xa000) / 0x10) & 1;
}
int cuDeviceGetMemPool(void **pool, int d) {
    snprintf(line, sizeof line, "cuDeviceGetMemPool %d", d); note(line);
    *pool = (void *)(0xa000 + 0x10 * (size_t)d); return 0;
}
/* CUmemPoolProps as the 12.2+ releases lay out its first 34 bytes */
typedef struct { int alloc, handles, loc_type, loc_id; void *win32; size_t max; unsigned short usage;
                 unsigned char reserved[54]; } PoolProps;
int cuMemPoolCreate(void **pool, const PoolProps *p) {
    int zero = 1;
    for (int i = 0; i < 54; i++) zero &= !p->reserved[i];
    *pool = (void *)(0xb000 + 0x10 * (size_t)pools_made);
    for (int a = 1; a <= 3; a++) pool_values[pool_index(*pool)][a] = 1;  /* reuse: on */
    pools_made++;
    snprintf(line, sizeof line, "cuMemPoolCreate %zx alloc=%d handles=%d location=%d:%d max=%zu "
             "usage=%u win32=%d reserved=%s", (size_t)*pool, p->alloc, p->handles, p->loc_type,
             p->loc_id, p->max, p->usage, p->win32 != 0, zero ? "0" : "set");
    note(line); return 0;
}
int cuMemPoolDestroy(void *pool) {
    snprintf(line, sizeof line, "cuMemPoolDestroy %zx", (size_t)pool); note(line); return 0;
}
int cuMemPoolTrimTo(void *pool, size_t keep) {
    unsigned long long *v = pool_values[pool_index(pool)];
    if (v[5] > v[7] + keep) v[5] = v[7] + keep;  /* what is in use stays */
    snprintf(line, sizeof line, "cuMemPoolTrimTo %zx %zu", (size_t)pool, keep); note(line);
    return 0;
}
/* allocations out: 64 at most, each at an address of its own, its size counted as used until
   cuMemFreeAsync (MEMORY_CALLS) frees it */
static unsigned long long out_at[64], out_size[64], next_from_pool = 0x900000000ULL;
static int out_pool[64];
static void pool_freed(unsigned long long d) {
    for (int i = 0; i < 64; i++)
        if (out_at[i] == d) { pool_values[out_pool[i]][7] -= out_size[i]; out_at[i] = 0; }
}
__attribute__((constructor)) static void follow_pool_frees(void) { freed_async = pool_freed; }
int cuMemAllocFromPoolAsync(unsigned long long *d, size_t n, void *pool, void *stream) {
    unsigned long long *v = pool_values[pool_index(pool)];
    *d = next_from_pool; next_from_pool += (n + 255) & ~(size_t)255;
    for (int i = 0; i < 64; i++)
        if (!out_at[i]) { out_at[i] = *d; out_size[i] = n; out_pool[i] = pool_index(pool); break; }
    v[7] += n; if (v[7] > v[8]) v[8] = v[7];
    if (v[5] < v[7]) v[5] = v[7];
    if (v[5] > v[6]) v[6] = v[5];
    snprintf(line, sizeof line, "cuMemAllocFromPoolAsync %zu %zx %p", n, (size_t)pool, stream);
    note(line); return 0;
}
/* attributes 1..3 are ints (policies), 4..8 cuuint64_t; the high-water marks (6, 8) take only
   0, which resets them to what is reserved or used now; 5 and 7 are read-only */
int cuMemPoolSetAttribute(void *pool, int attr, void *value) {
    unsigned long long *v = pool_values[pool_index(pool)];
    unsigned long long x = attr <= 3 ? (unsigned long long)*(int *)value
                                     : *(unsigned long long *)value;
    if (attr < 1 || attr > 8 || attr == 5 || attr == 7 || ((attr == 6 || attr == 8) && x))
        return 1;  /* CUDA_ERROR_INVALID_VALUE */
    v[attr] = attr == 6 ? v[5] : attr == 8 ? v[7] : x;
    snprintf(line, sizeof line, "cuMemPoolSetAttribute %zx %d %llu", (size_t)pool, attr, x);
    note(line); return 0;
}
int cuMemPoolGetAttribute(void *pool, int attr, void *value) {
    if (attr < 1 || attr > 8) return 1;
    if (attr <= 3) *(int *)value = (int)pool_values[pool_index(pool)][attr];
    else *(unsigned long long *)value = pool_values[pool_index(pool)][attr];
    snprintf(line, sizeof line, "cuMemPoolGetAttribute %zx %d", (size_t)pool, attr);
    note(line); return 0;
}
static int read_mostly, preferred = -2, accessed[4] = {-2, -2, -2, -2};
#ifndef NO_ADVISE_V2
int cuMemAdvise_v2(unsigned long long d, size_t n, int advice, Location where) {
    int place = where.type == 2 ? -1 : where.id;
    if (advice == 1 || advice == 2) read_mostly = advice == 1;
    if (advice == 3) preferred = place;
    if (advice == 4) preferred = -2;
    for (int i = 0; i < 4 && (advice == 5 || advice == 6); i++) {
        if (advice == 5 && (accessed[i] == -2 || accessed[i] == place)) { accessed[i] = place; break; }
        if (advice == 6 && accessed[i] == place) accessed[i] = -2;
    }
    snprintf(line, sizeof line, "cuMemAdvise_v2 %llx %zu %d %d:%d", d, n, advice, where.type,
             where.id);
    note(line); return 0;
}
#endif
int cuMemRangeGetAttribute(void *data, size_t size, int attr, unsigned long long d, size_t n) {
    int *out = data;
    if (attr == 3) for (size_t i = 0; i < size / 4; i++) out[i] = i < 4 ? accessed[i] : -2;
    else if (size != 4 || attr < 1 || attr > 4) return 1;
    else *out = attr == 1 ? read_mostly : attr == 2 ? preferred : last_prefetch;
    snprintf(line, sizeof line, "cuMemRangeGetAttribute %d %zu %llx %zu", attr, size, d, n);
    note(line); return 0;
}
"""


def pool_library(directory, before_12_2: bool = False) -> str:
    """The driver built in ``directory``, its path returned; ``before_12_2``: as one of CUDA 12.0,
    which says so (cuDriverGetVersion) and lacks cuMemAdvise_v2."""
    if not before_12_2:
        return build_shared_library(str(directory), "libcuda_pools.so",
                                    RECORDING_DRIVER + MEMORY_CALLS + POOL_CALLS)
    release = "int cuDriverGetVersion(int *v) { *v = 12080; return 0; }"
    assert release in RECORDING_DRIVER, "the recording driver says another release: update this"
    older = RECORDING_DRIVER.replace(release, release.replace("12080", "12000"))
    return build_shared_library(str(directory), "libcuda_12_0_pools.so",
                                "#define NO_ADVISE_V2\n" + older + MEMORY_CALLS + POOL_CALLS)


@pytest.fixture
def pool_driver(tmp_path) -> str:
    """The recording driver, with memory pools and managed memory advice logged."""
    return pool_library(tmp_path)


@pytest.fixture
def cuda_12_0_pool_driver(tmp_path) -> str:
    """The pool driver as one of CUDA 12.0: without cuMemAdvise_v2 or a pool's maximum size."""
    return pool_library(tmp_path, before_12_2=True)
