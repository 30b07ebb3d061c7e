"""NVRTC options that name a file NVRTC opens itself: a path NVRTC could not use is refused when
the Program is made, with a ValueError that names the option, before NVRTC can abort the process
(a time trace it cannot write) or wait forever (a FIFO)."""

from __future__ import annotations

import json
import os
import pickle

import pytest

from tests._support import run_scenario

KERNEL = 'extern "C" __global__ void k(int *x) { x[0] = 1; }\n'


@pytest.fixture
def places(tmp_path):
    """{name: path}: a folder, a FIFO, a folder named like a trace, and names of missing things."""
    os.mkdir(tmp_path / "dir")
    os.mkdir(tmp_path / "trace.json")  # where --fdevice-time-trace=trace would write
    os.mkfifo(tmp_path / "fifo")
    os.mkfifo(tmp_path / "fifo.json")
    (tmp_path / "file.pch").write_bytes(b"")
    return {"tmp": str(tmp_path), "dir": str(tmp_path / "dir"), "trace": str(tmp_path / "trace"),
            "fifo": str(tmp_path / "fifo"), "fifo-trace": str(tmp_path / "fifo"),
            "missing": str(tmp_path / "no" / "such"), "file": str(tmp_path / "file.pch")}


# (option with a {place}, words of the message), each refused
REFUSED = [
    ("--fdevice-time-trace=/proc/x", "/proc/x.json is under /proc"),
    ("-fdevice-time-trace=/sys/x", "/sys/x.json is under /sys"),
    ("--fdevice-time-trace=/dev/x", "/dev/x.json is under /dev"),
    ("--fdevice-time-trace={missing}", "no folder you can write in; create it first"),
    ("--fdevice-time-trace={trace}", "trace.json is no regular file"),
    ("--fdevice-time-trace={fifo-trace}", "fifo.json is no regular file"),
    ("--fdevice-time-trace=-", "names no file"),
    ("--fdevice-time-trace=", "names no file"),
    ("--time={fifo}", "is no regular file"),
    ("-time={missing}", "no folder you can write in"),
    ("--time={dir}", "is no regular file"),
    ("--time=/proc/self/x", "is under /proc"),
    ("--create-pch={fifo}", "is no regular file"),
    ("-create-pch={missing}", "no folder you can write in"),
    ("--use-pch={fifo}", "is no regular file"),
    ("--use-pch=/dev/zero", "is under /dev"),
    ("--pch-dir={missing}", "is no folder you can write in"),
    ("-pch-dir={file}", "is no folder you can write in"),
]


@pytest.mark.parametrize("option, words", REFUSED)
def test_a_file_option_nvrtc_could_not_use_is_refused(places, option, words):
    from cudaload import Program

    option = option.format(**places)
    with pytest.raises(ValueError) as info:
        Program(KERNEL, options=(option,))
    message = str(info.value)
    assert message.startswith(f"option {option!r}") and words in message, message
    assert ", e.g. --" in message  # the next step: an option of the same kind that would work


@pytest.mark.parametrize("option", ["--fdevice-time-trace={tmp}/t", "--time=-",
                                    "--time={tmp}/times.csv", "--create-pch={tmp}/k.pch",
                                    "--use-pch={file}", "--use-pch={tmp}/not-yet.pch",
                                    "--pch-dir={dir}", "-DTIME={fifo}", "--fmad=false"])
def test_a_file_option_nvrtc_can_use_is_taken(places, option):
    from cudaload import Program

    option = option.format(**places)
    assert option in Program(KERNEL, options=(option,)).options


def test_the_paths_are_checked_each_time_a_program_is_made(tmp_path):
    """The check is of the file system as it is: equal arguments made again are checked again."""
    from cudaload import Program

    os.mkdir(tmp_path / "out")
    option = f"--fdevice-time-trace={tmp_path}/out/t"
    Program(KERNEL, options=(option,))
    os.rmdir(tmp_path / "out")
    with pytest.raises(ValueError, match="no folder you can write in"):
        Program(KERNEL, options=(option,))


def _compiled(tmp_path, options) -> dict:
    """What Program(KERNEL, options=options).compile(arch=90) gave in a fresh process; the process
    must end normally within the time limit (NVRTC aborts it, or waits on a FIFO, without the
    check)."""
    data = tmp_path / "case.pickle"
    data.write_bytes(pickle.dumps({"case": ({"source": KERNEL, "options": options}, {})}))
    proc = run_scenario("program_compiles", "compile_cases", data, check=False, timeout=60,
                        env={"CUDALOAD_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 0, f"the process ended with {proc.returncode}:\n{proc.stderr[-2000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])["case"]


@pytest.mark.parametrize("option", [
    "--fdevice-time-trace=/proc/x",  # NVRTC: "Could not open /proc/x.json", then SIGABRT
    "-fdevice-time-trace={missing}", "--fdevice-time-trace={trace}",  # SIGABRT as well
    "--fdevice-time-trace={fifo-trace}", "--time={fifo}", "--create-pch={fifo}",  # wait forever
    "--use-pch={fifo}"])
def test_an_option_that_would_end_the_process_gives_a_value_error_instead(tmp_path, places,
                                                                          option):
    option = option.format(**places)
    out = _compiled(tmp_path, (option,))
    assert out["type"] == "ValueError" and out["message"].startswith(f"option {option!r}"), out


def test_a_trace_in_a_folder_of_ones_own_is_written_where_asked(tmp_path):
    out = _compiled(tmp_path, (f"--fdevice-time-trace={tmp_path}/k",))
    assert out["type"] == "ok", out
    with open(tmp_path / "k.json") as f:
        assert "traceEvents" in json.load(f)
