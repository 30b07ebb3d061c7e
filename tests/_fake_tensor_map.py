"""The memory-logging recording driver of tests/_fake_memory.py, with tensor map encoding and the
memory pools of tests/_fake_pools.py: each call logged (``fake_memory_log``) with every argument as the
driver got it, arrays innermost first as CUDA takes them.  Each encode fills the map with bytes a
test can recognise (the address, then i * 7 + rank), and cuTensorMapReplaceAddress writes the
new address over its first 8 bytes."""

from __future__ import annotations

import pytest

from tests._fake_memory import MEMORY_CALLS
from tests._fake_pools import POOL_CALLS
from tests._fakelibs import RECORDING_DRIVER, build_shared_library

# Built without cuTensorMapEncodeIm2col where NO_IM2COL is defined, as a driver before it.
TENSOR_MAP_CALLS = r"""
#include <stdint.h>
static char *tensor_list(char *at, const char *name, const void *values, int n, int wide) {
    at += sprintf(at, " %s=", name);
    for (int i = 0; i < n; i++)
        at += wide ? sprintf(at, i ? ",%llu" : "%llu", ((const unsigned long long *)values)[i])
                   : sprintf(at, i ? ",%d" : "%d", ((const int *)values)[i]);
    return at;
}
/* the call's name, the map's alignment and the arguments every encode has; then fills the map */
static char *tensor_head(char *at, const char *name, unsigned char *map, int type, unsigned rank,
                         void *address, const unsigned long long *dims,
                         const unsigned long long *strides) {
    at += sprintf(at, "%s aligned=%d type=%d rank=%u address=%llx", name,
                  (int)((size_t)map % 128 == 0), type, rank, (unsigned long long)(size_t)address);
    at = tensor_list(at, "dims", dims, (int)rank, 1);
    at = tensor_list(at, "strides", strides, (int)rank - 1, 1);
    for (int i = 0; i < 128; i++) map[i] = (unsigned char)(i * 7 + rank);
    memcpy(map, &address, sizeof address);
    return at;
}
static void tensor_tail(char *at, const unsigned *estrides, unsigned rank, int interleave,
                        int swizzle, int l2, int oob) {
    at = tensor_list(at, "element_strides", estrides, (int)rank, 0);
    sprintf(at, " interleave=%d swizzle=%d l2=%d oob=%d", interleave, swizzle, l2, oob);
}
int cuTensorMapEncodeTiled(unsigned char *map, int type, unsigned rank, void *address,
                           const unsigned long long *dims, const unsigned long long *strides,
                           const unsigned *box, const unsigned *estrides, int interleave,
                           int swizzle, int l2, int oob) {
    char text[512], *at = tensor_head(text, "cuTensorMapEncodeTiled", map, type, rank, address,
                                      dims, strides);
    at = tensor_list(at, "box", box, (int)rank, 0);
    tensor_tail(at, estrides, rank, interleave, swizzle, l2, oob);
    note(text); return 0;
}
#ifndef NO_IM2COL
int cuTensorMapEncodeIm2col(unsigned char *map, int type, unsigned rank, void *address,
                            const unsigned long long *dims, const unsigned long long *strides,
                            const int *lower, const int *upper, unsigned channels,
                            unsigned pixels, const unsigned *estrides, int interleave,
                            int swizzle, int l2, int oob) {
    char text[512], *at = tensor_head(text, "cuTensorMapEncodeIm2col", map, type, rank, address,
                                      dims, strides);
    at = tensor_list(at, "lower", lower, (int)rank - 2, 0);
    at = tensor_list(at, "upper", upper, (int)rank - 2, 0);
    at += sprintf(at, " channels=%u pixels=%u", channels, pixels);
    tensor_tail(at, estrides, rank, interleave, swizzle, l2, oob);
    note(text); return 0;
}
#endif
/* logs the map's alignment, the address it held and the new one, which it then holds */
int cuTensorMapReplaceAddress(unsigned char *map, void *address) {
    unsigned long long was; char text[160];
    memcpy(&was, map, sizeof was);
    snprintf(text, sizeof text, "cuTensorMapReplaceAddress aligned=%d was=%llx address=%llx",
             (int)((size_t)map % 128 == 0), was, (unsigned long long)(size_t)address);
    memcpy(map, &address, sizeof address);
    note(text); return 0;
}
"""


def tensor_map_library(directory, im2col: bool = True) -> str:
    """The driver built in ``directory`` (without im2col unless ``im2col``), its path returned."""
    name, head = ("libcuda_tensor_map.so", "") if im2col else \
        ("libcuda_no_im2col.so", "#define NO_IM2COL\n")
    return build_shared_library(str(directory), name,
                                head + RECORDING_DRIVER + MEMORY_CALLS + TENSOR_MAP_CALLS + POOL_CALLS)


@pytest.fixture
def tensor_map_driver(tmp_path) -> str:
    """The recording driver, with tensor map encoding and the memory pool's attributes logged."""
    return tensor_map_library(tmp_path)


@pytest.fixture
def no_im2col_driver(tmp_path) -> str:
    """The tensor map driver as one before ``cuTensorMapEncodeIm2col``: without it."""
    return tensor_map_library(tmp_path, im2col=False)
