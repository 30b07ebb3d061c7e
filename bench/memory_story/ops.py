"""The elementwise operator library: operators x dtypes x variants, and the workloads that use it.

Every kernel is one line ``EW_KERNEL(...)`` over the templates in ``elementwise.cuh``; the
ahead-of-time build compiles all lines, the on-demand build only the lines a workload launches.
"""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATE = os.path.join(HERE, "elementwise.cuh")

# dtype name -> (C type, bytes per element)
DTYPES = {
    "float16": ("__half", 2), "bfloat16": ("__nv_bfloat16", 2), "float32": ("float", 4),
    "float64": ("double", 8), "int8": ("i8", 1), "int16": ("i16", 2), "int32": ("i32", 4),
    "int64": ("i64", 8), "uint8": ("u8", 1), "bool": ("bool", 1),
}
# dtype name -> C type as a signature spells it
C_NAMES = {"float16": "__half", "bfloat16": "__nv_bfloat16", "float32": "float", "float64": "double",
           "int8": "signed char", "int16": "short", "int32": "int", "int64": "long long",
           "uint8": "unsigned char", "bool": "bool"}
ALL = tuple(DTYPES)
NUM = tuple(d for d in ALL if d != "bool")
FLT = ("float16", "bfloat16", "float32", "float64")
INT = ("int8", "int16", "int32", "int64", "uint8")
INTB = INT + ("bool",)
SIGNED = FLT + ("int8", "int16", "int32", "int64")

# operator -> (kind, dtypes, result): result None = same dtype as the input, "bool" for predicates
BINARY = {
    "add": ALL, "sub": NUM, "mul": ALL, "div": FLT, "rem": NUM, "pow": FLT, "max": ALL, "min": ALL,
    "atan2": FLT, "hypot": FLT, "copysign": FLT, "bitwise_and": INTB, "bitwise_or": INTB,
    "bitwise_xor": INTB, "shl": INT, "shr": INT,
}
PREDICATES = {name: ALL for name in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or")}
UNARY = {
    **{name: FLT for name in ("exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "gelu",
                              "silu", "floor", "ceil", "round", "reciprocal", "log1p", "expm1", "erf")},
    "neg": SIGNED, "abs": NUM, "relu": NUM, "square": NUM, "sign": SIGNED, "bitwise_not": INTB,
}
UNARY_PREDICATES = {"logical_not": ALL}
VARIANTS = ("contig", "strided", "broadcast")
# The small library: one unroll and 64-bit indexing.  The large one adds what frameworks also
# instantiate: unroll factors and a 32-bit index fast path.
SMALL_CONFIGS = ((4, 64),)
LARGE_CONFIGS = tuple((u, i) for u in (1, 2, 4, 8) for i in (32, 64))
LIBRARIES = {"small": SMALL_CONFIGS, "large": LARGE_CONFIGS}


@dataclass(frozen=True)
class Kernel:
    op: str          # "add", "cast_to_float16", "fill"
    dtype: str       # input dtype (output dtype for fill)
    variant: str     # contig | strided | broadcast
    unroll: int = 4
    index_bits: int = 64

    @property
    def name(self) -> str:
        return f"ew_{self.op}_{self.dtype}_{self.variant}_u{self.unroll}_i{self.index_bits}"

    @property
    def result(self) -> str:
        if self.op in PREDICATES or self.op in UNARY_PREDICATES:
            return "bool"
        if self.op.startswith("cast_to_"):
            return self.op[len("cast_to_"):]
        return self.dtype

    @property
    def kind(self) -> str:
        if self.op == "fill":
            return "fill"
        return "binary" if self.op in BINARY or self.op in PREDICATES else "unary"

    def params(self) -> list[tuple[str, str]]:
        """(C type, role) per kernel parameter; roles: out, a, b, value, n, n0, n1, inner, strides."""
        t, r = C_NAMES[self.dtype], C_NAMES[self.result]
        i = "int" if self.index_bits == 32 else "long long"
        if self.kind == "fill":
            head = [(f"{t}*", "out"), ("double", "value")]
        elif self.kind == "binary":
            head = [(f"{r}*", "out"), (f"const {t}*", "a"), (f"const {t}*", "b")]
        else:
            head = [(f"{r}*", "out"), (f"const {t}*", "a")]
        inputs = len(head) - 1 if self.kind != "fill" else 0
        if self.variant == "contig":
            tail = ["n"]
        elif self.variant == "broadcast":
            tail = ["n", "inner"]
        else:
            tail = ["n0", "n1"] + [f"s{x}{d}" for x in "ab"[:inputs] + "o" for d in "01"]
        return head + [(i, role) for role in tail]

    def signature(self) -> str:
        return ", ".join(f"{c} {role}" for c, role in self.params())

    def definition(self) -> str:
        t, r = DTYPES[self.dtype][0], DTYPES[self.result][0]
        index = "i32" if self.index_bits == 32 else "i64"
        if self.kind == "fill":
            return f"EW_FILL_{self.variant}({self.name}, {t}, {self.unroll}, {index})"
        op = "op_cast" if self.op.startswith("cast_to_") else f"op_{self.op}"
        return (f"EW_KERNEL({self.name}, {self.kind}, {self.variant}, {op}, {t}, {r}, "
                f"{self.unroll}, {index})")


def _base() -> list[tuple[str, str, tuple[str, ...]]]:
    """(op, dtype, variants) before unroll/index configurations."""
    out = []
    for table in (BINARY, PREDICATES, UNARY, UNARY_PREDICATES):
        for op, dtypes in table.items():
            out += [(op, d, VARIANTS) for d in dtypes]
    out += [(f"cast_to_{to}", d, VARIANTS) for d in ALL for to in ALL]
    out += [("fill", d, ("contig", "strided")) for d in ALL]
    return out


def kernels(library: str = "small") -> list[Kernel]:
    """Every kernel of the ``small`` (~1,200) or ``large`` (~10,000) library."""
    return [Kernel(op, d, v, u, i) for op, d, variants in _base() for v in variants
            for u, i in LIBRARIES[library]]


def operators() -> list[str]:
    """Operator names (the casts counted as one operator)."""
    names = [*BINARY, *PREDICATES, *UNARY, *UNARY_PREDICATES, "cast", "fill"]
    return names


def template_text() -> str:
    with open(TEMPLATE, encoding="utf-8") as f:
        return f.read()


def source(selected) -> str:
    """A translation unit defining ``selected`` kernels: the template, inlined, plus one line each.

    The template is inlined (not #included) so nvcc and NVRTC see byte-identical source.
    """
    lines = [template_text(), ""]
    lines += [k.definition() for k in selected]
    return "\n".join(lines) + "\n"


@functools.lru_cache(maxsize=None)
def source_digest() -> str:
    """Changes whenever the template or the kernel table changes: names a build's outputs."""
    h = hashlib.sha256(template_text().encode())
    for lib in LIBRARIES:
        h.update("\n".join(k.definition() for k in kernels(lib)).encode())
    return h.hexdigest()[:16]


# Workloads: what a user's first steps launch.
ZEROS = [Kernel("fill", "float32", "contig")]
# A small MLP/attention block's elementwise work, forward in float16 with float32 statistics.
MODEL = [
    Kernel("fill", "float32", "contig"),
    Kernel("cast_to_float16", "float32", "contig"),
    Kernel("cast_to_float32", "float16", "contig"),
    Kernel("add", "float16", "broadcast"),        # bias
    Kernel("mul", "float16", "contig"),
    Kernel("mul", "float16", "broadcast"),        # scale
    Kernel("gelu", "float16", "contig"),
    Kernel("silu", "float16", "contig"),
    Kernel("sub", "float32", "broadcast"),        # x - mean
    Kernel("rsqrt", "float32", "contig"),
    Kernel("exp", "float32", "contig"),
    Kernel("div", "float32", "broadcast"),        # softmax normalisation
    Kernel("max", "float32", "contig"),
    Kernel("add", "float16", "contig"),           # residual
    Kernel("gt", "float32", "contig"),            # mask
]
WORKLOADS = {"zeros": ZEROS, "model": MODEL}

if __name__ == "__main__":
    for lib in LIBRARIES:
        print(lib, len(kernels(lib)), "kernels")
    print(len(operators()), "operators,", len(DTYPES), "dtypes, digest", source_digest())
