"""Parameter layouts and C types: from the driver's layout, a signature, the source, a mangled name."""

from __future__ import annotations

import re

import pytest

from cudaload.launch import signature
from cudaload.errors import LaunchArgumentError
from tests._support import run_json


def test_natural_layout_without_driver_info():
    params = signature.build_params(["char", "double", "int", "const float*"], None)
    assert [(q.offset, q.size) for q in params] == [(0, 1), (8, 8), (16, 4), (24, 8)]


def test_driver_layout_wins_and_sizes_are_checked():
    params = signature.build_params(["int", "float"], [(0, 4), (16, 4)])
    assert [q.offset for q in params] == [0, 16]
    with pytest.raises(LaunchArgumentError, match="8 bytes"):
        signature.build_params(["int"], [(0, 8)])
    with pytest.raises(LaunchArgumentError, match="has 1 parameters but"):
        signature.build_params(["int"], [(0, 4), (8, 8)])


def test_signature_and_source_parsing():
    types, names = signature.signature_types("const float* __restrict__ x, float a, unsigned n")
    assert types == ["const float*", "float", "unsigned"] and names == ["x", "a", "n"]
    src = """
    // __global__ void saxpy(double wrong)
    extern "C" __global__ void __launch_bounds__(256) saxpy(const float *x, float *y,
                                                          float a, size_t n) { }"""
    assert signature.source_types(src, "saxpy")[0] == ["const float*", "float*", "float", "size_t"]
    assert signature.source_types(src, "missing") is None


@pytest.mark.parametrize("mangled, types", [
    ("_Z5saxpyPKfPffi", ["const float*", "float*", "float", "int"]),
    ("_Z5scaleIfEvPT_S1_i", ["float*", "float*", "int"]),
    ("_Z5scaleIfEvPT_S0_i", ["float*", "float", "int"]),
    ("_Z3addIdLi4EEvPKT_PS0_m", ["const double*", "double*", "unsigned long"]),
    ("_Z1kPfS_S_", ["float*", "float*", "float*"]),
    ("_Z1kN4cuda3std7complexIfEE", ["cuda::std::complex<float>"]),
    ("_Z1kv", []),
])
def test_mangled_names(mangled, types):
    assert signature.mangled_types(mangled) == types


# --- mangled names NVRTC really produces, against the types the kernels were declared with ------

_SCALARS = ["int", "unsigned int", "float", "double", "long long", "unsigned long long", "char",
            "signed char", "unsigned char", "short", "unsigned short", "bool", "long",
            "unsigned long"]
_CLASSES = ["ns::A", "ns::B", "ns::in::C", "W<int>", "W<float>", "ns::V<ns::A>", "E", "ns::F",
            "std::mine<int>::in", "std::mine<float>", "std::box"]
_PRELUDE = """
namespace ns { struct A { int x; }; struct B { float y; }; namespace in { struct C { char c; }; }
               template <class T> struct V { T t; }; enum class F : int { f }; }
template <class T> struct W { T w; };
enum E { e };
namespace std { template <class T> struct mine { struct in { int v; }; T t; }; struct box { int b; }; }
"""


def _kernel_corpus(count: int, seed: int):
    """(source, [(name expression, [declared C types with T and U replaced])]) of ``count``
    kernel templates whose parameters repeat types, so that their names use substitutions."""
    import random

    rng = random.Random(seed)
    base = _SCALARS + _CLASSES
    lines, kernels = [_PRELUDE], []
    for n in range(count):
        t, u = rng.choice(base), rng.choice(base)
        pool = base + ["T", "U"]
        params = []
        for _ in range(rng.randint(1, 7)):
            if params and rng.random() < 0.4:  # repeat an earlier type: S_, S0_, ...
                params.append(rng.choice(params))
                continue
            core = rng.choice(pool)
            shape = rng.choice(["{}", "{}", "{}*", "const {}*", "{}**", "const {}* const*",
                                "volatile {}*"])
            params.append(shape.format(core))
        decl = ", ".join(f"{p} p{i}" for i, p in enumerate(params))
        lines.append(f"template <class T, class U> __global__ void k{n}({decl}) {{}}")
        expected = [re.sub(r"\bT\b", t, re.sub(r"\bU\b", u, p)) for p in params]
        kernels.append((f"k{n}<{t}, {u}>", expected))
    return "\n".join(lines), kernels


def _tokens(ctype: str) -> list[str]:
    """A C type's words and stars, in order-free form ('const float*' == 'float const*')."""
    return sorted(re.findall(r"[A-Za-z_:][\w:]*(?:<[^<>]*(?:<[^<>]*>)?[^<>]*>)?|\*", ctype))


def test_types_read_from_nvrtc_mangled_names_match_the_declarations():
    source, kernels = _kernel_corpus(150, seed=5)
    lowered = run_json(f"""
        import json
        from cudaload.bindings import nvrtc
        out = nvrtc.compile({source!r}, "corpus.cu", ["--gpu-architecture=compute_80"],
                            name_expressions={[k for k, _ in kernels]!r}, kind="ptx")
        print(json.dumps(out.lowered_names))
    """)
    wrong = []
    for expression, declared in kernels:
        got = signature.mangled_types(lowered[expression])
        if got is None or [_tokens(t) for t in got] != [_tokens(t) for t in declared] or \
                [signature.classify(t) for t in got] != [signature.classify(t) for t in declared]:
            wrong.append((expression, lowered[expression], declared, got))
    assert not wrong, f"{len(wrong)} of {len(kernels)} misread, e.g. {wrong[:3]}"


def test_words_after_a_pointer_star_leave_it_a_pointer():
    src = """
    #define RESTRICT __restrict__
    __global__ void k(const float* RESTRICT x, float * const y, int n) {}
    """
    assert signature.source_types(src, "k") == (["const float*", "float*", "int"], ["x", "y", "n"])
    assert signature.classify(signature.signature_types("const float* RESTRICT x")[0][0]) == \
        ("ptr", "Q")


def test_source_types_that_do_not_match_the_driver_layout_give_way_to_it(monkeypatch):
    from cudaload.launch import kernel

    class Module:  # what _KernelState asks of a module: the symbol and the code
        code = None

        def symbol(self, name):
            return name  # not a mangled name: the types come from the source

    source = "template <class... Ts> __global__ void t9(Ts... xs) {}"
    monkeypatch.setattr(kernel, "_driver_layout", lambda func: [(0, 4), (8, 8)])
    params = kernel._KernelState(Module(), "t9", source=source)._params_for(None, None)
    assert [(p.offset, p.size, p.kind) for p in params] == [(0, 4, "raw"), (8, 8, "raw")]
    declared = kernel._KernelState(Module(), "t9", signature="int")  # a declared one still must match
    with pytest.raises(LaunchArgumentError, match="has 1 parameters but"):
        declared._params_for(None, None)
