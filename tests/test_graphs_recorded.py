"""Host functions on streams and in graphs, graph upload and update, against the recording driver
(it calls host functions at the next synchronisation, captured ones at each graph launch)."""

from __future__ import annotations

from tests._fakelibs import recording_driver  # noqa: F401  (fixture)
from tests._support import scenario_json


def run(recording_driver, scenario: str) -> dict:
    return scenario_json("recorded_graphs", scenario, env={"CUDALOAD_LIBCUDA": recording_driver})


def test_host_functions_run_in_stream_order_and_are_kept_alive_until_called(recording_driver):
    out = run(recording_driver, "host_functions")
    assert out["before_sync"] == [[], [0, 3]]  # three queued, none called yet, after a collection
    assert out["after_sync"] == [[0, 1, 2], [3, 0]]
    assert out["pending"] == 0  # nothing kept once called


def test_a_host_functions_exception_is_raised_by_the_next_synchronize_once(recording_driver):
    out = run(recording_driver, "host_functions")
    kind, message, notes = out["raised"]
    assert kind == "ZeroDivisionError" and message == "in a host function"
    assert "launched on stream 0x5000 of device 0" in notes[0]
    assert "1 more host functions raised after it: KeyError('second')" in notes[1]
    assert out["seen"][-1] == "after"  # the functions after it still ran
    assert out["next_sync"] is None
    assert out["device_sync"][0] == "ZeroDivisionError"  # Device.synchronize reports it too
    assert out["not_callable"][0] == "TypeError"


def test_a_graph_uploads_and_updates_in_place_and_a_refusal_says_why(recording_driver):
    out = run(recording_driver, "graphs")
    assert out["upload"] == [True, True]  # its executable, on the stream given
    assert out["replayed"] == [1, 1]  # the captured host function, once per launch
    assert out["update"] == [True, True]  # the same executable, from the other graph
    # after the update the executable runs the other capture's host function, which lives on
    # with it although that Graph object is gone
    assert out["after_update"] == [1, 1, 2]
    kind, message, _ = out["refused"]
    assert kind == "DriverError" and "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE" in message
    assert "differ in their nodes" in message
    assert out["not_graph"][0] == "TypeError"


def test_close_destroys_a_graph_and_a_stream_at_once_and_later_use_is_refused(recording_driver):
    out = run(recording_driver, "closing")
    assert out["graph_destroyed"] == ["0x9000", "0x8000"]  # the executable, then the graph
    assert out["graph_twice"] == 2  # the second close destroys nothing more
    for key in ("launch_closed", "upload_closed", "update_from_closed"):
        kind, message, _ = out[key]
        assert kind == "ValueError" and "the graph is closed" in message
    assert out["stream_destroyed"] == [True] and out["stream_twice"] == 1
    # a kernel that launched on the stream before (its fast path remembers it) refuses it now
    for key in ("kernel_on_closed", "sync_closed", "graph_on_closed"):
        kind, message, _ = out[key]
        assert kind == "ValueError" and "the stream on device 0 is closed" in message
    assert out["equal"] == [True, False, False, "<cudaload.Stream (closed) on device 0>"]
    assert out["foreign_destroys"] == 0  # a wrapped stream is let go of, never destroyed


def test_close_is_refused_while_a_capture_runs(recording_driver):
    out = run(recording_driver, "closing")
    assert out["graph_in_capture"][0] == "RuntimeError"
    kind, message, _ = out["stream_in_capture"]
    assert kind == "RuntimeError" and "is being captured" in message


def test_a_host_function_on_a_forked_stream_is_the_graphs_and_an_unjoined_fork_says_so(
        recording_driver):
    out = run(recording_driver, "forks")
    assert out["kept"] == [2, 0]  # both host functions are the graph's; none left behind
    assert out["replayed"] == ["forked", "origin"]
    kind, message, _ = out["unjoined"]
    assert kind == "DriverError" and "CUDA_ERROR_STREAM_CAPTURE_UNJOINED" in message
    assert "was not waited for in turn" in message
    assert out["after_unjoined"] == 0


def test_a_child_graph_joins_the_capture_and_runs_with_each_launch(recording_driver):
    out = run(recording_driver, "children")
    assert out["added"] == [101, "0x8000"]  # one child node, of the first graph; the stream
    # continues from it (one dependency update)
    assert out["replayed"] == ["child", "parent"]  # the child's host function, in order
    # outside a capture a child is a node, but never the graph itself
    assert out["outside"][0] == "ValueError" and "not this one" in out["outside"][1]
    assert out["itself"][0] == "ValueError"  # still being captured
    assert out["not_graph"][0] == "TypeError"
    kind, message, _ = out["old_driver"]
    assert kind == "MissingSymbolError" and "needs a CUDA 12.3 driver" in message
