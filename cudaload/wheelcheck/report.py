"""The shape of :func:`~cudaload.wheelcheck.command.check_wheel`'s report, for type checkers:
``WheelReport`` and the entries it holds, the JSON ``cudaload check-wheel --json`` prints.

The report is a plain dict at run time; these are its keys and their types (TypedDicts), which
check_wheel's return annotation names.  Nothing imports this module at run time but a caller
annotating its own code with them.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

__all__ = ["BundleReport", "EntryReport", "FileReport", "ImportReport", "ProgramReport",
           "ProgramsReport", "SpecProgram", "SpecReport", "WheelReport"]


class FileReport(TypedDict):
    """A compiled file of the wheel: ``format`` "ELF", "PE", "Mach-O" or None (named like a
    library, but none of them), the libraries it ``needed``, which of them are CUDA's, and why it
    could not be read (``error``), or None."""

    path: str
    format: Literal["ELF", "PE", "Mach-O"] | None
    needed: list[str]
    cuda: list[str]
    error: str | None


class EntryReport(TypedDict):
    """An entry of a bundle's program: its arch and kind, the NVRTC release that made it (None
    where the bundle does not say), and which drivers load it (``driver``: the oldest CUDA
    release, or None where that cannot be told; ``loads_on``: the same in words)."""

    arch: str
    kind: str
    nvrtc: str | None
    driver: str | None
    loads_on: str


class ProgramReport(TypedDict):
    """A program of a bundle; ``code``: per arch asked for, the arch of the code a GPU of it
    uses, or None where it compiles at run time; ``entries``: what the bundle holds for it."""

    name: str
    name_expressions: list[str]
    code: dict[str, str | None]
    entries: list[EntryReport]


class BundleReport(TypedDict):
    """A ``cudaload.Bundle`` of the wheel (with ``archs`` only); ``error``: why it cannot be
    read, or None."""

    path: str
    error: str | None
    failures: list[str]
    programs: list[ProgramReport]


class ImportReport(TypedDict):
    """One import run (with ``imports`` only): ``mode`` says where CUDA is absent, ``driver``
    the driver library it loaded (None: none); ``reason`` and ``problems`` are what
    ``cudaload.status()`` said there; ``skipped`` why it could not run, or None."""

    mode: str
    driver: str | None
    ok: bool
    failures: list[str]
    notes: list[str]
    reason: str | None
    problems: list[dict[str, Any]]
    installed: list[str]
    skipped: str | None


class SpecProgram(TypedDict):
    """A Program of a ``--programs`` spec, made where the wheel is installed: its source
    ``file`` and ``bundle`` as the wheel names them, and per arch the arch of the code its bundle
    has for it (None: none, the bundle is stale or lacks the arch)."""

    name: str
    name_expressions: list[str]
    file: str
    bundle: str | None
    code: dict[str, str | None]


class SpecReport(TypedDict):
    """One ``--programs`` spec: its Programs, or the ``error`` that kept them from being made."""

    spec: str
    error: str | None
    programs: list[SpecProgram]


class ProgramsReport(TypedDict):
    """The ``--programs`` check: each spec, and each failure as a line."""

    specs: list[SpecReport]
    failures: list[str]


class WheelReport(TypedDict):
    """What :func:`~cudaload.wheelcheck.command.check_wheel` returns: ``ok`` when no check
    failed, each failure as a line, then what each check saw (``bundles`` None without
    ``archs``, ``imports`` None without ``imports``, ``programs`` None without ``programs``)
    and each warning as a line."""

    wheel: str
    ok: bool
    failures: list[str]
    files: list[FileReport]
    bundles: list[BundleReport] | None
    imports: list[ImportReport] | None
    warnings: list[str]
    programs: ProgramsReport | None
