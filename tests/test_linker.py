"""cudaload.Linker and the forms of device code it links: LTO IR as a Program output, PTX as a
Program input, relocatable CUBINs, libraries (libcudadevrt.a).  Real NVRTC and nvJitLink from the
wheels, no GPU; each scenario in a fresh process (tests/scenarios/link_forms.py).  The driver's
linker, the fallback, is tested against the recording driver (tests/scenarios/recorded_links.py):
it links only in a context, on a GPU (tests/gpu/test_linker.py)."""

from __future__ import annotations

import os
import pickle
import shutil

import pytest

import cudaload
from tests._fakelibs import recording_driver  # noqa: F401  (fixture)
from tests._support import run_json, scenario_json

UNSET = ("CUDALOAD_LIBNVRTC", "CUDALOAD_LIBNVJITLINK")
IR = b"\xedCN\x7f" + bytes(60)  # an NVVM container's first bytes: LTO IR as from_bytes sees it


def _forms(cache_dir, **kw):
    return scenario_json("link_forms", *kw.pop("args", ("forms",)), timeout=300, unset=UNSET,
                         env={"CUDALOAD_CACHE_DIR": str(cache_dir), **kw.pop("env", {})})


def test_every_form_compiles_links_and_a_second_process_finds_it_on_disk(tmp_path):
    first, again = _forms(tmp_path), _forms(tmp_path)
    assert [o["kind"] for o in first["ir"]] == ["ltoir"] * 3
    assert [o["name"] for o in first["ir"]] == ["a.cu", "b.cu", "c.cu"]
    assert first["linked"]["kind"] == "cubin" and first["linked"]["name"] == "a.cu+b.cu+c.cu"
    assert first["linked_ptx"]["kind"] == "ptx" and first["ptx_entry"]
    assert not first["ptx_calls_out"]  # LTO resolved b() and c() inside the one module
    assert first["rdc"]["kind"] == "cubin" and first["rdc_has"] == [True, True, True]
    assert first["from_ptx"] == {**first["from_ptx"], "kind": "cubin", "arch": "sm_90",
                                 "name": "fill.ptx"}
    # The info log is nvJitLink's own text (empty from some releases): kept as a str either way.
    assert first["linker"] == "nvJitLink" and isinstance(first["info_log"], str)
    assert first["pickled"] == ["ltoir", "a.cu", "sm_90", True]
    assert first["nvrtc"] and first["nvjitlink"]
    for form in ("linked", "linked_ptx", "rdc", "from_ptx"):
        assert first[form]["cached"] is None, form
        assert again[form]["cached"] == "disk" and again[form]["sha"] == first[form]["sha"], form
    assert [o["cached"] for o in again["ir"] + again["cubins"]] == ["disk"] * 6
    assert again["info_log"] == first["info_log"]  # the log is kept with the linked code
    # Everything on disk: neither NVRTC nor nvJitLink is loaded (nvJitLink is known by its file).
    assert not again["nvrtc"] and not again["nvjitlink"]


def test_a_broken_link_entry_is_a_miss(tmp_path):
    first = _forms(tmp_path)
    entries = [os.path.join(d, f) for d, _s, files in os.walk(tmp_path) for f in files
               if f.endswith(".bin")]
    assert entries
    for path in entries:
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) // 2)
    again = _forms(tmp_path)
    assert again["linked"]["cached"] is None and again["linked"]["sha"] == first["linked"]["sha"]
    assert again["rdc"]["cached"] is None and again["from_ptx"]["cached"] is None


def test_the_link_key_covers_every_input_option_arch_and_output(tmp_path):
    got = _forms(tmp_path, args=("keys",))
    assert got["same"] == ["memory", True]
    for changed in ("input", "option", "arch", "output"):
        assert got[changed] == [None, False], changed


def test_a_link_is_keyed_as_the_entries_already_on_disk_were():
    # Keys recorded for fixed inputs: a change to how a link is keyed would make every link
    # cached so far a miss (only a new cache FORMAT may change them: record them again then).
    from cudaload.compile import request
    from cudaload.compile.options import parse_arch

    parts = ("link", "cubin", "sm_90", "True", "-O3", "inputs", "ltoir", "a.ltoir",
             b"\x7fIR\x00bytes", "cubin", "", b"\x7fELF")
    link = request.link(parts, ("-O3",), True, parse_arch("sm_90"), "cubin")
    assert request.link_key(link, "nvJitLink 12080 abc") == (
        "bce70b5d544dc90fcacf730a586202be6ef1abf4acbc65778a4270d5bcca089b")
    assert request.link_key(link, "driver 12020") == (
        "92978e33a4683e97b4bcdda64a6e16644c679878af4de56c79aa7b10913ac7c7")
    assert link.memory_key == (bytes.fromhex(
        "003e8a3875e174b3ff50ec5131d9810de863829372899b38611673290b0b03f0"), "link")


def test_another_nvjitlink_build_links_again(tmp_path):
    real = run_json("""
        import json
        from cudaload.bindings import _sites
        print(json.dumps(_sites.library("nvjitlink")))
    """, unset=UNSET)
    other = tmp_path / "other" / os.path.basename(real)
    other.parent.mkdir()
    shutil.copyfile(real, other)
    with open(other, "ab") as f:  # the same library with other bytes at its end: another build
        f.write(b"\0" * 64)
    cache = tmp_path / "cache"
    assert _forms(cache)["linked"]["cached"] is None
    moved = _forms(cache, env={"CUDALOAD_LIBNVJITLINK": str(other)})
    assert moved["linked"]["cached"] is None and moved["rdc"]["cached"] is None
    assert moved["from_ptx"]["cached"] is None  # a PTX program's link: keyed by the linker too
    assert moved["ir"][0]["cached"] == "disk"  # NVRTC's LTO IR is not the linker's
    assert _forms(cache)["linked"]["cached"] == "disk"


@pytest.mark.parametrize("form, words", [("cubin", "Undefined reference"),
                                         ("ltoir", "Unresolved extern function")])
def test_a_link_error_is_typed_with_the_log_and_names_the_undefined_symbol(tmp_path, form,
                                                                           words):
    got = _forms(tmp_path, args=("undefined", form))
    assert got["type"] == "LinkError" and got["runtime"] and got["linker"] == "nvJitLink"
    assert got["symbol"] == "_Z1ci"  # c(int), defined by the program left out
    assert words in got["log"] and got["error_log"] == got["log"]
    assert "a.cu+b.cu" in got["message"] and "c(int) (mangled _Z1ci) is not defined in any " \
        "input" in got["message"] and "Next step: add the code that defines c(int)" in \
        got["message"]


@pytest.mark.parametrize("form", ["cubin", "ltoir"])
def test_an_undefined_symbol_is_named_as_declared_and_as_mangled(tmp_path, form):
    got = _forms(tmp_path, args=("undeclared", form))
    assert got["symbol"] == "_Z3fooi"  # as the log names it
    assert "foo(int) (mangled _Z3fooi) is not defined in any input" in got["message"]
    assert got["hint"].startswith("add the code that defines foo(int) (compiled")


def test_a_link_keeps_device_variables_unless_asked_to_drop_the_unused(tmp_path):
    got = _forms(tmp_path, args=("variables",))
    # the module without them refuses the host its variables, as Program(lto=True)'s does
    assert got == {"kept": True, "dropped": False, "linked": [False, True]}


def test_damaged_inputs_of_every_kind_are_link_errors_that_name_them(tmp_path):
    got = _forms(tmp_path, args=("damaged",))
    assert set(got) == {"cubin", "ltoir", "library", "fatbin", "ptx"}
    for kind, (error, result, named) in got.items():
        assert error == "LinkError" and result.startswith("NVJITLINK_ERROR_") and named, kind


def test_an_option_nvjitlink_refuses_is_a_link_error_that_names_it(tmp_path):
    got = _forms(tmp_path, args=("refused_option",))
    assert got["type"] == "LinkError" and got["result"] == "NVJITLINK_ERROR_UNRECOGNIZED_OPTION"
    assert "-device-stack-protector=maybe" in got["message"]
    assert got["hint"].startswith("fix or remove the option")


@pytest.mark.parametrize("arch, result, does", [
    ("99", "NVJITLINK_ERROR_UNRECOGNIZED_ARCH", "does not know the arch sm_99"),
    ("sm_52", "NVJITLINK_ERROR_UNSUPPORTED_ARCH", "does not support the arch sm_52")])
def test_an_arch_nvjitlink_refuses_is_a_link_error_naming_it_its_release_and_the_next_step(
        tmp_path, arch, result, does):
    # no driver, so that nvJitLink's refusal is the answer on a GPU machine too
    got = _forms(tmp_path, args=("refused_arch", arch),
                 env={"CUDALOAD_LIBCUDA": str(tmp_path / "no-libcuda.so.1")})
    release = "nvJitLink {}.{}".format(*got["release"])
    assert got["type"] == "LinkError" and got["linker"] == "nvJitLink"
    assert got["result"] == result and f"{release} {does}" in got["message"]
    assert "architecture (compute_" in got["log"] and got["kept"] == got["log"]  # its error log
    # No GPU here: the driver's linker was asked, and the message says why it could not link.
    assert "The driver's linker cannot link instead" in got["message"]
    assert got["cause"] in ("CudaUnavailableError", "DriverNotFoundError")
    if result.endswith("UNRECOGNIZED_ARCH"):
        assert got["hint"].startswith("install a newer nvJitLink that knows sm_99 (pip install "
                                      "-U nvidia-nvjitlink), or link for an arch " + release)
    else:
        assert got["hint"].startswith("link for sm_52 with an nvJitLink of an older CUDA")


def test_a_hit_reports_the_linker_that_made_it_and_an_entry_without_that_record_is_a_miss(
        tmp_path):
    got = _forms(tmp_path, args=("hits",))
    assert got["first"] == [None, "nvJitLink"]
    assert got["memory"] == ["memory", "nvJitLink"] and got["disk"] == ["disk", "nvJitLink"]
    assert got["rewritten"]  # the link's entry, the compile's left as it was
    assert got["unrecorded"] == [None, "nvJitLink"]  # linked again, and written over:
    assert got["written_over"] == ["disk", "nvJitLink"]


def test_split_compile_0_one_thread_per_cpu_is_taken_by_nvjitlink_and_nvrtc(tmp_path):
    got = _forms(tmp_path, args=("split_compile",))
    assert got == {"compiled": "cubin", "linked": ["cubin", "sm_90"], "linker": "nvJitLink"}


@pytest.mark.parametrize("option", ["-split-compile=-1", "--split-compile=two",
                                    "-split-compile=1.5", "-split-compile="])
def test_nvrtc_s_split_compile_is_checked_as_the_link_option_is(option):
    with pytest.raises(ValueError, match="options\\[0\\]: .*-split-compile takes a count of "
                       "threads: 1 or more, or 0 for one per CPU"):
        cudaload.Program("__global__ void k() {}", options=(option,))
    for taken in ("-split-compile=0", "--split-compile=4"):
        assert cudaload.Program("__global__ void k() {}", options=(taken,)).options[-1] == taken


def test_a_kernel_that_launches_kernels_links_with_libcudadevrt(tmp_path):
    try:
        library = cudaload.Linker.cudadevrt()
    except cudaload.LibraryNotFoundError as err:
        pytest.skip(f"no libcudadevrt.a here: {err}")
    got = _forms(tmp_path, args=("dynamic", library))
    assert got["missing"].startswith("__cudaCDP2")  # the device runtime's launch entry point
    assert got["name"] == "dynamic.cu+libcudadevrt.a" and got["kind"] == "cubin"
    assert got["kernels"] == [True, True] and got["bigger"]


def test_lto_ir_is_bundled_and_compile_all_makes_every_form(tmp_path):
    got = _forms(tmp_path, args=("precompiled", tmp_path / "ir.bundle"))
    assert got["entries"] == [["a.cu", "ltoir", "sm_90"], ["b.cu", "ltoir", "sm_90"],
                              ["c.cu", "ltoir", "sm_90"]]
    assert got["found"] == [["bundle", "ltoir"]] * 3
    assert got["mixed"] == [["cubin", "fill.ptx"], ["cubin", "fill.cu"]]
    assert got["linked"] == "cubin"


# ---- the driver's linker, recorded --------------------------------------------------------------

def _recorded(recording_driver, cache_dir, *args, nvjitlink=False):
    """The scenario's findings; without nvJitLink unless ``nvjitlink`` (then the wheel's)."""
    missing = {} if nvjitlink else {
        "CUDALOAD_LIBNVJITLINK": str(cache_dir / "no" / "libnvJitLink.so")}
    return scenario_json("recorded_links", *args, timeout=300, unset=UNSET,
                         env={"CUDALOAD_LIBCUDA": recording_driver,
                              "CUDALOAD_CACHE_DIR": str(cache_dir), **missing})


def test_without_nvjitlink_the_driver_links_in_the_device_context(recording_driver, tmp_path):
    got = _recorded(recording_driver, tmp_path, "fallback")
    assert got["linker"] == "driver" and got["kind"] == "cubin" and got["arch"] == "sm_90"
    assert got["names"] == ["caller.cu", "helper.cu", "libdevrt.a"]
    assert got["types"] == [0, 1, 4]  # CU_JIT_INPUT_CUBIN, _PTX, _LIBRARY
    # CU_JIT_TARGET 90; -lineinfo, -O3, -maxrregcount=32, -ftz=true, -split-compile=0 (one
    # thread per CPU) as CU_JIT options; the two log buffers' sizes
    assert got["options"] == {"9": 90, "13": 1, "7": 3, "0": 32, "21": 1, "34": 0, "4": 65536,
                              "6": 65536}
    assert got["context"] == 0x1000  # device 0's primary context, made current for the link
    assert got["destroyed"] == 1 and got["calls"] == 1
    assert got["info_log"] == "linked by the recording driver" and got["error_log"] == ""
    assert got["tail"] == "caller.cu;helper.cu;libdevrt.a;"  # the driver's image, as it gave it
    again = _recorded(recording_driver, tmp_path, "fallback")
    assert again["cached"] == "disk" and again["calls"] == 0  # keyed by the driver's version


def test_a_link_the_driver_fails_is_a_link_error_with_its_log(recording_driver, tmp_path):
    got = _recorded(recording_driver, tmp_path, "undefined")
    assert got["type"] == "LinkError" and got["linker"] == "driver"
    assert got["symbol"] == "_Z6helperv" and "Undefined reference" in got["log"]
    assert got["kept"] == got["log"] and got["pickled"] == [got["symbol"], got["log"]]
    assert "driver could not link caller.cu+undefined" in got["message"]
    assert "helper() (mangled _Z6helperv) is not defined in any input" in got["message"]
    assert got["hint"].startswith("add the code that defines helper() (compiled")
    assert got["destroyed"] == 1  # the link state is destroyed after a failure too


def test_an_arch_nvjitlink_refuses_is_linked_by_the_driver_which_a_hit_reports(
        recording_driver, tmp_path):
    got = _recorded(recording_driver, tmp_path, "refused_arch", "sm_52", nvjitlink=True)
    assert got["linker"] == "driver" and got["arch"] == "sm_52" and got["cached"] is None
    assert got["options"]["9"] == 52 and got["calls"] == 1  # CU_JIT_TARGET 52
    assert got["names"] == ["caller.cu", "helper.cu"]
    again = _recorded(recording_driver, tmp_path, "refused_arch", "sm_52", nvjitlink=True)
    assert again["linker"] == "driver" and again["cached"] == "disk" and again["calls"] == 0


def test_an_arch_neither_linker_knows_is_a_link_error_naming_both(recording_driver, tmp_path):
    got = _recorded(recording_driver, tmp_path, "refused_arch", "99", nvjitlink=True)
    error = got["error"]
    assert got["calls"] == 1 and got["options"]["9"] == 99  # the driver was asked
    assert error["linker"] == "driver" == got["linker"]
    assert error["result"] == "CUDA_ERROR_INVALID_VALUE"
    assert "driver could not link caller.cu+helper.cu (cuLinkCreate failed: " \
        "CUDA_ERROR_INVALID_VALUE" in error["message"] and "CU_JIT_TARGET=99" in error["message"]
    assert "\nBefore it, nvJitLink could not link caller.cu+helper.cu (NVJITLINK_ERROR_" \
        "UNRECOGNIZED_ARCH (16): nvJitLink " in error["message"]
    assert "does not know the arch sm_99" in error["message"]
    assert error["hint"].startswith("install a newer nvJitLink that knows sm_99")


@pytest.mark.parametrize("what, why", [("ltoir", "links no LTO IR"),
                                       ("option", "no form of the link option '-Xptxas=-v'")])
def test_what_the_driver_cannot_link_raises_the_missing_nvjitlink(recording_driver, tmp_path,
                                                                  what, why):
    got = _recorded(recording_driver, tmp_path, "cannot", what)
    assert got["error"]["type"] == "LibraryNotFoundError" and got["calls"] == 0
    assert "libnvJitLink" in got["error"]["message"] and why in got["error"]["message"]
    assert "cudaload[nvrtc]" in got["error"]["message"]


def test_backend_nvjitlink_alone_raises_its_refusal_and_never_calls_the_driver(
        recording_driver, tmp_path):
    got = _recorded(recording_driver, tmp_path, "only", "nvjitlink", "sm_52", nvjitlink=True)
    assert got["error"]["type"] == "LinkError" and got["calls"] == 0  # no cuLink* fallback
    assert got["error"]["result"] == "NVJITLINK_ERROR_UNSUPPORTED_ARCH"
    assert "driver" not in got["error"]["message"] and got["linker"] == "nvJitLink"
    missing = _recorded(recording_driver, tmp_path, "only", "nvjitlink", "sm_90")
    assert missing["error"]["type"] == "LibraryNotFoundError" and missing["calls"] == 0


def test_backend_driver_alone_links_by_culink_without_loading_nvjitlink(recording_driver,
                                                                        tmp_path):
    got = _recorded(recording_driver, tmp_path, "only", "driver", "sm_90", nvjitlink=True)
    assert got["error"] is None and got["linker"] == "driver" and got["calls"] == 1
    assert got["options"]["9"] == 90 and got["names"] == ["caller.cu", "helper.cu"]
    assert got["nvjitlink"] is False  # not loaded, though the wheel is there


@pytest.mark.parametrize("libcuda", ["missing", "no device"])
def test_backend_driver_without_a_gpu_is_cuda_unavailable(tmp_path, libcuda):
    if libcuda == "missing":
        path = str(tmp_path / "no" / "libcuda.so.1")
    else:  # a real driver on a machine without a GPU: cuInit answers CUDA_ERROR_NO_DEVICE
        path = os.environ.get("CUDALOAD_TEST_LIBCUDA") or pytest.skip(
            "CUDALOAD_TEST_LIBCUDA names no real libcuda")
    got = scenario_json("recorded_links", "only", "driver", "sm_90", timeout=300, unset=UNSET,
                        env={"CUDALOAD_LIBCUDA": path, "CUDALOAD_CACHE_DIR": str(tmp_path)})
    assert got["error"]["unavailable"] and got["nvjitlink"] is False
    assert got["linker"] is None and "nvJitLink" not in got["error"]["message"]


def test_a_hit_serves_a_backend_only_its_own_linker_s_code(recording_driver, tmp_path):
    got = _recorded(recording_driver, tmp_path, "honoured", "driver", "nvjitlink", "driver",
                    "none", nvjitlink=True)
    # [linker, cached, the driver's links so far] of each link in turn
    assert got == [["driver", None, 1], ["nvJitLink", None, 1], ["driver", "disk", 1],
                   ["driver", "memory", 1]]
    again = _recorded(recording_driver, tmp_path, "honoured", "nvjitlink", "driver", "none",
                      nvjitlink=True)
    assert again == [["nvJitLink", "disk", 0], ["driver", "disk", 0], ["driver", "memory", 0]]


# ---- refusals, without any CUDA library ---------------------------------------------------------

def test_code_the_driver_cannot_load_is_refused_before_it(tmp_path):
    ir = cudaload.ObjectCode.from_bytes(IR, "ltoir", name="a.cu")
    assert ir.arch is None and ir.name == "a.cu" and pickle.loads(pickle.dumps(ir)).name == "a.cu"
    with pytest.raises(ValueError, match="cudaload.Linker"):
        ir.load()
    path = tmp_path / "libdev.a"
    path.write_bytes(b"!<arch>\n")
    library = cudaload.ObjectCode.from_file(path)
    assert (library.kind, library.name) == ("library", "libdev.a")
    with pytest.raises(ValueError, match="not LTO IR"):
        cudaload.ObjectCode.from_bytes(b"\x7fELF" + bytes(60), "ltoir")
    with pytest.raises(ValueError, match="not a library"):
        cudaload.ObjectCode.from_bytes(b"text", "library")


@pytest.mark.parametrize("args, kw, error, words", [
    ((), {}, ValueError, "needs the code to link"),
    ((IR,), {}, TypeError, "input 0 is bytes"),
    (("ir",), {}, ValueError, "make the Linker with lto=True"),
    (("ir",), {"lto": True, "options": ("-arch=sm_90",)}, ValueError, "arch="),
    (("ir",), {"lto": True, "options": ("-lto",)}, ValueError, "lto=True"),
    (("ir",), {"lto": True, "options": ("-O2",)}, ValueError, "-O takes 0 or 3"),
    (("ir",), {"lto": True, "options": ("-split-compile=-1",)}, ValueError,
     "-split-compile takes a count of threads: 1 or more, or 0 for one per CPU"),
    (("ir",), {"lto": True, "options": ("-split-compile=2.5",)}, ValueError,
     "-split-compile takes a count"),
    (("ir",), {"lto": True, "options": ("-fast",)}, ValueError, "no link option"),
    (("ir",), {"lto": True, "options": "-g"}, TypeError, "not one string"),
    (("ir",), {"lto": True, "arch": "sm_9000"}, ValueError, "not a compute capability"),
    (("ir",), {"lto": 1}, TypeError, "lto must be True or False"),
    (("ir",), {"lto": True, "backend": "nvcc"}, ValueError,
     "backend must be one of 'nvjitlink', 'driver' or None"),
    (("ir",), {"lto": True, "backend": "NVJITLINK"}, ValueError, "backend must be one of"),
    (("ir",), {"lto": True, "backend": 1}, TypeError, "backend must be a string or None"),
    (("ir",), {"lto": True, "backend": "driver"}, ValueError,
     "driver's linker does no link-time optimisation"),
])
def test_a_linker_that_cannot_link_is_refused_when_made(args, kw, error, words):
    inputs = [cudaload.ObjectCode.from_bytes(IR, "ltoir") if a == "ir" else a for a in args]
    with pytest.raises(error, match=words):
        cudaload.Linker(*inputs, **kw)


@pytest.mark.parametrize("code, kind, words", [
    (b"text", "cubin", "input 0 \\(made by hand\\): these bytes are not a CUBIN"),
    (b"// no directive", "ptx", "not PTX"),
    (b"\x7fELF" + bytes(60), "ltoir", "not LTO IR"),
    (b"text", "library", "not a library"),
    (b"\x7fELF" + bytes(60), "elf", "kind must be one of"),
    (b"", "cubin", "no bytes"),
], ids=["text-cubin", "ptx-without-version", "cubin-as-ltoir", "text-library", "unknown-kind",
        "empty"])
def test_an_object_code_made_by_hand_is_checked_as_from_bytes_checks_when_the_linker_is_made(
        code, kind, words):
    # The constructor checks nothing; the Linker does, before any linker is asked.
    made = cudaload.ObjectCode(code, kind, "sm_90", name="made by hand")
    with pytest.raises(ValueError, match=words):
        cudaload.Linker(made, lto=kind == "ltoir", arch=90)


def test_an_object_code_whose_code_is_no_bytes_is_a_type_error():
    with pytest.raises(TypeError, match="input 0 .*: its code is str, not bytes"):
        cudaload.Linker(cudaload.ObjectCode(PTX, "ptx"), arch=90)


def test_an_output_the_inputs_cannot_give_is_refused_before_linking():
    cubin = cudaload.ObjectCode(b"\x7fELF" + bytes(60), "cubin", "sm_90")
    with pytest.raises(ValueError, match="only LTO IR links to PTX"):
        cudaload.Linker(cubin, arch=90).link("ptx")
    with pytest.raises(ValueError, match="output must be one of cubin, ptx"):
        cudaload.Linker(cubin, arch=90).link("ltoir")


PTX = ".version 8.0\n.target sm_75\n.address_size 64\n.visible .entry k() { ret; }\n"


@pytest.mark.parametrize("kw, error, words", [
    ({"code_type": "fortran"}, ValueError, "code_type must be one of c\\+\\+, ptx"),
    ({"code_type": "ptx", "options": ("-lineinfo", "-bogus")}, ValueError, "no link option"),
])
def test_a_ptx_program_with_wrong_arguments_is_refused_when_made(kw, error, words):
    with pytest.raises(error, match=words):
        cudaload.Program(PTX, **kw)


def test_text_that_is_no_ptx_and_outputs_other_than_cubin_are_refused():
    with pytest.raises(ValueError, match="not PTX"):
        cudaload.Program("__global__ void k() {}", code_type="ptx")
    program = cudaload.Program(PTX, name="k.ptx", code_type="ptx")
    assert (program.name, program.source, program.options) == ("k.ptx", PTX, ())
    for output in ("ptx", "ltoir"):
        with pytest.raises(ValueError, match="compiles to CUBIN"):
            program.compile(arch=90, output=output)


def test_ptx_without_a_target_and_no_gpu_asks_for_the_arch_of_compile():
    # compile(arch=None) without a device links for the PTX's .target; with none, the next step
    # is the Program's (compile(arch=...)), not the Linker it uses.
    out = run_json("""
        import json, cudaload
        ptx = ".version 8.0\\n.address_size 64\\n.visible .entry k() { ret; }\\n"
        try:
            cudaload.Program(ptx, name="k.ptx", code_type="ptx").compile()
        except Exception as err:
            print(json.dumps([type(err).__name__, str(err)]))
    """, env={"CUDALOAD_LIBCUDA": "/nonexistent/libcuda.so.1"})
    assert out[0] == "ValueError" and "k.ptx" in out[1] and "compile(arch=" in out[1], out
    assert "Linker(" not in out[1], out


def test_a_ptx_program_takes_the_link_keywords_and_refuses_the_cxx_ones():
    program = cudaload.Program(PTX, code_type="ptx", line_info=True, debug=True,
                               max_registers=32, options=("-O3",))
    assert program.options == ("-lineinfo", "-g", "-maxrregcount=32", "-O3")
    for kw in ({"headers": {"a.h": ""}}, {"lto": True}, {"name_expressions": ["k"]},
               {"relocatable": True}, {"defines": {"N": 1}}):
        with pytest.raises(ValueError, match=f"{next(iter(kw))}: keywords for CUDA C\\+\\+"):
            cudaload.Program(PTX, code_type="ptx", **kw)


def test_without_libcudadevrt_the_error_lists_where_it_was_looked_for(monkeypatch):
    from cuda import pathfinder

    from cudaload.bindings import _sites

    def nowhere(name):
        raise pathfinder.StaticLibNotFoundError(f"{name}: searched conda and CUDA_HOME")

    monkeypatch.setattr(_sites, "static_library", lambda name: None)
    monkeypatch.setattr(pathfinder, "find_static_lib", nowhere)
    with pytest.raises(cudaload.LibraryNotFoundError) as info:
        cudaload.Linker.cudadevrt()
    assert info.value.library == "cudadevrt" and len(info.value.tried) == 2
    assert "nvidia-cuda-runtime wheel" in str(info.value) and "CUDA_HOME" in str(info.value)
    assert "pip install nvidia-cuda-runtime" in info.value.hint
