"""``check-wheel --import``: the wheel installed into a fresh virtual environment with only its
declared dependencies, its modules imported there where no CUDA driver can be found, then
where a driver library exists but no GPU.

Each import must succeed, take the installed copy, map no CUDA library (in the second process,
none but the driver's own), and, where cudaload is installed with the wheel,
``cudaload.status()`` must say CUDA is not available, with a reason and a next step.  The
environment is made with this interpreter (``python -m venv``) and filled by this
interpreter's pip (``pip --python``; a pip of its own where this one is too old); pip's own
settings (``PIP_INDEX_URL``, ``PIP_FIND_LINKS``, its configuration files) apply.
``check-wheel --programs`` asks its questions in the same environment (programs.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from .environments import find_driver, no_driver_env, without_gpu_env
from .libraries import cuda_library, stem
from .wheel import WheelError

__all__ = ["Installed", "installed", "check_imports", "run_probe"]

_PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_probe.py")
# Not passed on: they would let the fresh environment see another one's files.
_HIDDEN = {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "VIRTUAL_ENV",
           "CUDALOAD_LIBNVRTC"}
_TIMEOUT_S = 600
NO_DRIVER, WITHOUT_GPU = "no CUDA driver", "a CUDA driver but no GPU"


class Installed(NamedTuple):
    """The fresh environment: its interpreter, the temporary folder it lives in, and the
    environment variables its processes start from."""
    python: str
    work: str
    base: dict


@contextlib.contextmanager
def installed(wheel: str, also: Sequence[str] = ()) -> Iterator[Installed]:
    """The wheel (and the wheels in ``also``) installed into a fresh environment, removed after.

    Raises WheelError when the environment cannot be made or pip cannot install the wheels."""
    base = {k: v for k, v in os.environ.items() if k not in _HIDDEN}
    with tempfile.TemporaryDirectory(prefix="cudaload-check-wheel-") as work:
        yield Installed(_install(work, wheel, [wheel, *also], base), work, base)


def check_imports(env: Installed, names: Sequence[str]) -> list[dict]:
    """One result per process: ``{"mode", "driver", "ok", "failures", "notes", "reason",
    "problems", "installed", "skipped"}`` (``problems``: those of ``cudaload.status()``)."""
    python, work, base = env
    runs = [_run(python, names, NO_DRIVER, no_driver_env(base, work), None, work)]
    driver, how = find_driver()
    if driver is None:
        from .driver_library import FETCH_STEP  # deferred: only the check that needs it

        runs.append(_result(WITHOUT_GPU, None, skipped=f"no driver library: {FETCH_STEP} "
                                                      f"({how})"))
    else:
        runs.append(_run(python, names, WITHOUT_GPU, without_gpu_env(base, driver), driver,
                         work))
        runs[-1]["notes"].insert(0, f"the driver library: {driver} ({how})")
    return runs


def _install(work: str, wheel: str, wheels: list[str], env: dict) -> str:
    """Make the environment in ``work``, install ``wheels``; return its interpreter."""
    folder = os.path.join(work, "env")
    ours = _pip_takes_python()
    _call([sys.executable, "-m", "venv", *(["--without-pip"] if ours else []), folder], env,
          f"{wheel}: cannot make a virtual environment to install it")
    python = os.path.join(folder, *(("Scripts", "python.exe") if sys.platform == "win32"
                                    else ("bin", "python")))
    pip = [sys.executable, "-m", "pip", "--python", python] if ours else [python, "-m", "pip"]
    for other in wheels[1:]:  # before pip, so that a missing one is not blamed on the wheel
        if not os.path.isfile(other):
            raise WheelError(f"--with {other}: no such file; give the path of a built wheel")
    try:
        _call([*pip, "install", "--disable-pip-version-check", "--no-input", "-q", *wheels], env,
              f"{wheel}: pip could not install it")
    except WheelError as err:
        if "satisfies the requirement" not in str(err) and "matching distribution" not in str(err):
            raise
        # A dependency not on the package index (cudaload itself, before its release there)
        raise WheelError(f"{err}; next step: pass that dependency's wheel with --with WHEEL "
                         "(cudaload's: python -m build --wheel in a cudaload checkout, then "
                         "--with dist/cudaload-*.whl)") from None
    return python


def _pip_takes_python() -> bool:
    """Whether this interpreter's pip installs into another one (``--python``, pip 22.3)."""
    import importlib.metadata  # deferred: only the check that needs it

    try:
        version = importlib.metadata.version("pip")
        return tuple(int(x) for x in version.split(".")[:2]) >= (22, 3)
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return False


def _call(command: list[str], env: dict, what: str) -> None:
    """Run ``command``; raise WheelError(``what``: pip's or venv's one-line reason) if it fails."""
    try:
        proc = subprocess.run(command, env=env, capture_output=True, text=True,
                              timeout=_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise WheelError(f"{what}: {err}") from None
    if proc.returncode != 0:
        lines = [line.strip() for line in (proc.stderr + proc.stdout).splitlines() if line.strip()]
        errors = [line.removeprefix("ERROR: ") for line in lines if line.startswith("ERROR:")]
        raise WheelError(f"{what}: {(errors or lines or [f'exit status {proc.returncode}'])[0]}")


def _result(mode: str, driver: str | None, **fields) -> dict:
    return {"mode": mode, "driver": driver, "ok": True, "failures": [], "notes": [],
            "reason": None, "problems": [], "installed": [], "skipped": None, **fields}


def run_probe(python: str, probe: str, argv: Sequence[str], env: dict, work: str,
              what: str) -> tuple[dict | None, str | None]:
    """(what the file ``probe``, run as ``python -I -c`` with ``argv`` in ``env``, printed as its
    last line of JSON, None) or (None, why there is none)."""
    folder = tempfile.mkdtemp(dir=work)  # an empty working folder: nothing to import from it
    with open(probe) as f:
        code = f.read()
    try:
        proc = subprocess.run([python, "-I", "-c", code, *argv], env=env, cwd=folder,
                              capture_output=True, text=True, timeout=_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, f"{what} did not finish in {_TIMEOUT_S} s"
    except OSError as err:
        return None, f"{what} could not start: {err}"
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1]), None
    except (ValueError, IndexError):
        tail = (proc.stderr.strip().splitlines() or ["(nothing)"])[-1]
        return None, (f"{what}: the process exited with status {proc.returncode} and no "
                      f"report; its last line of error output: {tail}")


def _run(python: str, names: Sequence[str], mode: str, env: dict, driver: str | None,
         work: str) -> dict:
    """Import ``names`` with ``python`` in the environment ``env``; judge what it saw."""
    seen, failure = run_probe(python, _PROBE, [json.dumps(names)], env, work,
                              f"import {', '.join(names)} ({mode})")
    if seen is None:
        return _result(mode, driver, ok=False, failures=[failure])
    return _judge(seen, names, mode, driver)


def _judge(seen: dict, names: Sequence[str], mode: str, driver: str | None) -> dict:
    out = _result(mode, driver, installed=[d for d in seen["installed"]
                                           if d.split()[0].lower() != "pip"])
    failures, notes = out["failures"], out["notes"]
    prefix = os.path.realpath(seen["prefix"]) + os.sep
    for item in seen["imports"]:
        if "error" in item:
            failures.append(f"import {item['name']} ({mode}) failed: {item['error']}")
        elif item["file"] and not os.path.realpath(item["file"]).startswith(prefix):
            failures.append(f"import {item['name']} ({mode}) took {item['file']}, not the copy "
                            "installed from the wheel")
    if seen["mapped"] is None:
        notes.append("the libraries mapped by the import were not listed (no /proc/self/maps)")
    cuda = [p for p in seen["mapped"] or () if cuda_library(p) and not _drivers_own(p, driver)]
    if cuda:
        failures.append(f"import {', '.join(names)} ({mode}) mapped CUDA libraries: "
                        + ", ".join(cuda))
    _judge_status(seen.get("status"), mode, driver, out)
    out["ok"] = not failures
    return out


def _judge_status(status: dict | None, mode: str, driver: str | None, out: dict) -> None:
    """What ``cudaload.status()`` said (None: no cudaload there), added to ``out``."""
    failures = out["failures"]
    if status is None:
        out["notes"].append("cudaload is not installed with the wheel: cudaload.status() was "
                            "not asked")
        return
    if "error" in status:
        failures.append(f"cudaload.status() ({mode}) raised {status['error']}")
        return
    out["problems"] = problems = status["problems"]
    out["reason"] = "; ".join(p.get("what", "") for p in problems) or None
    if status["available"]:
        if driver is None:
            failures.append(f"cudaload.status() ({mode}) says CUDA is available")
        else:
            out["skipped"] = ("a GPU is visible although CUDA_VISIBLE_DEVICES is empty: this "
                              "process has a GPU")
        return
    if driver is not None and not status["driver"].get("found"):
        failures.append(f"cudaload ({mode}) did not load the driver library: "
                        f"{status['driver'].get('error')}")
    if not problems or not all(p.get("what") and p.get("hint") for p in problems):
        failures.append(f"cudaload.status() ({mode}) says CUDA is not available without a "
                        f"reason and a next step for each problem: {problems}")


def _drivers_own(path: str, driver: str | None) -> bool:
    """Whether the mapped file ``path`` is the driver library ``driver`` or one of the NVIDIA
    driver's libraries beside it."""
    if driver is None:
        return False
    name = stem(path)
    return (name in ("cuda", "nvcuda") or name.startswith("nvidia-")) and \
        os.path.dirname(os.path.realpath(path)) == os.path.dirname(os.path.realpath(driver))
