"""compile(arch=None) on a GPU: the device's arch for every output and code type, and a wrong
argument is the same error as on a machine without one (tests/test_program.py's WRONG)."""

from __future__ import annotations

import cudaload

from ..test_program import WRONG, arch_rule


def test_with_a_device_arch_none_is_its_arch_for_every_output_and_code_type():
    out = arch_rule()
    sm = f"sm_{cudaload.Device(0).arch}"
    made = out["made"]
    for name in ("ltoir", "plan ltoir"):
        assert made[name] == [["ltoir", sm]], (name, made[name])
    assert made["compile_all ltoir"] == [["ltoir", sm]] * 2
    for name in ("PTX program", "PTX program, output='cubin'", "compile_all PTX program",
                 "auto", "cubin"):
        assert made[name] == [["cubin", sm]], (name, made[name])
    assert made["ptx"] == [["ptx", sm]]
    assert made["compile_all auto"] == [["cubin", sm]] * 2


def test_with_a_device_a_wrong_argument_is_the_same_error_and_loads_nothing():
    out = arch_rule()
    for case, (error, words) in WRONG.items():
        got = out["wrong"][case]
        assert got[:2] == [error, False] and words in got[2], (case, got)
    assert out["loaded"] == []
