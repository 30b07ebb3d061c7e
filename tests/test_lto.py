"""Link-time optimisation: ``Program(..., lto=True)`` is compiled by NVRTC to LTO IR and linked
by nvJitLink, which removes the device variables no device code both reads and writes; its cache
key names the linker's build, and a disk hit loads neither library.  Real NVRTC and nvJitLink
(the wheels), no GPU; each scenario in a fresh process (tests/scenarios/lto_compiles.py)."""

from __future__ import annotations

import os
import shutil
import sys

import pytest

from tests._support import run_json, scenario_json

UNSET = ("CUDALOAD_LIBNVRTC", "CUDALOAD_LIBNVJITLINK")


def _nvjitlink_file() -> str:
    # In a fresh process: where this one has libnvJitLink loaded already (PyTorch, CuPy), the
    # wheel is not looked for.
    path = run_json("""
        import json
        from cudaload.bindings import _sites
        print(json.dumps(_sites.library("nvjitlink")))
    """, unset=UNSET)
    assert path, "the test environment has the nvidia-nvjitlink wheel (the nvrtc extra)"
    return path


@pytest.mark.parametrize("spelled", ["keyword", "-dlto"])
def test_linked_code_keeps_only_the_variables_device_code_uses(tmp_path, spelled):
    got = scenario_json("lto_compiles", "variables", "-dlto" if spelled == "-dlto" else "",
                        env={"CUDALOAD_CACHE_DIR": str(tmp_path)}, unset=UNSET, timeout=300)
    for output in ("cubin", "ptx"):
        plain, linked = got[f"plain-{output}"], got[f"lto-{output}"]
        assert plain["kind"] == linked["kind"] == output
        # Without LTO every module holds the header's constants and the unread variable.
        assert plain["never_read"] and plain["Limits"]
        assert not linked["never_read"] and not linked["Limits"]
        assert linked["counter"] and linked["count"]  # read and written by the kernel: kept
        assert linked["size"] < plain["size"]
        assert linked["log"] == ""  # nvJitLink's progress notes are not a compile log
    assert got["lto-ptx"]["entry"]


def test_a_disk_hit_loads_neither_nvrtc_nor_nvjitlink(tmp_path):
    env = {"CUDALOAD_CACHE_DIR": str(tmp_path)}
    first = scenario_json("lto_compiles", "hit", env=env, unset=UNSET, timeout=300)
    again = scenario_json("lto_compiles", "hit", env=env, unset=UNSET, timeout=300)
    assert first["cached"] is None and first["nvjitlink"] and first["nvrtc"]
    assert again["cached"] == "disk" and again["sha"] == first["sha"]
    assert first["linked"] and first["pickled"] and again["linked"] and again["pickled"]
    assert first["plain"] is False
    assert not again["nvjitlink"] and not again["nvrtc"]


def test_another_nvjitlink_build_is_a_miss(tmp_path):
    real = _nvjitlink_file()
    other = tmp_path / "other" / os.path.basename(real)
    other.parent.mkdir()
    shutil.copyfile(real, other)
    with open(other, "ab") as f:  # the same library with other bytes at its end: another build
        f.write(b"\0" * 64)
    cache = str(tmp_path / "cache")

    def run(library):
        return scenario_json("lto_compiles", "hit", timeout=300, unset=("CUDALOAD_LIBNVRTC",),
                             env={"CUDALOAD_CACHE_DIR": cache, "CUDALOAD_LIBNVJITLINK": library})

    assert run(real)["cached"] is None
    assert run(str(other))["cached"] is None  # linked again, by the other build
    assert run(real)["cached"] == "disk"
    assert run(str(other))["cached"] == "disk"


def test_a_link_error_is_a_compile_error_with_the_linker_log(tmp_path):
    got = scenario_json("lto_compiles", "undefined", env={"CUDALOAD_CACHE_DIR": str(tmp_path)},
                        unset=UNSET, timeout=300)
    assert got["type"] == "CompileError" and got["name"] == "calls.cu"
    assert "helper" in got["log"] and "Unresolved extern function" in got["log"]
    assert "calls.cu" in got["message"] and "nvJitLink" in got["message"]
    assert "every device function it calls must be defined in it" in got["message"]
    assert got["function"] == "nvJitLinkComplete"  # the call that refused it, not NVRTC's


def test_without_nvjitlink_the_error_says_what_to_do(tmp_path):
    missing = str(tmp_path / "nowhere" / "libnvJitLink.so.13")
    got = scenario_json("lto_compiles", "missing", unset=("CUDALOAD_LIBNVRTC",), timeout=300,
                        env={"CUDALOAD_CACHE_DIR": str(tmp_path / "c"),
                             "CUDALOAD_LIBNVJITLINK": missing})
    assert got["error"]["type"] == "LibraryNotFoundError"
    assert missing in got["error"]["message"] and "CUDALOAD_LIBNVJITLINK" in got["error"]["message"]
    assert "cudaload[nvrtc]" in got["error"]["hint"] and "lto=True" in got["error"]["hint"]
    assert got["plain"] == "cubin"  # only linking needs nvJitLink


def test_compile_all_links_in_its_workers(tmp_path):
    got = scenario_json("lto_compiles", "family", 2, env={"CUDALOAD_CACHE_DIR": str(tmp_path)},
                        unset=UNSET, timeout=300)
    assert [o["kernel"] for o in got] == [True] * 3
    assert [o["never_read"] for o in got] == [False] * 3
    assert [o["linked"] for o in got] == [True] * 3
    assert [o["again"] for o in got] == [["memory", True]] * 3


def test_the_linked_flag_is_kept_in_the_entry_and_checked():
    import json

    from cudaload.compile import objectcode as _entry
    from cudaload.compile.objectcode import ObjectCode

    key = "ab" * 32
    plain = ObjectCode(b"\x7fELF" + bytes(60), "cubin", "sm_90")
    linked = ObjectCode(b"\x7fELF" + bytes(60), "cubin", "sm_90", linked=True)
    assert _entry.decode(_entry.encode(linked, key), key).linked is True
    assert _entry.decode(_entry.encode(plain, key), key).linked is False
    assert b"linked" not in _entry.encode(plain, key)  # other entries are as before
    # An entry whose flag is not a bool is not what this version writes: a miss.
    from cudaload.compile._prepare import sha256

    def forged(flag):
        meta = json.dumps({"arch": "sm_90", "kind": "cubin", "linked": flag, "log": "",
                           "lowered_names": {}}, sort_keys=True).encode()
        tag = bytes.fromhex(key)
        return _entry.HEADER.pack(_entry.MAGIC, _entry.FORMAT, len(meta), len(linked.code), tag,
                                  sha256(tag + meta + linked.code).digest()) + meta + linked.code

    assert forged(True) == _entry.encode(linked, key)
    assert _entry.decode(forged(False), key).linked is False
    assert _entry.decode(forged(1), key) is None and _entry.decode(forged("yes"), key) is None


# CUB's block reduction compiled to LTO IR first, then linked in the main thread while another
# thread watches the main thread's blocked signals and, once SIGINT is among them, sends it.
_HELD_DURING_THE_LINK = r"""
import json
from cudaload.bindings import nvjitlink, nvrtc
from cudaload.compile import toolchain
from tests import _sigint_watch as watched
options = ["-arch=sm_90", "-dlto", *toolchain.current().include_options]
ir = nvrtc.compile(watched.CUB, "cub.cu", options, kind="ltoir").code
def links():
    for _ in range(20):  # until the watcher sees one: a link takes some 10-100 ms
        nvjitlink.link(ir, "cub.cu", "sm_90")
print(json.dumps(watched.interrupted(links)))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_during_a_link_waits_for_nvjitlink_and_raises_keyboard_interrupt():
    """nvJitLink runs the same LLVM as NVRTC, whose early SIGINT ended a process with no
    KeyboardInterrupt (tests/test_nvrtc.py), but its link was not held off SIGINT.  Now it is,
    as a compilation is: KeyboardInterrupt once the link returns, and SIGINT unblocked again."""
    before, seen_held, interrupted, after = run_json(_HELD_DURING_THE_LINK, unset=UNSET,
                                                     timeout=300)
    assert before is False and seen_held is True
    assert interrupted is True and after is False
