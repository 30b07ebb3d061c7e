"""Graphs built node by node and conditional nodes against the graph-building recording driver
(tests/_fake_graphs.py: each call logged with its arguments), and conditional nodes asked of the
real libcuda 535 (CUDA 12.2), which has none."""

from __future__ import annotations

from tests._fake_graphs import graph_driver  # noqa: F401  (fixture)
from tests._support import scenario_json


def run(driver: str, scenario: str) -> dict:
    return scenario_json("recorded_graph_nodes", scenario, env={"CUDALOAD_LIBCUDA": driver})


def refused(out: dict, expected: dict) -> None:
    """Each key of ``expected`` names what the scenario saw raised: (type name, words of it)."""
    for key, (kind, words) in expected.items():
        assert out[key][0] == kind and words in out[key][1], (key, out[key])


def test_nodes_are_added_after_their_dependencies_with_the_arguments_a_launch_packs(graph_driver):
    out = run(graph_driver, "explicit")
    buf, other, event = out["ptrs"]
    log = out["log"]
    assert log[0] == "cuGraphCreate 8000"
    assert log[1] == (f"cuGraphAddMemsetNode 8000 70010 deps= dst={buf} value=7 element=1 "
                      "width=64 height=1 ctx=1000")  # all of the buffer, in device 0's context
    # the pointer and the int packed as a call packs them: 8 bytes, then 4 (layout (0,8),(8,4))
    ptr = int(buf, 16).to_bytes(8, "little").hex()
    assert log[2] == ("cuGraphAddKernelNode 8000 70020 deps=70010 func=4000 grid=2,1,1 "
                      f"block=32,1,1 smem=0 args={ptr}05000000")
    assert log[3] == (f"cuGraphAddMemcpyNode 8000 70030 deps=70020 src=4:{buf} dst=4:{other} "
                      "bytes=64x1x1 pitch=64,64 rows=1,1 ctx=1000")  # unified addresses, one row
    assert log[4] == "cuGraphAddEmptyNode 8000 70040 deps=70010,70030 event=0"
    assert log[5] == f"cuGraphAddEventRecordNode 8000 70050 deps=70040 event={event}"
    assert log[6] == f"cuGraphAddEventWaitNode 8000 70060 deps= event={event}"
    assert out["nodes"][:5] == ["memset", "kernel", "memcpy", "empty", "graph"]
    assert out["children"] == [100, "0x8010"]  # a child node of the second graph, no capture


def test_a_kernel_node_update_changes_the_executable_without_instantiating_again(graph_driver):
    out = run(graph_driver, "explicit")
    buf, other, _ = out["ptrs"]
    log = out["log"][9:]
    ptr, moved = (int(p, 16).to_bytes(8, "little").hex() for p in (buf, other))
    # before the first launch only the graph's node changes
    assert log[0] == ("cuGraphKernelNodeSetParams 0 70020 func=4000 grid=2,1,1 block=32,1,1 "
                      f"smem=0 args={moved}06000000")
    # after it, the executable (0x9000, instantiated once) too; what is left out stays
    assert log[1:3] == [f"{name} {where} 70020 func=4000 grid=2,1,1 block=32,1,1 smem=0 "
                        f"args={ptr}09000000"
                        for name, where in (("cuGraphKernelNodeSetParams", 0),
                                            ("cuGraphExecKernelNodeSetParams", 9000))]
    assert log[3].endswith("grid=4,2,1 block=32,1,1 smem=1024 args=" + ptr + "09000000")
    assert log[4].startswith("cuGraphExecKernelNodeSetParams 9000 70020")
    assert len(log) == 5
    kind, message, _ = out["bad_update"]
    assert kind == "LaunchArgumentError" and "argument 0 (int* x) of k" in message


def test_bad_nodes_are_refused_with_the_errors_of_a_kernel_call(graph_driver):
    out = run(graph_driver, "explicit")
    expected = {
        "after_instantiate": ("RuntimeError", "the graph is instantiated"),
        "count": ("LaunchArgumentError", "k takes 2 arguments, 1 given"),
        "kind": ("LaunchArgumentError", "argument 1 (int n) of k"),
        "not_tuple": ("TypeError", "the kernel arguments are a tuple, not list"),
        "not_kernel": ("TypeError", "add_kernel takes a cudaload Kernel"),
        "too_big_grid": ("ValueError", "exceeds device 0's limits"),
        "other_graph": ("ValueError", "a node can only follow nodes of its own graph"),
        "not_node": ("TypeError", "after takes graph nodes, not int"),
        "byte": ("ValueError", "0..255"),
        "address_only": ("ValueError", "needs nbytes"),
        "past_end": ("ValueError", "128 bytes do not fit the dst, which has 64"),
        "not_event": ("TypeError", "takes a cudaload Event"),
        "itself": ("ValueError", "not this one"),
        "closed": ("ValueError", "the graph is closed"),
    }
    refused(out, expected)


def test_conditional_nodes_get_bodies_to_build_or_capture_into(graph_driver):
    out = run(graph_driver, "conditionals")
    log = out["log"]
    assert log[1] == "cuGraphConditionalHandleCreate 8000 ctx=1000 default=1 flags=1 -> c0001"
    assert out["handle"] == [0xc0001, "<cudaload.ConditionalHandle 0xc0001>"]
    # a while node (type 1) with one body, 0x8010, where the kernel node goes
    assert log[2] == ("cuGraphAddNode 8000 70010 deps= conditional type=1 size=1 handle=c0001 "
                      "ctx=1000 body=8010")
    ptr = log[3].split("args=")[1][:16]
    assert log[3].startswith("cuGraphAddKernelNode 8010 70020 deps= ")
    assert log[3].endswith(f"args={ptr}01000c0000000000")  # the handle, as unsigned long long
    assert log[4] == ("cuGraphAddNode 8000 70030 deps=70010 conditional type=0 size=2 "
                      "handle=c0001 ctx=1000 body=8020")  # if/else: two bodies
    assert log[5] == "cuStreamBeginCaptureToGraph 5000 8030 deps= mode=1"  # into the else body
    assert out["into"] is True
    # a handle without a default is not reset at each launch (flags 0)
    assert log[6] == "cuGraphConditionalHandleCreate 8000 ctx=1000 default=0 flags=0 -> c0002"
    assert log[7].startswith("cuGraphAddNode 8000 70040 deps= conditional type=2 size=3 ")
    assert out["kinds"] == ["while", "if/else", "switch", 2, 3]
    # a handle packs where only the parameter's size is known too, as the int it is
    assert out["raw"] is None
    assert log[-1] == ("cuGraphAddKernelNode 8010 70050 deps= func=4000 grid=1,1,1 block=1,1,1 "
                       "smem=0 args=01000c0000000000")


def test_conditional_misuse_is_refused(graph_driver):
    out = run(graph_driver, "conditionals")
    expected = {
        "body_after_outer": ("ValueError", "a conditional node's body is a graph of its own"),
        "body_launch": ("ValueError", "launched with its graph"),
        "body_close": ("ValueError", "closed with its graph"),
        "not_handle": ("TypeError", "takes the ConditionalHandle"),
        "other_handle": ("ValueError", "made for another graph"),
        "default": ("ValueError", "0..2**32-1"),
        "switch_count": ("ValueError", "the switch's body count = 0"),
    }
    refused(out, expected)


def test_a_driver_before_each_release_is_refused_naming_it(graph_driver):
    out = run(graph_driver, "conditionals")
    for key, version, needed in (("old_if", "12.2", "12.3"), ("old_handle", "12.2", "12.3"),
                                 ("old_capture_into", "12.2", "12.3"),
                                 ("old_switch", "12.4", "12.8"), ("old_else", "12.4", "12.8")):
        kind, message, _ = out[key]
        assert kind == "MissingSymbolError", (key, message)
        assert f"(CUDA {version})" in message and f"needs a CUDA {needed} driver" in message
    assert out["while_on_12_4"] == "while"


def test_the_real_driver_535_has_no_conditional_nodes_and_says_which_release_does(libcuda_535):
    out = run(libcuda_535, "driver_535")
    assert out["version"] == 12020
    kind, message, _ = out["while"]
    assert kind == "MissingSymbolError"
    assert "(CUDA 12.2) has no while conditional nodes" in message
    assert "needs a CUDA 12.3 driver or newer" in message
    # claiming 12.8 does not get past the library, which lacks the entry points
    for key, symbol in (("claimed", "cuGraphConditionalHandleCreate"),
                        ("add_node", "cuGraphAddNode_v2")):
        kind, message, _ = out[key]
        assert kind == "MissingSymbolError" and f"lacks {symbol}" in message
        assert "one of CUDA 12.3 or newer" in message
    assert out["graph"][0] == "DriverUnavailableError"


def test_a_failed_capture_into_a_body_leaves_its_graph_refused_and_never_destroyed(graph_driver):
    out = run(graph_driver, "failed_capture")
    assert out["capture"][0] == "DriverError" and "STREAM_CAPTURE_UNJOINED" in out["capture"][1]
    # the driver may have freed the body with the failed capture: destroying the graph, which
    # owns the body's node, would free it again, so the graph is never used or destroyed
    refused(out, {key: ("ValueError", "a capture into this graph") for key in
                  ("launch", "body_add", "child")})
    assert out["root_destroyed"] is False and out["body_destroyed"] is False


def test_a_graph_collected_while_a_capture_records_is_destroyed_after_it(graph_driver):
    out = run(graph_driver, "failed_capture")
    # destroying an executable inside a capture would invalidate it (not in relaxed mode)
    assert out["destroyed_in_capture"] is False
    assert out["destroyed_after"] is True


def test_memory_and_streams_collected_while_a_capture_records_are_released_after_it(graph_driver):
    # cuMemFree and cuStreamDestroy are calls a capture forbids its thread (not in relaxed
    # mode): a buffer held by an earlier graph's cycle, freed by the collector inside a capture
    # block, invalidated the capture (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED on an H100).
    out = run(graph_driver, "collected_in_capture")
    assert out["inside"] == {"freed": 0, "stream": False,
                             "free_node": ["cuMemAllocAsync", "cuMemFreeAsync"]}
    assert out["after"] == {"freed": 1, "stream": True}
