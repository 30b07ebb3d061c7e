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


SCENARIOS = {f.__name__: f for f in (hooks, driver_after_fork)}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])
