"""What a type checker sees through ``import cudaload``: ``mypy --strict`` over a host package's
code (tests/_typed_consumer.py) reveals each name's real type and rejects bad calls, and the
typed names are exactly the lazily bound ones (the block that names them never runs).  The
launch, a CudaProcess call and check_wheel's report are typed; the report's TypedDicts name the
keys a real report has."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys

import pytest

from tests._support import ROOT, run_json

CONSUMER = os.path.join(ROOT, "tests", "_typed_consumer.py")
MARK = re.compile(r"^\s+\S.*#\s*([RE]):\s*(.+?)\s*$")  # code lines: indented, in a function


def _expected() -> tuple[dict[int, str], dict[int, set[str]]]:
    revealed, errors = {}, {}
    with open(CONSUMER) as f:
        for number, line in enumerate(f, 1):
            found = MARK.search(line)
            if found and found.group(1) == "R":
                revealed[number] = found.group(2)
            elif found:
                errors[number] = {code.strip() for code in found.group(2).split(",")}
    return revealed, errors


def test_mypy_strict_sees_the_real_types_and_rejects_bad_calls(tmp_path):
    pytest.importorskip("mypy", reason="mypy checks the consumer (the test extra installs it)")
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--show-error-codes",
         "--no-error-summary", "--cache-dir", str(tmp_path / "mypy"), CONSUMER],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    revealed, errors = {}, {}
    for line in proc.stdout.splitlines():
        found = re.match(r".*?:(\d+): (note|error): (.*)$", line)
        if not found:
            continue
        number, kind, text = int(found.group(1)), found.group(2), found.group(3)
        shown = re.match(r'Revealed type is "(.*)"$', text)
        if kind == "note" and shown:
            # older mypy releases spell builtins as "builtins.str"
            revealed[number] = shown.group(1).replace("builtins.", "")
        elif kind == "error":
            errors.setdefault(number, set()).add(re.search(r"\[([a-z-]+)\]$", text).group(1))
    want_revealed, want_errors = _expected()
    assert want_revealed and want_errors  # the consumer is read
    assert revealed == want_revealed, proc.stdout
    assert errors == want_errors, proc.stdout


def test_the_typed_names_are_the_lazy_ones():
    import cudaload

    tree = ast.parse(open(cudaload.__file__).read())
    block = next(node for node in tree.body if isinstance(node, ast.If)
                 and getattr(node.test, "id", None) == "TYPE_CHECKING")
    typed = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.level == 1, ast.dump(node)
        for alias in node.names:
            assert alias.asname == alias.name, alias.name  # "X as X": exported under strict
            typed[alias.name] = node.module
    assert typed == cudaload._LAZY


def test_the_wheel_report_types_name_every_key_of_the_report(tmp_path):
    # check_wheel's entries come from functions that build plain dicts, and its result is cast to
    # WheelReport: a key the report gains or loses is caught here, against a real report.
    from cudaload.compile.bundle import Bundle
    from cudaload.compile.objectcode import ObjectCode
    from cudaload.compile.program import Program
    from cudaload.wheelcheck import check_wheel, install, report as types
    from tests import _wheels

    made = Bundle()
    made.add(Program("template <class T> __global__ void k(T *x) {}", name_expressions=["k<int>"]),
             ObjectCode(b"\x7fELF", "cubin", "sm_90"))
    wheel = _wheels.write_wheel(tmp_path, "tpkg", {"tpkg/__init__.py": b"",
                                                   "tpkg/_ext.so": b"not an ELF file",
                                                   "tpkg/_kernels.bundle": made.to_bytes()})
    report = check_wheel(wheel, archs=["sm_90"])
    (entry,), (bundle,) = report["files"], report["bundles"] or []
    shapes = [(report, types.WheelReport), (entry, types.FileReport),
              (bundle, types.BundleReport), (bundle["programs"][0], types.ProgramReport),
              (install._result("a mode", None), types.ImportReport)]
    for value, typed in shapes:
        assert set(value) == set(typed.__annotations__) == typed.__required_keys__, typed


def test_the_types_add_nothing_at_run_time():
    # A Kernel is the partial it was (its call is the partial's, through vectorcall), and neither
    # the launch's nor the report's types are imported by cudaload itself.
    seen = run_json("""
import functools, json, sys
import cudaload.launch.rawkernel
from cudaload.launch.kernel import Kernel
from cudaload.wheelcheck import command, environments, pytest_plugin
print(json.dumps({"call": Kernel.__call__ is functools.partial.__call__,
                  "base": Kernel.__bases__[-1] is functools.partial,
                  "types": sorted(m for m in sys.modules if m in (
                      "cudaload.launch.launch_types", "cudaload.wheelcheck.report"))}))
""")
    assert seen == {"call": True, "base": True, "types": []}
