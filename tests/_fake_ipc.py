"""The memory-logging recording driver of tests/_fake_memory.py, with CUDA IPC and the copy entry
points (cuMemcpyAsync, cuMemcpyBatchAsync of 12.8 and its 13.0 _v2), each logging its call and the
bytes or addresses it was given; read back with ``fake_memory_log``.

``ipc_driver(tmp_path, version)`` builds one that reports CUDA ``version``: 12080 exports the
12.8 batch, 13000 the _v2, and anything older neither (as a driver before 12.8)."""

from __future__ import annotations

from tests._fake_memory import MEMORY_CALLS
from tests._fakelibs import RECORDING_DRIVER, build_shared_library

# Renamed before the recording driver so that the ones below can add to them.
_RENAMES = "".join(f"#define {name} recorded_{name}\n" for name in (
    "cuDriverGetVersion", "cuPointerGetAttribute", "cuMemAlloc_v2"))

IPC_CALLS = r"""
#undef cuDriverGetVersion
#undef cuPointerGetAttribute
#undef cuMemAlloc_v2
int cuDriverGetVersion(int *v) { *v = FAKE_VERSION; return 0; }
/* allocations of cuMemAlloc: (base, size), so that a view's RANGE_START_ADDR is its base */
static unsigned long long alloc_base[64], alloc_size[64]; static int allocs;
int cuMemAlloc_v2(unsigned long long *p, size_t n) {
    int rc = recorded_cuMemAlloc_v2(p, n);
    alloc_base[allocs & 63] = *p; alloc_size[allocs++ & 63] = n; return rc;
}
/* IS_LEGACY_CUDA_IPC_CAPABLE (10): cuMemAlloc's memory is, a pool's (cuMemAllocAsync,
   0x800000000) is not; RANGE_START_ADDR (11): the base of cuMemAlloc's allocation */
int cuPointerGetAttribute(void *data, int attr, unsigned long long p) {
    if (attr == 10) { *(unsigned char *)data = p < 0x800000000ULL; return 0; }
    if (attr == 11) {
        for (int i = 0; i < allocs && i < 64; i++)
            if (p >= alloc_base[i] && p < alloc_base[i] + alloc_size[i]) {
                *(unsigned long long *)data = alloc_base[i]; return 0;
            }
        return 1;
    }
    return recorded_cuPointerGetAttribute(data, attr, p);
}
typedef struct { char reserved[64]; } IpcHandle;
static int open_rc;
void fake_ipc_open_rc(int rc) { open_rc = rc; }
/* a handle: a tag, then the address or event it was made for */
static void make_handle(IpcHandle *h, const char *tag, unsigned long long what) {
    memset(h, 0, sizeof *h); memcpy(h->reserved, tag, 8); memcpy(h->reserved + 8, &what, 8);
    for (int i = 16; i < 64; i++) h->reserved[i] = (char)i;
}
static int handle_intact(IpcHandle h) {
    for (int i = 16; i < 64; i++) if (h.reserved[i] != (char)i) return 0;
    return 1;
}
int cuIpcGetMemHandle(IpcHandle *h, unsigned long long d) {
    make_handle(h, "ipc-mem", d);
    snprintf(line, sizeof line, "cuIpcGetMemHandle %llx", d); note(line); return 0;
}
int cuIpcOpenMemHandle_v2(unsigned long long *d, IpcHandle h, unsigned flags) {
    unsigned long long what; memcpy(&what, h.reserved + 8, 8);
    snprintf(line, sizeof line, "cuIpcOpenMemHandle_v2 %.8s %llx %s %u", h.reserved, what,
             handle_intact(h) ? "intact" : "damaged", flags); note(line);
    if (open_rc) return open_rc;
    *d = 0xa00000000ULL; return 0;
}
int cuIpcCloseMemHandle(unsigned long long d) {
    snprintf(line, sizeof line, "cuIpcCloseMemHandle %llx", d); note(line); return 0;
}
int cuIpcGetEventHandle(IpcHandle *h, void *e) {
    make_handle(h, "ipc-evt", (unsigned long long)(size_t)e);
    snprintf(line, sizeof line, "cuIpcGetEventHandle %p", e); note(line); return 0;
}
int cuIpcOpenEventHandle(void **e, IpcHandle h) {
    unsigned long long what; memcpy(&what, h.reserved + 8, 8);
    snprintf(line, sizeof line, "cuIpcOpenEventHandle %.8s %llx %s", h.reserved, what,
             handle_intact(h) ? "intact" : "damaged"); note(line);
    *e = (void *)0xf000; return 0;
}
int cuMemcpyAsync(unsigned long long d, unsigned long long s, size_t n, void *stream) {
    snprintf(line, sizeof line, "cuMemcpyAsync %llx %llx %zu %s", d, s, n,
             stream ? "stream" : "legacy"); note(line); return 0;
}
typedef struct { int order; Location src, dst; unsigned flags; } CopyAttributes;
static long batch_fail_at = -1;
void fake_batch_fail_at(long i) { batch_fail_at = i; }
static void note_batch(const char *name, unsigned long long *d, unsigned long long *s, size_t *n,
                       size_t count, CopyAttributes *a, size_t *first, size_t na, void *stream) {
    snprintf(line, sizeof line, "%s %zu copies, %zu attributes from %zu: order %d hints %d %d "
             "flags %u %s", name, count, na, first[0], a->order, a->src.type, a->dst.type,
             a->flags, stream ? "stream" : "legacy"); note(line);
    for (size_t i = 0; i < count; i++) {
        snprintf(line, sizeof line, "  %llx %llx %zu", d[i], s[i], n[i]); note(line);
    }
}
#if FAKE_VERSION >= 12080 && FAKE_VERSION < 13000
int cuMemcpyBatchAsync(unsigned long long *d, unsigned long long *s, size_t *n, size_t count,
                       CopyAttributes *a, size_t *first, size_t na, size_t *failed, void *stream) {
    note_batch("cuMemcpyBatchAsync", d, s, n, count, a, first, na, stream);
    if (batch_fail_at >= 0) { *failed = (size_t)batch_fail_at; return 1; }
    return 0;
}
#endif
#if FAKE_VERSION >= 13000
int cuMemcpyBatchAsync_v2(unsigned long long *d, unsigned long long *s, size_t *n, size_t count,
                          CopyAttributes *a, size_t *first, size_t na, void *stream) {
    note_batch("cuMemcpyBatchAsync_v2", d, s, n, count, a, first, na, stream);
    return 0;
}
#endif
"""


def ipc_driver(directory, version: int = 12080) -> str:
    """The IPC and copy recording driver reporting CUDA ``version``, built in ``directory``."""
    source = f"#define FAKE_VERSION {version}\n" + _RENAMES + RECORDING_DRIVER + MEMORY_CALLS \
        + IPC_CALLS
    return build_shared_library(str(directory), f"libcuda_ipc_{version}.so", source)
