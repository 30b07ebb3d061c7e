"""NVRTC, nvJitLink and the CUDA headers in NVIDIA's wheels, found where cuda.pathfinder looks
first.

cuda.pathfinder (1.x) finds NVRTC and nvJitLink, and the cudart and CCCL header folders, in this
order: what the process has loaded already, then the wheels in site-packages, then conda, the system,
``CUDA_PATH``/``CUDA_HOME`` and more.  Importing it costs 20-65 ms, more than NVRTC takes to
compile a small kernel, and a process whose cache folder does not know the toolchain yet (the
first compile on a machine, or after a wheel was installed) paid it before its first compile.
When the answer is in a wheel, this module gives the same answer the same way, without importing
it: the folders are ``site.getsitepackages()`` with the user's site folder second in a virtual
environment (first outside one), each of pathfinder's relative folders in its order, each file
name in its order.  When anything else could come first (a libnvrtc already loaded, not Linux)
or nothing is in a wheel, it answers None and the caller asks cuda.pathfinder.  (nvJitLink is
loaded only to link a program's LTO IR; finding it this way lets its file be identified for the
cache key without loading it.)
tests/test_sites.py checks that both give the same answers.
"""

from __future__ import annotations

import os
import sys

__all__ = ["library", "static_library", "header_folder", "site_folders", "mapped"]

# cuda.pathfinder's descriptors: where the CUDA 13 wheels, then the CUDA 12 ones, put each
# library (folders, then file names, each in its order)
_LIBRARIES = {"nvrtc": (("nvidia/cu13/lib", "nvidia/cuda_nvrtc/lib"),
                        ("libnvrtc.so.13", "libnvrtc.so.12")),
              "nvjitlink": (("nvidia/cu13/lib", "nvidia/nvjitlink/lib"),
                            ("libnvJitLink.so.13", "libnvJitLink.so.12")),
              # libNVVM: the nvidia-nvvm wheel (CUDA 13), nvidia-cuda-nvcc's nvvm/ (CUDA 12)
              "nvvm": (("nvidia/cu13/lib", "nvidia/cuda_nvcc/nvvm/lib64"),
                       ("libnvvm.so.4", "libnvvm.so"))}
_STATIC = {"cudadevrt": (("nvidia/cu13/lib", "nvidia/cuda_runtime/lib"), "libcudadevrt.a")}
_HEADERS = {"cudart": (("nvidia/cu13/include", "nvidia/cuda_runtime/include"), "cuda_runtime.h"),
            "cccl": (("nvidia/cu13/include/cccl", "nvidia/cuda_cccl/include"),
                     os.path.join("cuda", "std", "version"))}


def site_folders() -> list[str]:
    """The site-packages folders in the order cuda.pathfinder searches them."""
    import site  # deferred: only this path needs it

    folders = list(getattr(site, "getsitepackages", list)())
    if site.ENABLE_USER_SITE:
        user = site.getusersitepackages()
        if user:
            folders.insert(1 if sys.prefix != sys.base_prefix else 0, user)
    return folders


def _under(relative: str, folders: list[str]) -> list[str]:
    parts = relative.split("/")
    return [path for path in (os.path.join(base, *parts) for base in folders)
            if os.path.isdir(path)]


def library(which: str) -> str | None:
    """The file of library ``which`` ("nvrtc", "nvjitlink", "nvvm") in a wheel that
    cuda.pathfinder would load, or None (see the module)."""
    relatives, names = _LIBRARIES[which]
    if not sys.platform.startswith("linux") or _loaded(names[0].split(".so")[0] + ".so"):
        return None
    folders = site_folders()
    for relative in relatives:
        for folder in _under(relative, folders):
            for name in names:
                path = os.path.join(folder, name)
                if os.path.isfile(path):
                    return path
    return None


def static_library(name: str) -> str | None:
    """The file of static library ``name`` ("cudadevrt") in a wheel, or None."""
    relatives, file_name = _STATIC[name]
    folders = site_folders()
    for relative in relatives:
        for folder in _under(relative, folders):
            if os.path.isfile(os.path.join(folder, file_name)):
                return os.path.join(folder, file_name)
    return None


def header_folder(name: str) -> str | None:
    """The folder of header set ``name`` ("cudart", "cccl") in a wheel that cuda.pathfinder would
    give, resolved, or None."""
    if not sys.platform.startswith("linux"):
        return None
    relatives, marker = _HEADERS[name]
    folders = site_folders()
    for relative in relatives:
        for folder in _under(relative, folders):
            if os.path.isfile(os.path.join(folder, marker)):
                return os.path.realpath(folder)
    return None


def mapped() -> list[str] | None:
    """The paths of the files mapped into this process, in the order Linux lists them
    (/proc/self/maps), or None where that cannot be read."""
    try:
        with open("/proc/self/maps") as maps:
            fields = [line.split(None, 5) for line in maps]
    except OSError:
        return None
    return [f[5].strip() for f in fields if len(f) == 6]


def _loaded(stem: str) -> bool:
    """Whether a library whose file name starts with ``stem`` ("libnvrtc.so") is mapped in this
    process already (cuda.pathfinder returns that one)."""
    files = mapped()
    if files is None:
        return True  # cannot tell: let cuda.pathfinder decide
    return any(os.path.basename(path).startswith(stem) for path in files)
