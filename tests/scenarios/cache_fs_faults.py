"""A filesystem that fails under the disk cache: each call the cache makes (open, read, write,
rename, mkdir, utime, the key locks) made to fail with an errno, one process each run.

    python -m tests.scenarios.cache_fs_faults SCENARIO ARGS...

cudaload is imported inside each scenario, so importing this module does nothing.
"""

from __future__ import annotations

import errno
import json
import os
import sys

KERNEL = 'extern "C" __global__ void k(int *x) {{ x[0] = {n}; }}\n'


def _fail(code: int, path="") -> OSError:
    return OSError(code, os.strerror(code), path)


def _inject(op: str, code: int) -> None:
    """Make the calls ``op`` names fail with ``code`` (ENOENT for "vanish": the entry removed
    just before it is opened)."""
    import fcntl

    real_open, real_read, real_write = os.open, os.read, os.write
    real_replace, real_mkdir, real_utime, real_lockf = os.replace, os.mkdir, os.utime, fcntl.lockf

    def opening(path, flags, *args, **kw):
        name = os.fspath(path)
        if op == "vanish" and name.endswith(".bin"):
            os.unlink(name)  # deleted between the look at the folder and the read
        elif (op == "open-entry" and name.endswith(".bin")) or \
                (op == "open-tmp" and os.path.basename(name).startswith(".tmp-")) or \
                (op == "open-locks" and name.endswith(".locks")):
            raise _fail(code, name)
        return real_open(path, flags, *args, **kw)

    def writing(fd, data):
        if op == "write-half":  # half of the entry reached the file, then the disk filled up
            real_write(fd, bytes(data[: len(data) // 2]))
        raise _fail(code)

    stale: set = set()

    def locking(fd, cmd, *args):
        if (op == "lock" and cmd == fcntl.LOCK_EX) or (op == "unlock" and cmd == fcntl.LOCK_UN):
            raise _fail(code)
        if op == "lock-once" and cmd == fcntl.LOCK_EX and not stale:
            stale.add(fd)  # the first descriptor of the key-lock file goes stale
        if fd in stale:
            raise _fail(code)
        return real_lockf(fd, cmd, *args)

    os.open = opening
    if op in ("read", "write", "write-half"):
        if op == "read":
            os.read = lambda fd, n: (_ for _ in ()).throw(_fail(code))
        else:
            os.write = writing
    if op == "rename":
        os.replace = lambda *a, **k: (_ for _ in ()).throw(_fail(code))
    if op == "rename-once":  # the first entry's rename fails, the others' do not
        renamed: list = []

        def replacing(*args, **kw):
            if not renamed and os.fspath(args[1]).endswith(".bin"):
                renamed.append(args)
                raise _fail(code)
            return real_replace(*args, **kw)
        os.replace = replacing
    if op == "mkdir":
        os.mkdir = lambda *a, **k: (_ for _ in ()).throw(_fail(code))
    if op == "utime":
        os.utime = lambda *a, **k: (_ for _ in ()).throw(_fail(code))
    fcntl.lockf = locking
    del real_read, real_mkdir, real_utime


def faulty(op: str, name: str, count: str, first: str = "0") -> None:
    """Compile ``first`` numbered kernels with a sound filesystem (their entries on disk, the
    memory cache then emptied), then the same ones and more up to ``count`` with the calls ``op``
    names failing with the errno ``name`` (none with "none").  Print where each came from, its
    size, the cache's warnings."""
    import warnings

    from cudaload import Program
    from cudaload.compile import cache
    from cudaload.compile.cache import writer

    progs = [Program(KERNEL.format(n=n)) for n in range(int(count))]
    for prog in progs[: int(first)]:
        prog.compile(arch=90)
    writer.DEFAULT.wait()
    cache.MEMORY.clear()
    if op != "none":
        _inject(op, getattr(errno, name))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = [p.compile(arch=90) for p in progs]
        writer.DEFAULT.wait()
    print(json.dumps({"cached": [o.cached for o in got], "sizes": [len(o.code) for o in got],
                      "warnings": [str(w.message) for w in caught
                                   if issubclass(w.category, cache.CacheWarning)]}))


SCENARIOS = {f.__name__: f for f in (faulty,)}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
