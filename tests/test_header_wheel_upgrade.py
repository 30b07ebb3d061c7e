"""An upgrade of a header wheel always changes the identity every kernel's key holds.

Two real releases of each of NVIDIA's header wheels (``nvidia-cuda-cccl``, ``nvidia-cuda-runtime``)
from the package index, installed into a fresh environment and upgraded with pip, as users do.  A
header edited in place inside a wheel is not seen: that limit and the command that clears the
cache after such an edit are in docs/api.md.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

OLDER = {"cccl": "nvidia-cuda-cccl==13.3.4.3.1", "cudart": "nvidia-cuda-runtime==13.4.92"}
NEWER = {"cccl": "nvidia-cuda-cccl==13.3.5.0.6", "cudart": "nvidia-cuda-runtime==13.5.37"}
FOLDERS = {"cudart": ("nvidia", "cu13", "include"), "cccl": ("nvidia", "cu13", "include", "cccl")}


def _pip(env_python: str, *words: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", env_python, "install", "-q",
                           "--no-deps", "--disable-pip-version-check", *words],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode and ("Could not find" in proc.stderr or "connection" in proc.stderr.lower()
                            or "No matching distribution" in proc.stderr):
        pytest.skip(f"the package index cannot be reached: {proc.stderr.strip()[-300:]}")
    assert proc.returncode == 0, proc.stderr


@pytest.fixture(scope="module")
def environment(tmp_path_factory):
    root = tmp_path_factory.mktemp("wheels") / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True,
                   timeout=120)
    python = str(root / "bin" / "python")
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    _pip(python, *OLDER.values())
    return python, site


def _identities(site: str) -> dict:
    from cudaload.compile.includes import _headers

    return {name: _headers.identity(name, os.path.join(site, *parts))
            for name, parts in FOLDERS.items()}


@pytest.mark.parametrize("name", ["cccl", "cudart"])
def test_upgrading_a_header_wheel_changes_its_identity(environment, name):
    python, site = environment
    before = _identities(site)
    assert before[name] is not None, f"{OLDER[name]} put no headers where they are looked for"
    _pip(python, "--upgrade", NEWER[name])
    after = _identities(site)
    assert after[name] is not None and after[name] != before[name]
    _pip(python, OLDER[name])  # and back down: changed again, never the first one's twin
    assert _identities(site)[name] not in (after[name], None)



def test_the_report_says_an_edited_header_is_not_seen_and_what_to_run():
    from ._support import ROOT, child_env

    proc = subprocess.run([sys.executable, "-m", "cudaload", "doctor"], cwd=ROOT, env=child_env(),
                          capture_output=True, text=True, timeout=120)
    lines = proc.stdout.splitlines()
    headers = [i for i, line in enumerate(lines) if line.strip().startswith("headers:")]
    assert headers, proc.stdout
    after = "\n".join(lines[headers[0]:headers[0] + 4])
    assert "edited in place" in after and "cudaload cache clear" in after
