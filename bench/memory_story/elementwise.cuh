// Elementwise operator library: the one source both builds use.  The ahead-of-time build
// instantiates every operator x dtype x variant (x unroll x index width) with nvcc; the on-demand
// build hands cudaload this file plus only the kernel definitions a workload needs.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

typedef signed char i8;
typedef short i16;
typedef int i32;
typedef long long i64;
typedef unsigned char u8;

// Half-width floats compute in float, like a framework's "opmath" type.
template <class T> struct OpMath { typedef T type; };
template <> struct OpMath<__half> { typedef float type; };
template <> struct OpMath<__nv_bfloat16> { typedef float type; };

template <class T> struct IsFloat { static const bool value = false; };
template <> struct IsFloat<float> { static const bool value = true; };
template <> struct IsFloat<double> { static const bool value = true; };

template <class M, class T> __device__ __forceinline__ M load_as(T x) { return static_cast<M>(x); }
template <class M> __device__ __forceinline__ M load_as(__half x) { return static_cast<M>(__half2float(x)); }
template <class M> __device__ __forceinline__ M load_as(__nv_bfloat16 x) { return static_cast<M>(__bfloat162float(x)); }

template <class R> struct Store {
  template <class M> __device__ __forceinline__ static R of(M x) { return static_cast<R>(x); }
};
template <> struct Store<__half> {
  template <class M> __device__ __forceinline__ static __half of(M x) { return __float2half(static_cast<float>(x)); }
};
template <> struct Store<__nv_bfloat16> {
  template <class M> __device__ __forceinline__ static __nv_bfloat16 of(M x) { return __float2bfloat16(static_cast<float>(x)); }
};

// float/double overloads of the math functions the operators use
#define EW_MATH1(name, f32, f64) \
  __device__ __forceinline__ float name(float x) { return f32(x); } \
  __device__ __forceinline__ double name(double x) { return f64(x); }
#define EW_MATH2(name, f32, f64) \
  __device__ __forceinline__ float name(float x, float y) { return f32(x, y); } \
  __device__ __forceinline__ double name(double x, double y) { return f64(x, y); }
EW_MATH1(m_exp, expf, exp) EW_MATH1(m_log, logf, log) EW_MATH1(m_sqrt, sqrtf, sqrt)
EW_MATH1(m_rsqrt, rsqrtf, rsqrt) EW_MATH1(m_sin, sinf, sin) EW_MATH1(m_cos, cosf, cos)
EW_MATH1(m_tanh, tanhf, tanh) EW_MATH1(m_floor, floorf, floor) EW_MATH1(m_ceil, ceilf, ceil)
EW_MATH1(m_rint, rintf, rint) EW_MATH1(m_log1p, log1pf, log1p) EW_MATH1(m_expm1, expm1f, expm1)
EW_MATH1(m_erf, erff, erf)
EW_MATH2(m_pow, powf, pow) EW_MATH2(m_atan2, atan2f, atan2) EW_MATH2(m_hypot, hypotf, hypot)
EW_MATH2(m_copysign, copysignf, copysign) EW_MATH2(m_fmod, fmodf, fmod)

// Operators on the opmath type M.
#define EW_BIN(name, expr) struct name { template <class M> __device__ __forceinline__ M operator()(M a, M b) const { return expr; } };
#define EW_CMP(name, expr) struct name { template <class M> __device__ __forceinline__ bool operator()(M a, M b) const { return expr; } };
#define EW_UN(name, expr) struct name { template <class M> __device__ __forceinline__ M operator()(M a) const { return expr; } };
EW_BIN(op_add, a + b) EW_BIN(op_sub, a - b) EW_BIN(op_mul, a * b) EW_BIN(op_div, a / b)
EW_BIN(op_max, a > b ? a : b) EW_BIN(op_min, a < b ? a : b)
EW_BIN(op_pow, m_pow(a, b)) EW_BIN(op_atan2, m_atan2(a, b)) EW_BIN(op_hypot, m_hypot(a, b))
EW_BIN(op_copysign, m_copysign(a, b))
EW_BIN(op_bitwise_and, a & b) EW_BIN(op_bitwise_or, a | b) EW_BIN(op_bitwise_xor, a ^ b)
EW_BIN(op_shl, static_cast<M>(a << b)) EW_BIN(op_shr, static_cast<M>(a >> b))
struct op_rem {
  template <class M> __device__ __forceinline__ M operator()(M a, M b) const {
    if constexpr (IsFloat<M>::value) return m_fmod(a, b); else return b == M(0) ? M(0) : static_cast<M>(a % b);
  }
};
EW_CMP(op_eq, a == b) EW_CMP(op_ne, a != b) EW_CMP(op_lt, a < b) EW_CMP(op_le, a <= b)
EW_CMP(op_gt, a > b) EW_CMP(op_ge, a >= b)
EW_CMP(op_logical_and, a != M(0) && b != M(0)) EW_CMP(op_logical_or, a != M(0) || b != M(0))

EW_UN(op_neg, static_cast<M>(-a)) EW_UN(op_abs, a == M(0) || a > M(0) ? a : static_cast<M>(-a))
EW_UN(op_exp, m_exp(a)) EW_UN(op_log, m_log(a)) EW_UN(op_sqrt, m_sqrt(a)) EW_UN(op_rsqrt, m_rsqrt(a))
EW_UN(op_sin, m_sin(a)) EW_UN(op_cos, m_cos(a)) EW_UN(op_tanh, m_tanh(a))
EW_UN(op_sigmoid, M(1) / (M(1) + m_exp(-a))) EW_UN(op_relu, a > M(0) ? a : M(0))
EW_UN(op_gelu, M(0.5) * a * (M(1) + m_erf(a * M(0.7071067811865476))))
EW_UN(op_silu, a / (M(1) + m_exp(-a)))
EW_UN(op_floor, m_floor(a)) EW_UN(op_ceil, m_ceil(a)) EW_UN(op_round, m_rint(a))
EW_UN(op_reciprocal, M(1) / a) EW_UN(op_square, static_cast<M>(a * a))
EW_UN(op_sign, static_cast<M>((M(0) < a) - (a < M(0))))
EW_UN(op_log1p, m_log1p(a)) EW_UN(op_expm1, m_expm1(a)) EW_UN(op_erf, m_erf(a))
struct op_bitwise_not {
  template <class M> __device__ __forceinline__ M operator()(M a) const { return static_cast<M>(~a); }
  __device__ __forceinline__ bool operator()(bool a) const { return !a; }
};
struct op_logical_not { template <class M> __device__ __forceinline__ bool operator()(M a) const { return a == M(0); } };
struct op_cast { template <class M> __device__ __forceinline__ M operator()(M a) const { return a; } };

// The loop every kernel runs: U consecutive elements per thread, grid-stride.
template <int U, class I, class F> __device__ __forceinline__ void ew_loop(I n, F f) {
  const I stride = static_cast<I>(gridDim.x) * blockDim.x * U;
  for (I base = (static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x) * U; base < n; base += stride) {
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (base + u < n) f(base + u);
  }
}

template <class Op, class T, class R, int U, class I>
__device__ __forceinline__ void binary_contig(R* out, const T* a, const T* b, I n) {
  typedef typename OpMath<T>::type M;
  ew_loop<U>(n, [&](I i) { out[i] = Store<R>::of(Op()(load_as<M>(a[i]), load_as<M>(b[i]))); });
}
template <class Op, class T, class R, int U, class I>
__device__ __forceinline__ void binary_strided(R* out, const T* a, const T* b, I n0, I n1, I sa0, I sa1,
                                               I sb0, I sb1, I so0, I so1) {
  typedef typename OpMath<T>::type M;
  ew_loop<U>(n0 * n1, [&](I i) {
    const I i0 = i / n1, i1 = i % n1;
    out[i0 * so0 + i1 * so1] = Store<R>::of(Op()(load_as<M>(a[i0 * sa0 + i1 * sa1]), load_as<M>(b[i0 * sb0 + i1 * sb1])));
  });
}
template <class Op, class T, class R, int U, class I>
__device__ __forceinline__ void binary_broadcast(R* out, const T* a, const T* b, I n, I inner) {
  typedef typename OpMath<T>::type M;
  ew_loop<U>(n, [&](I i) { out[i] = Store<R>::of(Op()(load_as<M>(a[i]), load_as<M>(b[i % inner]))); });
}
template <class Op, class T, class R, int U, class I>
__device__ __forceinline__ void unary_contig(R* out, const T* a, I n) {
  typedef typename OpMath<T>::type M;
  ew_loop<U>(n, [&](I i) { out[i] = Store<R>::of(Op()(load_as<M>(a[i]))); });
}
template <class Op, class T, class R, int U, class I>
__device__ __forceinline__ void unary_strided(R* out, const T* a, I n0, I n1, I sa0, I sa1, I so0, I so1) {
  typedef typename OpMath<T>::type M;
  ew_loop<U>(n0 * n1, [&](I i) {
    const I i0 = i / n1, i1 = i % n1;
    out[i0 * so0 + i1 * so1] = Store<R>::of(Op()(load_as<M>(a[i0 * sa0 + i1 * sa1])));
  });
}
template <class Op, class T, class R, int U, class I>
__device__ __forceinline__ void unary_broadcast(R* out, const T* a, I n, I inner) {
  typedef typename OpMath<T>::type M;
  ew_loop<U>(n, [&](I i) { out[i] = Store<R>::of(Op()(load_as<M>(a[i % inner]))); });
}
template <class T, int U, class I>
__device__ __forceinline__ void fill_contig(T* out, double value, I n) {
  const T v = Store<T>::of(value);
  ew_loop<U>(n, [&](I i) { out[i] = v; });
}
template <class T, int U, class I>
__device__ __forceinline__ void fill_strided(T* out, double value, I n0, I n1, I so0, I so1) {
  const T v = Store<T>::of(value);
  ew_loop<U>(n0 * n1, [&](I i) { out[(i / n1) * so0 + (i % n1) * so1] = v; });
}

// One exported kernel: extern "C" so a loader finds it by a plain name.
#define EW_PARAMS_binary_contig(T, R, I) R* out, const T* a, const T* b, I n
#define EW_ARGS_binary_contig out, a, b, n
#define EW_PARAMS_binary_strided(T, R, I) R* out, const T* a, const T* b, I n0, I n1, I sa0, I sa1, I sb0, I sb1, I so0, I so1
#define EW_ARGS_binary_strided out, a, b, n0, n1, sa0, sa1, sb0, sb1, so0, so1
#define EW_PARAMS_binary_broadcast(T, R, I) R* out, const T* a, const T* b, I n, I inner
#define EW_ARGS_binary_broadcast out, a, b, n, inner
#define EW_PARAMS_unary_contig(T, R, I) R* out, const T* a, I n
#define EW_ARGS_unary_contig out, a, n
#define EW_PARAMS_unary_strided(T, R, I) R* out, const T* a, I n0, I n1, I sa0, I sa1, I so0, I so1
#define EW_ARGS_unary_strided out, a, n0, n1, sa0, sa1, so0, so1
#define EW_PARAMS_unary_broadcast(T, R, I) R* out, const T* a, I n, I inner
#define EW_ARGS_unary_broadcast out, a, n, inner

#define EW_KERNEL(name, kind, variant, Op, T, R, U, I) \
  extern "C" __global__ void __launch_bounds__(256) name(EW_PARAMS_##kind##_##variant(T, R, I)) { \
    kind##_##variant<Op, T, R, U, I>(EW_ARGS_##kind##_##variant); }
#define EW_FILL_contig(name, T, U, I) \
  extern "C" __global__ void __launch_bounds__(256) name(T* out, double value, I n) { fill_contig<T, U, I>(out, value, n); }
#define EW_FILL_strided(name, T, U, I) \
  extern "C" __global__ void __launch_bounds__(256) name(T* out, double value, I n0, I n1, I so0, I so1) { \
    fill_strided<T, U, I>(out, value, n0, n1, so0, so1); }
