"""Wheels made in a test without a build backend: a zip archive with METADATA, WHEEL and
RECORD, and extension modules compiled with the C compiler (a CUDA runtime stand-in included).
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile

import pytest

# Stands in for the CUDA runtime: the soname is what an extension linked to it asks for.
STUB_CUDART = "int cudaGetDeviceCount(int *n) { *n = 0; return 100; }\n"

EXTENSION = r"""
#include <Python.h>
%(declarations)s
static PyObject *probe(PyObject *self, PyObject *args) { return PyLong_FromLong(%(call)s); }
static PyMethodDef methods[] = {{"probe", probe, METH_NOARGS, ""}, {0}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "%(name)s", 0, -1, methods};
PyMODINIT_FUNC PyInit_%(name)s(void) { return PyModule_Create(&module); }
"""
# Opens the driver at run time, as cudaload does: no DT_NEEDED on it.
DLOPEN_CALL = {"declarations": "#include <dlfcn.h>",
               "call": 'dlopen("libcuda.so.1", RTLD_NOW) != 0'}
CUDART_CALL = {"declarations": "int cudaGetDeviceCount(int *);",
               "call": "(cudaGetDeviceCount(&(int){0}), 1)"}

PLATFORM_TAG = "cp{0}{1}-cp{0}{1}-{2}".format(*sys.version_info[:2],
                                             sysconfig.get_platform().replace("-", "_")
                                             .replace(".", "_"))


def cc() -> str:
    """The C compiler; the test fails in CI without one, else it is skipped."""
    compiler = shutil.which("cc")
    if compiler is None:
        if os.environ.get("CI"):
            pytest.fail("no C compiler (cc) in CI")
        pytest.skip("no C compiler (cc)")
    return compiler


def stub_cudart(folder) -> str:
    """Build ``libcudart.so.12`` (soname included) in ``folder``; return its path."""
    path = os.path.join(folder, "libcudart.so.12")
    subprocess.run([cc(), "-shared", "-fPIC", "-Wl,-soname,libcudart.so.12", "-x", "c", "-",
                    "-o", path], input=STUB_CUDART, text=True, check=True)
    return path


def extension(folder, name: str, parts: dict, link=()) -> str:
    """Compile the extension module ``name`` (``parts``: DLOPEN_CALL or CUDART_CALL) with the
    extra linker arguments ``link``; return its path."""
    path = os.path.join(folder, name + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.run([cc(), "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}", "-x", "c",
                    "-", "-x", "none", "-o", path, "-Wl,--no-as-needed", *link, "-ldl"],
                   input=EXTENSION % {"name": name, **parts}, text=True, check=True)
    return path


def extensions(folder) -> dict[str, str]:
    """Build in ``folder`` the stub libcudart.so.12 ("cudart"), an extension linked to it
    ("bad") and one that dlopens libcuda at run time ("good"); their paths."""
    cudart = stub_cudart(folder)
    return {"cudart": cudart, "bad": extension(folder, "_bad", CUDART_CALL, link=[cudart]),
            "good": extension(folder, "_good", DLOPEN_CALL)}


def write_wheel(folder, name: str, files: dict[str, bytes], *, tag: str = "py3-none-any",
                requires=(), requires_python: str | None = None, version: str = "1.0") -> str:
    """A wheel of ``files`` (path in the wheel -> bytes) in ``folder``; return its path."""
    info = f"{name}-{version}.dist-info"
    metadata = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    metadata += [f"Requires-Dist: {r}" for r in requires]
    if requires_python:
        metadata.append(f"Requires-Python: {requires_python}")
    purelib = "true" if tag.endswith("-none-any") else "false"
    files = {**files, f"{info}/METADATA": ("\n".join(metadata) + "\n").encode(),
             f"{info}/WHEEL": (f"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: {purelib}"
                               f"\nTag: {tag}\n").encode()}
    record = [f"{path},sha256={_digest(data)},{len(data)}" for path, data in files.items()]
    files[f"{info}/RECORD"] = ("\n".join(record + [f"{info}/RECORD,,"]) + "\n").encode()
    path = os.path.join(folder, f"{name}-{version}-{tag}.whl")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for member, data in files.items():
            archive.writestr(member, data)
    return path


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def cudaload_wheel(folder) -> str:
    """A wheel of this checkout's cudaload package, without its dependencies (making Programs and
    asking a bundle needs neither cffi nor cuda-pathfinder), for ``check-wheel --with``."""
    root = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cudaload")
    files = {}
    for where, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in names:
            path = os.path.join(where, name)
            with open(path, "rb") as f:
                files[os.path.relpath(path, os.path.dirname(root)).replace(os.sep, "/")] = f.read()
    return write_wheel(folder, "cudaload", files, version="0.1.0")
