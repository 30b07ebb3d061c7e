"""The common header of the kernel-family benchmark (family_bench.py), and the kernels on it.

    python bench/family_header.py [--out family.cuh]     # writes the header; prints its lines

A host package that builds its elementwise operators at run time prepends one large header to
every kernel (MXNet's runtime-compiled operators: about 3,400 lines of type traits, math wrappers,
operator functors and index helpers).  This module writes such a header for cudaload's own
benchmark, deterministically: the same text on every run, so its cache keys are stable.  It holds

- type traits and conversions for every dtype (half, bfloat16, float, double, the signed and
  unsigned integers of 8 to 64 bits, bool);
- math wrappers for each floating dtype (half and bfloat16 compute in float);
- forward functors of unary and binary operators, and the backward functors of the unary ones;
- vectorised loads and stores of 1, 2, 4 and 8 elements per dtype;
- shapes of 1 to 6 dimensions with strided and broadcast offsets;
- warp and block reductions per dtype;
- the kernel templates: contiguous, strided and broadcast elementwise loops.

:func:`kernels` gives the benchmark's programs: one ``extern "C"`` kernel each, on that header.
"""

from __future__ import annotations

import argparse
import sys

# dtype name -> (C type, kind, bits); kind: "f" floating, "i" signed, "u" unsigned, "b" bool
DTYPES = {
    "float16": ("__half", "f", 16), "bfloat16": ("__nv_bfloat16", "f", 16),
    "float32": ("float", "f", 32), "float64": ("double", "f", 64),
    "int8": ("i8", "i", 8), "int16": ("i16", "i", 16), "int32": ("i32", "i", 32),
    "int64": ("i64", "i", 64), "uint8": ("u8", "u", 8), "uint16": ("u16", "u", 16),
    "uint32": ("u32", "u", 32), "uint64": ("u64", "u", 64), "bool": ("bool", "b", 8),
}
FLOATS = ("float16", "bfloat16", "float32", "float64")
INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
# unary math: name -> (float function, double function)
MATH1 = {
    "exp": ("expf", "exp"), "exp2": ("exp2f", "exp2"), "expm1": ("expm1f", "expm1"),
    "log": ("logf", "log"), "log2": ("log2f", "log2"), "log10": ("log10f", "log10"),
    "log1p": ("log1pf", "log1p"), "sqrt": ("sqrtf", "sqrt"), "rsqrt": ("rsqrtf", "rsqrt"),
    "cbrt": ("cbrtf", "cbrt"), "sin": ("sinf", "sin"), "cos": ("cosf", "cos"),
    "tan": ("tanf", "tan"), "asin": ("asinf", "asin"), "acos": ("acosf", "acos"),
    "atan": ("atanf", "atan"), "sinh": ("sinhf", "sinh"), "cosh": ("coshf", "cosh"),
    "tanh": ("tanhf", "tanh"), "asinh": ("asinhf", "asinh"), "acosh": ("acoshf", "acosh"),
    "atanh": ("atanhf", "atanh"), "erf": ("erff", "erf"), "erfc": ("erfcf", "erfc"),
    "erfinv": ("erfinvf", "erfinv"), "lgamma": ("lgammaf", "lgamma"),
    "tgamma": ("tgammaf", "tgamma"), "floor": ("floorf", "floor"), "ceil": ("ceilf", "ceil"),
    "trunc": ("truncf", "trunc"), "rint": ("rintf", "rint"), "round": ("roundf", "round"),
    "fabs": ("fabsf", "fabs"),
}
MATH2 = {"pow": ("powf", "pow"), "atan2": ("atan2f", "atan2"), "hypot": ("hypotf", "hypot"),
         "fmod": ("fmodf", "fmod"), "fmax": ("fmaxf", "fmax"), "fmin": ("fminf", "fmin"),
         "copysign": ("copysignf", "copysign"), "remainder": ("remainderf", "remainder"),
         "fdim": ("fdimf", "fdim"), "nextafter": ("nextafterf", "nextafter")}
# unary operators: name -> (forward on the opmath value a, derivative given a and the output y)
UNARY = {
    "identity": ("a", "M(1)"), "negative": ("-a", "M(-1)"),
    "reciprocal": ("M(1) / a", "-(y * y)"), "square": ("a * a", "M(2) * a"),
    "abs": ("m_fabs(a)", "a < M(0) ? M(-1) : M(1)"), "sign": ("(M(0) < a) - (a < M(0))", "M(0)"),
    "relu": ("a > M(0) ? a : M(0)", "a > M(0) ? M(1) : M(0)"),
    "sigmoid": ("M(1) / (M(1) + m_exp(-a))", "y * (M(1) - y)"),
    "softsign": ("a / (M(1) + m_fabs(a))", "M(1) / ((M(1) + m_fabs(a)) * (M(1) + m_fabs(a)))"),
    "softrelu": ("a > M(20) ? a : m_log1p(m_exp(a))", "M(1) - m_exp(-y)"),
    "gelu": ("M(0.5) * a * (M(1) + m_erf(a * M(0.7071067811865476)))",
             "M(0.5) * (M(1) + m_erf(a * M(0.7071067811865476))) + "
             "a * M(0.3989422804014327) * m_exp(M(-0.5) * a * a)"),
    "silu": ("a / (M(1) + m_exp(-a))", "y + (M(1) - y) / (M(1) + m_exp(-a))"),
    "mish": ("a * m_tanh(m_log1p(m_exp(a)))", "m_tanh(m_log1p(m_exp(a)))"),
    "selu": ("a > M(0) ? M(1.0507009873554805) * a : M(1.7580993408473766) * m_expm1(a)",
             "a > M(0) ? M(1.0507009873554805) : y + M(1.7580993408473766)"),
    "elu": ("a > M(0) ? a : m_expm1(a)", "a > M(0) ? M(1) : y + M(1)"),
    "hard_sigmoid": ("m_fmin(m_fmax(M(0.2) * a + M(0.5), M(0)), M(1))",
                     "a > M(-2.5) && a < M(2.5) ? M(0.2) : M(0)"),
    "exp": ("m_exp(a)", "y"), "expm1": ("m_expm1(a)", "y + M(1)"),
    "log": ("m_log(a)", "M(1) / a"), "log2": ("m_log2(a)", "M(1.4426950408889634) / a"),
    "log10": ("m_log10(a)", "M(0.4342944819032518) / a"), "log1p": ("m_log1p(a)", "M(1) / (M(1) + a)"),
    "sqrt": ("m_sqrt(a)", "M(0.5) / y"), "rsqrt": ("m_rsqrt(a)", "M(-0.5) * y * y * y"),
    "cbrt": ("m_cbrt(a)", "M(1) / (M(3) * y * y)"),
    "sin": ("m_sin(a)", "m_cos(a)"), "cos": ("m_cos(a)", "-m_sin(a)"),
    "tan": ("m_tan(a)", "M(1) + y * y"), "arcsin": ("m_asin(a)", "m_rsqrt(M(1) - a * a)"),
    "arccos": ("m_acos(a)", "-m_rsqrt(M(1) - a * a)"), "arctan": ("m_atan(a)", "M(1) / (M(1) + a * a)"),
    "sinh": ("m_sinh(a)", "m_cosh(a)"), "cosh": ("m_cosh(a)", "m_sinh(a)"),
    "tanh": ("m_tanh(a)", "M(1) - y * y"), "arcsinh": ("m_asinh(a)", "m_rsqrt(a * a + M(1))"),
    "arccosh": ("m_acosh(a)", "m_rsqrt(a * a - M(1))"), "arctanh": ("m_atanh(a)", "M(1) / (M(1) - a * a)"),
    "erf": ("m_erf(a)", "M(1.1283791670955126) * m_exp(-(a * a))"),
    "erfc": ("m_erfc(a)", "M(-1.1283791670955126) * m_exp(-(a * a))"),
    "erfinv": ("m_erfinv(a)", "M(0.886226925452758) * m_exp(y * y)"),
    "gammaln": ("m_lgamma(a)", "M(0)"), "gamma": ("m_tgamma(a)", "M(0)"),
    "floor": ("m_floor(a)", "M(0)"), "ceil": ("m_ceil(a)", "M(0)"), "trunc": ("m_trunc(a)", "M(0)"),
    "rint": ("m_rint(a)", "M(0)"), "round": ("m_round(a)", "M(0)"),
    "degrees": ("a * M(57.29577951308232)", "M(57.29577951308232)"),
    "radians": ("a * M(0.017453292519943295)", "M(0.017453292519943295)"),
}
# binary operators: name -> (forward on a and b, d/da, d/db)
BINARY = {
    "add": ("a + b", "M(1)", "M(1)"), "sub": ("a - b", "M(1)", "M(-1)"),
    "mul": ("a * b", "b", "a"), "div": ("a / b", "M(1) / b", "-a / (b * b)"),
    "rsub": ("b - a", "M(-1)", "M(1)"), "rdiv": ("b / a", "-b / (a * a)", "M(1) / a"),
    "maximum": ("a > b ? a : b", "a >= b ? M(1) : M(0)", "a < b ? M(1) : M(0)"),
    "minimum": ("a < b ? a : b", "a <= b ? M(1) : M(0)", "a > b ? M(1) : M(0)"),
    "power": ("m_pow(a, b)", "b * m_pow(a, b - M(1))", "m_pow(a, b) * m_log(a)"),
    "rpower": ("m_pow(b, a)", "m_pow(b, a) * m_log(b)", "a * m_pow(b, a - M(1))"),
    "hypot": ("m_hypot(a, b)", "a / m_hypot(a, b)", "b / m_hypot(a, b)"),
    "arctan2": ("m_atan2(a, b)", "b / (a * a + b * b)", "-a / (a * a + b * b)"),
    "mod": ("m_fmod(a, b)", "M(1)", "-m_floor(a / b)"),
    "remainder": ("m_remainder(a, b)", "M(1)", "-m_rint(a / b)"),
    "copysign": ("m_copysign(a, b)", "M(0)", "M(0)"), "fdim": ("m_fdim(a, b)", "M(0)", "M(0)"),
    "nextafter": ("m_nextafter(a, b)", "M(0)", "M(0)"),
    "squared_difference": ("(a - b) * (a - b)", "M(2) * (a - b)", "M(-2) * (a - b)"),
    "smooth_l1": ("m_fabs(a - b) < M(1) ? M(0.5) * (a - b) * (a - b) : m_fabs(a - b) - M(0.5)",
                  "M(0)", "M(0)"),
    "logaddexp": ("m_fmax(a, b) + m_log1p(m_exp(-m_fabs(a - b)))", "M(0)", "M(0)"),
    "xlogy": ("a == M(0) ? M(0) : a * m_log(b)", "m_log(b)", "a / b"),
    "equal": ("M(a == b)", "M(0)", "M(0)"), "not_equal": ("M(a != b)", "M(0)", "M(0)"),
    "greater": ("M(a > b)", "M(0)", "M(0)"), "greater_equal": ("M(a >= b)", "M(0)", "M(0)"),
    "lesser": ("M(a < b)", "M(0)", "M(0)"), "lesser_equal": ("M(a <= b)", "M(0)", "M(0)"),
    "logical_and": ("M(a != M(0) && b != M(0))", "M(0)", "M(0)"),
    "logical_or": ("M(a != M(0) || b != M(0))", "M(0)", "M(0)"),
    "logical_xor": ("M((a != M(0)) != (b != M(0)))", "M(0)", "M(0)"),
}


def _line(out: list, text: str = "") -> None:
    out.append(text)


def _preamble(out: list) -> None:
    _line(out, "// family.cuh: the common header of cudaload's kernel-family benchmark, written by")
    _line(out, "// bench/family_header.py.  Every kernel of the family is compiled with it.")
    _line(out, "#pragma once")
    _line(out, "#include <cuda_fp16.h>")
    _line(out, "#include <cuda_bf16.h>")
    _line(out)
    _line(out, "namespace family {")
    _line(out)
    _line(out, "typedef long long index_t;")
    for name, ctype in (("i8", "signed char"), ("i16", "short"), ("i32", "int"),
                        ("i64", "long long"), ("u8", "unsigned char"), ("u16", "unsigned short"),
                        ("u32", "unsigned int"), ("u64", "unsigned long long")):
        _line(out, f"typedef {ctype} {name};")
    _line(out, "enum DTypeKind { kFloat = 0, kSigned = 1, kUnsigned = 2, kBool = 3 };")
    _line(out)


def _traits(out: list) -> None:
    _line(out, "// ---- type traits: one specialisation per dtype --------------------------------------")
    _line(out, "template <class T> struct DType;")
    for i, (name, (ctype, kind, bits)) in enumerate(DTYPES.items()):
        is_f = kind == "f"
        top = {16: "65504.0" if ctype == "__half" else "3.3895313892515355e38",
               32: "3.4028234663852886e38", 64: "1.7976931348623157e308"}.get(bits)
        lo = {"f": f"-{top}", "i": f"-(1LL << {bits - 2}) * 2", "u": "0", "b": "0"}[kind]
        hi = {"f": top, "i": f"(1ULL << {bits - 1}) - 1", "u":
              f"{'18446744073709551615ULL' if bits == 64 else f'(1ULL << {bits}) - 1'}",
              "b": "1"}[kind]
        opmath = "float" if ctype in ("__half", "__nv_bfloat16") else ctype
        _line(out, f"template <> struct DType<{ctype}> {{")
        _line(out, f"  static constexpr int id = {i};")
        _line(out, f"  static constexpr int bits = {bits};")
        _line(out, f"  static constexpr DTypeKind kind = {dict(f='kFloat', i='kSigned', u='kUnsigned', b='kBool')[kind]};")
        _line(out, f"  static constexpr bool is_float = {'true' if is_f else 'false'};")
        _line(out, f"  static constexpr bool is_signed = {'true' if kind in 'fi' else 'false'};")
        _line(out, f"  typedef {opmath} opmath;")
        _line(out, f"  __device__ static double lowest() {{ return double({lo}); }}")
        _line(out, f"  __device__ static double highest() {{ return double({hi}); }}")
        _line(out, f"  __device__ static constexpr const char *name() {{ return \"{name}\"; }}")
        _line(out, "};")
    _line(out)


def _conversions(out: list) -> None:
    _line(out, "// ---- conversions to and from the computing type ----------------------------------------")
    for ctype, kind, _bits in DTYPES.values():
        if ctype == "__half":
            to_f, from_f = "__half2float(x)", "__float2half(x)"
        elif ctype == "__nv_bfloat16":
            to_f, from_f = "__bfloat162float(x)", "__float2bfloat16(x)"
        elif kind == "b":
            to_f, from_f = "x ? 1.0f : 0.0f", "x != 0.0f"
        else:
            to_f, from_f = "static_cast<float>(x)", f"static_cast<{ctype}>(x)"
        _line(out, f"__device__ __forceinline__ float to_float({ctype} x) {{ return {to_f}; }}")
        _line(out, f"__device__ __forceinline__ double to_double({ctype} x) {{ return static_cast<double>(to_float(x)); }}")
        _line(out, f"template <class R> __device__ __forceinline__ R convert_from({ctype} x);")
        _line(out, f"__device__ __forceinline__ {ctype} from_float_{_ident(ctype)}(float x) {{ return {from_f}; }}")
        _line(out, f"__device__ __forceinline__ {ctype} from_double_{_ident(ctype)}(double x) {{ return from_float_{_ident(ctype)}(static_cast<float>(x)); }}")
    _line(out, "template <class T> struct Convert;")
    for ctype, _kind, _bits in DTYPES.values():
        opmath = "float" if ctype in ("__half", "__nv_bfloat16") else ctype
        _line(out, f"template <> struct Convert<{ctype}> {{")
        _line(out, f"  __device__ __forceinline__ static {opmath} load({ctype} x) {{ return static_cast<{opmath}>({'to_float(x)' if opmath == 'float' and ctype != 'float' else 'x'}); }}")
        _line(out, f"  template <class M> __device__ __forceinline__ static {ctype} store(M x) {{ return {'from_float_' + _ident(ctype) + '(static_cast<float>(x))' if opmath == 'float' and ctype != 'float' else f'static_cast<{ctype}>(x)'}; }}")
        _line(out, "};")
    _line(out)


def _ident(ctype: str) -> str:
    return ctype.replace(" ", "_").strip("_")


def _math(out: list) -> None:
    _line(out, "// ---- math wrappers: float and double, half and bfloat16 through float ------------------")
    for name, (f32, f64) in MATH1.items():
        _line(out, f"__device__ __forceinline__ float m_{name}(float x) {{ return {f32}(x); }}")
        _line(out, f"__device__ __forceinline__ double m_{name}(double x) {{ return {f64}(x); }}")
        _line(out, f"__device__ __forceinline__ __half m_{name}(__half x) {{ return __float2half({f32}(__half2float(x))); }}")
        _line(out, f"__device__ __forceinline__ __nv_bfloat16 m_{name}(__nv_bfloat16 x) {{ return __float2bfloat16({f32}(__bfloat162float(x))); }}")
    for name, (f32, f64) in MATH2.items():
        _line(out, f"__device__ __forceinline__ float m_{name}(float x, float y) {{ return {f32}(x, y); }}")
        _line(out, f"__device__ __forceinline__ double m_{name}(double x, double y) {{ return {f64}(x, y); }}")
        _line(out, f"__device__ __forceinline__ __half m_{name}(__half x, __half y) {{ return __float2half({f32}(__half2float(x), __half2float(y))); }}")
        _line(out, f"__device__ __forceinline__ __nv_bfloat16 m_{name}(__nv_bfloat16 x, __nv_bfloat16 y) {{ return __float2bfloat16({f32}(__bfloat162float(x), __bfloat162float(y))); }}")
    for ctype in ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"):
        absolute = f"x < {ctype}(0) ? {ctype}(-x) : x" if ctype[0] == "i" else "x"
        _line(out, f"__device__ __forceinline__ {ctype} m_fabs({ctype} x) {{ return {absolute}; }}")
        _line(out, f"__device__ __forceinline__ {ctype} m_fmax({ctype} x, {ctype} y) {{ return x > y ? x : y; }}")
        _line(out, f"__device__ __forceinline__ {ctype} m_fmin({ctype} x, {ctype} y) {{ return x < y ? x : y; }}")
        _line(out, f"__device__ __forceinline__ {ctype} m_fmod({ctype} x, {ctype} y) {{ return y == {ctype}(0) ? {ctype}(0) : {ctype}(x % y); }}")
    _line(out)


def _functors(out: list) -> None:
    _line(out, "// ---- operator functors: forward of unary and binary operators, backward of unary ----")
    _line(out, "namespace op {")
    for name, (fwd, grad) in UNARY.items():
        _line(out, f"struct {name} {{")
        _line(out, f"  static constexpr const char *label = \"{name}\";")
        _line(out, "  template <class M> __device__ __forceinline__ static M map(M a) {")
        _line(out, f"    return M({fwd});")
        _line(out, "  }")
        _line(out, "  template <class M> __device__ __forceinline__ static M grad(M a, M y) {")
        _line(out, f"    return M({grad});")
        _line(out, "  }")
        _line(out, "};")
        _line(out, f"struct {name}_backward {{")
        _line(out, "  template <class M> __device__ __forceinline__ static M map(M a, M dy) {")
        _line(out, f"    return dy * {name}::grad(a, {name}::map(a));")
        _line(out, "  }")
        _line(out, "};")
    for name, (fwd, da, db) in BINARY.items():
        _line(out, f"struct {name} {{")
        _line(out, f"  static constexpr const char *label = \"{name}\";")
        _line(out, "  template <class M> __device__ __forceinline__ static M map(M a, M b) {")
        _line(out, f"    return M({fwd});")
        _line(out, "  }")
        _line(out, "  template <class M> __device__ __forceinline__ static M grad_a(M a, M b) {")
        _line(out, f"    return M({da});")
        _line(out, "  }")
        _line(out, "  template <class M> __device__ __forceinline__ static M grad_b(M a, M b) {")
        _line(out, f"    return M({db});")
        _line(out, "  }")
        _line(out, "};")
    for name in BINARY:  # with a scalar operand, on either side
        _line(out, f"struct {name}_scalar {{")
        _line(out, "  template <class M> __device__ __forceinline__ static M map(M a, double s) {")
        _line(out, f"    return {name}::map(a, M(s));")
        _line(out, "  }")
        _line(out, "  template <class M> __device__ __forceinline__ static M rmap(M a, double s) {")
        _line(out, f"    return {name}::map(M(s), a);")
        _line(out, "  }")
        _line(out, "};")
    _line(out, "}  // namespace op")
    _line(out)


def _casts(out: list) -> None:
    _line(out, "// ---- casts between every pair of dtypes, through the computing type -----------------")
    for src, _k1, _b1 in DTYPES.values():
        for dst, _k2, _b2 in DTYPES.values():
            _line(out, f"__device__ __forceinline__ {dst} cast_{_ident(src)}_to_{_ident(dst)}({src} x) {{")
            _line(out, f"  return Convert<{dst}>::store(Convert<{src}>::load(x));")
            _line(out, "}")
    _line(out)


def _vectors(out: list) -> None:
    _line(out, "// ---- vectorised loads and stores: 1, 2, 4, 8 elements per access ----------------------")
    _line(out, "template <class T, int N> struct alignas(sizeof(T) * N) Vec { T v[N]; };")
    for ctype, _kind, bits in DTYPES.values():
        for n in (1, 2, 4, 8):
            if bits * n > 128:
                continue
            _line(out, f"__device__ __forceinline__ Vec<{ctype}, {n}> load_vec{n}(const {ctype} *p, index_t i) {{")
            _line(out, f"  return *reinterpret_cast<const Vec<{ctype}, {n}> *>(p + i * {n});")
            _line(out, "}")
            _line(out, f"__device__ __forceinline__ void store_vec{n}({ctype} *p, index_t i, const Vec<{ctype}, {n}> &x) {{")
            _line(out, f"  *reinterpret_cast<Vec<{ctype}, {n}> *>(p + i * {n}) = x;")
            _line(out, "}")
    _line(out)


def _shapes(out: list) -> None:
    _line(out, "// ---- shapes of 1 to 6 dimensions: strided and broadcast offsets ------------------------")
    for nd in range(1, 7):
        _line(out, f"struct Shape{nd} {{")
        _line(out, f"  index_t size[{nd}];")
        _line(out, f"  index_t stride[{nd}];")
        _line(out, "  __device__ __forceinline__ index_t count() const {")
        _line(out, "    index_t n = 1;")
        for d in range(nd):
            _line(out, f"    n *= size[{d}];")
        _line(out, "    return n;")
        _line(out, "  }")
        for head, strides in (("offset(index_t linear)", "stride"),
                              ("broadcast_offset(index_t linear, const index_t *bstride)",
                               "bstride")):
            _line(out, f"  __device__ __forceinline__ index_t {head} const {{")
            _line(out, "    index_t off = 0;")
            for d in reversed(range(nd)):
                _line(out, f"    off += (linear % size[{d}]) * {strides}[{d}];")
                if d:
                    _line(out, f"    linear /= size[{d}];")
            _line(out, "    return off;")
            _line(out, "  }")
        _line(out, "};")
    _line(out)


def _reductions(out: list) -> None:
    _line(out, "// ---- warp and block reductions per dtype ------------------------------------------------")
    for ctype, kind, _bits in DTYPES.values():
        acc = "float" if ctype in ("__half", "__nv_bfloat16", "bool") else ctype
        ident = _ident(ctype)
        for red, expr, init in (("sum", "a + b", "0"), ("max", "a > b ? a : b", "lowest"),
                                ("min", "a < b ? a : b", "highest")):
            start = {"0": f"{acc}(0)", "lowest": f"{acc}(DType<{ctype}>::lowest())",
                     "highest": f"{acc}(DType<{ctype}>::highest())"}[init]
            _line(out, f"__device__ __forceinline__ {acc} warp_{red}_{ident}({acc} a) {{")
            _line(out, "  for (int lane = 16; lane > 0; lane >>= 1) {")
            _line(out, f"    {acc} b = __shfl_xor_sync(0xffffffffu, a, lane);")
            _line(out, f"    a = {expr};")
            _line(out, "  }")
            _line(out, "  return a;")
            _line(out, "}")
            _line(out, f"__device__ __forceinline__ {acc} block_{red}_{ident}({acc} a, {acc} *scratch) {{")
            _line(out, f"  a = warp_{red}_{ident}(a);")
            _line(out, "  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = a;")
            _line(out, "  __syncthreads();")
            _line(out, f"  a = threadIdx.x < (blockDim.x >> 5) ? scratch[threadIdx.x] : {start};")
            _line(out, f"  return warp_{red}_{ident}(a);")
            _line(out, "}")
    _line(out)


def _kernels(out: list) -> None:
    _line(out, "// ---- kernel bodies: grid-stride elementwise loops ---------------------------------------")
    _line(out, "template <class Op, class T>")
    _line(out, "__device__ __forceinline__ void unary_contig(const T *a, T *out, index_t n) {")
    _line(out, "  typedef typename DType<T>::opmath M;")
    _line(out, "  for (index_t i = blockIdx.x * (index_t)blockDim.x + threadIdx.x; i < n;")
    _line(out, "       i += (index_t)blockDim.x * gridDim.x)")
    _line(out, "    out[i] = Convert<T>::store(Op::map(Convert<T>::load(a[i])));")
    _line(out, "}")
    _line(out, "template <class Op, class T>")
    _line(out, "__device__ __forceinline__ void binary_contig(const T *a, const T *b, T *out, index_t n) {")
    _line(out, "  typedef typename DType<T>::opmath M;")
    _line(out, "  for (index_t i = blockIdx.x * (index_t)blockDim.x + threadIdx.x; i < n;")
    _line(out, "       i += (index_t)blockDim.x * gridDim.x)")
    _line(out, "    out[i] = Convert<T>::store(Op::map(Convert<T>::load(a[i]), Convert<T>::load(b[i])));")
    _line(out, "}")
    _line(out, "template <class Op, class T>")
    _line(out, "__device__ __forceinline__ void backward_contig(const T *a, const T *dy, T *dx, index_t n) {")
    _line(out, "  for (index_t i = blockIdx.x * (index_t)blockDim.x + threadIdx.x; i < n;")
    _line(out, "       i += (index_t)blockDim.x * gridDim.x)")
    _line(out, "    dx[i] = Convert<T>::store(Op::map(Convert<T>::load(a[i]), Convert<T>::load(dy[i])));")
    _line(out, "}")
    _line(out, "template <class Op, class T, class S>")
    _line(out, "__device__ __forceinline__ void binary_strided(const T *a, const T *b, T *out, S shape, index_t n) {")
    _line(out, "  for (index_t i = blockIdx.x * (index_t)blockDim.x + threadIdx.x; i < n;")
    _line(out, "       i += (index_t)blockDim.x * gridDim.x)")
    _line(out, "    out[i] = Convert<T>::store(Op::map(Convert<T>::load(a[shape.offset(i)]),")
    _line(out, "                                       Convert<T>::load(b[shape.offset(i)])));")
    _line(out, "}")
    _line(out)
    _line(out, "}  // namespace family")


def header() -> str:
    """The text of family.cuh."""
    out: list = []
    for part in (_preamble, _traits, _conversions, _math, _functors, _casts, _vectors, _shapes,
                 _reductions, _kernels):
        part(out)
    return "\n".join(out) + "\n"


# The family: 64 kernels, each an extern "C" instantiation of one operator for one dtype.
_FAMILY_UNARY = ("relu", "sigmoid", "gelu", "silu", "tanh", "exp", "log", "rsqrt", "erf",
                 "softrelu")
_FAMILY_BINARY = ("add", "sub", "mul", "div", "maximum", "power", "hypot", "squared_difference")
_FAMILY_BACKWARD = ("relu", "sigmoid", "gelu", "tanh")


def kernels(tag: str = "") -> list[tuple[str, str]]:
    """(kernel name, source) of each kernel of the family: ``tag`` in a comment of each (a new
    tag gives new cache keys)."""
    out = []
    for dtype in ("float32", "float16", "bfloat16"):
        ctype = DTYPES[dtype][0]
        for name in _FAMILY_UNARY:
            out.append(_unary(f"{name}_{dtype}", name, ctype))
        for name in _FAMILY_BINARY:
            out.append(_binary(f"{name}_{dtype}", name, ctype))
    for name in _FAMILY_BACKWARD:
        out.append(_backward(f"{name}_backward_float32", name, "float"))
    for dtype in ("float64", "int32"):
        ctype = "family::" + DTYPES[dtype][0] if dtype == "int32" else DTYPES[dtype][0]
        for name in ("add", "mul", "maximum"):
            out.append(_binary(f"{name}_{dtype}", name, ctype))
    comment = f"// {tag}\n" if tag else ""
    return [(kernel, comment + src) for kernel, src in out]


def _unary(kernel: str, op: str, ctype: str) -> tuple[str, str]:
    return kernel, (f'#include "family.cuh"\n'
                    f'extern "C" __global__ void {kernel}(const {ctype} *a, {ctype} *out, '
                    f'long long n)\n{{ family::unary_contig<family::op::{op}>(a, out, n); }}\n')


def _binary(kernel: str, op: str, ctype: str) -> tuple[str, str]:
    return kernel, (f'#include "family.cuh"\n'
                    f'extern "C" __global__ void {kernel}(const {ctype} *a, const {ctype} *b, '
                    f'{ctype} *out, long long n)\n'
                    f'{{ family::binary_contig<family::op::{op}>(a, b, out, n); }}\n')


def _backward(kernel: str, op: str, ctype: str) -> tuple[str, str]:
    return kernel, (f'#include "family.cuh"\n'
                    f'extern "C" __global__ void {kernel}(const {ctype} *a, const {ctype} *dy, '
                    f'{ctype} *dx, long long n)\n'
                    f'{{ family::backward_contig<family::op::{op}_backward>(a, dy, dx, n); }}\n')


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="write the header here")
    args = ap.parse_args(argv)
    text = header()
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    print(f"{text.count(chr(10))} lines, {len(text)} characters; {len(kernels())} kernels")
    return 0


if __name__ == "__main__":
    sys.exit(main())
