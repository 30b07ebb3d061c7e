"""What each CUDA release ships: the release a header folder comes from, the wheels that install
NVRTC and its headers, which NVRTC releases compile for which architecture, and which drivers
load the code a release makes (by the PTX ISA version, or the toolkit that made a CUBIN).

The next steps in cudaload's errors and report are built here, so that each names a requirement
that exists on PyPI: CUDA 13 wheels carry plain names (``nvidia-cuda-nvrtc``), older majors a
``-cuNN`` suffix (``nvidia-cuda-nvrtc-cu12``).
"""

from __future__ import annotations

import os

__all__ = ["header_release", "header_requirement", "nvrtc_requirement", "linker_requirement",
           "wheel_for_header", "arch_support", "ptx_release", "code_toolkit", "oldest_driver",
           "driver_text", "defined_number"]

_WHEELS = {"nvrtc": "nvidia-cuda-nvrtc", "cudart": "nvidia-cuda-runtime",
           "cccl": "nvidia-cuda-cccl", "nvjitlink": "nvidia-nvjitlink"}

# Where each header set says which release it is: cudart's CUDART_VERSION (13050 is CUDA 13.5) near
# the top of the file; CUB's CUB_VERSION (MMMmmmpp: 300500 is CCCL 3.5.0).  A CCCL major is the
# CUDA major it ships with less ten (CCCL 2 with CUDA 12, CCCL 3 with CUDA 13).
_VERSION_FILES = {"cudart": ("cuda_runtime_api.h", b"CUDART_VERSION"),
                  "cccl": (os.path.join("cub", "version.cuh"), b"CUB_VERSION")}
_VERSION_SPAN = 16384
_SPACE = b" \t\n\r\f\v"  # what C (and re's \s) takes for white space


def header_release(name: str, path: str) -> tuple[int, tuple] | None:
    """(CUDA major, the set's own version) of the header set ``name`` in ``path``: (13, (13, 5))
    for cudart 13.5, (13, (3, 5, 0)) for CCCL 3.5.0; None when the folder does not say."""
    relative, macro = _VERSION_FILES[name]
    try:
        with open(os.path.join(path, relative), "rb") as f:
            number = defined_number(f.read(_VERSION_SPAN), macro)
    except OSError:
        return None
    if number is None:
        return None
    if name == "cudart":
        return number // 1000, (number // 1000, number % 1000 // 10)
    version = (number // 100000, number // 100 % 1000, number % 100)
    return version[0] + 10, version


def defined_number(text: bytes, macro: bytes) -> int | None:
    """The number of the first ``#define MACRO 123`` in ``text`` (white space of any length,
    line breaks too, around the name), or None.  Read with bytes methods: a process that finds
    its header folders (its first compile from an empty cache) would otherwise import re for it,
    7-9 ms of that compile."""
    at = text.find(macro)
    while at >= 0:
        start, end = at, at + len(macro)
        while start > 0 and text[start - 1] in _SPACE:
            start -= 1
        digits = end
        while digits < len(text) and text[digits] in _SPACE:
            digits += 1
        stop = digits
        while stop < len(text) and 48 <= text[stop] <= 57:  # 0-9
            stop += 1
        if start < at and end < digits < stop and text.endswith(b"#define", 0, start):
            return int(text[digits:stop])
        at = text.find(macro, at + 1)
    return None


def format_release(release) -> str:
    """"13.5" for cudart, "3.5.0" for CCCL."""
    return ".".join(str(part) for part in release[1])


def _wheel(kind: str, major: int) -> str:
    return _WHEELS[kind] if major >= 13 else f"{_WHEELS[kind]}-cu{major}"


def nvrtc_requirement(major: int, minor: int | None = None) -> str:
    """The requirement for NVRTC ``major``.``minor`` (the release line's newest when ``minor`` is
    None), e.g. ``nvidia-cuda-nvrtc-cu12==12.9.*``."""
    return _requirement("nvrtc", major, minor)


def header_requirement(name: str, nvrtc_version) -> str:
    """The requirement that installs the header set ``name`` made for NVRTC ``nvrtc_version``."""
    major, minor = nvrtc_version
    # CCCL wheels of CUDA 13 are versioned by CCCL's own release (13.3.5.0.6 is CCCL 3.5.0), and
    # every one of them supports all of CUDA 13: the major is what must match.
    return _requirement(name, major, None if name == "cccl" and major >= 13 else minor)


def linker_requirement(nvrtc_version) -> str:
    """The requirement for an nvJitLink that links NVRTC ``nvrtc_version``'s LTO IR: of its CUDA
    major, and as new as it or newer."""
    major, minor = nvrtc_version
    return f"{_wheel('nvjitlink', major)}>={major}.{minor},<{major + 1}"


def _requirement(kind: str, major: int, minor: int | None) -> str:
    wheel = _wheel(kind, major)
    return f"{wheel}=={major}.{minor}.*" if minor is not None else f"{wheel}>={major},<{major + 1}"


def pip_install(requirement: str) -> str:
    return f"pip install '{requirement}'"


# Files of each wheel that kernels include, by name or by leading folder.
_CCCL_FOLDERS = ("cuda/", "cub/", "thrust/", "nv/")
# Patterns are compiled by the calls that use them (re's own cache keeps them): importing re
# costs a fresh process 7-9 ms, and a compile that finds its header folders imports this module.
_CUDART_FILES = (r"(cuda_\w+|cooperative_groups(/.*)?|cuComplex|mma|vector_\w+|"
                 r"sm_\d+_\w+|device_\w+|math_\w+|crt/.*|builtin_types|host_defines|"
                 r"driver_types|surface_\w+|texture_\w+|library_types|channel_descriptor)"
                 r"(\.h|\.hpp)?$")


def wheel_for_header(header: str, nvrtc_version) -> str | None:
    """The requirement of the wheel that provides ``header`` (as named in an #include), or None
    when it is no CUDA header cudaload knows of."""
    header = header.replace("\\", "/")
    if header.startswith(_CCCL_FOLDERS):
        return header_requirement("cccl", nvrtc_version)
    import re  # deferred: see _CUDART_FILES

    if re.fullmatch(_CUDART_FILES, header):
        return header_requirement("cudart", nvrtc_version)
    return None


# (first NVRTC release, last NVRTC release or None while current) per compute capability, as the
# NVRTC of each release reports through nvrtcGetSupportedArchs.  cudaload needs NVRTC 11.2 or newer
# (nvrtcGetSupportedArchs), so sm_35 and sm_37, dropped in 12.0, are the oldest it can reach.
_ARCHS = {
    35: ((11, 2), (11, 8)), 37: ((11, 2), (11, 8)),
    **{cc: ((11, 2), (12, 9)) for cc in (50, 52, 53, 60, 61, 62, 70, 72)},
    75: ((11, 2), None), 80: ((11, 2), None), 86: ((11, 2), None), 87: ((11, 4), None),
    89: ((11, 8), None), 90: ((11, 8), None),
    100: ((12, 8), None), 101: ((12, 8), (12, 9)), 120: ((12, 8), None),
    103: ((12, 9), None), 121: ((12, 9), None), 88: ((13, 0), None), 110: ((13, 0), None),
    107: ((13, 4), None),
}


def arch_support(cc: int, nvrtc_version, name: str | None = None) -> str:
    """Which NVRTC to install for compute capability ``cc`` (e.g. 35) that NVRTC ``nvrtc_version``
    does not support, ``name`` being the arch as asked (default sm_CC): one sentence, ending in a
    pip command where one helps, that reads on its own after another ("pick one of those. NVRTC
    12.8 added sm_120: pip install ...")."""
    known = _ARCHS.get(cc)
    name = name or f"sm_{cc}"
    if known is None and cc < min(_ARCHS):
        return (f"No NVRTC that cudaload can use (11.2 or newer) compiles for {name}; "
                f"compile for sm_{min(_ARCHS)} or newer")
    first, last = known or (None, None)
    if last is not None and tuple(nvrtc_version) > last:
        return (f"NVRTC {last[0]}.{last[1]} is the last release that compiles for {name}: "
                f"{pip_install(nvrtc_requirement(*last))} (in an environment of its own, or set "
                f"CUDALOAD_LIBNVRTC to its libnvrtc)")
    if known is None:
        return (f"No NVRTC release cudaload knows of compiles for {name} (check that it is the "
                f"arch meant); a newer release may: pip install -U {_WHEELS['nvrtc']}")
    first = known[0]
    requirement = f"{_wheel('nvrtc', first[0])}>={first[0]}.{first[1]},<{first[0] + 1}"
    return f"NVRTC {first[0]}.{first[1]} added {name}: {pip_install(requirement)}"


# ---- which drivers load compiled code --------------------------------------------------------

# PTX ISA version -> the CUDA release that introduced it (the PTX ISA's release history): a driver
# JIT-compiles the PTX ISA of its own release and older ones only.  CUDA 12.6 kept ISA 8.5.
_PTX_ISA = {(6, 0): (9, 0), (6, 1): (9, 1), (6, 2): (9, 2), (6, 3): (10, 0), (6, 4): (10, 1),
            (6, 5): (10, 2), **{(7, n): (11, n) for n in range(9)},
            **{(8, n): (12, n) for n in range(6)}, (8, 6): (12, 7), (8, 7): (12, 8),
            (8, 8): (12, 9), **{(9, n): (13, n) for n in range(6)}}
# The oldest Linux driver of each CUDA major that loads code made by any toolkit of that major
# (minor version compatibility, CUDA 11 on); a driver of a later major loads it too (backward
# compatibility).  CUDA 11.0 shipped with an older driver, but minor version compatibility
# across 11.x starts at 450.80.02.
_MAJOR_DRIVERS = {11: "450.80.02", 12: "525.60.13", 13: "580"}
_PTX_VERSION = rb"(?m)^\s*\.version\s+(\d+)\.(\d+)"  # compiled where used: see _CUDART_FILES
_TOOLKIT = rb"release (\d+)\.(\d+)"
# A CUBIN's ELF header: EI_OSABI 0x41 and EI_ABIVERSION 8 since CUDA 13 (0x33 and 7 before), and
# the note of type 2000 in ".note.nv.tkinfo" that CUDA 13's compilers write ("... release 13.5").
_CUDA13_ELF = (0x41, 8)
_SHT_NOTE, _TKINFO = 7, 2000


def ptx_release(isa: tuple[int, int]) -> tuple[int, int] | None:
    """The CUDA release whose driver first JIT-compiles PTX ISA ``isa``, or None if unknown."""
    return _PTX_ISA.get(tuple(isa))  # type: ignore[arg-type]  # a pair, as typed


def code_toolkit(code: bytes, kind: str) -> tuple[int, int | None] | None:
    """(major, minor or None) of the CUDA toolkit that made the CUBIN or PTX ``code``, as far
    as the code says: PTX by its ``.version``, a CUBIN by its toolkit note or, lacking one, by
    its ELF ABI (CUDA 13's; an older one does not say whether CUDA 11 or 12 made it: None)."""
    import re  # deferred: see _CUDART_FILES

    if kind == "ptx":
        found = re.search(_PTX_VERSION, code[:65536])
        release = found and ptx_release((int(found.group(1)), int(found.group(2))))
        return release or None
    if kind != "cubin" or code[:4] != b"\x7fELF":
        return None
    note = _note(code, _TKINFO)
    found = re.search(_TOOLKIT, note) if note else None
    if found:
        return int(found.group(1)), int(found.group(2))
    return (13, None) if tuple(code[7:9]) == _CUDA13_ELF else None


def _note(code: bytes, kind: int) -> bytes | None:
    """The description of the first ELF note of type ``kind`` in ``code``, or None."""
    from . import _elf  # deferred: only a report of compiled code needs it

    try:
        head = _elf.header(code)
    except _elf.ElfError:
        return None
    wide = head.bits == 64
    for i in range(head.shnum if head.shentsize >= (64 if wide else 40) else 0):
        at = head.shoff + i * head.shentsize
        if head._field(code, at + 4, 4) != _SHT_NOTE:
            continue
        offset = head._field(code, at + (24 if wide else 16), 8 if wide else 4)
        size = head._field(code, at + (32 if wide else 20), 8 if wide else 4)
        pos, end = offset, min(offset + size, len(code))
        while pos + 12 <= end:
            namesz, descsz, note_type = (head._field(code, pos + 4 * j, 4) for j in range(3))
            desc = pos + 12 + (namesz + 3) // 4 * 4
            if note_type == kind:
                return code[desc:min(desc + descsz, end)]
            pos = desc + (descsz + 3) // 4 * 4
    return None


def oldest_driver(kind: str, cc: int, toolkit: tuple | None) -> tuple[int, int] | None:
    """The oldest CUDA release whose driver loads code of ``kind`` for compute capability ``cc``
    made by ``toolkit`` ((major, minor or None), from :func:`code_toolkit` or the NVRTC that made
    it; for PTX, the release of its ISA); None when ``toolkit`` is unknown.

    CUBIN: a driver of the toolkit's major (minor version compatibility) or a later one, that
    knows the arch.  PTX: a driver whose JIT knows its ISA, and the arch.  LTO IR: the driver
    loads the CUBIN nvJitLink (of the same major, as new or newer) links from it: as CUBIN."""
    if not toolkit:
        return None
    major, minor = toolkit[0], toolkit[1]
    floor = (major, minor or 0) if kind == "ptx" else (major, 0)
    # The release whose toolkit and driver added the arch; the table starts at NVRTC 11.2, so an
    # arch it lists from 11.2 came then or earlier, before any major's floor that matters.
    first = _ARCHS.get(cc, (None, None))[0]
    return max(floor, first) if first and first > _ARCHS[80][0] else floor


def driver_text(release: tuple[int, int]) -> str:
    """"drivers for CUDA 12.0 or newer (Linux 525.60.13 or newer)"."""
    major, minor = release
    linux = f" (Linux {_MAJOR_DRIVERS[major]} or newer)" if minor == 0 and major in \
        _MAJOR_DRIVERS else ""
    return f"drivers for CUDA {major}.{minor} or newer{linux}"


_UNKNOWN = {"cubin": "drivers of the CUDA major whose toolkit made it, or newer (a CUBIN made "
                     "before CUDA 13 does not say whether CUDA 11 or 12 made it)",
            "ptx": "drivers whose JIT knows its PTX ISA (a version newer than any release "
                   "cudaload knows, or none)",
            "ltoir": "drivers of the major of the NVRTC that made it, or newer"}


def loads_on(code: bytes, kind: str, arch: str, nvrtc: str | None = None
             ) -> tuple[tuple[int, int] | None, str]:
    """(the oldest CUDA release whose driver loads the compiled ``code``, or None where it cannot
    be told; the same said for a report) for ``kind`` code for ``arch`` (sm_90, compute_90),
    ``nvrtc`` being the release of the NVRTC that made it ("12.9") where it is known."""
    parts = nvrtc.split(".") if nvrtc else []
    made = (int(parts[0]), int(parts[1])) if len(parts) >= 2 and parts[0].isdigit() and \
        parts[1].isdigit() else None
    toolkit: tuple | None = code_toolkit(code, kind) if kind != "ltoir" else None
    if kind == "cubin" and made and (toolkit is None or toolkit[1] is None):
        toolkit = made
    toolkit = toolkit or (made if kind == "ltoir" else None)
    cc = int("".join(c for c in arch if c.isdecimal()) or 0)
    release = oldest_driver(kind, cc, toolkit)
    text = driver_text(release) if release else _UNKNOWN.get(kind, "no driver: it is no code "
                                                                    "a driver loads")
    if kind == "ltoir":
        linker = (f"nvJitLink {toolkit[0]}.{toolkit[1]} or a newer {toolkit[0]}.x" if toolkit
                  else "an nvJitLink of the major of the NVRTC that made it, as new or newer")
        text = f"linked by {linker} at run time, into a CUBIN that loads on {text}"
    return release, text
