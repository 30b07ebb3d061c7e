"""The cache's locks, records and writes as several processes meet them, one process each run.

    python -m tests.scenarios.cache_processes SCENARIO ARGS...

cudaload is imported inside each scenario, so importing this module does nothing.
"""

from __future__ import annotations

import json
import os
import sys
import time


def _wait_until(start: float) -> None:
    while time.time() < start:
        time.sleep(0.001)


def remember(name: str, start: str) -> None:
    """Remember this environment's NVRTC as "environment NAME", from a record read before the
    wall-clock time ``start``, at that time (so that several processes write at once)."""
    from cudaload.compile import toolchain

    tc = toolchain.current()  # what this environment found
    toolchain._selector = lambda: "environment " + name
    record = toolchain._read_record()  # read before any of the others wrote
    _wait_until(float(start))
    toolchain._remember(record, tc, toolchain._stat_id(tc.nvrtc_path))


def compile_variants(start: str, count: str, base: str) -> None:
    """From the wall-clock time ``start``, compile ``count`` variants of SAXPY numbered from
    ``base``, each twice; print [where the code came from, its size] for each."""
    import tests.scenarios.compile_log  # counts the compilations
    from cudaload import Program
    from cudaload.bindings import _loader
    from tests.scenarios.cache_compiles import SAXPY

    _loader.nvrtc()
    progs = [Program(SAXPY + "\n// variant %d\n" % (int(base) + i)) for i in range(int(count))]
    _wait_until(float(start))
    out = [(p.compile(arch=90).cached, len(p.compile(arch=90).code)) for p in progs]
    print(json.dumps(out))


def hold_key(folder: str, key: str, seconds: str) -> None:
    """Hold the lock of ``key`` in ``folder`` for ``seconds``, printing "held" once it is held."""
    from cudaload.compile.cache import locks

    release = locks.acquire_key(folder, key)
    print("held", flush=True)
    time.sleep(float(seconds))
    release()


def publish_and_exit(key: str, how: str) -> None:
    """Publish an entry for ``key`` just before a process ends: ``how`` is "exit" (this one),
    "multiprocessing" (a fork worker) or "fork" (a forked child that ends with os._exit)."""

    def publish():
        from cudaload._base import _atomic
        from cudaload.compile import cache
        from cudaload.compile.objectcode import ObjectCode

        write = _atomic.write_atomic

        def slow_write(*args, **kw):  # still writing when the process would end
            time.sleep(0.3)
            write(*args, **kw)
        _atomic.write_atomic = slow_write
        with cache.default().lock(key) as publish:
            publish(ObjectCode(b"\x7fELF" + b"x" * 60, "cubin", "sm_90"))

    if how == "exit":
        publish()  # the interpreter exits at once, its entry still being written
    elif how == "multiprocessing":  # workers end with os._exit after threading's shutdown
        import multiprocessing

        worker = multiprocessing.get_context("fork").Process(target=publish)
        worker.start()
        worker.join()
    else:  # the cache imported before the fork, as in a process that compiled already
        from cudaload.compile import cache

        pid = os.fork()
        if pid == 0:
            publish()
            os._exit(0)  # as multiprocessing's fork workers end: no atexit
        os.waitpid(pid, 0)


def publish_at_late_exit(first: str, late: str) -> None:
    """Publish ``first``, then exit; an exit hook registered before cudaload was imported (so run
    after cudaload's own) publishes ``late``."""
    import atexit

    def publish(key):
        from cudaload.compile import cache
        from cudaload.compile.objectcode import ObjectCode

        with cache.default().lock(key) as publish:
            publish(ObjectCode(b"\x7fELF" + b"x" * 60, "cubin", "sm_90"))

    atexit.register(publish, late)  # atexit runs the last registered first: this one after
    publish(first)  # cudaload's writer thread runs from here on


def forked_pending(key: str) -> None:
    """An entry published while the writer is held back, then a fork: the child waits for the
    parent to write it, clears the cache and looks the key up.  Prints what the child found
    ("none" or where the code came from)."""
    import threading

    from cudaload.compile import cache
    from cudaload.compile.objectcode import ObjectCode

    disk, gate = cache.default(), threading.Event()
    disk.writer.submit(lambda: gate.wait(10))
    with disk.lock(key) as publish:
        publish(ObjectCode(b"\x7fELF" + b"x" * 60, "cubin", "sm_90"))
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        deadline = time.time() + 20
        while not os.path.exists(disk.path(key)) and time.time() < deadline:
            time.sleep(0.01)
        disk.clear()
        found = disk.lookup(key)
        os.write(write, (found.cached if found is not None else "none").encode())
        os._exit(0)
    os.close(write)
    gate.set()
    os.waitpid(pid, 0)
    print(os.read(read, 100).decode())


def opposite_order(me: str, other: str) -> None:
    """Process ``me`` ("0" or "1") of two takes two keys in the order opposite to the other's,
    one thread each, meeting through marker files in the current folder; prints whether the disk
    cache is usable, whether the second key's entry is there, and what failed."""
    import threading

    from cudaload.compile import cache
    from cudaload.compile.objectcode import ObjectCode

    keys = ["aa" * 32, "bb" * 32] if me == "0" else ["bb" * 32, "aa" * 32]
    obj = ObjectCode(b"x" * 100, "cubin", "sm_90")
    failed = []

    def wait_for(path):
        while not os.path.exists(path):
            time.sleep(0.005)

    def holder():  # holds the first key while the other process's waiter asks for it
        with cache.default().lock(keys[0]) as publish:
            open(me + ".held", "w").close()
            wait_for(other + ".held")
            wait_for(me + ".waiting")
            wait_for(other + ".waiting")
            time.sleep(0.5)  # both waiters are inside the lock call by now
            publish(obj)

    def waiter():  # asks for the key the other process holds
        wait_for(me + ".held")
        wait_for(other + ".held")
        open(me + ".waiting", "w").close()
        try:
            with cache.default().lock(keys[1]) as publish:
                publish(obj)
        except BaseException as exc:
            failed.append(repr(exc))

    threads = [threading.Thread(target=holder), threading.Thread(target=waiter)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(cache.default().usable, cache.default().lookup(keys[1]) is not None, failed)


def removed_under_compile(how: str) -> None:
    """While a key is held (its compile running), another process clears the cache (``how``:
    "clear") or prunes it (else); the entry is then published.  Prints whether the cache is
    usable, whether the entry holds what was published, and the temporary files left."""
    import subprocess
    import warnings

    from cudaload._base import _atomic
    from cudaload.compile import cache
    from cudaload.compile.objectcode import ObjectCode

    warnings.simplefilter("error")
    disk = cache.default()
    with disk.lock("cd" * 32) as publish:
        verb = "clear" if how == "clear" else "prune"
        code = f"from cudaload.compile import cache; cache.configured().{verb}()"
        subprocess.run([sys.executable, "-c", code], check=True)
        publish(ObjectCode(b"y" * 100, "cubin", "sm_90"))
    disk.writer.wait()
    print(disk.usable, disk.lookup("cd" * 32).code == b"y" * 100,
          [e for e in os.listdir(disk.folder) if e.startswith(_atomic.PREFIX)])


def clear_descriptors() -> None:
    """Clear the cache 20 times, publishing an entry after each: [descriptors open before, after,
    whether the last entry is there]."""
    from cudaload.compile import cache
    from cudaload.compile.objectcode import ObjectCode

    def compile_one(i):
        with cache.default().lock("%064x" % (i + 1)) as publish:
            publish(ObjectCode(b"z" * 10, "cubin", "sm_90"))

    writer = cache.default().writer  # a write in flight holds its temporary file open
    compile_one(0)
    writer.wait()
    before = len(os.listdir("/proc/self/fd"))
    for i in range(20):
        cache.configured().clear()
        compile_one(i + 1)
    writer.wait()
    print(json.dumps([before, len(os.listdir("/proc/self/fd")),
                      cache.default().lookup("%064x" % 21) is not None]))


def without_fork_hooks() -> None:
    """Import cudaload with os.register_at_fork gone, as on Windows; print whether the disk cache
    is usable."""
    import random, tempfile, threading  # the standard library's own hooks, registered first

    del os.register_at_fork
    import cudaload.availability, cudaload.launch.kernel, cudaload.launch.memory, cudaload.compile.program
    from cudaload.compile import cache

    print("imported", cache.default().usable)


def lock_and_publish() -> None:
    """Publish an entry under its key's lock and remember NVRTC under the record's lock; print the
    warnings that gave."""
    import warnings

    from cudaload.compile import cache, toolchain
    from cudaload.compile.objectcode import ObjectCode

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with cache.default().lock("12" * 32) as publish:
            publish(ObjectCode(b"y" * 10, "cubin", "sm_90"))
        toolchain.live()  # remembers NVRTC under toolchain.json.lock
    print(json.dumps([str(w.message) for w in caught]))


SCENARIOS = {"remember": remember, "compile_variants": compile_variants, "hold_key": hold_key,
             "publish_and_exit": publish_and_exit, "opposite_order": opposite_order,
             "removed_under_compile": removed_under_compile,
             "clear_descriptors": clear_descriptors, "without_fork_hooks": without_fork_hooks,
             "lock_and_publish": lock_and_publish, "publish_at_late_exit": publish_at_late_exit,
             "forked_pending": forked_pending}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
