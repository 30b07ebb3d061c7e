"""One device per process: a process that uses device 1 makes no context on device 0 (the
context-counting driver of tests/_fakelibs.py counts them per device), and
``cudaload.device_for_rank`` picks the device from the launcher's variables."""

from __future__ import annotations

import pytest

from cudaload.launch import rank
from tests._fakelibs import context_counting_driver  # noqa: F401  (fixture)
from tests._support import scenario_json

NO_CONTEXT = {"retained": [0, 0], "bound": [0, 0]}


def run(driver: str, scenario: str, **env) -> dict:
    unset = rank.RANK_VARIABLES  # the test's own launcher, if any, must not choose
    return scenario_json("rank_devices", scenario, unset=unset,
                         env={"CUDALOAD_LIBCUDA": driver, **env})


def test_a_process_using_device_one_never_makes_a_context_on_device_zero(
        context_counting_driver):
    out = run(context_counting_driver, "with_device_one")
    assert out["arch_before"] == "sm_90" and out["before"] == NO_CONTEXT
    assert out["inside"] == [1, 1, 1]
    assert out["after"] == 0 and out["arch_after"] == "sm_90" and out["available"] is True
    # device 1's primary context retained once; device 0 never retained nor made current, also
    # when the block ended and restored device 0 as the thread's device
    assert out["contexts"]["retained"] == [0, 1], out["contexts"]
    assert out["contexts"]["bound"][0] == 0, out["contexts"]
    assert out["active"] == [0, 1]


@pytest.mark.parametrize("variable, value, device", [
    ("LOCAL_RANK", "3", 1), ("OMPI_COMM_WORLD_LOCAL_RANK", "5", 1), ("SLURM_LOCALID", "2", 0),
    ("MPI_LOCALRANKID", "1", 1), (None, None, 0)])
def test_device_for_rank_takes_the_launchers_rank_modulo_the_devices_and_threads_follow(
        context_counting_driver, variable, value, device):
    env = {variable: value} if variable else {}
    out = run(context_counting_driver, "rank_from_environment", **env)
    assert out["ordinal"] == device
    assert out["main"] == [device] * 3 and out["thread"] == [device] * 3  # a new thread too
    other = 1 - device
    assert out["contexts"]["retained"][other] == 0 and out["contexts"]["bound"][other] == 0
    assert out["contexts"]["retained"][device] == 1
    assert out["active"][other] == 0 and out["active"][device] == 1


def test_a_rank_that_is_no_rank_is_a_typed_error_naming_the_variable(context_counting_driver):
    out = run(context_counting_driver, "bad_ranks")
    for key in ("env 'x'", "env '-1'", "env ''", "env ' '", "env '1.0'", "env '²'"):
        kind, is_ours, message, variable = out[key]
        assert kind == "RankError" and is_ours and variable == "LOCAL_RANK", (key, out[key])
        assert "LOCAL_RANK=" in message and "whole number of 0 or more" in message
        assert "Next step: set LOCAL_RANK" in message
    for key in ("arg -1", "arg 'two'", "arg 1.5", "arg True"):
        kind, is_ours, message, variable = out[key]
        assert kind == "RankError" and is_ours and variable is None, (key, out[key])
        assert "local_rank=" in message
    assert out["contexts"] == NO_CONTEXT  # refused before any device was touched


def test_the_first_launcher_variable_set_wins_in_the_documented_order():
    assert rank.rank_from_environment({}) == (0, None)
    assert rank.rank_from_environment({"SLURM_LOCALID": "4", "LOCAL_RANK": "2"}) == \
        (2, "LOCAL_RANK")
    assert rank.rank_from_environment({"SLURM_LOCALID": "4", "OMPI_COMM_WORLD_LOCAL_RANK": " 7 "}) \
        == (7, "OMPI_COMM_WORLD_LOCAL_RANK")
    with pytest.raises(rank.RankError, match="SLURM_LOCALID='a'"):
        rank.rank_from_environment({"SLURM_LOCALID": "a"})
