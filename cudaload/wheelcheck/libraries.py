"""Which shared library names are CUDA's: the driver, the runtime, NVRTC, nvJitLink, the math
libraries, cuDNN, NCCL, the tools libraries, and the NVIDIA driver's own libraries.

A name is reduced to its stem first: ``libcudart.so.12`` and ``libcudart-1a2b3c4d.so.12.4``
(renamed by auditwheel when it copies a library into a wheel) to ``cudart``, ``cudart64_12.dll``
and ``nvrtc64_120_0.dll`` to ``cudart`` and ``nvrtc``.
"""

from __future__ import annotations

import os
import re

__all__ = ["cuda_library", "stem"]

_CUDA_STEMS = re.compile(
    r"cuda|nvcuda|cudart|cudadevrt|nvrtc(-builtins)?(\.alt)?|nvjitlink|nvfatbin|nvptxcompiler"
    r"|cublas(lt)?|nvblas|cufftw?|curand|cusparse(lt)?|cusolver(mg)?|cudss|cutensor(mg)?"
    r"|cudnn(_[a-z_]+)?|nccl|nvshmem\w*|nvtoolsext|nvtx3interop|cupti|nvperf_\w+|pcsamplingutil"
    r"|nvjpeg|npp[a-z]*|cufile(_rdma)?|nvml|nvcuvid|nvidia-[a-z0-9-]+")
_ELF_NAME = re.compile(r"lib(?P<stem>.+?)\.so(\.[0-9][0-9.]*)?")
_AUDITWHEEL_HASH = re.compile(r"-[0-9a-f]{8}$")
_DLL_VERSION = re.compile(r"(64|32)?([_.][0-9]+)*$")  # cudart64_12, nvrtc64_120_0, cupti64_2025.1


def stem(name: str) -> str:
    """The library's name without directory, ``lib``, versions and suffix, in lower case."""
    base = os.path.basename(name.replace("\\", "/")).lower()
    if base.endswith(".dll"):
        return _DLL_VERSION.sub("", base[:-4])
    match = _ELF_NAME.fullmatch(base)
    if match is None:
        return base
    return _AUDITWHEEL_HASH.sub("", match.group("stem"))


def cuda_library(name: str) -> bool:
    """Whether ``name`` (a DT_NEEDED entry, a DLL import, a mapped file) is a CUDA library."""
    return _CUDA_STEMS.fullmatch(stem(name)) is not None
