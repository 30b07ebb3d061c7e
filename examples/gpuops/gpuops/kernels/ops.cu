// gpuops kernels, one template per operation, instantiated per element type through NVRTC name
// expressions (e.g. "add<float>", "sum_partials<__half, float>").  T is the element type, A the
// type it is accumulated in (float for __half and float, double for double).
#include "common.cuh"

using namespace gpuops;

template <typename T>
__global__ void add(const T *__restrict__ x, const T *__restrict__ y, T *__restrict__ out,
                    long long n) {
    for (long long i = first_index(); i < n; i += grid_stride())
        out[i] = from_acc<T>(to_acc(x[i]) + to_acc(y[i]));
}

template <typename T>
__global__ void mul(const T *__restrict__ x, const T *__restrict__ y, T *__restrict__ out,
                    long long n) {
    for (long long i = first_index(); i < n; i += grid_stride())
        out[i] = from_acc<T>(to_acc(x[i]) * to_acc(y[i]));
}

// out = a * x + y, with a given as double for every T so that one signature serves all types.
template <typename T>
__global__ void axpy(double a, const T *__restrict__ x, const T *__restrict__ y,
                     T *__restrict__ out, long long n) {
    const auto alpha = to_acc(T(a));
    for (long long i = first_index(); i < n; i += grid_stride())
        out[i] = from_acc<T>(alpha * to_acc(x[i]) + to_acc(y[i]));
}

// Negative values become 0; NaN stays NaN, as with numpy.maximum(x, 0).
template <typename T>
__global__ void relu(const T *__restrict__ x, T *__restrict__ out, long long n) {
    for (long long i = first_index(); i < n; i += grid_stride()) {
        const auto v = to_acc(x[i]);
        out[i] = v < 0 ? from_acc<T>(decltype(v)(0)) : x[i];
    }
}

// Sum, first pass: each block adds its share of x into partials[blockIdx.x].
template <typename T, typename A>
__global__ void sum_partials(const T *__restrict__ x, A *__restrict__ partials, long long n) {
    __shared__ A scratch[32];
    A total = 0;
    for (long long i = first_index(); i < n; i += grid_stride())
        total += to_acc(x[i]);
    total = block_reduce(total, Sum(), A(0), scratch);
    if (threadIdx.x == 0)
        partials[blockIdx.x] = total;
}

// Sum, second pass (one block): the partials in a fixed order, so results are reproducible.
template <typename T, typename A>
__global__ void sum_final(const A *__restrict__ partials, T *__restrict__ out, int count) {
    __shared__ A scratch[32];
    A total = 0;
    for (int i = threadIdx.x; i < count; i += blockDim.x)
        total += partials[i];
    total = block_reduce(total, Sum(), A(0), scratch);
    if (threadIdx.x == 0)
        out[0] = from_acc<T>(total);
}

// Softmax of each row of a (rows, cols) C-contiguous matrix: one block per row.
template <typename T, typename A>
__global__ void softmax_rows(const T *__restrict__ x, T *__restrict__ out, long long cols) {
    __shared__ A scratch[32];
    const T *row = x + (long long)blockIdx.x * cols;
    T *dst = out + (long long)blockIdx.x * cols;
    const A lowest = minus_infinity(A());
    A peak = lowest;
    for (long long j = threadIdx.x; j < cols; j += blockDim.x)
        peak = Max()(peak, to_acc(row[j]));
    peak = block_reduce(peak, Max(), lowest, scratch);
    A total = 0;
    for (long long j = threadIdx.x; j < cols; j += blockDim.x)
        total += exp_acc(to_acc(row[j]) - peak);
    total = block_reduce(total, Sum(), A(0), scratch);
    for (long long j = threadIdx.x; j < cols; j += blockDim.x)
        dst[j] = from_acc<T>(exp_acc(to_acc(row[j]) - peak) / total);
}
