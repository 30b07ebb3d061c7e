"""Process lifetime: reset hooks run in a forked child, and a child of a process that initialised
CUDA knows it may not use the driver."""

from __future__ import annotations

import os

import pytest

from tests._fakelibs import one_device_driver  # noqa: F401  (a fixture)
from tests.conftest import run_json

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")

_FORK = """
import json, os
from cudaload import lifetime
seen = []
lifetime.on_fork_in_child(lambda: seen.append("first"))
lifetime.on_fork_in_child(lambda: seen.append("second"))

def in_child():
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(write, json.dumps([seen, lifetime.forked()]).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as f:
        return json.loads(f.read())

before = in_child()
lifetime.mark_unforkable()
after = in_child()
print(json.dumps({"before": before, "after": after, "parent": [seen, lifetime.forked()]}))
"""


def test_fork_hooks_run_in_the_child_in_order():
    out = run_json(_FORK)
    assert out["before"] == [["first", "second"], False]  # nothing unforkable yet
    assert out["after"] == [["first", "second"], True]
    assert out["parent"] == [[], False]  # the parent runs none and is no child


_DRIVER_AFTER_FORK = """
import json, os, sys
from cudaload.bindings import driver
from cudaload import errors

def child_init():
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            driver.init()
            out = "initialised"
        except errors.ForkedProcessError:
            out = "ForkedProcessError"
        os.write(write, out.encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as f:
        return f.read()

before = child_init()  # the parent has not initialised CUDA: the child may
driver.init()
print(json.dumps([before, child_init()]))
"""


def test_a_child_may_use_cuda_unless_its_parent_initialised_it(one_device_driver):  # noqa: F811
    out = run_json(_DRIVER_AFTER_FORK, env={"CUDALOAD_LIBCUDA": one_device_driver})
    assert out == ["initialised", "ForkedProcessError"]
