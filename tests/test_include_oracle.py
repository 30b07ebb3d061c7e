"""The include scan and the disk cache against NVRTC itself, on generated include trees.

Each example (tests/_include_trees.py) is a tree of headers with folder and file links, ``..``
in include names and include folders, includes written every way the preprocessor takes them,
in-memory headers and the include options.  Every text defines a marker that shows in the PTX
when NVRTC read it.  Two properties:

1. every file NVRTC read is covered by the cache key: its (st_dev, st_ino) is that of a path in
   ``includes.resolve(...).path_states`` with its sha256, or it is an in-memory header, or the
   result is not ``includes_known``; where the key does not cover it, no cache may answer for it;
2. after random edits (a file changed, created where the search looked, removed, a link
   retargeted, the current folder moved to a tree of the same names), what the memory cache
   and then the disk cache answer is what NVRTC compiles from the edited tree.

The default number of examples keeps this file near a minute on two cores; a soak (random
seeds, so each run tries other trees):

    CUDALOAD_ORACLE_EXAMPLES=5000 CI=1 .venv/bin/python -m pytest -q -x \\
        tests/test_include_oracle.py -p no:cacheprovider --hypothesis-show-statistics

A failing example is printed as JSON; saved under tests/include_regressions/ (one file each,
with a "why"), it is replayed by :func:`test_saved_regression` on every run.  A saved case may
name a ``preceded_by`` tree, which NVRTC must reject, compiled first in the same process.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import os
import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, assume, event, given, note, settings

from . import _include_trees as trees

EXAMPLES = int(os.environ.get("CUDALOAD_ORACLE_EXAMPLES", "200"))
REGRESSIONS = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "include_regressions",
                                            "*.json")))


def _nvrtc_or_skip():
    from cudaload.compile import toolchain
    from cudaload.errors import CudaLoadError

    try:
        toolchain.current()
    except CudaLoadError as exc:  # only where NVRTC is missing; CI has the wheel
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no NVRTC: {exc}")


@contextlib.contextmanager
def _scratch():
    """A scratch root with its own disk cache and an empty memory cache; the current folder and
    the environment are put back after."""
    from cudaload.compile import cache

    root = os.path.realpath(tempfile.mkdtemp(prefix="inctree-"))
    cwd, env = os.getcwd(), {k: os.environ.get(k) for k in ("CUDALOAD_CACHE_DIR", "CUDALOAD_CACHE")}
    os.environ["CUDALOAD_CACHE_DIR"] = os.path.join(root, "cache")
    os.environ.pop("CUDALOAD_CACHE", None)
    cache.MEMORY.clear()
    try:
        yield root
    finally:
        os.chdir(cwd)
        for key, value in env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        cache.MEMORY.clear()
        shutil.rmtree(root, ignore_errors=True)


def _covered(path_states) -> tuple[dict, list[str]]:
    """({(st_dev, st_ino): path} of the files the key holds the contents of, problems)."""
    covered, problems = {}, []
    for path, state in path_states:
        if state in ("absent", "dir") or state.startswith("error:"):
            continue
        try:
            with open(path, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
                st = os.fstat(f.fileno())
        except OSError:
            problems.append(f"path_states name {path} as read ({state[:12]}) but it is gone")
            continue
        if digest != state:
            problems.append(f"the path_states' sha256 of {path} is not that of its contents")
        covered[(st.st_dev, st.st_ino)] = path
    return covered, problems


def _difference(got: bytes, want: bytes | None) -> str:
    if want is None:
        return f"NVRTC now rejects the tree; the cache gave {trees.markers(got)}"
    return f"the cache gave {trees.markers(got)}, NVRTC {trees.markers(want)}"


def run(example: dict, stats: dict) -> list[str]:
    """Build ``example``, compile it through cudaload.Program and straight through NVRTC, and
    return what disagrees (empty: all agree).  Raises Discard when NVRTC rejects the unedited
    tree.  ``stats`` gets what happened, and ``edits`` as made."""
    from cudaload import Program
    from cudaload.bindings import nvrtc
    from cudaload.compile import cache, toolchain
    from cudaload.compile.includes import search as includes
    from cudaload.errors import CompileError

    with _scratch() as root:
        filled = trees.fill(example, root)
        where = trees.build(filled, root)
        in_memory = {trees.marker(t) for t in (filled["source"], *filled["headers"].values())}
        os.chdir(os.path.join(root, filled["cwd"]))
        args = dict(name=filled["name"], headers=filled["headers"] or None,
                    include_paths=tuple(filled["include_paths"]),
                    options=tuple(filled["options"]), std=filled["std"])
        tc = toolchain.current()
        prog = Program(filled["source"], **args)

        def compiled(program, disk: bool = True):
            os.environ["CUDALOAD_CACHE"] = "1" if disk else "0"
            try:
                return program.compile(arch=90, output="ptx")
            except CompileError:
                return None
            finally:
                del os.environ["CUDALOAD_CACHE"]

        def nvrtc_now():  # what cudaload's _build passes, without its cache
            try:
                return nvrtc.compile(prog.source, prog.name,
                                     (*prog.options, "--gpu-architecture=compute_90",
                                      *tc.include_options), prog.headers, (), kind="ptx").code
            except CompileError:
                return None

        inputs = includes.resolve(prog.source, prog.name, prog.headers, prog.options,
                                  [o[2:] for o in tc.include_options])
        try:
            first = prog.compile(arch=90, output="ptx")
        except CompileError as exc:
            raise trees.Discard(str(exc)[:2000]) from None
        problems = [] if first.cached is None else [f"a fresh cache answered ({first.cached})"]
        covered, wrong = _covered(inputs.path_states)
        problems += wrong
        missed = [trees.path_of(filled, n) for n in trees.marker_numbers(first.code)
                  if n not in in_memory and where.get(n) not in covered]
        if missed and inputs.includes_known:
            problems.append(f"scan: NVRTC read {missed}, which the key does not cover "
                            f"(path_states: {[p for p, _ in inputs.path_states]})")
        stats["uncertain"] = not inputs.includes_known
        cache.default().writer.wait()  # what answers next is the file on disk
        cache.MEMORY.clear()
        again = compiled(Program(filled["source"], **args))
        if missed or not inputs.includes_known:
            if again.cached is not None:
                problems.append(f"cache: answered from {again.cached!r} though what NVRTC read "
                                "is not all in the key")
        elif again.cached != "disk":
            problems.append("cache: the unchanged tree, all of it in the key, was not found on "
                            f"disk (cached={again.cached!r})")
        if again.code != first.code:
            problems.append("the unchanged tree compiled to other code")

        absent = sorted(p for p, s in inputs.path_states if s == "absent" and p.startswith(root))
        made = [trees.apply(edit, root, absent) for edit in filled["edits"]]
        stats["edits"] = trees.unfill(made, root)
        want = nvrtc_now()
        # The memory cache alone first: with the disk cache off, its miss stores nothing there.
        mem = compiled(prog, disk=False)
        stats["memory hit"] = mem is not None and mem.cached == "memory"
        if stats["memory hit"] and mem.code != want:
            problems.append("cache: memory answered stale code after the edits: "
                            + _difference(mem.code, want))
        cache.MEMORY.clear()
        disk = compiled(Program(filled["source"], **args))
        stats["disk hit"] = disk is not None and disk.cached == "disk"
        if stats["disk hit"] and disk.code != want:
            problems.append("cache: disk answered stale code after the edits: "
                            + _difference(disk.code, want))
        return problems


@pytest.mark.timeout(max(300, EXAMPLES * 3))
@settings(max_examples=EXAMPLES, deadline=None, database=None,
          derandomize="CUDALOAD_ORACLE_EXAMPLES" not in os.environ,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.filter_too_much])
@given(trees.examples())
def test_the_key_covers_what_nvrtc_reads_and_the_caches_answer_as_nvrtc(example):
    _nvrtc_or_skip()
    stats: dict = {}
    try:
        problems = run(example, stats)
    except trees.Discard as exc:
        event("discarded: NVRTC rejects the unedited tree")
        note(str(exc))
        assume(False)
        return
    for what in ("memory hit", "disk hit", "uncertain"):
        event(f"{what}: {stats.get(what)}")
    made = dict(example, edits=[e for e in stats.get("edits", []) if e.get("op") != "none"])
    assert not problems, "\n".join(problems) + "\nexample:\n" + json.dumps(made, indent=1)


@pytest.mark.parametrize("path", REGRESSIONS, ids=[os.path.basename(p)[:-5] for p in REGRESSIONS])
def test_saved_regression(path):
    _nvrtc_or_skip()
    with open(path, encoding="utf-8") as f:
        example = json.load(f)
    why = example.pop("why", "")
    before = example.pop("preceded_by", None)
    if before is not None:  # compiled first in this process: a tree NVRTC rejects
        with pytest.raises(trees.Discard):
            run(before, {})
    try:
        problems = run(example, {})
    except trees.Discard as exc:
        raise AssertionError(f"NVRTC rejects the saved tree: {exc}") from None
    assert not problems, why + "\n" + "\n".join(problems)
