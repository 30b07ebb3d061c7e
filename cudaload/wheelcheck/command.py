"""``cudaload check-wheel WHEEL [--import NAME] [--arch ARCH] [--programs MODULE:NAME] [--json]``:
the packaging test of a host package, and :func:`check_wheel`, the same as a function.

Exit status 0 when every check passed, 1 when one failed, 2 when the wheel cannot be checked
(not a wheel, a damaged archive, one pip cannot install): then one line on stderr names the
file and the reason.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from .report import WheelReport

__all__ = ["add_parser", "check_wheel"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``cudaload check-wheel`` with the subparsers ``sub``."""
    parser = sub.add_parser(
        "check-wheel", allow_abbrev=False,
        help="check that a wheel has no link-time CUDA dependency and imports where CUDA is "
             "absent (exit status 1 when a check fails, 2 when the wheel cannot be checked)")
    parser.add_argument("wheel", metavar="WHEEL", help="the wheel file to check")
    parser.add_argument("--import", dest="imports", action="append", default=[], metavar="NAME",
                        help="a module to import from a fresh environment where only the wheel "
                             "and its dependencies are installed, without a CUDA driver and "
                             "with a driver but no GPU (repeatable)")
    parser.add_argument("--with", dest="also", action="append", default=[], metavar="WHEEL",
                        help="another wheel to install beside it, e.g. a dependency that is "
                             "not on the package index (repeatable)")
    parser.add_argument("--arch", dest="archs", action="append", default=[], type=_arch,
                        metavar="ARCH", help="report which programs of each shipped "
                        "cudaload.Bundle have precompiled code for GPUs of ARCH, e.g. sm_90 "
                        "(repeatable)")
    parser.add_argument("--require-bundle", action="store_true",
                        help="fail unless the wheel ships a cudaload.Bundle and, with --arch, "
                             "each of its programs has code for every ARCH (a bundle the build "
                             "left out, e.g. one git ignores, fails instead of passing)")
    parser.add_argument("--programs", dest="programs", action="append", default=[],
                        type=_spec, metavar="MODULE:NAME",
                        help="the package's Programs, as `cudaload precompile --programs` takes "
                             "them: made where the wheel is installed, each must find code in "
                             "its bundle for every ARCH (a kernel edited after precompile fails; "
                             "needs --arch; repeatable)")
    parser.add_argument("--no-skip", action="store_true",
                        help="fail a check that cannot run here instead of skipping it (in CI: "
                             "no driver library for the import with a driver but no GPU)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(func=_command)


def _arch(text: str) -> str:
    from .bundles import arch_name  # deferred: each command imports what it runs

    try:
        return arch_name(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _spec(text: str) -> str:
    from .._base._program_specs import split  # deferred: each command imports what it runs

    try:
        split(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def check_wheel(path: str, imports: Sequence[str] = (), archs: Sequence[str] = (),
                also: Sequence[str] = (), require_bundle: bool = False,
                no_skip: bool = False, programs: Sequence[str] = ()) -> WheelReport:
    """The report on the wheel at ``path``: ``{"wheel", "ok", "failures", "warnings", "files",
    "bundles", "imports", "programs"}`` (``bundles`` with ``archs`` only, ``imports`` with
    ``imports`` only, ``programs`` with ``programs`` only).  ``require_bundle``: a wheel without
    a bundle, or (with ``archs``) a program of one without code for an arch, fails;
    ``no_skip``: a skipped import fails; ``programs``: specs MODULE:NAME whose Programs must
    each find code in their bundle for every arch of ``archs`` (which must not be empty).

    Raises WheelError when the wheel cannot be read or installed, ValueError for
    ``programs`` without ``archs``."""
    from . import bundles as bundle_report  # deferred: each command imports what it runs
    from .wheel import scan  # deferred: each command imports what it runs

    if programs and not archs:
        raise ValueError("--programs needs --arch ARCH: the GPUs whose code the bundle must hold")

    files, shipped = scan(path)
    failures: list[str] = []
    for entry in files:
        if entry["error"]:
            failures.append(f"{entry['path']}: {entry['error']}")
        where = "DT_NEEDED" if entry["format"] == "ELF" else "import table"
        failures += [f"{entry['path']} needs {lib} ({where}), a CUDA library: it cannot load "
                     "where CUDA is absent" for lib in entry["cuda"]]
    archs = list(dict.fromkeys(archs))
    report: dict[str, Any] = {"wheel": path, "ok": False, "failures": failures,
                              "warnings": _warnings(path, shipped, require_bundle, programs, archs),
                              "files": files, "bundles": None, "imports": None, "programs": None}
    if archs:
        report["bundles"] = [bundle_report.report(b["path"], b["data"], archs, b["error"])
                             for b in shipped]
        failures += [line for b in report["bundles"] for line in b["failures"]]
    if require_bundle:
        failures += bundle_report.required(shipped, report["bundles"] or [], archs)
    if imports or programs:
        _installed_checks(report, imports, also, no_skip, (programs, shipped), archs)
    report["ok"] = not failures
    return cast("WheelReport", report)  # the entries' producers type them as plain dicts


def _warnings(path: str, shipped: list, require_bundle: bool, programs: Sequence[str],
              archs: list[str]) -> list[str]:
    from .requirements import cudaload_requirements, nvrtc_warning  # deferred: as above
    from .wheel import packages  # deferred: as above

    warnings = []
    if require_bundle and shipped and not programs:
        warnings.append("--require-bundle cannot prove the bundle fresh: without --programs "
                        "MODULE:NAME it sees the bundle's entries, not the package's Programs, "
                        "and a kernel edited after `cudaload precompile` keeps its old entries, "
                        "which no GPU uses. Next step: add --programs MODULE:NAME (as given to "
                        "cudaload precompile)")
    warning = nvrtc_warning(cudaload_requirements(path), bool(shipped), packages(path), archs)
    return warnings + ([warning] if warning else [])


def _installed_checks(report: dict, imports: Sequence[str], also: Sequence[str], no_skip: bool,
                      asked: tuple, archs: list[str]) -> None:
    """The checks in a fresh environment the wheel is installed in: ``--import``, ``--programs``
    (``asked``: the specs, and the bundles the wheel ships)."""
    from .install import check_imports, installed  # deferred: each command imports what it runs
    from .wheel import installed_path  # deferred: as above

    programs, shipped = asked

    failures = report["failures"]
    with installed(report["wheel"], list(also)) as env:
        if programs:
            from .programs import check  # deferred: each command imports what it runs

            report["programs"] = check(env, programs, archs,
                                       [installed_path(b["path"]) for b in shipped])
            failures += report["programs"]["failures"]
        if imports:
            report["imports"] = runs = check_imports(env, list(imports))
            failures += [line for run in runs for line in run["failures"]]
            if no_skip:
                failures += [f"the import with {run['mode']} was skipped ({run['skipped']}), "
                             "and --no-skip makes that a failure" for run in runs
                             if run["skipped"]]


def _command(args) -> int:
    from .wheel import WheelError  # deferred: each command imports what it runs

    try:
        report = check_wheel(args.wheel, args.imports, args.archs, args.also,
                             args.require_bundle, args.no_skip, args.programs)
    except (WheelError, ValueError) as err:
        print(f"cudaload check-wheel: {err}", file=sys.stderr)
        return 2
    if args.json:
        import json  # deferred: each command imports what it runs

        print(json.dumps(report, indent=2))
    else:
        print("\n".join(_text(report, list(dict.fromkeys(args.archs)))))
    return 0 if report["ok"] else 1


def _text(report: Mapping[str, Any], archs: list[str]) -> list[str]:
    from .bundles import summary  # deferred: each command imports what it runs
    from . import programs  # deferred: each command imports what it runs

    lines = [f"check-wheel {os.path.basename(report['wheel'])}"]
    if not report["files"]:
        lines.append("compiled files: none")
    for entry in report["files"]:
        needs = ", ".join(entry["needed"]) or "nothing"
        lines.append(f"{entry['format'] or '?'} {entry['path']}: "
                     + (entry["error"] or f"needs {needs}"))
    for bundle in report["bundles"] or ():
        if bundle["error"] is None:
            lines.append(f"bundle {bundle['path']}: {len(bundle['programs'])} programs")
            lines += ["  " + line for line in summary(bundle, archs)]
    if report["bundles"] == []:
        lines.append("bundles: none (every GPU compiles the package's kernels at run time)")
    if report["programs"]:
        lines += programs.summary(report["programs"], archs)
    for i, run in enumerate(report["imports"] or ()):
        if i == 0:
            lines.append(f"installed in a fresh environment: {', '.join(run['installed'])}")
        state = f"skipped: {run['skipped']}" if run["skipped"] else \
            "ok" if run["ok"] else "FAILED"
        lines.append(f"import with {run['mode']}: {state}"
                     + (f"; cudaload.status(): {run['reason']}" if run["reason"] else ""))
        lines += [f"  {note}" for note in run["notes"]]
    lines += [f"WARNING {line}" for line in report["warnings"]]
    lines += [f"FAIL {line}" for line in report["failures"]]
    count = len(report["failures"])
    lines.append("all checks passed" if report["ok"] else
                 f"{count} check{'s' if count != 1 else ''} failed")
    return lines
