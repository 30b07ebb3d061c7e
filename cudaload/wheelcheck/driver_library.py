"""A real CUDA driver library for a machine without a GPU: ``cudaload fetch-libcuda`` unpacks
NVIDIA's libcuda.so.1 from the distribution's archive (Debian's libcuda1, Ubuntu's
libnvidia-compute-535; fetch_libcuda.sh, shipped beside this file) and prints its path, for
``CUDALOAD_TEST_LIBCUDA`` in a host package's CI.  No GPU, kernel module or root is needed.
"""

from __future__ import annotations

import argparse
import os
import sys

__all__ = ["FETCH_STEP", "fetch", "add_parser"]

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fetch_libcuda.sh")

# The next step every "no driver library" skip leads with.
FETCH_STEP = ("export CUDALOAD_TEST_LIBCUDA=\"$(cudaload fetch-libcuda)\" (Debian or Ubuntu: "
              "NVIDIA's libcuda.so.1 from the distribution's archive, no GPU or root needed)")


def fetch() -> str:
    """The path of libcuda.so.1, fetched and unpacked on the first call (into
    ``CUDALOAD_LIBCUDA_DIR``, default ~/.cache/cudaload-libcuda).  Raises OSError, with apt's
    words and the next step, when it cannot be fetched."""
    import subprocess  # deferred: no other command imports it

    try:
        proc = subprocess.run(["bash", SCRIPT], capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise OSError(f"cannot run {SCRIPT}: {exc}") from None
    path = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    if proc.returncode != 0 or not os.path.isfile(path):
        said = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "no output"
        raise OSError(f"the driver library could not be fetched ({said}); on another system, "
                      "set CUDALOAD_TEST_LIBCUDA to a libcuda.so.1 unpacked from NVIDIA's driver "
                      "package")
    return path


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``cudaload fetch-libcuda`` with the subparsers ``sub``."""
    parser = sub.add_parser(
        "fetch-libcuda", allow_abbrev=False,
        help="fetch NVIDIA's libcuda.so.1 (Debian, Ubuntu) for tests on a machine without a "
             "GPU and print its path: export CUDALOAD_TEST_LIBCUDA=\"$(cudaload fetch-libcuda)\"")
    parser.set_defaults(func=_command)


def _command(args) -> int:
    try:
        print(fetch())
    except OSError as err:
        print(f"cudaload fetch-libcuda: {err}", file=sys.stderr)
        return 1
    return 0
