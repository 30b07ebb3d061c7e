"""CUDA sources shared by the GPU tests."""

SAXPY = r"""
extern "C" __global__ void saxpy(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""

TEMPLATED = r"""
template <typename T>
__global__ void scale(T* x, T factor, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * factor;
}
"""

KINDS = r"""
struct Pair { int a; float b; };
extern "C" __global__ void kinds(long long* out, double* real, char c, unsigned char uc, short s,
                                 unsigned short us, int i, unsigned int u, long long ll,
                                 unsigned long long ull, float f, double d, bool b, Pair p,
                                 const int* ptr) {
    out[0] = c; out[1] = uc; out[2] = s; out[3] = us; out[4] = i; out[5] = u; out[6] = ll;
    out[7] = (long long)ull; out[8] = b; out[9] = p.a; out[10] = ptr ? ptr[0] : -1;
    real[0] = f; real[1] = d; real[2] = p.b;
}
"""

SHARED = r"""
extern "C" __global__ void reverse(float* x, int n) {
    extern __shared__ float tile[];
    int i = threadIdx.x;
    for (int j = i; j < n; j += blockDim.x) tile[j] = x[j];
    __syncthreads();
    for (int j = i; j < n; j += blockDim.x) x[j] = tile[n - 1 - j];
}
"""

FAULT = r"""
extern "C" __global__ void fault(int* p) { *(volatile int*)((char*)p + (1ull << 40)) = 1; }
"""
