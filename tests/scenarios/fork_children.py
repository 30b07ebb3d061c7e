"""Forked children of a process, and what cudaload lets them do, in a fresh process.

    python -m tests.scenarios.fork_children SCENARIO

Each prints what it found as JSON on its last line; cudaload is imported inside each scenario, so
importing this module forks nothing.
"""

from __future__ import annotations

import json
import os
import sys


def _in_child(work) -> str:
    """What ``work()`` returns (a str) in a forked child."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(write, work().encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as f:
        return f.read()


def hooks() -> None:
    """The fork hooks run and lifetime.forked() in a child, before and after the process is
    marked unforkable, and in the parent."""
    from cudaload._base import lifetime

    seen = []
    lifetime.on_fork_in_child(lambda: seen.append("first"))
    lifetime.on_fork_in_child(lambda: seen.append("second"))

    def in_child():
        return json.loads(_in_child(lambda: json.dumps([seen, lifetime.forked()])))

    before = in_child()
    lifetime.mark_unforkable()
    after = in_child()
    print(json.dumps({"before": before, "after": after, "parent": [seen, lifetime.forked()]}))


def driver_after_fork() -> None:
    """What driver.init() does in a child, before and after the parent initialised CUDA."""
    from cudaload.bindings import driver
    from cudaload import errors

    def child_init():
        try:
            driver.init()
            return "initialised"
        except errors.ForkedProcessError:
            return "ForkedProcessError"

    before = _in_child(child_init)  # the parent has not initialised CUDA: the child may
    driver.init()
    print(json.dumps([before, _in_child(child_init)]))


def interrupted_twice() -> None:
    """compile_all's fork of a worker (compile/parallel/_fork.py) with a Ctrl-C that arrives
    while every signal is held for the fork, then a second while the child it ends is reaped:
    whether the child was reaped (not left a zombie), and what was raised."""
    import signal
    import time

    from cudaload.compile.parallel import _fork, _spawn

    real_fork, forked = os.fork, []

    def fork():
        pid = real_fork()
        if pid:
            forked.append(pid)
            os.kill(os.getpid(), signal.SIGINT)  # held: raised once the mask is restored
        return pid

    class Clock:  # what Child.wait sleeps with: a second Ctrl-C as it waits
        monotonic = staticmethod(time.monotonic)

        @staticmethod
        def sleep(seconds):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(seconds)

    os.fork, _spawn.time = fork, Clock  # type: ignore[assignment]
    try:
        _fork.fork(lambda: time.sleep(30), [])
        raised = None
    except KeyboardInterrupt:
        raised = "KeyboardInterrupt"
    finally:
        os.fork, _spawn.time = real_fork, time
    try:
        os.waitpid(forked[0], 0)  # killed, so at once: reaped only now, it was left unreaped
        left = True
    except ChildProcessError:
        left = False
    print(json.dumps({"raised": raised, "left_unreaped": left}))


SCENARIOS = {f.__name__: f for f in (hooks, driver_after_fork, interrupted_twice)}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
