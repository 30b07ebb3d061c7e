"""The options of a link (``cudaload.Linker(options=...)``): nvJitLink's spellings, checked when
the Linker is made, and their form for the driver's linker (``CUjit_option`` values).

Options are nvJitLink's own words (``-lineinfo``, ``-O3``, ``-ftz=true``, ...): a typo is refused
with the list of what is taken, not found at the link.  The architecture, LTO and the output are
the Linker's arguments (``arch=``, ``lto=``, ``link(output=)``), never options, so that each is
said once.  The driver's linker has a form for most of them; one it has none for (``-Xptxas=``)
makes the fallback impossible, and that link needs nvJitLink.

Imports of cudaload: options.
"""

from __future__ import annotations

from ..options import Arch, strings, threads

__all__ = ["check", "for_driver", "TAKEN"]


def _switch(value: str) -> int:
    if value not in ("true", "false"):
        raise ValueError("takes true or false")
    return int(value == "true")


def _count(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise ValueError("takes a count of 1 or more")
    return int(value)


def _level(value: str) -> int:
    if value not in ("0", "3"):  # nvJitLink refuses the others (the driver takes 0 to 4)
        raise ValueError("takes 0 or 3")
    return int(value)


# option (with "=" where it takes a value) -> (CUjit_option, how its value reads), for the
# options both linkers take
_BOTH = {
    "-lineinfo": ("CU_JIT_GENERATE_LINE_INFO", None),
    "-g": ("CU_JIT_GENERATE_DEBUG_INFO", None),
    "-optimize-unused-variables": ("CU_JIT_OPTIMIZE_UNUSED_DEVICE_VARIABLES", None),
    "-O": ("CU_JIT_OPTIMIZATION_LEVEL", _level),
    "-maxrregcount=": ("CU_JIT_MAX_REGISTERS", _count),
    "-split-compile=": ("CU_JIT_SPLIT_COMPILE", threads),  # 0: one thread per CPU, as NVRTC
    "-ftz=": ("CU_JIT_FTZ", _switch),
    "-prec-div=": ("CU_JIT_PREC_DIV", _switch),
    "-prec-sqrt=": ("CU_JIT_PREC_SQRT", _switch),
    "-fma=": ("CU_JIT_FMA", _switch),
}
# nvJitLink's options the driver's linker has no form of (their value is not checked here)
_NVJITLINK_ONLY = ("-Xptxas=", "-kernels-used=", "-variables-used=", "-split-compile-extended=",
                   "-jump-table-density=", "-device-stack-protector=", "-time", "-verbose",
                   "-no-cache")
_ARGUMENTS = {"-arch": "arch=", "-lto": "lto=True", "-ptx": "link(output='ptx')"}
_VALUES = {_level: "0|3", _count: "N", threads: "N", _switch: "true|false", None: ""}
TAKEN = ", ".join([*(o + _VALUES[read] for o, (_jit, read) in _BOTH.items()),
                   *(o + ("..." if o.endswith("=") else "") for o in _NVJITLINK_ONLY)])


def _parsed(option: str) -> tuple[str, int] | None:
    """(CUjit_option, value) of ``option``; None for one only nvJitLink takes.  Raises
    ValueError naming the option for one that is not taken or has a wrong value."""
    for prefix, (jit, read) in _BOTH.items():
        if read is None and option == prefix:
            return jit, 1
        if read is not None and option.startswith(prefix) and len(option) > len(prefix):
            try:
                return jit, read(option[len(prefix):])
            except ValueError as err:
                raise ValueError(f"link option {option!r}: {prefix.rstrip('=')} {err}") from None
    if any(option == word if not word.endswith("=") else
           option.startswith(word) and len(option) > len(word) for word in _NVJITLINK_ONLY):
        return None
    for word, argument in _ARGUMENTS.items():
        if option == word or option.startswith(word + "="):
            raise ValueError(f"link option {option!r}: give it as the Linker's {argument}, not "
                             "as an option")
    raise ValueError(f"{option!r} is no link option cudaload.Linker takes; it takes {TAKEN}")


def check(options) -> tuple[str, ...]:
    """``options`` as a tuple of link options.  Raises TypeError for one string or an item that
    is no string, ValueError (naming the option) for one that is not taken."""
    options = strings(options, "options", "('-lineinfo', '-O3')")
    for option in options:
        _parsed(option)
    return options


def for_driver(options, arch: Arch) -> list[tuple[str, int]]:
    """The driver linker's (CUjit_option, value) pairs for checked ``options`` and ``arch``.
    Raises ValueError naming an option the driver has no form of."""
    # CU_TARGET_COMPUTE_90 is 90, its "a" and "f" variants 0x10000 and 0x20000 above it.
    pairs = [("CU_JIT_TARGET", arch.number | {"": 0, "a": 0x10000, "f": 0x20000}[arch[1]])]
    for option in options:
        parsed = _parsed(option)
        if parsed is None:
            raise ValueError(f"the driver's linker has no form of the link option {option!r}")
        pairs.append(parsed)
    return pairs
