"""Process lifetime: reset hooks run in a forked child, and a child of a process that initialised
CUDA knows it may not use the driver."""

from __future__ import annotations

import os

import pytest

from tests._fakelibs import one_device_driver  # noqa: F401  (a fixture)
from tests._support import scenario_json

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")

def test_fork_hooks_run_in_the_child_in_order():
    out = scenario_json("fork_children", "hooks")
    assert out["before"] == [["first", "second"], False]  # nothing unforkable yet
    assert out["after"] == [["first", "second"], True]
    assert out["parent"] == [[], False]  # the parent runs none and is no child


def test_a_child_may_use_cuda_unless_its_parent_initialised_it(one_device_driver):  # noqa: F811
    out = scenario_json("fork_children", "driver_after_fork",
                        env={"CUDALOAD_LIBCUDA": one_device_driver})
    assert out == ["initialised", "ForkedProcessError"]
