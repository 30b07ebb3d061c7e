"""The memory-logging recording driver of tests/_fake_memory.py, with the entry points that build
a graph node by node: each call logged (``fake_memory_log``) with its arguments as the driver got
them.

Graphs ``cuGraphCreate`` makes, and a conditional node's bodies, are numbered with the captured
ones (0x8000 + 0x10 n); nodes are 0x70000 + 0x10 k; conditional handles 0xc0000 + k.  A kernel
node's line shows its grid, block, shared memory and the parameter bytes, read through the
layout the test set (``fake_set_layout``), as ``cuLaunchKernelEx`` reads them.
"""

from __future__ import annotations

import pytest

from tests._fake_memory import MEMORY_CALLS
from tests._fakelibs import RECORDING_DRIVER, build_shared_library

GRAPH_CALLS = r"""
static char entry[512];
static int nodes, handles;
static void logged(void) { note(entry); }  /* into MEMORY_CALLS' log */
static void *new_node(void **node) { *node = (void *)(0x70000 + 0x10 * (size_t)++nodes); return *node; }
/* " deps=70010,70020": the nodes a node waits for */
static void deps_text(char *out, size_t size, void *const *deps, size_t n) {
    size_t at = (size_t)snprintf(out, size, " deps=");
    for (size_t i = 0; i < n && at < size; i++)
        at += (size_t)snprintf(out + at, size - at, i ? ",%zx" : "%zx", (size_t)deps[i]);
}
static void *new_graph(void) {
    int g = graphs++; host_ncaptured[g & 15] = 0; return (void *)(0x8000 + 0x10 * (size_t)g);
}
int cuGraphCreate(void **graph, unsigned flags) {
    *graph = new_graph();
    snprintf(entry, sizeof entry, "cuGraphCreate %zx", (size_t)*graph); logged(); return 0;
}
typedef struct { void *func; unsigned grid[3], block[3], smem; void **params, **extra; void *kern, *ctx; } KernelParams;
static void kernel_line(const char *what, void *graph, void *node, const KernelParams *p, void *const *deps, size_t n) {
    char d[128] = "", bytes[256] = "";
    size_t at = 0;
    if (deps) deps_text(d, sizeof d, deps, n);
    for (int i = 0; i < nparams; i++)
        for (size_t b = 0; b < sizes[i] && at + 3 < sizeof bytes; b++)
            at += (size_t)snprintf(bytes + at, sizeof bytes - at, "%02x", ((unsigned char *)p->params[i])[b]);
    snprintf(entry, sizeof entry, "%s %zx %zx%s func=%zx grid=%u,%u,%u block=%u,%u,%u smem=%u args=%s",
             what, (size_t)graph, (size_t)node, d, (size_t)p->func, p->grid[0], p->grid[1], p->grid[2],
             p->block[0], p->block[1], p->block[2], p->smem, bytes);
    logged();
}
int cuGraphAddKernelNode_v2(void **node, void *graph, void *const *deps, size_t n, const KernelParams *p) {
    kernel_line("cuGraphAddKernelNode", graph, new_node(node), p, deps, n); return 0;
}
int cuGraphKernelNodeSetParams_v2(void *node, const KernelParams *p) {
    kernel_line("cuGraphKernelNodeSetParams", 0, node, p, 0, 0); return 0;
}
int cuGraphExecKernelNodeSetParams_v2(void *exec, void *node, const KernelParams *p) {
    kernel_line("cuGraphExecKernelNodeSetParams", exec, node, p, 0, 0); return 0;
}
typedef struct { unsigned long long dst; size_t pitch; unsigned value, element; size_t width, height; } MemsetParams;
int cuGraphAddMemsetNode(void **node, void *graph, void *const *deps, size_t n, const MemsetParams *p, void *ctx) {
    char d[128]; deps_text(d, sizeof d, deps, n); new_node(node);
    snprintf(entry, sizeof entry, "cuGraphAddMemsetNode %zx %zx%s dst=%llx value=%u element=%u width=%zu height=%zu ctx=%zx",
             (size_t)graph, (size_t)*node, d, p->dst, p->value, p->element, p->width, p->height, (size_t)ctx);
    logged(); return 0;
}
typedef struct {
    size_t srcX, srcY, srcZ, srcLOD; int srcType; const void *srcHost; unsigned long long srcDevice;
    void *srcArray, *reserved0; size_t srcPitch, srcHeight;
    size_t dstX, dstY, dstZ, dstLOD; int dstType; void *dstHost; unsigned long long dstDevice;
    void *dstArray, *reserved1; size_t dstPitch, dstHeight;
    size_t width, height, depth;
} Copy3D;
int cuGraphAddMemcpyNode(void **node, void *graph, void *const *deps, size_t n, const Copy3D *p, void *ctx) {
    char d[128]; deps_text(d, sizeof d, deps, n); new_node(node);
    snprintf(entry, sizeof entry, "cuGraphAddMemcpyNode %zx %zx%s src=%d:%llx dst=%d:%llx bytes=%zux%zux%zu "
             "pitch=%zu,%zu rows=%zu,%zu ctx=%zx", (size_t)graph, (size_t)*node, d, p->srcType,
             p->srcDevice, p->dstType, p->dstDevice, p->width, p->height, p->depth, p->srcPitch,
             p->dstPitch, p->srcHeight, p->dstHeight, (size_t)ctx);
    logged(); return 0;
}
static int simple_node(const char *what, void **node, void *graph, void *const *deps, size_t n, void *event) {
    char d[128]; deps_text(d, sizeof d, deps, n); new_node(node);
    snprintf(entry, sizeof entry, "%s %zx %zx%s event=%zx", what, (size_t)graph, (size_t)*node, d, (size_t)event);
    logged(); return 0;
}
int cuGraphAddEmptyNode(void **node, void *graph, void *const *deps, size_t n) {
    return simple_node("cuGraphAddEmptyNode", node, graph, deps, n, 0);
}
int cuGraphAddEventRecordNode(void **node, void *graph, void *const *deps, size_t n, void *e) {
    return simple_node("cuGraphAddEventRecordNode", node, graph, deps, n, e);
}
int cuGraphAddEventWaitNode(void **node, void *graph, void *const *deps, size_t n, void *e) {
    return simple_node("cuGraphAddEventWaitNode", node, graph, deps, n, e);
}
int cuGraphConditionalHandleCreate(unsigned long long *h, void *graph, void *ctx, unsigned value, unsigned flags) {
    *h = 0xc0000 + (unsigned long long)++handles;
    snprintf(entry, sizeof entry, "cuGraphConditionalHandleCreate %zx ctx=%zx default=%u flags=%u -> %llx",
             (size_t)graph, (size_t)ctx, value, flags, *h);
    logged(); return 0;
}
typedef struct { unsigned long long handle; int type; unsigned size; void **bodies; void *ctx; } Conditional;
typedef struct { int type; int reserved0[3]; union { long long reserved1[29]; Conditional conditional; }; long long reserved2; } NodeParams;
static void *bodies[16];
int cuGraphAddNode_v2(void **node, void *graph, void *const *deps, const void *edges, size_t n, NodeParams *p) {
    char d[128]; Conditional *c = &p->conditional;
    deps_text(d, sizeof d, deps, n);
    if (p->type != 13 || c->size > 16 || edges) return 1;
    new_node(node);
    for (unsigned i = 0; i < c->size; i++) bodies[i] = new_graph();
    c->bodies = bodies;
    snprintf(entry, sizeof entry, "cuGraphAddNode %zx %zx%s conditional type=%d size=%u handle=%llx ctx=%zx body=%zx",
             (size_t)graph, (size_t)*node, d, c->type, c->size, c->handle, (size_t)c->ctx, (size_t)bodies[0]);
    logged(); return 0;
}
int cuStreamBeginCaptureToGraph(void *s, void *graph, void *const *deps, const void *edges, size_t n, int mode) {
    char d[128]; deps_text(d, sizeof d, deps, n);
    capturing = 1; capture_graph = capture_into = (int)(((size_t)graph - 0x8000) / 0x10) & 15;
    snprintf(entry, sizeof entry, "cuStreamBeginCaptureToGraph %zx %zx%s mode=%d", (size_t)s, (size_t)graph, d, mode);
    logged(); return 0;
}
"""


def graph_library(directory) -> str:
    """The graph-building recording driver, built in ``directory``; its path."""
    return build_shared_library(str(directory), "libcuda_graphs.so",
                                RECORDING_DRIVER + MEMORY_CALLS + GRAPH_CALLS)


@pytest.fixture
def graph_driver(tmp_path) -> str:
    """The recording driver, with the entry points of graphs built node by node, logged."""
    return graph_library(tmp_path)
