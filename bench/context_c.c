/* First-context floor for frameworks_bench.py: from main() to a current primary context with a
 * 4-byte allocation, synchronized; then cuMemGetInfo.  Usage: context_c -> one JSON line:
 * {"import_ms": dlopen + dlsym, "first_context_ms": all of it, "context_used_bytes": total - free}.
 * The driver is opened with dlopen so the program builds without the toolkit's link stub. */
#include "cuda_dl.h"

typedef CUresult (*cuCtxSynchronize_t)(void);
typedef CUresult (*cuMemGetInfo_v2_t)(size_t *, size_t *);

int main(void) {
    double t0 = now();
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) { fprintf(stderr, "%s\n", dlerror()); return 2; }
    LOAD(cuInit) LOAD(cuDeviceGet) LOAD(cuDevicePrimaryCtxRetain) LOAD(cuCtxSetCurrent)
    LOAD(cuMemAlloc_v2) LOAD(cuCtxSynchronize) LOAD(cuMemGetInfo_v2)
    double t1 = now();
    CUdevice dev; CUcontext ctx; CUdeviceptr buf; size_t free_b, total_b;
    CK(pcuInit(0)); CK(pcuDeviceGet(&dev, 0)); CK(pcuDevicePrimaryCtxRetain(&ctx, dev));
    CK(pcuCtxSetCurrent(ctx)); CK(pcuMemAlloc_v2(&buf, 4)); CK(pcuCtxSynchronize());
    double t2 = now();
    CK(pcuMemGetInfo_v2(&free_b, &total_b));
    printf("{\"import_ms\": %.4f, \"first_context_ms\": %.4f, \"context_used_bytes\": %zu}\n",
           (t1 - t0) * 1e3, (t2 - t0) * 1e3, total_b - free_b);
    return 0;
}
