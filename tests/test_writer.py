"""The cache's writer thread (compile/_writer.py): jobs in order, off the caller's thread, and
waited for.  What it writes, and at exit or in a fork, is tested with the cache (test_cache.py)."""

from __future__ import annotations

import threading

from cudaload.compile._writer import Writer


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
