"""`import cudaload` is cheap: no CUDA library mapped; no parser, pathfinder, numpy or cffi."""

from __future__ import annotations

from tests._support import run_json, scenario_json

HEAVY = ["pycparser", "cuda.pathfinder", "numpy", "cffi", "_cffi_backend", "dataclasses"]

_PROBE = """
import json, sys
import cudaload{extra}
with open("/proc/self/maps") as f:
    maps = [line.split()[-1] for line in f if "libcuda" in line or "libnvrtc" in line]
print(json.dumps({{"maps": maps, "modules": [m for m in {heavy!r} if m in sys.modules]}}))
"""


def _probe(extra: str = "") -> dict:
    return run_json(_PROBE.format(extra=extra, heavy=HEAVY))


def test_import_maps_no_cuda_library_and_imports_nothing_heavy():
    result = _probe()
    assert result == {"maps": [], "modules": []}


def test_command_line_and_availability_modules_load_nothing_at_import():
    result = _probe(", cudaload.availability, cudaload.cli, cudaload.errors")
    assert result == {"maps": [], "modules": []}


def test_public_names_resolve_lazily():
    result = scenario_json("import_costs", "lazy_names")
    assert result == {"before": False, "after": True, "same": True, "all": []}


def test_unknown_attribute_is_an_attribute_error():
    import cudaload

    try:
        cudaload.no_such_name
    except AttributeError as err:
        assert "no_such_name" in str(err)
    else:
        raise AssertionError("cudaload.no_such_name did not raise")
