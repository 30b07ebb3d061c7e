"""What each CUDA release ships: the release a header folder comes from, the wheels that install
NVRTC and its headers, and which NVRTC releases compile for which architecture.

The next steps in cudaload's errors and report are built here, so that each names a requirement
that exists on PyPI: CUDA 13 wheels carry plain names (``nvidia-cuda-nvrtc``), older majors a
``-cuNN`` suffix (``nvidia-cuda-nvrtc-cu12``).
"""

from __future__ import annotations

import os
import re

__all__ = ["header_release", "header_requirement", "nvrtc_requirement", "linker_requirement",
           "wheel_for_header", "arch_support"]

_WHEELS = {"nvrtc": "nvidia-cuda-nvrtc", "cudart": "nvidia-cuda-runtime",
           "cccl": "nvidia-cuda-cccl", "nvjitlink": "nvidia-nvjitlink"}

# Where each header set says which release it is: cudart's CUDART_VERSION (13050 is CUDA 13.5) near
# the top of the file; CUB's CUB_VERSION (MMMmmmpp: 300500 is CCCL 3.5.0).  A CCCL major is the
# CUDA major it ships with less ten (CCCL 2 with CUDA 12, CCCL 3 with CUDA 13).
_VERSION_FILES = {"cudart": ("cuda_runtime_api.h",
                             re.compile(rb"#define\s+CUDART_VERSION\s+(\d+)")),
                  "cccl": (os.path.join("cub", "version.cuh"),
                           re.compile(rb"#define\s+CUB_VERSION\s+(\d+)"))}
_VERSION_SPAN = 16384


def header_release(name: str, path: str) -> tuple[int, tuple] | None:
    """(CUDA major, the set's own version) of the header set ``name`` in ``path``: (13, (13, 5))
    for cudart 13.5, (13, (3, 5, 0)) for CCCL 3.5.0; None when the folder does not say."""
    relative, pattern = _VERSION_FILES[name]
    try:
        with open(os.path.join(path, relative), "rb") as f:
            found = pattern.search(f.read(_VERSION_SPAN))
    except OSError:
        return None
    if found is None:
        return None
    number = int(found.group(1))
    if name == "cudart":
        return number // 1000, (number // 1000, number % 1000 // 10)
    version = (number // 100000, number // 100 % 1000, number % 100)
    return version[0] + 10, version


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
_CUDART_FILES = re.compile(r"(cuda_\w+|cooperative_groups(/.*)?|cuComplex|mma|vector_\w+|"
                           r"sm_\d+_\w+|device_\w+|math_\w+|crt/.*|builtin_types|host_defines|"
                           r"driver_types|surface_\w+|texture_\w+|library_types|channel_descriptor)"
                           r"(\.h|\.hpp)?$")


def wheel_for_header(header: str, nvrtc_version) -> str | None:
    """The requirement of the wheel that provides ``header`` (as named in an #include), or None
    when it is no CUDA header cudaload knows of."""
    header = header.replace("\\", "/")
    if header.startswith(_CCCL_FOLDERS):
        return header_requirement("cccl", nvrtc_version)
    if _CUDART_FILES.fullmatch(header):
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
