"""Odd files where the cache expects its own, and odd files named on the command line: each one is a
miss or a clear error, never a hang, a crash or a lost cache.

Each scenario runs in a subprocess with a time limit (a hang fails the test instead of stopping
the suite) and a bound on its address space (reading /dev/zero to the end fails fast instead of
taking the machine's memory).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap

import pytest

from tests._support import ROOT, run_py, run_scenario, scenario_command

KERNEL = 'extern "C" __global__ void k(int *x) { x[0] = 7; }\n'
NO_DRIVER = {"CUDALOAD_LIBCUDA": "/nonexistent/libcuda.so.1"}
_BOUNDED = "import resource; resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))\n"
LIMIT_S = 60


def bounded(code: str, **kw) -> subprocess.CompletedProcess:
    kw.setdefault("env", NO_DRIVER)
    return run_py(_BOUNDED + textwrap.dedent(code), timeout=LIMIT_S, **kw)


def cli(*words: str, **kw) -> subprocess.CompletedProcess:
    return bounded(f"import sys; from cudaload.cli import main; sys.exit(main({list(words)!r}))",
                   check=False, **kw)


def bounded_scenario(name: str, *args, **kw) -> subprocess.CompletedProcess:
    """Run the scenario ``name`` of cache_odd_files as :func:`bounded` runs code."""
    kw.setdefault("env", NO_DRIVER)
    return run_scenario("cache_odd_files", name, *args, timeout=LIMIT_S, **kw)


def compile_in_child() -> dict:
    proc = bounded_scenario("compile_kernel", KERNEL)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _entry(cache_dir):
    from cudaload.compile import cache

    (path,) = (cache_dir / f"v{cache.FORMAT}").glob("*.bin")
    return path


def _make_odd(path, kind: str) -> None:
    """Replace ``path`` with a file of ``kind``."""
    if path.exists() or path.is_symlink():
        path.unlink()
    if kind == "a pipe":
        os.mkfifo(path)
    elif kind == "a link to /dev/zero":
        path.symlink_to("/dev/zero")
    elif kind == "a link to a pipe":
        fifo = str(path) + ".fifo"
        if not os.path.exists(fifo):
            os.mkfifo(fifo)
        path.symlink_to(fifo)
    elif kind == "a device":
        try:
            os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 5))  # as /dev/zero
        except (PermissionError, OSError) as exc:
            pytest.skip(f"cannot make a device node here ({exc})")
    elif kind == "a link loop":
        path.symlink_to(path)


ODD = ["a pipe", "a link to /dev/zero", "a link to a pipe", "a device", "a link loop"]


@pytest.mark.parametrize("kind", ODD)
def test_an_entry_that_is_no_regular_file_is_a_miss(cache_dir, kind):
    compile_in_child()
    path = _entry(cache_dir)
    _make_odd(path, kind)
    out = compile_in_child()
    assert out["size"] > 0 and out["cached"] is None and out["enabled"], out
    # the entry was rewritten as a regular file, so the next process has a hit
    assert path.is_file() and not path.is_symlink() and compile_in_child()["cached"] == "disk"
    _make_odd(path, kind)
    proc = cli("cache", "prune")
    assert proc.returncode == 0 and "1 corrupt entries" in proc.stdout, proc.stderr
    assert not os.path.lexists(path)


@pytest.mark.parametrize("kind", ODD)
def test_a_toolchain_record_that_is_no_regular_file_is_ignored(cache_dir, kind):
    from cudaload.compile import toolchain

    compile_in_child()
    _make_odd(cache_dir / toolchain.RECORD, kind)
    out = compile_in_child()
    assert out["size"] > 0 and out["nvrtc"] and out["cached"] == "disk", out
    _make_odd(cache_dir / toolchain.RECORD, kind)
    proc = cli("doctor")
    assert "\nnvrtc " in proc.stdout and "Traceback" not in proc.stderr, proc.stderr
    proc = cli("cache", "prune")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr


# --- JSON nested without end ---------------------------------------------------------------------

DEEP = b"[" * 200_000 + b"]" * 200_000


def test_deeply_nested_entry_metadata_is_a_miss():
    import hashlib

    from cudaload.compile import cache

    key, code = "ab" * 32, b"\x7fELF" + b"x" * 60
    tag = bytes.fromhex(key)
    entry = cache.HEADER.pack(cache.MAGIC, cache.FORMAT, len(DEEP), len(code), tag,
                              hashlib.sha256(tag + DEEP + code).digest()) + DEEP + code
    assert cache.decode(entry, key) is None


def test_deeply_nested_toolchain_record_is_ignored(cache_dir):
    from cudaload.compile import toolchain

    compile_in_child()
    (cache_dir / toolchain.RECORD).write_bytes(b'{"nvrtc": ' + DEEP + b"}")
    out = compile_in_child()
    assert out["size"] > 0 and out["cached"] == "disk", out


def test_a_bundle_whose_index_nests_deeply_is_compiled_instead():
    from cudaload import Program
    from cudaload.compile.bundle import BUNDLE_HEADER, FORMAT, MAGIC, Bundle, BundleWarning

    data = BUNDLE_HEADER.pack(MAGIC, FORMAT, len(DEEP)) + DEEP
    with pytest.warns(BundleWarning, match="cannot be used"):
        assert Bundle(data).find(Program(KERNEL), 90) is None
    with pytest.raises(ValueError, match="nested"):
        Bundle(data).check()


@pytest.mark.parametrize("kind", ["a pipe", "a link to /dev/zero", "a device"])
def test_a_bundle_file_that_is_no_regular_file_is_compiled_instead(tmp_path, kind):
    path = tmp_path / "kernels.bundle"
    _make_odd(path, kind)
    out = bounded_scenario("bundle_find", path, KERNEL)
    missing, warned = json.loads(out.stdout)
    assert missing and len(warned) == 1 and "not a regular file" in warned[0], warned


# --- toolchain.json with fields of the wrong type ---------------------------------------------

def _damage(entry: dict, case: str):
    if case == "entry a list":
        return [entry["path"]]
    if case == "entry a string":
        return entry["path"]
    damaged = dict(entry)
    field, value = {
        "path a number": ("path", 5), "path with a NUL": ("path", entry["path"] + "\0x"),
        "stat a string": ("stat", "big"), "version strings": ("version", ["13", "0"]),
        "archs strings": ("archs", [str(a) for a in entry["archs"]]),
        "build a number": ("build", 12), "headers a mapping": ("headers", {"a": 1}),
        "headers not triples": ("headers", [[1]]),
        "header name unknown": ("headers", [["nope", "/usr", None]]),
        "found_via a list": ("found_via", ["x"]),
    }[case]
    damaged[field] = value
    return damaged


DAMAGE = ["entry a list", "entry a string", "path a number", "path with a NUL", "stat a string",
          "version strings", "archs strings", "build a number", "headers a mapping",
          "headers not triples", "header name unknown", "found_via a list"]


@pytest.mark.parametrize("case", DAMAGE)
def test_a_toolchain_record_with_wrong_field_types_is_ignored(cache_dir, case):
    from cudaload.compile import toolchain

    compile_in_child()
    path = cache_dir / toolchain.RECORD
    record = json.loads(path.read_text())
    record["nvrtc"] = {env: _damage(e, case) for env, e in record["nvrtc"].items()}
    path.write_text(json.dumps(record))
    for _ in range(2):  # and the next process too: the record was replaced by a sound one
        out = compile_in_child()
        assert out["size"] > 0 and out["cached"] == "disk" and out["nvrtc"], out
    assert all(isinstance(e, dict) for e in json.loads(path.read_text())["nvrtc"].values())


# --- cache clear ----------------------------------------------------------------------------------

def test_clear_removes_only_cudaloads_own_files(cache_dir):
    from cudaload.compile import cache, toolchain

    compile_in_child()
    entries = cache_dir / f"v{cache.FORMAT}"
    keep = [entries / "notes.txt", entries / "data" / "x.bin", cache_dir / "v1" / "mine.bin",
            cache_dir / "other.txt", cache_dir / "vault" / "a.bin"]
    for path in keep:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("not cudaload's")
    old = cache_dir / "v1" / ("ab" * 32 + ".bin")  # an entry of an older format
    old.write_bytes(b"old")
    proc = cli("cache", "clear")
    assert proc.returncode == 0 and "removed 2 entries" in proc.stdout, proc.stderr
    assert all(p.read_text() == "not cudaload's" for p in keep)
    assert not old.exists() and not list(entries.glob("*.bin"))
    assert not (cache_dir / toolchain.RECORD).exists()


def test_clear_while_others_compile_never_raises_nor_turns_their_cache_off(cache_dir, tmp_path):
    flag = tmp_path / "writing"
    env = {**os.environ, "PYTHONPATH": ROOT}
    clearer = subprocess.Popen(scenario_command("cache_odd_files", "clearer", flag), env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    writers = [subprocess.Popen(scenario_command("cache_odd_files", "writer", flag), env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for _ in range(2)]
    try:
        outs = [w.communicate(timeout=120) for w in writers]
    finally:
        flag.unlink(missing_ok=True)
    cleared, err = clearer.communicate(timeout=120)
    assert clearer.returncode == 0, err
    cleared = json.loads(cleared)
    assert cleared["errors"] == [] and cleared["rounds"] > 1, cleared
    for writer, (out, err) in zip(writers, outs):
        assert writer.returncode == 0 and "Traceback" not in err, err
        result = json.loads(out)
        assert result == {"enabled": True, "warnings": []}, result


# --- the command line: outputs, inputs, a closed pipe ---------------------------------------------

def _odd_output(tmp_path, kind: str):
    path = tmp_path / "out"
    if kind == "a pipe":
        os.mkfifo(path)
    else:
        try:
            os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # as /dev/null
        except (PermissionError, OSError) as exc:
            pytest.skip(f"cannot make a device node here ({exc})")
    return path, os.lstat(path)


@pytest.mark.parametrize("kind", ["a pipe", "a device"])
@pytest.mark.parametrize("command", ["compile", "precompile"])
def test_output_that_is_no_regular_file_is_refused_and_left_alone(tmp_path, kind, command):
    src = tmp_path / "k.cu"
    src.write_text(KERNEL)
    out, before = _odd_output(tmp_path, kind)
    words = ["compile", str(src), "--arch", "sm_90", "-o", str(out)] if command == "compile" \
        else ["precompile", str(src), "--arch", "sm_90", "-o", str(out)]
    proc = cli(*words)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"cannot write {out}: it is {kind}" in proc.stderr, proc.stderr
    after = os.lstat(out)
    assert (stat.S_IFMT(after.st_mode), after.st_ino, after.st_rdev) == \
        (stat.S_IFMT(before.st_mode), before.st_ino, before.st_rdev)


def test_compile_output_replaces_a_regular_file_atomically_and_keeps_its_mode(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text(KERNEL)
    out = tmp_path / "k.cubin"
    out.write_bytes(b"old")
    os.chmod(out, 0o640)
    proc = cli("compile", str(src), "--arch", "sm_90", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes().startswith(b"\x7fELF") and stat.S_IMODE(out.stat().st_mode) == 0o640
    assert not list(tmp_path.glob(".tmp-*"))


@pytest.mark.parametrize("kind,words", [("a device", "it is a device"), ("a pipe", "it is a pipe"),
                                        ("a link loop", "its symbolic links form a loop")])
def test_compile_input_that_is_no_regular_file_is_a_clear_error(tmp_path, kind, words):
    src = tmp_path / "k.cu"
    if kind == "a device":
        src = "/dev/zero"
    else:
        _make_odd(src, kind)
    proc = cli("compile", str(src), "--arch", "sm_90")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"cannot read {src}: {words}" in proc.stderr, proc.stderr
    assert "not found" not in proc.stderr.lower()


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_doctor_into_a_closed_pipe_prints_no_traceback(json_flag):
    read, write = os.pipe()
    os.close(read)  # the reader is gone before doctor writes: `cudaload doctor | head -0`
    try:
        proc = subprocess.run([sys.executable, "-m", "cudaload", "doctor", *json_flag],
                              env={**os.environ, "PYTHONPATH": ROOT, **NO_DRIVER}, stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=LIMIT_S)
    finally:
        os.close(write)
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr
    assert proc.returncode == 1  # no driver: not available, as with an open pipe
