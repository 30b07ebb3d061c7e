"""The recording driver of tests/_fakelibs.py, with the memory entry points beyond device
allocation (pinned and managed memory, prefetch, stream-ordered allocation, 8/16/32-bit fills) that log each call and its
arguments, one line each, read back with ``fake_memory_log``."""

from __future__ import annotations

import pytest

from tests._fakelibs import RECORDING_DRIVER, build_shared_library

MEMORY_CALLS = r"""
#include <stdio.h>
#include <stdlib.h>
static char memory_log[16384];
static size_t memory_logged;
static void note(const char *line) {
    size_t n = strlen(line);
    if (memory_logged + n + 1 < sizeof memory_log) {
        memcpy(memory_log + memory_logged, line, n); memory_logged += n;
        memory_log[memory_logged++] = '\n';
    }
}
size_t fake_memory_log(char *out, size_t n) {
    size_t k = memory_logged < n ? memory_logged : n; memcpy(out, memory_log, k); return k;
}
static char line[256];
static unsigned char host_arena[1 << 16];
static size_t host_used;
int cuMemHostAlloc(void **p, size_t n, unsigned flags) {
    if (host_used + n > sizeof host_arena) return 2;  /* CUDA_ERROR_OUT_OF_MEMORY */
    *p = host_arena + host_used; host_used += (n + 255) & ~(size_t)255;
    snprintf(line, sizeof line, "cuMemHostAlloc %zu %u", n, flags); note(line); return 0;
}
static int fail_mapping;
void fake_fail_mapping(int fail) { fail_mapping = fail; }
int cuMemHostGetDevicePointer_v2(unsigned long long *d, void *p, unsigned flags) {
    if (fail_mapping) { note("cuMemHostGetDevicePointer failed"); return 1; }
    *d = 0x500000000ULL + (unsigned long long)((unsigned char *)p - host_arena);
    snprintf(line, sizeof line, "cuMemHostGetDevicePointer %lu %u",
             (unsigned long)((unsigned char *)p - host_arena), flags); note(line); return 0;
}
/* Registered host memory, four ranges at most, mapped (whatever the flags, as a driver under
   unified addressing maps it) at device addresses of their own, 0x300000000 + 0x1000000 each. */
static unsigned long long registered[4], registered_n[4];
int cuMemHostRegister_v2(void *p, size_t n, unsigned flags) {
    for (int i = 0; i < 4; i++)
        if (!registered[i]) { registered[i] = (unsigned long long)(size_t)p; registered_n[i] = n; break; }
    snprintf(line, sizeof line, "cuMemHostRegister %zu %u", n, flags); note(line); return 0;
}
int cuMemHostUnregister(void *p) {
    for (int i = 0; i < 4; i++) if (registered[i] == (unsigned long long)(size_t)p) registered[i] = 0;
    note("cuMemHostUnregister"); return 0;
}
/* The pointer attributes of the host memory above (MEMORY_TYPE 2: host, 1; DEVICE_POINTER 3: the
   mapped address) for its host and its device addresses; -1 for any other pointer. */
static int host_memory_answer(void *data, int attr, unsigned long long p) {
    unsigned long long arena = (unsigned long long)(size_t)host_arena, mapped = 0;
    if (p >= arena && p < arena + sizeof host_arena) mapped = 0x500000000ULL + (p - arena);
    if (p >= 0x500000000ULL && p < 0x500000000ULL + sizeof host_arena) mapped = p;
    for (int i = 0; i < 4; i++) {
        unsigned long long device = 0x300000000ULL + 0x1000000ULL * (unsigned long long)i;
        if (registered[i] && p >= registered[i] && p < registered[i] + registered_n[i])
            mapped = device + (p - registered[i]);
        if (registered[i] && p >= device && p < device + registered_n[i]) mapped = p;
    }
    if (!mapped || (attr != 2 && attr != 3)) return -1;
    if (attr == 2) *(unsigned *)data = 1;  /* CU_MEMORYTYPE_HOST */
    else *(unsigned long long *)data = mapped;
    return 0;
}
__attribute__((constructor)) static void answer_for_host_memory(void) {
    pointer_answer = host_memory_answer;
}
int cuMemFreeHost(void *p) {
    snprintf(line, sizeof line, "cuMemFreeHost %lu",
             (unsigned long)((unsigned char *)p - host_arena)); note(line); return 0;
}
static unsigned long long next_managed = 0x600000000ULL;
int cuMemAllocManaged(unsigned long long *d, size_t n, unsigned flags) {
    *d = next_managed; next_managed += (n + 255) & ~(size_t)255;
    snprintf(line, sizeof line, "cuMemAllocManaged %zu %u", n, flags); note(line); return 0;
}
typedef struct { int type, id; } Location;
static int last_prefetch = -2;  /* as the range attribute says it: an ordinal, -1 the host, -2 none */
int cuMemPrefetchAsync_v2(unsigned long long d, size_t n, Location where, unsigned flags,
                          void *stream) {
    last_prefetch = where.type == 2 ? -1 : where.id;
    snprintf(line, sizeof line, "cuMemPrefetchAsync_v2 %llx %zu %d:%d %u %s", d, n, where.type,
             where.id, flags, stream ? "stream" : "legacy"); note(line); return 0;
}
int cuMemAllocAsync(unsigned long long *d, size_t n, void *stream) {
    *d = 0x800000000ULL;
    snprintf(line, sizeof line, "cuMemAllocAsync %zu %p", n, stream); note(line); return 0;
}
static void (*freed_async)(unsigned long long d);  /* tests/_fake_pools.py's, where it sets one */
int cuMemFreeAsync(unsigned long long d, void *stream) {
    if (freed_async) freed_async(d);
    snprintf(line, sizeof line, "cuMemFreeAsync %llx %p", d, stream); note(line); return 0;
}
int cuMemsetD16_v2(unsigned long long d, unsigned short v, size_t n) {
    snprintf(line, sizeof line, "cuMemsetD16 %llx %u %zu", d, v, n); note(line); return 0;
}
int cuMemsetD32_v2(unsigned long long d, unsigned v, size_t n) {
    snprintf(line, sizeof line, "cuMemsetD32 %llx %u %zu", d, v, n); note(line); return 0;
}
int cuMemsetD8Async(unsigned long long d, unsigned char v, size_t n, void *s) {
    snprintf(line, sizeof line, "cuMemsetD8Async %llx %u %zu %s", d, v, n, s ? "stream" : "legacy");
    note(line); return 0;
}
int cuMemsetD16Async(unsigned long long d, unsigned short v, size_t n, void *s) {
    snprintf(line, sizeof line, "cuMemsetD16Async %llx %u %zu %s", d, v, n, s ? "stream" : "legacy");
    note(line); return 0;
}
int cuMemsetD32Async(unsigned long long d, unsigned v, size_t n, void *s) {
    snprintf(line, sizeof line, "cuMemsetD32Async %llx %u %zu %s", d, v, n, s ? "stream" : "legacy");
    note(line); return 0;
}
int cuMemcpyHtoDAsync_v2(unsigned long long d, const void *src, size_t n, void *s) {
    int pinned = (const unsigned char *)src >= host_arena
                 && (const unsigned char *)src < host_arena + sizeof host_arena;
    snprintf(line, sizeof line, "cuMemcpyHtoDAsync %llx %s %zu", d, pinned ? "pinned" : "pageable", n);
    note(line); return 0;
}
"""


@pytest.fixture
def memory_driver(tmp_path) -> str:
    """The recording driver, with pinned, managed and fill entry points that log their calls."""
    return build_shared_library(str(tmp_path), "libcuda_memory.so", RECORDING_DRIVER + MEMORY_CALLS)
