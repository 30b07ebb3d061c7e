"""Processes in which CUDA is absent: no driver at all, or a real driver library but no GPU.

- No driver: ``CUDALOAD_LIBCUDA`` names a file that does not exist, which is where cudaload's
  search for libcuda then stops; ``CUDA_VISIBLE_DEVICES`` is empty, so that code which opens the
  driver by itself sees no GPU either.
- A driver without GPU: a real driver library, named by ``CUDALOAD_TEST_LIBCUDA``, else
  ``CUDALOAD_LIBCUDA``, else the one cudaload finds on this machine; ``CUDA_VISIBLE_DEVICES`` is
  empty, which hides every GPU from it (``cuInit`` fails with CUDA_ERROR_NO_DEVICE).

:class:`CudaProcess` runs a function or code in such a process, for the pytest plugin.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import subprocess
    from typing import ParamSpec, TypeVar

    P = ParamSpec("P")  # the arguments of the function a CudaProcess runs
    T = TypeVar("T")  # and its result

# pickle, subprocess, tempfile and json are imported where used: pytest imports this module
# (through the plugin) in every test run of a project where cudaload is installed.

__all__ = ["CudaProcess", "find_driver", "no_driver_env", "without_gpu_env"]

_DRIVER_FILE = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"
_HERE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def no_driver_env(base: Mapping[str, str], folder: str) -> dict[str, str]:
    """``base`` changed so that cudaload finds no driver; ``folder`` is one that will not hold a
    driver library (a new temporary folder)."""
    return {**base, "CUDALOAD_LIBCUDA": os.path.join(folder, "no-cuda-driver", _DRIVER_FILE),
            "CUDA_VISIBLE_DEVICES": ""}


def without_gpu_env(base: Mapping[str, str], driver: str) -> dict[str, str]:
    """``base`` changed so that cudaload loads the driver library ``driver`` and sees no GPU."""
    return {**base, "CUDALOAD_LIBCUDA": driver, "CUDA_VISIBLE_DEVICES": ""}


def find_driver() -> tuple[str | None, str]:
    """(path of a driver library that loads here, how it was found), or (None, why there is
    none).  The machine's own driver is looked for in a child process, so that this one maps
    no CUDA library."""
    for variable in ("CUDALOAD_TEST_LIBCUDA", "CUDALOAD_LIBCUDA"):
        value = os.environ.get(variable)
        if value:
            if os.path.isfile(value):
                return value, variable
            return None, f"{variable} names {value}, which is not a file"
    return _machine_driver()


@functools.cache
def _machine_driver() -> tuple[str | None, str]:
    import json  # deferred: only the check that needs it
    import subprocess  # deferred: only the check that needs it

    code = ("import json\nfrom cudaload.bindings import _loader\n"
            "try:\n    print(json.dumps([_loader.driver().path, None]))\n"
            "except Exception as exc:\n    print(json.dumps([None, str(exc)]))\n")
    env = {k: v for k, v in os.environ.items() if k != "CUDALOAD_LIBCUDA"}
    env["CUDA_VISIBLE_DEVICES"] = ""
    env["PYTHONPATH"] = os.pathsep.join([_HERE, *filter(None, [env.get("PYTHONPATH")])])
    try:
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                              text=True, timeout=120)
        path, error = json.loads(proc.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError) as exc:
        return None, f"looking for the driver failed ({exc})"
    return (path, "found by cudaload on this machine") if path else (None, error)


_CALL = """
import pickle, sys, traceback
call, result = sys.argv[1], sys.argv[2]
try:
    with open(call, "rb") as f:
        func, args, kwargs = pickle.load(f)
    outcome = ("ok", "", func(*args, **kwargs))
except BaseException as exc:
    outcome = ("raised", traceback.format_exc(), exc)
try:
    value = pickle.dumps(outcome[2])
except Exception as exc:
    outcome = ("raised", traceback.format_exc(), None)
    value = pickle.dumps(RuntimeError(f"the result cannot be sent back: {exc!r}"))
with open(result, "wb") as f:
    pickle.dump(outcome[:2], f)
    f.write(value)
"""


class CudaProcess:
    """Runs code in a fresh Python process where CUDA is absent: ``description`` says how;
    ``env`` is that process's environment (this process's ``sys.path`` as its PYTHONPATH),
    ready for ``subprocess.run(..., env=...)``; ``driver`` is the driver library it loads, if
    any."""

    def __init__(self, description: str, env: Mapping[str, str], driver: str | None = None,
                 timeout: float = 600.0):
        self.description, self.driver, self.timeout = description, driver, timeout
        self.env = dict(env)
        self.env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)

    def __repr__(self) -> str:
        return f"<CudaProcess: {self.description}>"

    def __call__(self, func: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``func(*args, **kwargs)`` run in the process; its result, or its exception raised
        here.  Raises TypeError when ``func`` or the arguments cannot be pickled (``func``
        must be defined at the top level of an importable module), RuntimeError when the
        process ends without a result."""
        import pickle  # deferred: only the check that needs it
        import tempfile  # deferred: only the check that needs it

        with tempfile.TemporaryDirectory(prefix="cudaload-call-") as folder:
            call, result = os.path.join(folder, "call"), os.path.join(folder, "result")
            try:
                data = pickle.dumps((func, args, kwargs))
            except (pickle.PicklingError, TypeError, AttributeError) as err:
                raise TypeError(f"{func!r} cannot be run in another process ({err}): give a "
                                "function defined at the top level of an importable module, "
                                "and arguments that pickle") from None
            with open(call, "wb") as f:
                f.write(data)
            proc = self.run(_CALL, call, result)
            sys.stdout.write(proc.stdout)
            sys.stderr.write(proc.stderr)
            try:
                with open(result, "rb") as f:
                    status, text = pickle.load(f)
                    value = pickle.load(f)
            except (OSError, EOFError, pickle.UnpicklingError, ValueError):
                tail = (proc.stderr.strip().splitlines() or ["(nothing)"])[-1]
                raise RuntimeError(f"{func.__qualname__} ran in a process with {self.description}"
                                   f", which exited with status {proc.returncode} and no result;"
                                   f" its last line of error output: {tail}") from None
        if status == "ok":
            return value
        if not isinstance(value, BaseException):
            value = RuntimeError(str(value))
        value.add_note(f"(raised in a process with {self.description}):\n{text.rstrip()}")
        raise value

    def run(self, code: str, *argv: str) -> subprocess.CompletedProcess:
        """``python -c code argv...`` in the process; its output captured as text."""
        import subprocess  # deferred: only the check that needs it

        return subprocess.run([sys.executable, "-c", code, *argv], env=self.env,
                              capture_output=True, text=True, timeout=self.timeout)
