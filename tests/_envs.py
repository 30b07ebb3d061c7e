"""Python environments of chosen wheels, and the CUDA toolkits kept out of the tests.

A test environment is a venv whose site-packages holds only the NVIDIA wheels a test asks for
(linked from the test venv's own), so cuda.pathfinder and cudaload search exactly those; cffi and
cuda.pathfinder come from the test venv through a .pth file, which adds them to sys.path but not to
the folders searched for wheels.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys

import pytest

from ._support import ROOT, scenario_json

HIDE_BY_PATHFINDER = os.path.join(ROOT, "tests", "_hide_toolkits")
HEADERS = ["cuda_fp16.h", "cuda_bf16.h", "cuda_fp8.h", "cooperative_groups.h", "cuComplex.h",
           "cuda/std/limits", "cuda/std/type_traits", "cuda/std/atomic", "cuda/std/complex",
           "cub/block/block_reduce.cuh", "cub/block/block_scan.cuh", "cub/warp/warp_reduce.cuh"]


def real_wheels() -> str:
    """The test venv's nvidia/cu13 folder (the CUDA 13 wheels: NVRTC, cudart, CCCL)."""
    import cuda.pathfinder

    site = os.path.dirname(os.path.dirname(os.path.dirname(cuda.pathfinder.__file__)))
    return os.path.join(site, "nvidia", "cu13")


def machine_toolkits() -> list[str]:
    """The CUDA toolkit folders of this machine, as they were before ci/test.sh hid them."""
    named = os.environ.get("CUDALOAD_TEST_HIDDEN_TOOLKITS", "").split()
    found = {os.path.realpath(d) for d in glob.glob("/usr/local/cuda*") if os.path.isdir(d)}
    return sorted(set(named) | found)


def visible_toolkits() -> list[str]:
    """Toolkit folders the tests may look at: ci/test.sh's bind mounts of the hidden ones, else the
    machine's own."""
    aside = os.environ.get("CUDALOAD_TEST_SYSTEM_TOOLKITS", "").split()
    if aside:
        return aside
    if os.environ.get("CUDALOAD_TEST_HIDDEN_BY") == "pathfinder":
        return machine_toolkits()
    return [d for d in machine_toolkits() if os.listdir(d)]


def hidden_env() -> tuple[str, dict]:
    """How the toolkits are hidden ("namespace", "pathfinder" or "none": there are none), and the
    environment variables a subprocess needs for it."""
    env = {"CUDA_HOME": None, "CUDA_PATH": None, "CONDA_PREFIX": None}
    by = os.environ.get("CUDALOAD_TEST_HIDDEN_BY")
    if by is None and os.environ.get("CUDALOAD_TEST_HIDDEN_TOOLKITS"):
        by = "namespace"
    if by is None:  # pytest run by hand: keep cuda.pathfinder to the environment here
        by = "pathfinder" if machine_toolkits() else "none"
    if by == "pathfinder":
        env["PYTHONPATH"] = HIDE_BY_PATHFINDER
    return by, env


def make_env(root, cudart: bool = True, cccl: bool = True) -> tuple[str, str]:
    """A venv at ``root`` with NVRTC 13 and, as asked, the cudart and CCCL headers; returns
    (its python, its site-packages)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True,
                   capture_output=True)
    (site,) = glob.glob(os.path.join(str(root), "lib", "python*", "site-packages"))
    real_site = os.path.dirname(os.path.dirname(real_wheels()))
    with open(os.path.join(site, "deps.pth"), "w") as f:
        f.write(real_site + "\n")
    cu13 = os.path.join(site, "nvidia", "cu13")
    os.makedirs(os.path.join(cu13, "include"))
    os.symlink(os.path.join(real_wheels(), "lib"), os.path.join(cu13, "lib"))
    if cudart:
        for entry in os.listdir(os.path.join(real_wheels(), "include")):
            if entry != "cccl":
                os.symlink(os.path.join(real_wheels(), "include", entry),
                           os.path.join(cu13, "include", entry))
    if cccl:
        install_cccl(site)
    return os.path.join(str(root), "bin", "python"), site


CCCL_CU13 = os.path.join("nvidia", "cu13", "include", "cccl")
CCCL_OWN_FOLDER = os.path.join("nvidia", "cuda_cccl", "include")  # the layout of CUDA 12's wheel


def install_cccl(site: str, where: str = CCCL_CU13) -> str:
    """What ``pip install nvidia-cuda-cccl`` does to ``site``: the headers at ``where`` and a
    dist-info folder (which changes the folder, as an installation does); returns the headers'
    folder."""
    real = os.path.join(real_wheels(), "include", "cccl")
    assert os.path.isfile(os.path.join(real, "cuda", "std", "version")), (
        f"no CCCL at {real}: the nvrtc extra must install nvidia-cuda-cccl")
    os.makedirs(os.path.dirname(os.path.join(site, where)), exist_ok=True)
    os.symlink(real, os.path.join(site, where))
    os.mkdir(os.path.join(site, "nvidia_cuda_cccl-13.0.0.dist-info"))
    return os.path.realpath(os.path.join(site, where))


def run_in(python: str, env: dict, name: str, *args, timeout: float = 300):
    """Run the scenario ``name`` of tests/scenarios with ``python``, cudaload importable, and
    ``env`` (a value of None unsets the variable; PYTHONPATH goes before the repository); return
    the JSON of its last line."""
    full = dict(os.environ)
    paths = [ROOT]
    for key, value in env.items():
        if key == "PYTHONPATH":
            paths.insert(0, value)
        elif value is None:
            full.pop(key, None)
        else:
            full[key] = value
    full["PYTHONPATH"] = os.pathsep.join(paths)
    return scenario_json(name, *args, python=python, environ=full, timeout=timeout)


def pip_resolves(requirement: str) -> None:
    """Fail unless pip can resolve ``requirement`` from its index (metadata only: nothing is
    installed); skip when the index cannot be reached."""
    import socket

    try:
        socket.create_connection(("pypi.org", 443), timeout=5).close()
    except OSError:
        pytest.skip("PyPI cannot be reached")
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps",
                           "--ignore-installed", "--quiet", "--disable-pip-version-check",
                           requirement], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"pip cannot install {requirement!r}:\n{proc.stderr[-2000:]}"
