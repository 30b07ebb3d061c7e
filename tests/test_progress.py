"""compile_all(..., progress=...) and ``cudaload precompile``'s progress line: a callback gets
the counts of programs done, rising to the total; the built-in line (compile/parallel/_progress.py)
is
drawn on a terminal and never written to a pipe; ``precompile --quiet`` draws none."""

from __future__ import annotations

import errno
import os
import subprocess
import sys

import pytest

from cudaload.compile.parallel._progress import Line, _duration
from tests._support import child_env, run_json

PLAIN = 'extern "C" __global__ void k{i}(float *p) {{ *p = {i}; }} // progress\n'


def test_a_callback_gets_rising_counts_ending_at_the_total(tmp_path):
    """Five programs (one twice, one NVRTC rejects) on two workers: the callback is called with
    counts that only rise, each with the total, the last being (5, 5); compiled again (all found
    in the cache) it is called once, with (5, 5)."""
    got = run_json(f"""
        import json, cudaload
        src = {PLAIN!r}
        progs = [cudaload.Program(src.format(i=i)) for i in range(3)]
        progs += [cudaload.Program(src.format(i=0)), cudaload.Program("not C++ at all")]
        runs = []
        for _ in range(2):
            counts = []
            try:
                cudaload.compile_all(progs, arch=90, workers=2,
                                     progress=lambda done, total: counts.append([done, total]))
            except cudaload.CompileError:
                pass
            runs.append(counts)
        print(json.dumps(runs))
        """, env={"CUDALOAD_CACHE_DIR": str(tmp_path / "c")})
    first, again = got
    assert first[-1] == [5, 5] and all(total == 5 for _d, total in first), first
    done = [d for d, _t in first]
    assert done == sorted(set(done)) and len(done) >= 2, first  # rising, more than one step
    assert again[-1] == [5, 5] and len(again) <= 2, again  # the rejected one is compiled again


def test_a_progress_that_is_no_callable_is_refused_before_anything_is_compiled():
    import cudaload

    with pytest.raises(TypeError, match="progress must be"):
        cudaload.compile_all([cudaload.Program("anything")], progress="yes")


def _read_all(fd: int) -> bytes:
    """What a pty's master end holds, once its slave end is closed everywhere."""
    data = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError as err:  # EIO: no slave end open any more
            assert err.errno == errno.EIO
            return data
        if not chunk:
            return data
        data += chunk


def test_the_line_is_drawn_on_a_terminal_and_ended_and_never_written_to_a_pipe():
    master, slave = os.openpty()
    with open(slave, "w") as terminal:
        line = Line(terminal)
        for done in (1, 2, 3, 4):
            line(done, 4)
    drawn = _read_all(master).decode()
    os.close(master)
    assert drawn.count("\rcudaload: ") == 4 and drawn.endswith("\r\n"), drawn  # the tty writes \n as \r\n
    assert "1 of 4 programs compiled" in drawn and "4 of 4 programs compiled" in drawn
    assert " left" in drawn  # the estimate, once the rate is known
    read, write = os.pipe()
    with open(write, "w") as pipe:
        line = Line(pipe)
        line(1, 2)
        line(2, 2)
    with open(read) as back:
        assert back.read() == ""


def test_a_line_that_is_not_finished_is_ended_on_request():
    master, slave = os.openpty()
    with open(slave, "w") as terminal:
        line = Line(terminal)
        line(1, 9)
        line.end()
        line.end()  # once only
    drawn = _read_all(master).decode()
    os.close(master)
    assert drawn.endswith("1 of 9 programs compiled\r\n"), drawn


@pytest.mark.parametrize("seconds, text", [(4.4, "4 s"), (200, "3 min 20 s"),
                                           (7500, "2 h 5 min")])
def test_the_time_left_reads_as_a_person_says_it(seconds, text):
    assert _duration(seconds) == text


def _precompile(tmp_path, *words, terminal: bool) -> str:
    """``cudaload precompile`` of a file for two arches: its stderr (a pty's, or a pipe's)."""
    tmp_path.mkdir()
    src = tmp_path / "p.cu"
    src.write_text(PLAIN.format(i=7))
    command = [sys.executable, "-m", "cudaload", "precompile", str(src), "--arch", "sm_80",
               "--arch", "sm_90", *words]
    env = child_env({"CUDALOAD_CACHE_DIR": str(tmp_path / "c"), "COLUMNS": "100"})
    if not terminal:
        proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc.stderr
    master, slave = os.openpty()
    try:
        proc = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=slave, text=True,
                              timeout=120)
    finally:
        os.close(slave)
    drawn = _read_all(master).decode()
    os.close(master)
    assert proc.returncode == 0, drawn
    return drawn


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_precompile_shows_its_progress_on_a_terminal_unless_quiet(tmp_path):
    drawn = _precompile(tmp_path / "t", terminal=True)
    assert "\r" in drawn and "2 of 2 programs compiled" in drawn, drawn
    assert _precompile(tmp_path / "q", "--quiet", terminal=True) == ""
    assert "programs compiled" not in _precompile(tmp_path / "p", terminal=False)
