/* What the C floors of the benchmarks share: the driver opened with dlopen (so they build without
 * the toolkit's link stub), entry points bound by name, calls checked, and a monotonic clock. */
#ifndef CUDALOAD_BENCH_CUDA_DL_H
#define CUDALOAD_BENCH_CUDA_DL_H
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>
#include <cuda.h>

#define LOAD(name) name##_t p##name = (name##_t)dlsym(lib, #name); if (!p##name) { fprintf(stderr, "no %s\n", #name); return 2; }
#define CK(x) do { CUresult r_ = (x); if (r_) { fprintf(stderr, "%s failed: %d\n", #x, (int)r_); return 1; } } while (0)

typedef CUresult (*cuInit_t)(unsigned);
typedef CUresult (*cuDeviceGet_t)(CUdevice *, int);
typedef CUresult (*cuDevicePrimaryCtxRetain_t)(CUcontext *, CUdevice);
typedef CUresult (*cuCtxSetCurrent_t)(CUcontext);
typedef CUresult (*cuMemAlloc_v2_t)(CUdeviceptr *, size_t);

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

#endif
