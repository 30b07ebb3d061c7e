"""The test tree a newcomer finds their way in: every test file is in tests/README.md's map,
shared helpers come from tests/_support.py (never imported from conftest.py), and there is one
``cache_dir`` fixture."""

from __future__ import annotations

import os
import re

from tests._support import ROOT

TESTS = os.path.join(ROOT, "tests")


def _test_files() -> list[str]:
    found = []
    for folder, _dirs, files in os.walk(TESTS):
        found += [os.path.join(folder, name) for name in files if name.endswith(".py")]
    return sorted(found)


def test_every_test_file_is_in_the_map():
    with open(os.path.join(TESTS, "README.md"), encoding="utf-8") as f:
        named = set(re.findall(r"`(test_\w+)`", f.read()))
    top = {name[:-3] for name in os.listdir(TESTS)
           if name.startswith("test_") and name.endswith(".py")}
    assert sorted(top - named) == [], "add them to the table of tests/README.md"


def test_helpers_come_from_support_not_conftest():
    importing = [os.path.relpath(path, ROOT) for path in _test_files()
                 if re.search(r"^\s*(from tests\.conftest import|import tests\.conftest)",
                              open(path, encoding="utf-8").read(), re.MULTILINE)]
    assert importing == [], "move what they import to tests/_support.py"


def test_there_is_one_cache_dir_fixture():
    defining = [os.path.relpath(path, ROOT) for path in _test_files()
                if re.search(r"^def cache_dir\(", open(path, encoding="utf-8").read(),
                             re.MULTILINE)]
    assert defining == ["tests/conftest.py"]
