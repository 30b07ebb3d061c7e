"""``check-wheel --programs MODULE:NAME``: whether each of a host package's Programs, as the
installed wheel makes them, finds precompiled code in its bundle for every ``--arch``.

A bundle entry is filed under the program's digest (source, included files, options, name
expressions): a kernel edited after ``cudaload precompile`` keeps its old entries in the
bundle, which the bundle report counts, but ``Bundle.find`` finds none for the program as it
is now, and a GPU without NVRTC cannot run it.  The Programs are made in the environment the
wheel was installed in (install.py), from the installed copy, by _programs_probe.py; each one
asks its own bundle, as ``Program.compile`` does.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from .environments import no_driver_env
from .install import Installed, run_probe
from .mend import precompile_step

__all__ = ["check", "summary"]

_HERE = os.path.dirname(os.path.abspath(__file__))
_PROBE = os.path.join(_HERE, "_programs_probe.py")
_SPECS = os.path.join(os.path.dirname(_HERE), "_base", "_program_specs.py")


def check(env: Installed, specs: Sequence[str], archs: Sequence[str],
          bundles: Sequence[str] = ()) -> dict:
    """``{"specs": [{"spec", "error", "programs": [{"name", "name_expressions", "file",
    "bundle", "code": {arch: the arch of the code found, or None}}]}], "failures"}``;
    ``bundles``: the wheel's bundle files, as installed (a program without one is told which
    to pass)."""
    specs, archs = list(specs), list(archs)
    seen, failure = run_probe(env.python, _PROBE, [_SPECS, json.dumps(specs), json.dumps(archs)],
                              no_driver_env(env.base, env.work), env.work,
                              f"making the Programs of --programs {' '.join(specs)}")
    out: dict = {"specs": [], "failures": []}
    if seen is None:
        out["failures"].append(failure)
        return out
    for item in seen["specs"]:
        item.setdefault("error", None)
        item.setdefault("programs", [])
        out["specs"].append(item)
        if item["error"]:
            out["failures"].append(f"--programs {item['spec']}: the package's Programs could not "
                                   f"be made where the wheel is installed: {item['error']}")
        for program in item["programs"]:
            missing = [arch for arch in archs if not program["code"].get(arch)]
            if missing:
                out["failures"].append(_stale(item["spec"], program, missing, archs, bundles))
    return out


def _label(program: dict) -> str:
    exprs = program["name_expressions"]
    return program["name"] + (f" [{', '.join(exprs)}]" if exprs else "")


def _stale(spec: str, program: dict, missing: list[str], archs: list[str],
           bundles: Sequence[str]) -> str:
    """The failure of ``program`` (of ``spec``), which finds no code for ``missing``."""
    what = f"program {_label(program)} (file {program['file']})"
    if program["bundle"] is None:
        return (f"--programs {spec}: {what} has no bundle (it is made without bundle=), so "
                f"every GPU compiles it with NVRTC: pass bundle={_from_resource(bundles)} to it")
    return (f"{program['bundle']}: no entry for {what} for {', '.join(missing)}: the bundle "
            "holds no code of this program as the wheel makes it now (the kernel, a header, "
            "an option or a name expression changed since `cudaload precompile`, or that arch "
            "was not precompiled), so a GPU without NVRTC cannot run it. Mend it: "
            + precompile_step(program["bundle"], archs, spec))


def _from_resource(bundles: Sequence[str]) -> str:
    """The call that reads the wheel's one bundle (``bundles``: as installed, under their top
    package), with its names; with none or several, the call with its arguments to fill in."""
    if len(bundles) != 1 or "/" not in bundles[0]:
        return "cudaload.Bundle.from_resource(...)"
    package, _slash, resource = bundles[0].partition("/")
    return f"cudaload.Bundle.from_resource({json.dumps(package)}, {json.dumps(resource)})"


def summary(report: dict, archs: Sequence[str]) -> list[str]:
    """Lines for the text report: per spec and arch, how many programs find their code."""
    lines = []
    for item in report["specs"]:
        programs = item["programs"]
        if item["error"]:
            continue
        lines.append(f"programs of {item['spec']}: {len(programs)}")
        for arch in archs:
            have = sum(1 for p in programs if p["code"].get(arch))
            lines.append(f"  {arch}: {have} of {len(programs)} find their code in the bundle")
    return lines
