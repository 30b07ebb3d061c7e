"""Tiny shared libraries built with the C compiler: stand-ins for a wrong or too old libcuda."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

# Exports the four symbols the loader and Driver need, and nothing else: no cuGetProcAddress (as in
# drivers before CUDA 12.0), no device or memory entry points.
PARTIAL_DRIVER = r"""
static const char *names[] = {"CUDA_SUCCESS", "CUDA_ERROR_INVALID_VALUE"};
int cuInit(unsigned int flags) { return flags ? 1 : 0; }
int cuDriverGetVersion(int *v) { *v = 12000; return 0; }
int cuGetErrorName(int code, const char **s) { if (code > 1) return 1; *s = names[code]; return 0; }
int cuGetErrorString(int code, const char **s) { return cuGetErrorName(code, s); }
"""

# A driver with one device and enough entry points to describe it, built on PARTIAL_DRIVER: the
# device report and the device and stream objects can then be tested without a GPU.
ONE_DEVICE_DRIVER = PARTIAL_DRIVER + r"""
#include <string.h>
int cuDeviceGetCount(int *n) { *n = 1; return 0; }
int cuDeviceGet(int *d, int i) { if (i) return 1; *d = 0; return 0; }
int cuDeviceGetName(char *s, int len, int d) { strncpy(s, "Fake GPU", len); return 0; }
int cuDeviceTotalMem_v2(unsigned long long *b, int d) { *b = 8ULL << 30; return 0; }
int cuDeviceGetAttribute(int *v, int attr, int d) {
    switch (attr) { case 75: *v = 8; return 0; case 76: *v = 6; return 0; case 16: *v = 84; return 0; }
    return 1;
}
int cuModuleGetLoadingMode(int *mode) { *mode = 2; return 0; }
int cuCtxGetCurrent(void **ctx) { *ctx = 0; return 0; }  /* none current: device 0 */
"""

# A driver with two devices (compute capability 9.0) that loads any image and records each launch
# instead of running it: the launch path (resolution, layout, checks, packing, the launch
# configuration) can then be tested without a GPU, down to the bytes cuLaunchKernelEx receives.
# The parameter layout it reports is the test's (fake_set_layout); fake_last gives the last launch.
RECORDING_DRIVER = r"""
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
typedef struct { unsigned grid[3], block[3], smem; void *stream; void *attrs; unsigned nattrs; } Config;
static const char *names[] = {"CUDA_SUCCESS", "CUDA_ERROR_INVALID_VALUE"};
static void *current;
static size_t offsets[64], sizes[64];
static int nparams, launches, loads, unloads;
static Config last;
static unsigned char params_seen[4096];
static char kernel_name[512];
static unsigned long long next_address = 0x700000000ULL;
int cuInit(unsigned int flags) { return 0; }
int cuDriverGetVersion(int *v) { *v = 12080; return 0; }
int cuGetErrorName(int code, const char **s) { if (code > 1) return 1; *s = names[code]; return 0; }
int cuGetErrorString(int code, const char **s) { return cuGetErrorName(code, s); }
int cuDeviceGetCount(int *n) { *n = 2; return 0; }
int cuDeviceGet(int *d, int i) { if (i < 0 || i > 1) return 1; *d = i; return 0; }
int cuDeviceGetName(char *s, int len, int d) { strncpy(s, "Recording GPU", len); return 0; }
int cuDeviceTotalMem_v2(unsigned long long *b, int d) { *b = 80ULL << 30; return 0; }
int cuDeviceGetAttribute(int *v, int attr, int d) {
    switch (attr) {
    case 1: *v = 1024; return 0;                                  /* threads per block */
    case 2: case 3: *v = 1024; return 0; case 4: *v = 64; return 0;  /* block dims */
    case 5: *v = 2147483647; return 0; case 6: case 7: *v = 65535; return 0;  /* grid dims */
    case 16: *v = 132; return 0; case 75: *v = 9; return 0; case 76: *v = 0; return 0;
    case 97: *v = 232448; return 0;                               /* shared memory opt-in */
    case 10: *v = 32; return 0; case 39: *v = 2048; return 0;     /* warp, threads per SM */
    }
    return 1;
}
int cuModuleGetLoadingMode(int *mode) { *mode = 2; return 0; }
int cuDevicePrimaryCtxRetain(void **ctx, int d) { *ctx = (void *)(0x1000 + 0x100 * (size_t)d); return 0; }
int cuDevicePrimaryCtxRelease_v2(int d) { return 0; }
int cuCtxSetCurrent(void *ctx) { current = ctx; return 0; }
int cuCtxGetCurrent(void **ctx) { *ctx = current; return 0; }
int cuCtxGetDevice(int *d) { *d = current == (void *)0x1100; return 0; }
static void run_host_calls(void);
int cuCtxSynchronize(void) { run_host_calls(); return 0; }
/* fake_fail_loads(rc, n): the next n library loads answer rc, as a driver refusing an image */
static int load_fail_rc, load_fail_count;
void fake_fail_loads(int rc, int n) { load_fail_rc = rc; load_fail_count = n; }
int cuLibraryLoadData(void **lib, const void *code, void *o, void *ov, unsigned n, void *lo,
                      void *lov, unsigned ln) {
    if (load_fail_count > 0) { --load_fail_count; return load_fail_rc; }
    *lib = (void *)0x2000; ++loads; return 0;
}
int fake_loads(void) { return loads; }
int cuLibraryUnload(void *lib) { ++unloads; return 0; }
int fake_unloads(void) { return unloads; }
/* Streams: 0x5000, 0x5010, ...; each one's flags and priority kept (priorities 0 to -5). */
static int streams; static unsigned stream_flags[64]; static int stream_priorities[64];
static int stream_index(void *s) { return (int)(((size_t)s - 0x5000) / 0x10) & 63; }
int cuStreamCreateWithPriority(void **s, unsigned flags, int priority) {
    int i = streams++ & 63; *s = (void *)(0x5000 + 0x10 * (size_t)i);
    stream_flags[i] = flags; stream_priorities[i] = priority; return 0;
}
int cuStreamCreate(void **s, unsigned flags) { return cuStreamCreateWithPriority(s, flags, 0); }
int cuStreamGetPriority(void *s, int *p) { *p = stream_priorities[stream_index(s)]; return 0; }
int cuStreamGetFlags(void *s, unsigned *f) { *f = stream_flags[stream_index(s)]; return 0; }
int cuCtxGetStreamPriorityRange(int *least, int *greatest) { *least = 0; *greatest = -5; return 0; }
int cuDeviceGetUuid_v2(unsigned char *uuid, int d) {
    for (int i = 0; i < 16; i++) uuid[i] = (unsigned char)(0x10 * d + i); return 0;
}
int cuDeviceGetPCIBusId(char *s, int len, int d) {
    strncpy(s, d ? "0000:2a:00.0" : "0000:19:00.0", len); return 0;
}
/* Destroyed streams, graphs and executables, in order, for close() to show it is immediate. */
static void *destroyed[64]; static int ndestroyed;
static void destroy(void *h) { if (ndestroyed < 64) destroyed[ndestroyed++] = h; }
int fake_destroyed(void ***handles) { *handles = destroyed; return ndestroyed; }
int cuStreamDestroy_v2(void *s) { destroy(s); return 0; }
/* Host functions: queued in order and called by the next synchronisation, as a GPU that has
   reached them would; captured ones become the graph's, called again by each cuGraphLaunch. */
typedef struct { void (*fn)(void *); void *data; } HostCall;
static HostCall host_queue[256], host_captured[16][16];  /* per graph (and its executable) */
static int host_queued, host_ncaptured[16], capturing, capture_graph, host_calls_made;
static void run_host_calls(void) {
    for (int i = 0; i < host_queued; i++) { host_queue[i].fn(host_queue[i].data); ++host_calls_made; }
    host_queued = 0;
}
int cuLaunchHostFunc(void *s, void (*fn)(void *), void *data) {
    HostCall c = {fn, data};
    if (capturing) {
        int g = capture_graph & 15;
        if (host_ncaptured[g] == 16) return 1;
        host_captured[g][host_ncaptured[g]++] = c;
    }
    else { if (host_queued == 256) return 1; host_queue[host_queued++] = c; }
    return 0;
}
int fake_host_calls(int *queued) { *queued = host_queued; return host_calls_made; }
int cuStreamIsCapturing(void *s, int *status) { *status = capturing; return 0; }
/* One capture at a time, every stream in it (as if joined): its id is its graph's number + 1.
   fake_unjoined(1) makes the next cuStreamEndCapture answer CUDA_ERROR_STREAM_CAPTURE_UNJOINED
   (into a graph of the caller's too). */
int cuStreamGetCaptureInfo_v3(void *s, int *status, unsigned long long *id, void **g, void **d,
                              void **e, size_t *n) {
    *status = capturing; if (id) *id = capturing ? (unsigned long long)capture_graph + 1 : 0;
    if (g) *g = (void *)(0x8000 + 0x10 * (size_t)capture_graph);
    if (d) *d = 0; if (e) *e = 0; if (n) *n = 0;
    return 0;
}
/* A child graph node copies the child's host functions into the capture, as the driver's clone
   of the child runs them; fake_children gives the children added and the dependency updates. */
static void *children[16]; static int nchildren, dependency_updates;
int cuGraphAddChildGraphNode(void **node, void *graph, void *deps, size_t n, void *child) {
    int g = (int)(((size_t)graph - 0x8000) / 0x10) & 15, c = (int)(((size_t)child - 0x8000) / 0x10) & 15;
    if (nchildren < 16) children[nchildren++] = child;
    for (int i = 0; i < host_ncaptured[c] && host_ncaptured[g] < 16; i++)
        host_captured[g][host_ncaptured[g]++] = host_captured[c][i];
    *node = (void *)(0x7000 + 0x10 * (size_t)nchildren); return 0;
}
int cuStreamUpdateCaptureDependencies_v2(void *s, void **deps, void *edges, size_t n, unsigned flags) {
    if (n == 1 && flags == 1 && *deps) ++dependency_updates; return 0;
}
int fake_children(void ***added) { *added = children; return nchildren * 100 + dependency_updates; }
static int unjoined;
void fake_unjoined(int on) { unjoined = on; }
int cuStreamSynchronize(void *s) { run_host_calls(); return 0; }
int cuEventSynchronize(void *e) { run_host_calls(); return 0; }
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                   unsigned bz, unsigned smem, void *s, void **params, void **extra) {
    return ++launches, 0;
}
static int graphs;
/* graph n is 0x8000 + 0x10 n, its executable 0x9000 + 0x10 n */
int cuStreamBeginCapture_v2(void *s, int mode) {
    capturing = 1; capture_graph = graphs; host_ncaptured[graphs & 15] = 0; return 0;
}
static int capture_into = -1;  /* the graph a cuStreamBeginCaptureToGraph records into */
int cuStreamEndCapture(void *s, void **graph) {
    int into = capture_into;
    capturing = 0; capture_into = -1;
    if (unjoined) { unjoined = 0; *graph = 0; return 904; }
    if (into >= 0) { *graph = (void *)(0x8000 + 0x10 * (size_t)into); return 0; }
    *graph = (void *)(0x8000 + 0x10 * (size_t)graphs++); return 0;
}
static int graph_index(void *h, size_t base) { return (int)(((size_t)h - base) / 0x10) & 15; }
int cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags) {
    *exec = (void *)((size_t)graph + 0x1000); return 0;
}
int cuGraphLaunch(void *exec, void *s) {
    int g = graph_index(exec, 0x9000);
    for (int i = 0; i < host_ncaptured[g] && host_queued < 256; i++)
        host_queue[host_queued++] = host_captured[g][i];
    return 0;
}
/* Graph upload and update: what was asked, and the CUgraphExecUpdateResult the test chose. */
static void *uploaded_exec, *upload_stream, *updated_exec, *update_source; static int update_result;
int cuGraphUpload(void *exec, void *s) { uploaded_exec = exec; upload_stream = s; return 0; }
typedef struct { int result; void *errorNode, *errorFromNode; } UpdateInfo;
void fake_set_update_result(int r) { update_result = r; }
int cuGraphExecUpdate_v2(void *exec, void *graph, UpdateInfo *info) {
    int e = graph_index(exec, 0x9000), g = graph_index(graph, 0x8000);
    updated_exec = exec; update_source = graph; info->result = update_result;
    info->errorNode = info->errorFromNode = 0;
    if (update_result) return 910;
    /* the executable now runs the other graph's nodes: its host functions too */
    host_ncaptured[e] = host_ncaptured[g];
    memcpy(host_captured[e], host_captured[g], sizeof host_captured[g]);
    return 0;
}
int fake_graph_calls(void **uploaded, void **stream, void **updated, void **source) {
    *uploaded = uploaded_exec; *stream = upload_stream; *updated = updated_exec; *source = update_source;
    return 0;
}
int cuGraphExecDestroy(void *exec) { destroy(exec); return 0; }
int cuGraphDestroy(void *graph) { destroy(graph); return 0; }
int cuLibraryGetKernel(void **k, void *lib, const char *name) {
    strncpy(kernel_name, name, sizeof kernel_name - 1); *k = (void *)0x3000; return 0;
}
/* one function per context: 0x4000 in device 0's, 0x4100 in device 1's */
int cuKernelGetFunction(void **f, void *k) { *f = (void *)(0x4000 + ((size_t)current & 0x100)); return 0; }
static int set_attr = -1, set_value;
static int func_values[16] = {768, 1024, 256, 16, 40, 90, 90, 0, 48 * 1024, -1, 0, 0, 0, 0, 0, 0};
int cuFuncSetAttribute(void *f, int attr, int value) {
    set_attr = attr; set_value = value;
    if (attr == 9 && (value < -1 || value > 100)) return 1;  /* a carveout is a percentage */
    if (attr >= 8 && attr < 16 && attr != 10) func_values[attr] = value;
    return 0;
}
int fake_func_set(int *value) { *value = set_value; return set_attr; }
/* CUDALOAD_FAKE_NO_LAYOUT set: no layout to give (CUDA_ERROR_NOT_SUPPORTED), so the caller lays
   out the parameter types it knows, as on a driver before CUDA 12.4; set in the environment so
   that the processes a program starts see it too */
__attribute__((constructor)) static void no_layout_from_env(void) {
    if (getenv("CUDALOAD_FAKE_NO_LAYOUT")) nparams = -1;
}
int cuFuncGetParamInfo(void *f, size_t i, size_t *offset, size_t *size) {
    if (nparams < 0) return 801;
    if ((int)i >= nparams) return 1;
    *offset = offsets[i]; *size = sizes[i]; return 0;
}
/* of the last launch: the context current, the function, the parameter pointer array */
static void *launch_context, *launch_function, **launch_params;
void *fake_launch_context(void) { return launch_context; }
void *fake_launch_function(void) { return launch_function; }
void *fake_launch_params(void) { return launch_params; }
/* fake_fail_launches(rc, n): the next n launches answer rc, unrecorded, as a refused launch */
static int fail_rc, fail_count, refused_launches;
void fake_fail_launches(int rc, int n) { fail_rc = rc; fail_count = n; }
int fake_refused_launches(void) { return refused_launches; }
int cuLaunchKernelEx(const Config *c, void *f, void **params, void **extra) {
    if (fail_count > 0) { --fail_count; ++refused_launches; return fail_rc; }
    last = *c; launch_context = current; launch_function = f; launch_params = params;
    for (int i = 0; i < nparams; i++) memcpy(params_seen + offsets[i], params[i], sizes[i]);
    return ++launches, 0;
}
static void *alloc_context;  /* the context current at the last allocation */
int cuMemAlloc_v2(unsigned long long *p, size_t n) {
    alloc_context = current; *p = next_address; next_address += (n + 255) & ~255ULL; return 0;
}
void *fake_alloc_context(void) { return alloc_context; }
static int frees;
int cuMemFree_v2(unsigned long long p) { ++frees; return 0; }
int fake_frees(void) { return frees; }
int cuMemcpyHtoD_v2(unsigned long long dst, const void *src, size_t n) { return 0; }
int cuMemcpyDtoH_v2(void *dst, unsigned long long src, size_t n) { memset(dst, 0xab, n); return 0; }
int cuMemsetD8_v2(unsigned long long dst, unsigned char value, size_t n) { return 0; }
/* Every pointer is device memory on device 0, mapped host memory none (DEVICE_POINTER, 3, fails
   as a real driver's does for pageable memory), unless a driver built on this one knows better:
   its pointer_answer, where it sets one, answers first (below 0: it does not know the pointer). */
static int (*pointer_answer)(void *data, int attr, unsigned long long p);
int cuPointerGetAttribute(void *data, int attr, unsigned long long p) {
    int rc = pointer_answer ? pointer_answer(data, attr, p) : -1;
    if (rc >= 0) return rc;
    if (attr == 3) return 1;  /* CUDA_ERROR_INVALID_VALUE */
    *(int *)data = attr == 2 ? 2 : 0;  /* device memory, on device 0 */
    return 0;
}
/* Events and waits, recorded: the stream each event was recorded on, the stream that waited. */
static int events, events_destroyed, waits;
static void *recorded_on, *waiting_stream, *waited_event;
static unsigned event_flags;  /* of the last event made */
int cuEventCreate(void **e, unsigned flags) {
    event_flags = flags; *e = (void *)(0xe000 + 0x10 * (size_t)++events); return 0;
}
unsigned fake_event_flags(void) { return event_flags; }
int cuEventDestroy_v2(void *e) { ++events_destroyed; return 0; }
int cuEventRecord(void *e, void *s) { recorded_on = s; return 0; }
int cuStreamWaitEvent(void *s, void *e, unsigned flags) {
    waiting_stream = s; waited_event = e; ++waits; return 0;
}
int fake_waits(void **stream, void **event, void **recorded) {
    *stream = waiting_stream; *event = waited_event; *recorded = recorded_on; return waits;
}
static unsigned long long copy_dst, copy_src; static size_t copy_n;
int cuMemcpyDtoD_v2(unsigned long long dst, unsigned long long src, size_t n) {
    copy_dst = dst; copy_src = src; copy_n = n; return 0;
}
int fake_last_copy(unsigned long long *dst, unsigned long long *src) {
    *dst = copy_dst; *src = copy_src; return (int)copy_n;
}
/* Peer access, recorded: cuDeviceCanAccessPeer answers 1 for two different devices (0 once
   fake_peer_refuse(1) was called, and for a device and itself, as a real driver); each granted
   cuCtxEnablePeerAccess keeps the context current and the peer's, and asking again for a pair
   answers CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED (704), unless fake_peer_enable_rc(rc) made every
   one answer rc.  fake_peer(queries, pairs) fills
   pairs[2*i], pairs[2*i+1] (current, peer) and returns how many calls were made. */
static int peer_refused, peer_queries, peer_calls, peer_grants, peer_enable_rc;
static void *peer_pairs[16];
void fake_peer_refuse(int refuse) { peer_refused = refuse; }
void fake_peer_enable_rc(int rc) { peer_enable_rc = rc; }  /* what the next enables answer */
int cuDeviceCanAccessPeer(int *can, int d, int peer) {
    ++peer_queries; *can = d != peer && !peer_refused; return 0;
}
int cuCtxEnablePeerAccess(void *peer, unsigned flags) {
    ++peer_calls;
    if (peer_enable_rc) return peer_enable_rc;
    if (flags || !current || current == peer) return 1;
    for (int i = 0; i < peer_grants; ++i)
        if (peer_pairs[2 * i] == current && peer_pairs[2 * i + 1] == peer) return 704;
    if (peer_grants < 8) { peer_pairs[2 * peer_grants] = current; peer_pairs[2 * peer_grants + 1] = peer; ++peer_grants; }
    return 0;
}
int fake_peer(int *queries, void **pairs) {
    *queries = peer_queries; memcpy(pairs, peer_pairs, sizeof peer_pairs); return peer_calls;
}
/* The last cuMemcpyPeer(Async): dst, src, bytes in words[0..2]; the dst and src contexts and the
   stream (NULL for cuMemcpyPeer) in ptrs[0..2]; returns how many peer copies were made. */
static unsigned long long peer_words[3]; static void *peer_ptrs[3]; static int peer_copies;
int cuMemcpyPeerAsync(unsigned long long dst, void *dctx, unsigned long long src, void *sctx,
                      size_t n, void *stream) {
    peer_words[0] = dst; peer_words[1] = src; peer_words[2] = n;
    peer_ptrs[0] = dctx; peer_ptrs[1] = sctx; peer_ptrs[2] = stream; return ++peer_copies, 0;
}
int cuMemcpyPeer(unsigned long long dst, void *dctx, unsigned long long src, void *sctx, size_t n) {
    return cuMemcpyPeerAsync(dst, dctx, src, sctx, n, NULL);
}
int fake_last_peer_copy(unsigned long long *words, void **ptrs) {
    memcpy(words, peer_words, sizeof peer_words); memcpy(ptrs, peer_ptrs, sizeof peer_ptrs);
    return peer_copies;
}
/* Function attributes and occupancy: a kernel of 40 registers, 1 KiB static shared memory, 256
   bytes of constants, 16 bytes of local memory per thread, PTX 9.0 and binary 9.0, at most 768
   threads per block; the last occupancy query's arguments are kept. */
static int attribute_reads, occupancy_block; static size_t occupancy_smem, potential_smem;
static void *potential_callback; static int potential_limit = -1;
int cuFuncGetAttribute(int *v, int attr, void *f) {
    if (attr < 0 || attr > 15) return 1;
    ++attribute_reads; *v = func_values[attr]; return 0;
}
int fake_attribute_reads(void) { return attribute_reads; }
int cuOccupancyMaxActiveBlocksPerMultiprocessor(int *out, void *f, int block, size_t smem) {
    /* 64 warps and 32 blocks per SM; 228 KiB of shared memory, the static 1 KiB counted too */
    int n = block > 768 ? 0 : 64 / ((block + 31) / 32);
    if (n > 32) n = 32;
    if (smem && n > (int)(233472 / (smem + 1024))) n = (int)(233472 / (smem + 1024));
    occupancy_block = block; occupancy_smem = smem; *out = n; return 0;
}
int cuOccupancyMaxPotentialBlockSize(int *grid, int *block, void *f, void *callback, size_t smem,
                                     int limit) {
    potential_callback = callback; potential_limit = limit;
    if (callback) smem = ((size_t (*)(int))callback)(768);  /* what the largest block needs */
    potential_smem = smem;
    *block = smem > 64 * 1024 ? 256 : 768;
    if (limit > 0 && *block > limit) *block = limit / 32 * 32;
    *grid = 132 * (2048 / *block); return 0;
}
int cuOccupancyAvailableDynamicSMemPerBlock(size_t *out, void *f, int blocks, int block) {
    if (blocks < 1 || block > 768) return 1;
    *out = 233472 / blocks - 1024; return 0;
}
/* clusters: 8 blocks at most (16 with non-portable sizes allowed); 132 SMs, two blocks each */
static unsigned cluster_seen[3];
int cuOccupancyMaxPotentialClusterSize(int *size, void *f, const Config *c) {
    *size = func_values[14] ? 16 : 8; return 0;
}
int cuOccupancyMaxActiveClusters(int *n, void *f, const Config *c) {
    const unsigned *a = c->attrs;  /* CUlaunchAttribute: id, pad, then the value (x, y, z) */
    if (c->nattrs != 1 || a[0] != 4) return 1;
    memcpy(cluster_seen, a + 2, sizeof cluster_seen);
    *n = 264 / (int)(cluster_seen[0] * cluster_seen[1] * cluster_seen[2]); return 0;
}
int fake_occupancy(int *block, size_t *smem, size_t *potential, int *limit) {
    *block = occupancy_block; *smem = occupancy_smem; *potential = potential_smem;
    *limit = potential_limit; return potential_callback != 0;
}
/* The driver's linker, recorded: the options cuLinkCreate got (the log buffers' among them), the
   context current then, each input's type and name, and how many states were destroyed.
   cuLinkComplete gives an image whose ELF header says sm_90, followed by the inputs' names; an
   input named "undefined" makes it fail with an undefined reference in the error log.  A
   CU_JIT_TARGET of 99 is refused by cuLinkCreate with CUDA_ERROR_INVALID_VALUE, as libcuda 580
   refuses a target it does not know. */
static int link_option[64], link_options, link_types[16], link_inputs, link_destroyed, link_calls;
static long link_value[64];
static char link_names[1024], *link_error, *link_info;
static size_t link_error_size, link_info_size;
static void *link_context;
static unsigned char link_image[1200];
int cuLinkCreate_v2(unsigned n, int *options, void **values, void **state) {
    link_options = n; link_inputs = 0; link_names[0] = 0; link_context = current; ++link_calls;
    for (unsigned i = 0; i < n && i < 64; i++) {
        link_option[i] = options[i]; link_value[i] = (long)values[i];
        if (options[i] == 3) link_info = values[i];
        if (options[i] == 4) link_info_size = (size_t)values[i];
        if (options[i] == 5) link_error = values[i];
        if (options[i] == 6) link_error_size = (size_t)values[i];
        if (options[i] == 9 && (long)values[i] == 99) return 1;
    }
    *state = (void *)0x6000; return 0;
}
int cuLinkAddData_v2(void *state, int type, void *data, size_t size, const char *name,
                     unsigned n, void *o, void *v) {
    if (link_inputs < 16) link_types[link_inputs++] = type;
    strncat(link_names, name, sizeof link_names - strlen(link_names) - 2);
    strcat(link_names, ";");
    return 0;
}
int cuLinkComplete(void *state, void **out, size_t *size) {
    if (strstr(link_names, "undefined;")) {
        strncpy(link_error, "error   : Undefined reference to '_Z6helperv' in 'undefined'",
                link_error_size);
        return 1;
    }
    strncpy(link_info, "linked by the recording driver", link_info_size);
    memset(link_image, 0, sizeof link_image);
    memcpy(link_image, "\x7f" "ELF\x02", 5);
    link_image[0x31] = 90;  /* e_flags: sm_90 */
    strcpy((char *)link_image + 0x40, link_names);
    *out = link_image; *size = 0x40 + strlen(link_names); return 0;
}
int cuLinkDestroy(void *state) { ++link_destroyed; return 0; }
int fake_link(int *options, long *values, int *types, char *names, void **context,
              int *destroyed) {
    memcpy(options, link_option, sizeof link_option); memcpy(values, link_value, sizeof link_value);
    memcpy(types, link_types, sizeof link_types); strcpy(names, link_names);
    *context = link_context; *destroyed = link_destroyed; return link_options;
}
int fake_link_calls(void) { return link_calls; }
void fake_set_layout(int n, const size_t *off, const size_t *size) {
    nparams = n; memcpy(offsets, off, n * sizeof *off); memcpy(sizes, size, n * sizeof *size);
}
int fake_last(unsigned *dims, unsigned char *params, size_t n, char *name) {
    memcpy(dims, last.grid, 6 * sizeof *dims); dims[6] = last.smem;
    memcpy(params, params_seen, n); strcpy(name, kernel_name);
    return launches;
}
"""

# A driver of a chosen version (PRETEND_VERSION, e.g. 12020) with one GPU of a chosen compute
# capability, or with none (PRETEND_MAJOR 0: cuInit answers CUDA_ERROR_NO_DEVICE, as a real driver
# on a machine without a GPU does).  Compiling asks nothing more of a driver than this: tests use
# it to pretend a machine instead of patching how cudaload asks (see pretend_driver).
PRETEND_DRIVER = r"""
#include <string.h>
int cuInit(unsigned int flags) { return PRETEND_MAJOR ? 0 : 100; }
int cuDriverGetVersion(int *v) { *v = PRETEND_VERSION; return 0; }
int cuGetErrorName(int code, const char **s) {
    switch (code) { case 0: *s = "CUDA_SUCCESS"; return 0; case 100: *s = "CUDA_ERROR_NO_DEVICE"; return 0; }
    return 1;
}
int cuGetErrorString(int code, const char **s) {
    if (code != 100) return cuGetErrorName(code, s);
    *s = "no CUDA-capable device is detected"; return 0;
}
int cuDeviceGetCount(int *n) { *n = PRETEND_MAJOR ? 1 : 0; return PRETEND_MAJOR ? 0 : 100; }
int cuDeviceGet(int *d, int i) { if (i || !PRETEND_MAJOR) return 101; *d = 0; return 0; }
int cuDeviceGetName(char *s, int len, int d) { strncpy(s, "Pretend GPU", len); return 0; }
int cuDeviceTotalMem_v2(unsigned long long *b, int d) { *b = 8ULL << 30; return 0; }
int cuDeviceGetAttribute(int *v, int attr, int d) {
    switch (attr) { case 75: *v = PRETEND_MAJOR; return 0; case 76: *v = PRETEND_MINOR; return 0;
                    case 16: *v = 84; return 0; }
    return 1;
}
int cuModuleGetLoadingMode(int *mode) { *mode = 2; return 0; }
int cuCtxGetCurrent(void **ctx) { *ctx = 0; return 0; }  /* none current: device 0 */
"""


def pretend_driver(directory, version: int, capability: tuple[int, int] | None = None) -> str:
    """A driver library of ``version`` (as cuDriverGetVersion gives it, e.g. 12020) with one GPU
    of compute ``capability``, or with no GPU; built in ``directory``, its path returned."""
    major, minor = capability or (0, 0)
    defines = f"#define PRETEND_VERSION {version}\n#define PRETEND_MAJOR {major}\n" \
              f"#define PRETEND_MINOR {minor}\n"
    name = f"libcuda_{version}_sm{major}{minor}.so"
    return build_shared_library(str(directory), name, defines + PRETEND_DRIVER)


NO_DRIVER_SYMBOLS = "int cudaload_test_nothing(void) { return 0; }\n"


def build_shared_library(directory, name: str, source: str) -> str:
    """Compile ``source`` into ``directory/name`` as a shared library and return its path."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        if os.environ.get("CI"):
            pytest.fail("no C compiler (cc) in CI: install gcc")
        pytest.skip("no C compiler (cc) to build a test library")
    src = os.path.join(directory, name + ".c")
    out = os.path.join(directory, name)
    with open(src, "w") as f:
        f.write(source)
    subprocess.run([cc, "-shared", "-fPIC", "-o", out, src], check=True, capture_output=True)
    return out


@pytest.fixture
def partial_driver(tmp_path) -> str:
    """A libcuda look-alike that has cuInit and cuDriverGetVersion but no other entry point."""
    return build_shared_library(str(tmp_path), "libcuda_partial.so", PARTIAL_DRIVER)


@pytest.fixture
def one_device_driver(tmp_path) -> str:
    """A libcuda look-alike reporting one device (a "Fake GPU", compute capability 8.6)."""
    return build_shared_library(str(tmp_path), "libcuda_onedevice.so", ONE_DEVICE_DRIVER)


@pytest.fixture
def recording_driver(tmp_path) -> str:
    """A libcuda look-alike with two compute capability 9.0 devices that records launches."""
    return build_shared_library(str(tmp_path), "libcuda_recording.so", RECORDING_DRIVER)


@pytest.fixture
def no_symbols_library(tmp_path) -> str:
    """A valid shared library that exports none of the driver's symbols."""
    return build_shared_library(str(tmp_path), "libnotcuda.so", NO_DRIVER_SYMBOLS)


@pytest.fixture
def text_file(tmp_path) -> str:
    """A file that is not a shared library at all."""
    path = tmp_path / "libcuda.so.1"
    path.write_text("this is not an ELF file\n")
    return str(path)


# The recording driver, also counting per device each primary context retained and each time a
# context of that device was made current (cuCtxSetCurrent, cuCtxPushCurrent): which devices a
# process touched.  fake_contexts(retained, bound) fills two int[8]; cuDevicePrimaryCtxGetState
# says a device's primary context is active once it was retained, as a real driver does.
CONTEXT_COUNTING_DRIVER = (
    "#define cuDevicePrimaryCtxRetain counted_cuDevicePrimaryCtxRetain\n"
    "#define cuCtxSetCurrent counted_cuCtxSetCurrent\n" + RECORDING_DRIVER + r"""
#undef cuDevicePrimaryCtxRetain
#undef cuCtxSetCurrent
static int ctx_retained[8], ctx_bound[8];
static void count_bound(void *ctx) { if (ctx) ++ctx_bound[(((size_t)ctx - 0x1000) / 0x100) & 7]; }
int cuDevicePrimaryCtxRetain(void **ctx, int d) {
    if (d >= 0 && d < 8) ++ctx_retained[d];
    return counted_cuDevicePrimaryCtxRetain(ctx, d);
}
int cuCtxSetCurrent(void *ctx) { count_bound(ctx); return counted_cuCtxSetCurrent(ctx); }
int cuCtxPushCurrent_v2(void *ctx) { count_bound(ctx); return counted_cuCtxSetCurrent(ctx); }
int cuDevicePrimaryCtxGetState(int d, unsigned *flags, int *active) {
    if (d < 0 || d > 1) return 1;
    *flags = 0; *active = ctx_retained[d] > 0; return 0;
}
int fake_contexts(int *retained, int *bound) {
    memcpy(retained, ctx_retained, sizeof ctx_retained); memcpy(bound, ctx_bound, sizeof ctx_bound);
    return 8;
}
""")


@pytest.fixture
def context_counting_driver(tmp_path) -> str:
    """The recording driver (two devices) that also counts, per device, the contexts retained and
    made current."""
    return build_shared_library(str(tmp_path), "libcuda_contexts.so", CONTEXT_COUNTING_DRIVER)
