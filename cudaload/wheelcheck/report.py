"""The shape of :func:`~cudaload.wheelcheck.command.check_wheel`'s report, for type checkers:
``WheelReport`` and the entries it holds, the JSON ``cudaload check-wheel --json`` prints.

The report is a plain dict at run time; these are its keys and their types (TypedDicts), which
check_wheel's return annotation names.  Nothing imports this module at run time but a caller
annotating its own code with them.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

__all__ = ["BundleReport", "FileReport", "ImportReport", "ProgramReport", "WheelReport"]


class FileReport(TypedDict):
    """A compiled file of the wheel: ``format`` "ELF", "PE", "Mach-O" or None (named like a
    library, but none of them), the libraries it ``needed``, which of them are CUDA's, and why it
    could not be read (``error``), or None."""

    path: str
    format: Literal["ELF", "PE", "Mach-O"] | None
    needed: list[str]
    cuda: list[str]
    error: str | None


class ProgramReport(TypedDict):
    """A program of a bundle; ``code``: per arch asked for, the arch of the code a GPU of it
    uses, or None where it compiles at run time."""

    name: str
    name_expressions: list[str]
    code: dict[str, str | None]


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


class WheelReport(TypedDict):
    """What :func:`~cudaload.wheelcheck.command.check_wheel` returns: ``ok`` when no check
    failed, each failure as a line, then what each check saw (``bundles`` None without
    ``archs``, ``imports`` None without ``imports``)."""

    wheel: str
    ok: bool
    failures: list[str]
    files: list[FileReport]
    bundles: list[BundleReport] | None
    imports: list[ImportReport] | None
