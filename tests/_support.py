"""What tests share besides fixtures: the repository's root, fresh interpreters to run code and
scenario modules in (dlopen state is process-wide, so each library scenario runs in a
subprocess), and reading the JSON they print.  Fixtures are conftest.py's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBCUDA_535 = os.environ.get("CUDALOAD_TEST_LIBCUDA", "")


def child_env(env: dict | None = None, unset=()) -> dict:
    """This process's environment with the repository first on PYTHONPATH, less ``unset``, plus
    ``env``."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = ROOT + os.pathsep + full_env.get("PYTHONPATH", "")
    for key in unset:
        full_env.pop(key, None)
    full_env.update(env or {})
    return full_env


def _finished(proc: subprocess.CompletedProcess, check: bool) -> subprocess.CompletedProcess:
    if check and proc.returncode != 0:
        raise AssertionError(f"subprocess failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def run_py(code: str, env: dict | None = None, timeout: float = 120, check: bool = True,
           unset=(), flags=()) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (started with the options ``flags``) with the
    repository importable; return the result."""
    proc = subprocess.run([sys.executable, *flags, "-c", textwrap.dedent(code)],
                          env=child_env(env, unset), capture_output=True, text=True,
                          timeout=timeout)
    return _finished(proc, check)


def run_json(code: str, **kw):
    """Run ``code``, which must print one JSON document as its last line, and return it parsed."""
    return last_json(run_py(code, **kw))


def last_json(proc: subprocess.CompletedProcess):
    """The JSON document on the last line of a subprocess's output."""
    return json.loads(proc.stdout.strip().splitlines()[-1])


def scenario_command(name: str, *args, python: str = sys.executable) -> list[str]:
    """The command line that runs ``tests/scenarios/<name>.py`` with ``args``."""
    return [python, "-m", "tests.scenarios." + name, *map(str, args)]


def run_scenario(name: str, *args, env: dict | None = None, unset=(), timeout: float = 120,
                 check: bool = True, cwd=None, python: str = sys.executable,
                 environ: dict | None = None) -> subprocess.CompletedProcess:
    """Run the scenario module ``tests/scenarios/<name>.py`` with ``args`` in a fresh interpreter
    and return the result.  Its environment is ``environ`` as given, else :func:`child_env`'s."""
    proc = subprocess.run(scenario_command(name, *args, python=python),
                          env=child_env(env, unset) if environ is None else environ, cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)
    return _finished(proc, check)


def scenario_json(name: str, *args, **kw):
    """Run a scenario (as :func:`run_scenario`) and return the JSON of its last line."""
    return last_json(run_scenario(name, *args, **kw))
