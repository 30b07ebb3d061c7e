// Shared by every gpuops kernel: the accumulator type of each element type, conversions, and
// block-wide reductions.  Included by ops.cu as a sibling file ("common.cuh"), which cudaload
// passes to NVRTC as an in-memory header.
#pragma once
#include <cuda_fp16.h>

namespace gpuops {

// float16 is read and accumulated as float: CUDA's half arithmetic rounds at every step, and a
// float result rounded once equals numpy's float16 result for +, - and *.
__device__ __forceinline__ float to_acc(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_acc(float v) { return v; }
__device__ __forceinline__ double to_acc(double v) { return v; }

template <typename T> __device__ __forceinline__ T from_acc(float v);
template <> __device__ __forceinline__ __half from_acc<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ float from_acc<float>(float v) { return v; }
template <typename T> __device__ __forceinline__ T from_acc(double v) { return T(v); }

__device__ __forceinline__ float minus_infinity(float) { return -__int_as_float(0x7f800000); }
__device__ __forceinline__ double minus_infinity(double) {
    return -__longlong_as_double(0x7ff0000000000000LL);
}

__device__ __forceinline__ float exp_acc(float v) { return expf(v); }
__device__ __forceinline__ double exp_acc(double v) { return exp(v); }

// Every loop walks the whole array whatever the grid: the host caps the grid size.
__device__ __forceinline__ long long first_index() {
    return (long long)blockIdx.x * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ long long grid_stride() { return (long long)blockDim.x * gridDim.x; }

struct Sum { template <typename A> __device__ A operator()(A a, A b) const { return a + b; } };
struct Max { template <typename A> __device__ A operator()(A a, A b) const { return a > b ? a : b; } };

// Reduce ``v`` over the block with ``op``; every thread gets the result.  The block size must be
// a multiple of 32 (the host launches 256 threads); ``scratch`` holds one value per warp.
template <typename A, typename Op>
__device__ A block_reduce(A v, Op op, A identity, A *scratch) {
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const unsigned warps = blockDim.x / 32;
    for (int offset = 16; offset > 0; offset /= 2)
        v = op(v, __shfl_down_sync(0xffffffffu, v, offset));
    __syncthreads();  // scratch may still be read after a previous call
    if (lane == 0)
        scratch[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < warps ? scratch[lane] : identity;
        for (int offset = 16; offset > 0; offset /= 2)
            v = op(v, __shfl_down_sync(0xffffffffu, v, offset));
        if (lane == 0)
            scratch[0] = v;
    }
    __syncthreads();
    return scratch[0];
}

}  // namespace gpuops
