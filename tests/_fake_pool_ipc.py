"""The pool-logging recording driver of tests/_fake_pools.py, with the calls that share a pool
between processes, each logged (``fake_memory_log``) with what it was given.

The pool's shareable handle is a real file descriptor (an unlinked temporary file holding the
exporting pool's address), so that a test sees the descriptor reach the other process: the import
reads the address back from it.  Imported pools are 0xc000, 0xc010, ...; imported allocations
0xd00000000, ...  Pointer attributes answer as the driver does: MEMPOOL_HANDLE (17) names the pool
of an allocation from one (the device's current pool for cuMemAllocAsync's), none for cuMemAlloc's
memory, which alone is IS_LEGACY_CUDA_IPC_CAPABLE (10).  The device shares pools by
descriptor (MEMPOOL_SUPPORTED_HANDLE_TYPES) until ``fake_no_fd_pools()``.
"""

from __future__ import annotations

from tests._fake_memory import MEMORY_CALLS
from tests._fake_pools import POOL_CALLS
from tests._fakelibs import RECORDING_DRIVER, build_shared_library

# Renamed before the recording driver so that the ones below can answer first.
_RENAMES = "".join(f"#define {name} recorded_{name}\n" for name in (
    "cuPointerGetAttribute", "cuDeviceGetAttribute"))

POOL_IPC_CALLS = r"""
#undef cuPointerGetAttribute
#undef cuDeviceGetAttribute
#include <unistd.h>
/* MEMPOOL_SUPPORTED_HANDLE_TYPES (119): POSIX file descriptors (1), or none after
   fake_no_fd_pools(), as a device that shares no pool by descriptor */
static int fd_pools = 1;
void fake_no_fd_pools(void) { fd_pools = 0; }
int cuDeviceGetAttribute(int *v, int attr, int d) {
    if (attr == 119) { *v = fd_pools; return 0; }
    return recorded_cuDeviceGetAttribute(v, attr, d);
}
static size_t pool_of_address(unsigned long long p) {
    if (p == 0x800000000ULL) return 0xa000;  /* cuMemAllocAsync's: the current pool of device 0 */
    for (int i = 0; i < 64; i++)
        if (out_at[i] && p >= out_at[i] && p < out_at[i] + out_size[i])
            return out_pool[i] >= 2 ? 0xb000 + 0x10 * (size_t)(out_pool[i] - 2)
                                    : 0xa000 + 0x10 * (size_t)out_pool[i];
    return 0;
}
int cuPointerGetAttribute(void *data, int attr, unsigned long long p) {
    if (attr == 10) { *(unsigned char *)data = p < 0x800000000ULL; return 0; }
    if (attr == 17) { *(void **)data = (void *)pool_of_address(p); return 0; }
    return recorded_cuPointerGetAttribute(data, attr, p);
}
int cuMemPoolExportToShareableHandle(void *out, void *pool, int type, unsigned long long flags) {
    char path[] = "/tmp/fake-pool-XXXXXX";
    int fd = mkstemp(path);
    size_t address = (size_t)pool;
    if (fd < 0) return 2;
    unlink(path);
    if (write(fd, &address, sizeof address) != sizeof address) return 2;
    *(int *)out = fd;
    snprintf(line, sizeof line, "cuMemPoolExportToShareableHandle %zx type=%d flags=%llu",
             address, type, flags); note(line); return 0;
}
static int pools_imported;
int cuMemPoolImportFromShareableHandle(void **pool, void *handle, int type,
                                       unsigned long long flags) {
    size_t exported = 0;
    int read_back = pread((int)(size_t)handle, &exported, sizeof exported, 0) == sizeof exported;
    snprintf(line, sizeof line, "cuMemPoolImportFromShareableHandle %s %zx type=%d flags=%llu",
             read_back ? "fd-of" : "bad-fd", exported, type, flags); note(line);
    if (!read_back) return 1;  /* CUDA_ERROR_INVALID_VALUE */
    *pool = (void *)(0xc000 + 0x10 * (size_t)pools_imported++); return 0;
}
typedef struct { unsigned char reserved[64]; } ExportData;
int cuMemPoolExportPointer(ExportData *out, unsigned long long p) {
    memset(out, 0, sizeof *out);
    memcpy(out->reserved, "pool-ptr", 8); memcpy(out->reserved + 8, &p, 8);
    for (int i = 16; i < 64; i++) out->reserved[i] = (unsigned char)i;
    snprintf(line, sizeof line, "cuMemPoolExportPointer %llx", p); note(line); return 0;
}
static unsigned long long next_imported = 0xd00000000ULL;
int cuMemPoolImportPointer(unsigned long long *out, void *pool, ExportData *data) {
    unsigned long long p; int intact = 1;
    memcpy(&p, data->reserved + 8, 8);
    for (int i = 16; i < 64; i++) intact &= data->reserved[i] == (unsigned char)i;
    snprintf(line, sizeof line, "cuMemPoolImportPointer %zx %.8s %llx %s", (size_t)pool,
             data->reserved, p, intact ? "intact" : "damaged"); note(line);
    *out = next_imported; next_imported += 0x1000; return 0;
}
"""


def pool_ipc_driver(directory) -> str:
    """The pool and pool IPC recording driver built in ``directory``, its path returned."""
    return build_shared_library(str(directory), "libcuda_pool_ipc.so",
                                _RENAMES + RECORDING_DRIVER + MEMORY_CALLS + POOL_CALLS
                                + POOL_IPC_CALLS)
