"""``--programs MODULE:NAME``, as ``cudaload precompile`` and ``cudaload check-wheel`` take it: a
function (or list) in an importable module that gives a host package's Program objects.

It imports only the standard library: ``check-wheel`` loads this file by its path into the
environment it installed the wheel in, where another cudaload (the wheel's dependency) is the
one the package's Programs come from, and passes that cudaload's Program class in.
"""

from __future__ import annotations

import importlib

__all__ = ["split", "load"]

EXAMPLE = "mypkg.kernels:programs"


def split(spec: str) -> tuple[str, str]:
    """(module, name) of ``spec``.  Raises ValueError for one not written MODULE:NAME."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"--programs {spec!r}: write MODULE:NAME, e.g. {EXAMPLE}")
    return module_name, attr


def load(spec: str, program_type: type, not_found: str) -> list:
    """The Program objects (instances of ``program_type``) that ``spec`` names: the list, or what
    the function returns.  Raises ValueError saying what is wrong; ``not_found`` is the next step
    for a module that cannot be imported."""
    module_name, attr = split(spec)
    try:
        found = getattr(importlib.import_module(module_name), attr)
    except ModuleNotFoundError as err:
        raise ValueError(f"--programs {spec!r}: {err}; {not_found}") from None
    except AttributeError:
        raise ValueError(f"--programs {spec!r}: module {module_name} has no {attr!r}; name "
                         "a list of cudaload.Program objects or a function returning one"
                         ) from None
    found = found() if callable(found) else found
    try:
        found = list(found)
    except TypeError:  # a module, a function's None, a single Program: no list of them
        found = [found]
    if not all(isinstance(p, program_type) for p in found):
        raise ValueError(f"--programs {spec!r} is not cudaload.Program objects: name a list "
                         "of them, or a function returning one")
    return found
