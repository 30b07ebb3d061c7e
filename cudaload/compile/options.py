"""NVRTC options: the keyword options of :class:`~cudaload.Program`, architecture names, and the
``arch``/``output`` a compile is asked for, checked and keyed (:func:`request`).

Keywords only add the option they stand for; anything else goes through ``options`` unchanged, and
an option the user spelled out wins over the keyword default (``-std=c++20`` replaces ``std="c++17"``).
"""

from __future__ import annotations

import _operator as operator  # operator's own functions; the operator module costs a Program 0.3 ms

__all__ = ["build", "strings", "include_inputs", "searches_source_folder", "Arch", "parse_arch",
           "split_cli", "cli_options", "LTO_OPTION", "links", "OUTPUTS", "virtual", "FILE_OPTIONS", "file_option",
           "names_files", "check_output", "request", "REQUESTS", "threads"]

# What ``compile(output=...)`` may ask for.
OUTPUTS = ("auto", "cubin", "ptx", "ltoir")

# NVRTC's option for LTO IR, in both its spellings: a program compiled with it is linked by
# nvJitLink (compile/link/_linker.py) into the code it asked for.
LTO_OPTION = "-dlto"
_LTO_SPELLINGS = frozenset({LTO_OPTION, "--dlink-time-opt"})


def links(options) -> bool:
    """Whether a program with NVRTC ``options`` is compiled to LTO IR and then linked."""
    return not _LTO_SPELLINGS.isdisjoint(options)


def build(options=(), *, std: str | None = "c++17", defines=None, include_paths=(),
          fast_math: bool = False, line_info: bool = False, debug: bool = False,
          max_registers: int | None = None, relocatable: bool = False,
          lto: bool = False) -> tuple[str, ...]:
    """The NVRTC option list for these keywords followed by ``options``.

    Raises TypeError for a single string or an item of the wrong type (a define's value that is
    neither str, number nor None; a max_registers that is no int), ValueError (naming the argument)
    for an empty option, one containing NUL, one that needs a value and has none, a define that is
    no macro name or whose value is not one line, an empty include path, a max_registers below 1,
    a ``-split-compile=`` that is no count of 0 or more.
    """
    user = strings(options, "options", "('-DN=4',)")
    for i, option in enumerate(user):
        _check(option, f"options[{i}]")
    out: list[str] = []
    if std and not any(o.startswith(("-std", "--std")) for o in user):
        out.append(f"-std={std}")
    out += _defines(defines)
    out += [f"-I{path}" for path in _include_paths(include_paths)]
    if fast_math:
        out.append("--use_fast_math")
    if line_info:
        out.append("-lineinfo")
    if debug:
        out.append("-G")
    if max_registers is not None:
        out.append(f"--maxrregcount={_registers(max_registers)}")
    if relocatable:
        out.append("-rdc=true")
    if lto:
        out.append(LTO_OPTION)
    return tuple(out) + user


def strings(values, what: str, example: str) -> tuple[str, ...]:
    """``values`` as a tuple of str.  Raises TypeError for one string (which would be taken
    letter by letter) or for an item that is no string, ValueError for an item holding a NUL
    (NVRTC and the driver read C strings: the item would be cut short there)."""
    if isinstance(values, (str, bytes, bytearray)):
        raise TypeError(f"{what} must be a sequence of strings, e.g. {example}, not one string")
    try:
        out = tuple(values)
    except TypeError:
        raise TypeError(f"{what} must be a sequence of strings, e.g. {example}, "
                        f"not {type(values).__name__}") from None
    for i, item in enumerate(out):
        if not isinstance(item, str):
            raise TypeError(f"{what} must hold strings, not {type(item).__name__} ({item!r})")
        if "\0" in item:
            raise ValueError(f"{what}[{i}] ({item!r}) contains a NUL character, which would cut "
                             "it short; remove it")
    return out


# Options whose value NVRTC reads from the next word when it is not attached: given bare, each one
# silently swallows the option after it (a bare "-I" ate the architecture and gave an empty CUBIN).
_NEEDS_VALUE = frozenset({
    "-I", "--include-path", "-D", "--define-macro", "-U", "--undefine-macro", "-include",
    "--pre-include", "-Xptxas", "--ptxas-options", "-maxrregcount", "--maxrregcount", "-dopt",
    "--dopt", "-diag-suppress", "--diag-suppress", "-diag-error", "--diag-error", "-diag-warn",
    "--diag-warn", "-split-compile", "--split-compile", "-Werror", "--warning-as-error"})


def _registers(value) -> int:
    """``max_registers`` as a count.  NVRTC takes any number silently: -1 as no limit, 0 as the
    fewest registers ptxas allows; and True would be 1."""
    if isinstance(value, bool):
        raise TypeError(f"max_registers must be a number of registers such as 64, not {value!r}; "
                        "leave it None for NVRTC's choice")
    try:
        count = operator.index(value)  # an int or a NumPy integer, not 32.5 or "32"
    except TypeError:
        raise TypeError(f"max_registers must be an int such as 64, not {type(value).__name__} "
                        f"({value!r}); leave it None for NVRTC's choice") from None
    if count < 1:
        raise ValueError(f"max_registers={count} is no register count (NVRTC would take it "
                         "silently, -1 as no limit, 0 as the fewest registers ptxas allows): "
                         "give a count of 1 or more, e.g. 64, or None for NVRTC's choice")
    return count


def threads(value: str) -> int:
    """The count of ``-split-compile=N``, the threads NVRTC, nvJitLink and the driver's linker
    (``CU_JIT_SPLIT_COMPILE``) each compile with: 0 is as many as there are CPUs.  Raises
    ValueError for a value that is no count of 0 or more."""
    if not (value.isascii() and value.isdigit()):
        raise ValueError("takes a count of threads: 1 or more, or 0 for one per CPU")
    return int(value)


_SPLIT_COMPILE = ("-split-compile=", "--split-compile=")


def _check(option: str, where: str) -> None:
    if not option.strip():
        raise ValueError(f"{where} is an empty option ({option!r}); remove it from options")
    if option in _NEEDS_VALUE:
        joined = f"{option}VALUE" if len(option) == 2 else f"{option}=VALUE"
        raise ValueError(
            f"{where}: option {option!r} has no value: NVRTC takes each option and its value as "
            f"one string, e.g. '{joined}'; a bare {option} would swallow the option after it")
    if option.startswith(_SPLIT_COMPILE):  # refused here as a link option is, not by NVRTC
        try:
            threads(option.partition("=")[2])
        except ValueError as err:
            raise ValueError(f"{where}: option {option!r}: -split-compile {err}") from None


def _macro_name(name: str) -> bool:
    """Whether ``name`` is a macro name, or a function-like macro's name and parameter list:
    "N", "SQ(x)", "LOG(fmt, ...)"."""
    # deferred: only a Program with defines checks them, and re costs a fresh process 4 ms
    import re  # deferred: only this path needs it

    identifier = re.compile(r"[A-Za-z_]\w*", re.ASCII)
    match = re.fullmatch(r"([A-Za-z_]\w*)(?:\(([^()]*)\))?", name, re.ASCII)
    if match is None or match.group(2) is None or not match.group(2).strip():
        return match is not None
    params = [p.strip() for p in match.group(2).split(",")]
    if params[-1] == "...":
        params.pop()
    return all(identifier.fullmatch(p) for p in params)


def _defines(defines) -> list[str]:
    """``-DNAME`` / ``-DNAME=VALUE`` for each macro.  A name that is not one (empty, "A B", "X=")
    would reach NVRTC as a bare -D that swallows the next option, or define something else."""
    if defines is None:
        return []
    if not hasattr(defines, "items"):
        raise TypeError(f"defines must map macro names to values, e.g. {{'N': 4, 'DEBUG': None}}, "
                        f"not {type(defines).__name__}")
    out = []
    for name, value in defines.items():
        if not isinstance(name, str):
            raise TypeError(f"defines: a macro name must be a str, not {type(name).__name__} "
                            f"({name!r})")
        if not _macro_name(name):
            raise ValueError(
                f"defines: {name!r} is not a macro name: use an identifier such as 'N' or "
                f"'USE_FAST' (or a function-like macro such as 'SQ(x)'), and give the value as "
                f"the dict's value, e.g. defines={{'N': 4}}")
        if value is None:
            out.append(f"-D{name}")
            continue
        if not isinstance(value, (str, int, float)) and not _number(value):
            # Another object's text may hold its address ("<object object at 0x7f...>"): a macro,
            # and a cache key, that would differ in every process.
            raise TypeError(f"defines[{name!r}]: the value must be a str, a number or None, not "
                            f"{type(value).__name__}; pass the text the macro stands for, e.g. "
                            f"defines={{{name!r}: '4'}}")
        text = str(value)
        if "\n" in text or "\r" in text or "\0" in text:
            raise ValueError(f"defines[{name!r}]: the value {text[:40]!r} contains a line break "
                             "or NUL; a macro's value is one line of text")
        out.append(f"-D{name}={text}")
    return out


def _number(value) -> bool:
    """Whether ``value`` is a number of another type (numpy's, Fraction, Decimal); ``numbers`` is
    imported for these only: a Program made in a fresh process should not pay for it."""
    import numbers  # deferred: only this path needs it

    return isinstance(value, numbers.Number)


def _include_paths(paths) -> tuple[str, ...]:
    """The include folders, each non-empty: an empty one (os.path.dirname("k.cu")) would make a
    bare -I that swallows the next option."""
    paths = strings(paths, "include_paths", "('include',)")
    for i, path in enumerate(paths):
        if not path:
            raise ValueError(f"include_paths[{i}] is empty (os.path.dirname of a bare file name "
                             "is ''); use '.' for the current folder, or leave it out")
    return paths


class Arch(tuple):
    """A compute capability as (number, suffix): ``Arch((90, "a"))`` is ``sm_90a``."""

    __slots__ = ()

    @property
    def number(self) -> int:
        return self[0]

    def sm(self) -> str:
        return f"sm_{self[0]}{self[1]}"

    def compute(self) -> str:
        return f"compute_{self[0]}{self[1]}"


_parsed: dict = {}


def _arch_name(text: str) -> tuple[int, str] | None:
    """(number, suffix) of an arch name ("90", "sm_90", "compute_90a", "sm_100f"), else None."""
    for prefix in ("sm_", "compute_"):
        if text.startswith(prefix):
            text = text[len(prefix):]
            break
    suffix = text[-1:] if text[-1:] in ("a", "f") else ""
    digits = text[:len(text) - len(suffix)]
    if 2 <= len(digits) <= 3 and digits.isascii() and digits.isdigit():
        return int(digits), suffix
    return None


def parse_arch(arch) -> Arch:
    """``90``, ``"90"``, ``"sm_90"``, ``"compute_90"``, ``"sm_90a"`` or ``(9, 0)`` -> Arch.  Raises
    TypeError for an arch of another type (``9.0``, ``True``, ``b"sm_90"``, ``(9,)``: read as
    text they would be taken, or refused as a bad value), ValueError for a bad value."""
    if not _arch_type(arch):
        raise TypeError(f"arch must be an int such as 90, a str such as 'sm_90' or a (major, "
                        f"minor) tuple such as (9, 0), not {type(arch).__name__} {arch!r}")
    cached = _parsed.get(arch)
    if cached is not None:
        return cached
    if isinstance(arch, tuple) and len(arch) == 2 and all(isinstance(x, int) for x in arch):
        if not (1 <= arch[0] <= 99 and 0 <= arch[1] <= 9):  # (8, 10) must not become sm_90
            raise ValueError(f"arch {arch!r} is not a compute capability: use e.g. (9, 0), 90 "
                             "or 'sm_90'")
        result = Arch((arch[0] * 10 + arch[1], ""))
    else:
        named = _arch_name(str(arch).strip().lower())
        if named is None:
            raise ValueError(f"arch {arch!r} is not a compute capability: use e.g. 90, 'sm_90' "
                             "or 'sm_90a'")
        result = Arch(named)
        if result.number < 10:  # "00", "05": no compute capability has major 0
            raise ValueError(f"arch {arch!r} is not a compute capability: use e.g. 90, 'sm_90' "
                             "or 'sm_90a'")
    _parsed[arch] = result
    return result


def virtual(arch, output: str) -> str:
    """``output``, except that "auto" for a virtual arch ("compute_90") asks for PTX."""
    if output == "auto" and isinstance(arch, str) and arch.strip().lower().startswith("compute_"):
        return "ptx"
    return output


def check_output(output) -> None:
    """Raise ValueError unless ``output`` is one of OUTPUTS (a list or a dict is not in it)."""
    if output not in OUTPUTS:
        raise ValueError(f"output must be one of {', '.join(OUTPUTS)}, not {output!r}")


REQUESTS: dict = {}  # (type, arch, output) as asked -> "sm_90/auto": a few values


def request(arch, output: str) -> str:
    """``arch``/``output`` as the memory cache keys them, e.g. "sm_90/auto" (a str: its hash is
    computed once; ``arch`` None: "-/auto").  Raises TypeError for an unhashable arch, ValueError
    for an unknown arch or output."""
    asked = (arch.__class__, arch, output)  # 90 and 90.0 are equal keys, but 90.0 is no arch
    try:
        return REQUESTS[asked]
    except KeyError:
        pass
    except TypeError:  # unhashable: a list or a dict, as the arch or the output
        check_output(output)
        raise TypeError(f"arch must be an int such as 90, a str such as 'sm_90' or a "
                        f"(major, minor) tuple, not {type(arch).__name__}") from None
    check_output(output)
    made = f"{'-' if arch is None else parse_arch(arch).sm()}/{virtual(arch, output)}"
    if len(REQUESTS) > 256:  # only odd spellings ("SM_90 ", ...) could fill it
        REQUESTS.clear()
    REQUESTS[asked] = made
    return made


# Options that name a file or folder NVRTC opens itself (less their one or two dashes) -> (how
# NVRTC uses the path, the suffix it adds, an example); _option_files.py checks the paths.
FILE_OPTIONS = {"fdevice-time-trace": ("write", ".json", "trace/kernel (written to trace/kernel.json)"),
                "time": ("write", "", "times.csv (or - for standard output)"),
                "create-pch": ("write", "", "kernel.pch"),
                "use-pch": ("read", "", "kernel.pch"),
                "pch-dir": ("folder", "", "pch")}


def file_option(option: str) -> tuple[str, str] | None:
    """(the option's name, the path it gives) for an option of FILE_OPTIONS, else None."""
    head, eq, path = option.partition("=")
    name = head[2:] if head.startswith("--") else head[1:] if head.startswith("-") else ""
    return (name, path) if eq and name in FILE_OPTIONS else None


def names_files(options) -> bool:
    """Whether ``options`` name a file or folder NVRTC opens (see _option_files.py)."""
    return any(file_option(option) for option in options)


def _arch_type(arch) -> bool:
    """Whether ``arch`` is of a type an arch is given as: an int (or an integer such as numpy's,
    but no bool), a str, or a tuple of two ints."""
    if isinstance(arch, tuple):
        return len(arch) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in arch)
    return isinstance(arch, str) or not isinstance(arch, bool) and hasattr(arch, "__index__")


def include_inputs(options) -> tuple[list[str], list[str]]:
    """(folders NVRTC searches for includes, files it includes before the source) named by an
    option list, in order: what besides the source can change what NVRTC compiles."""
    folders: list[str] = []
    first: list[str] = []
    for option in options:
        for prefix, into in (("--include-path=", folders), ("-I", folders),
                             ("--pre-include=", first), ("-include=", first)):
            if option.startswith(prefix):
                value = option[len(prefix):]
                # NVRTC reads "-I=inc" as the folder "inc", as it reads "-include=x.h".
                into.append(value[1:] if prefix == "-I" and value.startswith("=") else value)
                break
    return folders, first


_NO_SOURCE_INCLUDE = frozenset({"--no-source-include", "-no-source-include"})


def searches_source_folder(options) -> bool:
    """Whether NVRTC looks for an ``#include "..."`` beside the file that has it:
    ``--no-source-include`` turns that off for every file, the program, its headers and the
    pre-included ones (observed on NVRTC 13.5)."""
    return _NO_SOURCE_INCLUDE.isdisjoint(options)


# Options that take their value as the next word on a command line but must reach NVRTC as one.
_JOINED = {"-I": "-I", "-D": "-D", "-U": "-U", "-include": "--pre-include=",
           "--include-path": "--include-path=", "--define-macro": "--define-macro=",
           "-maxrregcount": "--maxrregcount="}


def split_cli(words) -> list[str]:
    """Join nvcc-style ``-I dir`` / ``-D X`` pairs into the single words NVRTC takes."""
    out: list[str] = []
    words = list(words)
    i = 0
    while i < len(words):
        word = words[i]
        if word in _JOINED and i + 1 < len(words):
            out.append(_JOINED[word] + words[i + 1])
            i += 2
            continue
        out.append(word)
        i += 1
    return out


# The nvcc-style options whose value may follow as the next word, as a command line writes them.
_VALUE_WORDS = {"-I": "-I DIR", "--include-path": "--include-path DIR", "-D": "-D NAME[=VALUE]",
                "--define-macro": "--define-macro NAME[=VALUE]", "-U": "-U NAME",
                "-include": "-include FILE", "-maxrregcount": "-maxrregcount N"}


def cli_options(words) -> list[str]:
    """NVRTC's options of a command line's ``words``, "-I dir" joined into one (split_cli).
    Raises ValueError, in the command line's words, for such an option given no value."""
    joined = split_cli(words)
    for word in joined:
        if word in _VALUE_WORDS:  # split_cli joins it with its value, unless there is none
            raise ValueError(f"{word} needs a value: write {_VALUE_WORDS[word]}")
    return joined
