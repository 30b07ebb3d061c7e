"""Which programs of a shipped ``cudaload.Bundle`` have precompiled code for which GPUs.

For each program in the bundle and each architecture asked about, the entry that
``Program.compile`` would take on a GPU of that architecture (the same lookup,
``Bundle.find``): its own arch, an older minor revision of the same major (sm_80 code on sm_86),
or none, in which case that GPU compiles the program with NVRTC at run time.  Every CUBIN in the
bundle is decoded (a damaged one would be compiled instead) and its ELF headers read, and each
entry says which drivers load it: a CUBIN those of the CUDA major that made it, or newer.
"""

from __future__ import annotations

from typing import Any

from ..compile.objectcode import decode
from ..compile.bundle import Bundle
from ..compile.options import parse_arch
from .._base.releases import loads_on
from . import elf
from .libraries import cuda_library
from .mend import precompile_step
from .wheel import installed_path

__all__ = ["arch_name", "report", "summary"]


def arch_name(text: str) -> str:
    """``sm_86`` for "86", "sm_86" or "compute_86".  Raises ValueError for a non-arch."""
    return parse_arch(text).sm()


def report(path: str, data: bytes | None, archs: list[str], problem: str | None = None) -> dict:
    """The bundle ``data`` (file ``path`` of the wheel) against the architectures ``archs``;
    ``data`` None when it was not read, ``problem`` saying why.

    ``{"path", "error", "failures", "programs": [{"name", "name_expressions", "code": {arch:
    the arch of the code used, or None}, "entries": [{"arch", "kind", "nvrtc", "driver",
    "loads_on"}]}]}``: ``driver`` is the oldest CUDA release whose driver loads the entry
    (releases.loads_on); ``error`` says why the bundle cannot be read."""
    out: dict[str, Any] = {"path": path, "error": None, "failures": [], "programs": []}
    if data is None:
        out["error"] = f"{path}: {problem}"
        out["failures"].append(out["error"])
        return out
    bundle = Bundle(data, origin=path)
    try:
        bundle.check()
    except ValueError as err:
        out["error"] = f"{path}: the bundle cannot be read ({err}): its kernels would be compiled"
        out["failures"].append(out["error"])
        return out
    programs: dict[str, dict] = {}
    for (digest, kind, arch), entry in sorted(bundle._entries().items()):
        program = programs.setdefault(digest, {
            "name": entry["name"], "name_expressions": entry["name_expressions"], "code": {},
            "entries": []})
        obj = decode(data[entry["offset"]:entry["offset"] + entry["length"]])
        problem = _cubin_problem(obj)
        if problem:
            out["failures"].append(f"{path}: the {arch} entry of {_label(entry)} {problem}")
        else:
            program["entries"].append(_drivers(obj, kind, arch, entry.get("nvrtc")))
    for digest, program in programs.items():
        for arch in archs:
            found = bundle.find(None, arch, digest=bytes.fromhex(digest))
            program["code"][arch] = found.arch if found is not None else None
        out["programs"].append(program)
    return out


def _drivers(obj, kind: str, arch: str, nvrtc: str | None) -> dict:
    """An entry's ``{"arch", "kind", "nvrtc", "driver", "loads_on"}``: which drivers load it
    (``driver``: the oldest CUDA release, "12.0", or None where it cannot be told)."""
    release, text = loads_on(obj.code, kind, arch, nvrtc)
    return {"arch": arch, "kind": kind, "nvrtc": nvrtc,
            "driver": f"{release[0]}.{release[1]}" if release else None, "loads_on": text}


def _cubin_problem(obj) -> str | None:
    """Why the decoded bundle entry ``obj`` (None: damaged) would not be used as it is, or
    None."""
    if obj is None:
        return "is damaged (its integrity check fails): it would be compiled instead"
    if obj.code[:4] != elf.MAGIC:
        return "holds no CUBIN (no ELF header)"
    try:
        cuda = [n for n in elf.needed(obj.code) if cuda_library(n)]
    except elf.ElfError as err:
        return f"holds a CUBIN that cannot be read: {err}"
    return f"holds a CUBIN that needs {', '.join(cuda)}" if cuda else None


def _label(program: dict) -> str:
    exprs = program["name_expressions"]
    return program["name"] + (f" ({', '.join(exprs)})" if exprs else "")


def required(shipped: list, reports: list[dict], archs: list[str]) -> list[str]:
    """The failures of ``check-wheel --require-bundle``: no bundle among ``shipped``, or a program
    of one (its ``reports``, made for ``archs``) without code for an arch."""
    if not shipped:
        return ["the wheel ships no cudaload.Bundle, and --require-bundle asks for one: a build "
                "backend leaves out a file git ignores; list the bundle as package data (and "
                "see `git check-ignore -v PATH`), then build the wheel again"]
    failures = []
    for bundle in reports:
        for arch in archs:
            missing = [_label(p) for p in bundle["programs"] if not p["code"][arch]]
            if missing:
                failures.append(f"{bundle['path']}: no code for {arch} for {len(missing)} of "
                                f"{len(bundle['programs'])} programs ({', '.join(missing[:4])}"
                                f"{' ...' if len(missing) > 4 else ''}): add their code: "
                                + precompile_step(installed_path(bundle["path"]), [arch],
                                                  append=True))
    return failures


def summary(bundle: dict, archs: list[str]) -> list[str]:
    """Lines for the text report: per arch, how many programs have code and which need NVRTC."""
    programs = bundle["programs"]
    lines = []
    for arch in archs:
        have = [p for p in programs if p["code"][arch]]
        older = sorted({p["code"][arch] for p in have} - {arch})
        line = f"{arch}: {len(have)} of {len(programs)} programs precompiled"
        if older:
            line += f" (using {', '.join(older)} code)"
        missing = [_label(p) for p in programs if not p["code"][arch]]
        if missing:
            shown = ", ".join(missing[:4]) + (f" and {len(missing) - 4} more" if len(missing) > 4
                                              else "")
            line += f"; compiled with NVRTC at run time: {shown}"
        lines.append(line)
    return lines + _driver_lines(programs)


def _driver_lines(programs: list[dict]) -> list[str]:
    """Per arch, kind and NVRTC of the entries: how many programs, and which drivers load them."""
    groups: dict[tuple, int] = {}
    for program in programs:
        for e in program["entries"]:
            key = (e["arch"], e["kind"], e["nvrtc"], e["loads_on"])
            groups[key] = groups.get(key, 0) + 1
    return [f"{arch} {kind}{f' (NVRTC {nvrtc})' if nvrtc else ''}, {count} program"
            f"{'s' if count != 1 else ''}: loads on {text}"
            for (arch, kind, nvrtc, text), count in sorted(
                groups.items(), key=lambda item: (parse_arch(item[0][0]), *map(str, item[0])))]
