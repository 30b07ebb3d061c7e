"""What compiling for an arch does says so: an arch NVRTC does not know gives other code only with
one ArchWarning that names the arch asked, the code made and how to get the one asked for; an
arch is named as it was asked (``compute_91`` stays compute_91); a typo's guess is an arch NVRTC
has.  ``plan.choose`` is called with a made-up NVRTC and an assumed driver version: no library
is loaded here."""

from __future__ import annotations

import re
import warnings

import pytest

from cudaload.compile import plan, toolchain
from cudaload.errors import NvrtcError

# An NVRTC 13.5's archs, as nvrtcGetSupportedArchs gives them.
ARCHS = (75, 80, 86, 87, 88, 89, 90, 100, 103, 107, 110, 120, 121)
NVRTC = toolchain.Toolchain("/x/libnvrtc.so.13", (13, 5), "b", ARCHS, ())


@pytest.fixture
def driver(monkeypatch):
    """The driver's version as choose() sees it (a driver that loads this NVRTC's PTX)."""
    monkeypatch.setattr(plan, "_assumed_driver", 13050)
    return monkeypatch


def _choose(arch, output="auto", explicit=True):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kind, target = plan.choose(NVRTC, arch, output, explicit)
    return kind, target.sm(), [w for w in caught if issubclass(w.category, plan.ArchWarning)]


def test_a_known_arch_gives_its_own_code_and_no_warning(driver):
    assert _choose("sm_90") == ("cubin", "sm_90", [])
    assert _choose("sm_121", "ptx") == ("ptx", "sm_121", [])


def test_an_unknown_minor_gives_the_majors_cubin_with_one_warning_saying_so(driver):
    kind, target, caught = _choose("sm_91")
    assert (kind, target) == ("cubin", "sm_90") and len(caught) == 1
    message = str(caught[0].message)
    assert "sm_91" in message and "CUBIN for sm_90" in message and "NVRTC 13.5" in message
    assert "runs on" in message  # why that code serves
    # the warning points at the line that asked, not into cudaload
    assert caught[0].filename == __file__


def test_an_arch_newer_than_nvrtc_gives_ptx_with_one_warning_saying_so(driver):
    kind, target, caught = _choose("sm_130")
    assert (kind, target) == ("ptx", "sm_121") and len(caught) == 1
    message = str(caught[0].message)
    assert "sm_130" in message and "PTX for compute_121" in message
    assert "when it loads" in message and "pip install" in message


def test_the_devices_own_arch_substituted_is_said_too(driver):
    kind, target, caught = _choose(130, explicit=False)
    assert kind == "ptx" and len(caught) == 1
    assert "this GPU's arch" in str(caught[0].message)


def test_a_virtual_arch_is_named_as_asked(driver):
    with pytest.raises(NvrtcError) as info:
        plan.choose(NVRTC, "compute_91", "ptx")
    message = str(info.value)
    assert "compute_91 (the arch asked for)" in message and "sm_91 (" not in message


def test_the_next_step_for_an_arch_no_release_has_reads_as_one_instruction(driver):
    with pytest.raises(NvrtcError) as info:
        plan.choose(NVRTC, "sm_91", "cubin")
    hint = info.value.hint
    assert "pick one of those, or no NVRTC" not in hint
    assert re.search(r"[Nn]o NVRTC release cudaload knows of compiles for sm_91", hint)
    assert "pip install -U nvidia-cuda-nvrtc" in hint


@pytest.mark.parametrize("arch,guess", [("sm_900", "sm_90"), ("sm_200", None),
                                        ("compute_860", "sm_86"), ("sm_300", None)])
def test_a_typo_is_guessed_only_as_an_arch_nvrtc_has(arch, guess):
    with pytest.raises(ValueError) as info:
        plan.check_plausible(arch, NVRTC)
    message = str(info.value)
    if guess is None:
        assert "Did you mean" not in message and "sm_75" in message  # the archs it has instead
    else:
        assert f"Did you mean {guess}?" in message


def test_the_command_line_says_it_in_one_line_of_its_own(tmp_path):
    import os
    import subprocess
    import sys

    from tests._support import ROOT

    source = tmp_path / "k.cu"
    source.write_text('extern "C" __global__ void k(int *x) { *x = 1; }\n')
    env = {**os.environ, "PYTHONPATH": ROOT, "CUDALOAD_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-m", "cudaload", "compile", str(source), "--arch",
                           "sm_91", "-o", str(tmp_path / "k.cubin")],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "cubin for sm_90" in proc.stdout  # what was made
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("cudaload compile: ArchWarning: NVRTC "), lines
    assert "runpy" not in proc.stderr


def test_the_command_line_names_ptx_by_its_virtual_arch(tmp_path):
    import os
    import subprocess
    import sys

    from tests._support import ROOT

    source = tmp_path / "k.cu"
    source.write_text('extern "C" __global__ void k(int *x) { *x = 1; }\n')
    env = {**os.environ, "PYTHONPATH": ROOT, "CUDALOAD_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-m", "cudaload", "compile", str(source), "-o",
                           str(tmp_path / "k.ptx"), "--arch", "compute_80"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "ptx for compute_80" in proc.stdout and "sm_80" not in proc.stdout, proc.stdout
