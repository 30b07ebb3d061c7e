"""The next step after a toolkit or driver library fails to load, by library and failure: the
table bindings/_loader.py's errors take their ``hint`` from.

Imports of cudaload: errors.
"""

from __future__ import annotations

from ..errors import LibraryLoadError, LibraryNotFoundError, MissingSymbolError

__all__ = ["HINTS"]

# The next step for each way loading can fail: not found, found but refused by the system loader,
# loaded but not the library (or far too old).
HINTS = {
    ("cuda", LibraryNotFoundError): (
        "install the NVIDIA driver (it provides libcuda.so.1); in a container, start it with the "
        "GPU exposed (docker run --gpus all); or set CUDALOAD_LIBCUDA to the full path of "
        "libcuda.so.1"),
    ("cuda", LibraryLoadError): (
        "check that the file is NVIDIA's libcuda.so.1 for this CPU architecture (`file PATH`) and "
        "that its dependencies resolve (`ldd PATH`); or unset CUDALOAD_LIBCUDA to search the "
        "system"),
    ("cuda", MissingSymbolError): (
        "point CUDALOAD_LIBCUDA at NVIDIA's libcuda.so.1 (not the toolkit's stubs/libcuda.so), or "
        "upgrade the NVIDIA driver"),
    ("nvrtc", LibraryNotFoundError): (
        "pip install 'cudaload[nvrtc]' (the nvidia-cuda-nvrtc wheel), or set CUDALOAD_LIBNVRTC to "
        "the full path of libnvrtc.so"),
    ("nvrtc", LibraryLoadError): (
        "check the file with `ldd PATH`; reinstall nvidia-cuda-nvrtc, or unset CUDALOAD_LIBNVRTC"),
    ("nvrtc", MissingSymbolError): (
        "pip install -U 'nvidia-cuda-nvrtc>=12.4' (and unset CUDALOAD_LIBNVRTC if it names "
        "this file), or point CUDALOAD_LIBNVRTC at libnvrtc.so from CUDA 12.0 or newer"),
    ("nvjitlink", LibraryNotFoundError): (
        "pip install 'cudaload[nvrtc]' (it brings the nvidia-nvjitlink wheel), or set "
        "CUDALOAD_LIBNVJITLINK to the full path of libnvJitLink.so; or compile without lto=True"),
    ("nvjitlink", LibraryLoadError): (
        "check the file with `ldd PATH`; reinstall nvidia-nvjitlink, or unset CUDALOAD_LIBNVJITLINK"),
    ("nvjitlink", MissingSymbolError): (
        "pip install -U 'nvidia-nvjitlink>=12.3' of NVRTC's CUDA release (and unset "
        "CUDALOAD_LIBNVJITLINK if it names this file)"),
    ("nvvm", LibraryNotFoundError): (
        "pip install nvidia-nvvm (libNVVM; nvidia-cuda-nvcc brings it too), or set "
        "CUDALOAD_LIBNVVM to the full path of libnvvm.so"),
    ("nvvm", LibraryLoadError): (
        "check the file with `ldd PATH`; reinstall nvidia-nvvm, or unset CUDALOAD_LIBNVVM"),
    ("nvvm", MissingSymbolError): (
        "pip install -U nvidia-nvvm (and unset CUDALOAD_LIBNVVM if it names this file)"),
}
