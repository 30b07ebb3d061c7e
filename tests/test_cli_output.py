"""Where the command line writes: one rule for every command.

Standard output into a closed pipe (`| head -c1`) is no error: the exit status is the one an open
pipe gets, with nothing on stderr.  Into a full disk (`> /dev/full`) it is: one line on stderr and
a nonzero status.  Either way the command's work is done.  `-o` replaces a symbolic link instead
of writing through it, for `compile` and `precompile` alike, and takes no empty name.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests import _wheels
from tests._support import child_env

KERNEL = 'extern "C" __global__ void k(int *x) { x[0] = 7; }\n'
NO_DRIVER = {"CUDALOAD_LIBCUDA": "/nonexistent/libcuda.so.1"}


@pytest.fixture
def where(tmp_path):
    """A kernel source, a pure wheel and a cache folder of this test's own."""
    (tmp_path / "k.cu").write_text(KERNEL)
    wheel = _wheels.write_wheel(tmp_path, "purepkg", {"purepkg/__init__.py": b""})
    return {"dir": tmp_path, "src": str(tmp_path / "k.cu"), "wheel": wheel,
            "env": {**NO_DRIVER, "CUDALOAD_CACHE_DIR": str(tmp_path / "cache")}}


COMMANDS = {
    "doctor": lambda w: ["doctor"],
    "doctor --json": lambda w: ["doctor", "--json"],
    "--version": lambda w: ["--version"],
    "--help": lambda w: ["--help"],
    "cache info": lambda w: ["cache", "info"],
    "cache info --json": lambda w: ["cache", "info", "--json"],
    "compile": lambda w: ["compile", w["src"], "--arch", "sm_90"],
    "precompile": lambda w: ["precompile", w["src"], "--arch", "sm_90", "-o",
                             str(w["dir"] / "k.bundle")],
    "check-wheel": lambda w: ["check-wheel", w["wheel"]],
    "check-wheel --json": lambda w: ["check-wheel", w["wheel"], "--json"],
}


def cudaload(words, env, stdout=subprocess.PIPE) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cudaload", *words], env=child_env(env),
                          stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=120)


def _work_done(where, name: str) -> None:
    if name == "compile":
        assert (where["dir"] / "k.cubin").read_bytes().startswith(b"\x7fELF")
    if name == "precompile":
        assert (where["dir"] / "k.bundle").stat().st_size > 0


@pytest.mark.parametrize("name", COMMANDS)
def test_a_closed_pipe_is_no_error_for_any_command(where, name):
    words = COMMANDS[name](where)
    open_pipe = cudaload(words, where["env"])
    assert open_pipe.stdout, open_pipe.stderr  # something to write
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the command writes: `cudaload ... | head -0`
    try:
        closed = cudaload(words, where["env"], stdout=write)
    finally:
        os.close(write)
    assert closed.stderr == open_pipe.stderr, closed.stderr
    assert closed.returncode == open_pipe.returncode
    _work_done(where, name)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
@pytest.mark.parametrize("name", COMMANDS)
def test_a_full_disk_is_one_line_and_a_nonzero_status_for_any_command(where, name):
    with open("/dev/full", "w") as full:
        proc = cudaload(COMMANDS[name](where), where["env"], stdout=full)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last == (f"cudaload{' ' + name.split()[0] if not name.startswith('-') else ''}: "
                    "cannot write its output: No space left on device. Next step: send the "
                    "output to a file or program that can take it"), proc.stderr
    _work_done(where, name)


@pytest.mark.parametrize("command", ["compile", "precompile"])
def test_output_through_a_symbolic_link_replaces_the_link_not_its_target(where, command):
    target = where["dir"] / "elsewhere.bin"
    target.write_bytes(b"another file")
    link = where["dir"] / "out.bin"
    link.symlink_to(target)
    words = [command, where["src"], "--arch", "sm_90", "-o", str(link)]
    proc = cudaload(words, where["env"])
    assert proc.returncode == 0, proc.stderr
    assert target.read_bytes() == b"another file"
    assert not link.is_symlink() and link.stat().st_size > 100
    assert not list(where["dir"].glob(".tmp-*"))


@pytest.mark.parametrize("command", ["compile", "precompile"])
@pytest.mark.parametrize("empty", [["-o="], ["-o", ""], ["--output-file="]])
def test_an_empty_output_name_is_a_usage_error(where, command, empty):
    proc = cudaload([command, where["src"], "--arch", "sm_90", *empty], where["env"])
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "empty" in proc.stderr.strip().splitlines()[-1], proc.stderr
    assert sorted(p.name for p in where["dir"].iterdir()) == sorted(
        ["k.cu", os.path.basename(where["wheel"])])  # nothing written, nothing compiled
