"""The cache's writer thread (compile/cache/writer.py): jobs in order, off the caller's thread, and
waited for.  What it writes, and at exit or in a fork, is tested with the cache (test_cache.py)."""

from __future__ import annotations

import threading

import pytest

from cudaload.compile.cache.writer import Writer


def test_jobs_run_in_order_on_one_other_thread_and_wait_waits_for_them():
    writer, gate, ran = Writer(), threading.Event(), []
    writer.submit(lambda: gate.wait(10))
    for i in range(5):
        writer.submit(lambda i=i: ran.append((i, threading.get_ident())))
    assert ran == []  # the caller went on while the first job waits
    gate.set()
    writer.wait()
    assert [i for i, _t in ran] == [0, 1, 2, 3, 4]
    threads = {t for _i, t in ran}
    assert len(threads) == 1 and threading.get_ident() not in threads


def test_wait_returns_at_once_with_nothing_pending():
    writer = Writer()
    writer.wait()
    writer.submit(lambda: None)
    writer.wait()
    writer.wait()


def test_a_job_that_raises_is_printed_and_the_next_still_runs(capfd):
    writer, ran = Writer(), []

    def broken():
        raise RuntimeError("a bug in a job")
    writer.submit(broken)
    writer.submit(lambda: ran.append(1))
    writer.wait()
    assert ran == [1]
    assert "RuntimeError: a bug in a job" in capfd.readouterr().err


def test_inline_runs_each_job_on_the_callers_thread_before_submit_returns():
    writer, ran = Writer(inline=True), []
    writer.submit(lambda: ran.append(threading.get_ident()))
    assert ran == [threading.get_ident()]


def _interrupting_at(line: int):
    """A tracer that raises KeyboardInterrupt once, when Writer.submit reaches ``line``."""
    import sys

    from cudaload.compile.cache import writer as _writer

    fired: list = []

    def tracer(frame, event, arg):
        if frame.f_code.co_filename != _writer.__file__ or frame.f_code.co_name != "submit":
            return None

        def local(f, ev, a):
            if ev == "line" and f.f_lineno == line and not fired:
                fired.append(line)
                raise KeyboardInterrupt
            return local
        return local
    return tracer, fired


def _submit_lines() -> list[int]:
    import inspect

    lines, first = inspect.getsourcelines(Writer.submit)
    return list(range(first + 1, first + len(lines)))


def test_an_interrupt_anywhere_in_submit_leaves_no_job_without_a_thread():
    # KeyboardInterrupt arrives between any two lines; afterwards wait() must not hang and later
    # jobs must run (before the fix, an interrupt between marking the thread started and starting
    # it left every later job queued for no thread, and wait() and the exit hook waiting forever)
    import sys

    for line in _submit_lines():
        writer, ran = Writer(), []
        tracer, fired = _interrupting_at(line)
        sys.settrace(tracer)
        try:
            writer.submit(lambda: ran.append(0))
        except KeyboardInterrupt:
            pass
        finally:
            sys.settrace(None)
        writer.submit(lambda: ran.append(1))
        waiter = threading.Thread(target=writer.wait, daemon=True)
        waiter.start()
        waiter.join(10)
        assert not waiter.is_alive(), f"wait() hangs after an interrupt at line {line}"
        assert 1 in ran, (line, fired, ran)


def test_an_interrupt_as_the_thread_starts_leaves_later_jobs_on_that_thread(monkeypatch):
    """A KeyboardInterrupt raised as start_new_thread returned lost the new thread's ident:
    every later job was written on its caller's thread, the thread serving nothing.  The
    thread now says who it is itself."""
    import _thread as real
    import time

    from cudaload.compile.cache import writer as module

    class Interrupting:
        def __getattr__(self, name):
            return getattr(real, name)

        def start_new_thread(self, *args):
            real.start_new_thread(*args)
            raise KeyboardInterrupt

    monkeypatch.setattr(module, "_thread", Interrupting())
    writer = Writer()
    with pytest.raises(KeyboardInterrupt):
        writer.submit(lambda: None)
    monkeypatch.setattr(module, "_thread", real)
    deadline = time.monotonic() + 10
    while writer._thread is None and time.monotonic() < deadline:
        time.sleep(0.01)
    where: list = []
    writer.submit(lambda: where.append(threading.get_ident()))
    writer.wait()
    assert where and where[0] not in (None, threading.get_ident()), where
    assert where[0] == writer._thread


class _InterruptedWriter(Writer):
    """As if KeyboardInterrupt arrived as the job was handed over, before it was queued."""

    def submit(self, job) -> None:
        raise KeyboardInterrupt


def _fake():
    from cudaload.compile.objectcode import ObjectCode

    return ObjectCode(b"\x7fELF" + b"x" * 60, "cubin", "sm_90")


def test_an_interrupt_while_handing_over_the_write_releases_the_key(tmp_path):
    from cudaload.compile import cache

    disk, key = cache.DiskCache(tmp_path, writer=_InterruptedWriter()), "ab" * 32
    with pytest.raises(KeyboardInterrupt):
        with disk.lock(key) as publish:
            publish(_fake())
    taken = threading.Event()

    def take():
        with cache.DiskCache(tmp_path).lock(key):
            taken.set()
    threading.Thread(target=take, daemon=True).start()
    assert taken.wait(10), "the key stayed locked"


@pytest.mark.parametrize("claims", ["0", "1"])
def test_an_interrupt_at_any_step_of_taking_a_key_leaves_it_free(tmp_path, claims):
    # KeyboardInterrupt between the thread lock's acquire and the lines that note it, or once
    # the key was locked but before the block began (the mount table read, a claim), left the
    # key taken for good: this process's next compile of it waited forever
    from tests._support import scenario_json

    tried, left = scenario_json("key_lock_interrupts", "taking", tmp_path, claims, timeout=300)
    assert left is None, left
    assert tried > 40  # the steps of the lock, the claim's too, were tried


def test_an_evicted_or_stored_key_is_not_overwritten_by_a_write_still_pending(tmp_path):
    # The driver-refusal path evicts the refused entry and stores what replaces it: a write of
    # the refused one still queued must not land after that
    from cudaload.compile import cache
    from cudaload.compile.objectcode import ObjectCode

    writer, gate = Writer(), threading.Event()
    disk, key = cache.DiskCache(tmp_path, writer=writer), "cd" * 32
    writer.submit(lambda: gate.wait(10))  # the writer is behind
    with disk.lock(key) as publish:
        publish(ObjectCode(b"\x7fELF refused", "cubin", "sm_90"))
    threading.Timer(0.3, gate.set).start()
    disk.evict(key)
    assert disk.lookup(key) is None
    disk.store(key, ObjectCode(b"\x7fELF good", "cubin", "sm_90"))
    writer.wait()
    assert disk.lookup(key).code == b"\x7fELF good"
