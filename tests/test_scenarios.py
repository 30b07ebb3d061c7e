"""The scenario modules of tests/scenarios: importing one prints nothing and loads no cudaload
module (each runs only as ``python -m``), and each names the scenarios it can run."""

from __future__ import annotations

import importlib
import os

from tests._support import ROOT, run_json

FOLDER = os.path.join(ROOT, "tests", "scenarios")
NAMES = sorted(f[:-3] for f in os.listdir(FOLDER) if f.endswith(".py") and f != "__init__.py")
SCRIPTS = {"compile_log", "compile_value", "driver_mapped"}  # no table of scenarios


def test_importing_every_scenario_module_runs_nothing():
    printed, loaded = run_json(
        "import contextlib, importlib, io, json, sys\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        f"    [importlib.import_module('tests.scenarios.' + n) for n in {NAMES!r}]\n"
        "print(json.dumps([out.getvalue(), [m for m in sys.modules if m.startswith('cudaload')]]))")
    assert printed == "" and loaded == [], (printed, loaded)


def test_each_scenario_module_names_its_scenarios():
    assert len(NAMES) > len(SCRIPTS)
    for name in sorted(set(NAMES) - SCRIPTS):
        table = importlib.import_module("tests.scenarios." + name).SCENARIOS
        assert table and all(callable(f) for f in table.values()), name
