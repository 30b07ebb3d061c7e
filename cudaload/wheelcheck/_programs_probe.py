"""What a host package's Programs find in their bundle, seen from inside the environment the
wheel was installed in: ``check-wheel --programs`` runs this file's text there (``python -I
-c``) and reads the one line of JSON it prints.

Each Program named by ``--programs MODULE:NAME`` (parsed by cudaload/_base/_program_specs.py, loaded
by its path, as the installed cudaload may be another version) asks its own bundle, as
``Program.compile`` does on a GPU without NVRTC: ``program.bundle.find(program, arch)``.  It is
run in another environment, so it imports only the standard library and the installed cudaload.
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import json
import os
import sys
import sysconfig


def _relative(path: str | None) -> str | None:
    """``path`` as the wheel names it (relative to site-packages) where it is installed there."""
    if path is None:
        return None
    base = os.path.realpath(sysconfig.get_paths()["purelib"]) + os.sep
    real = os.path.realpath(path)
    return real[len(base):].replace(os.sep, "/") if real.startswith(base) else path


def _resource(package: str, name: str) -> str | None:
    try:
        node = importlib.resources.files(package).joinpath(*name.split("/"))
        # A package on disk (what pip installs) gives a path; a zipped one a Traversable.
        return str(node) if node.is_file() else None
    except (ModuleNotFoundError, TypeError, ValueError):
        return None


def _source_file(program, module_name: str) -> str | None:
    """The file ``program`` was read from: Program.from_file's (its folder is the first include
    path) or Program.from_resource's (a file of the module's package or one above it)."""
    for folder in program.include_paths[:1]:
        if os.path.isfile(os.path.join(folder, program.name)):
            return os.path.join(folder, program.name)
    parts = module_name.split(".")
    for n in range(len(parts), 0, -1):
        found = _resource(".".join(parts[:n]), program.name)
        if found:
            return found
    return None


def _bundle_file(bundle) -> str | None:
    """The file of a Bundle.from_resource ("pkg:res") or Bundle.from_file (a path) bundle."""
    origin = bundle.origin
    if ":" in origin and not os.path.isabs(origin):
        package, _, resource = origin.partition(":")
        return _resource(package, resource) or f"{package.replace('.', '/')}/{resource}"
    return origin


def _program(program, module_name: str, archs: list[str]) -> dict:
    bundle = program.bundle
    out = {"name": program.name, "name_expressions": list(program.name_expressions),
           "file": _relative(_source_file(program, module_name)) or program.name,
           "bundle": None if bundle is None else _relative(_bundle_file(bundle)), "code": {}}
    for arch in archs:
        found = bundle.find(program, arch) if bundle is not None else None
        out["code"][arch] = None if found is None else found.arch
    return out


def main(specs_file: str, specs: list[str], archs: list[str]) -> dict:
    """For each of ``specs``: its programs and what each finds in its bundle per arch, or the
    error that stopped it."""
    loader = importlib.util.spec_from_file_location("_cudaload_program_specs", specs_file)
    program_specs = importlib.util.module_from_spec(loader)  # type: ignore[arg-type]
    loader.loader.exec_module(program_specs)  # type: ignore[union-attr]
    out: dict = {"specs": []}
    for spec in specs:
        try:
            import cudaload  # deferred: only the check that needs it

            module_name, _ = program_specs.split(spec)
            programs = program_specs.load(spec, cudaload.Program, "the wheel does not ship "
                                          "it, or it fails to import")
            out["specs"].append({"spec": spec, "programs": [
                _program(p, module_name, archs) for p in programs]})
        except BaseException as exc:  # a package whose import fails: what the check must say
            text = str(exc).strip().splitlines()
            out["specs"].append({"spec": spec, "error": f"{type(exc).__name__}: "
                                                        f"{text[0] if text else ''}"})
    return out


if __name__ == "__main__":
    # On a line of its own, after anything the imports printed.
    print("\n" + json.dumps(main(sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]))),
          flush=True)
