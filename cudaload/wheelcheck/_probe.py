"""What importing a wheel's modules does, seen from inside the environment it was installed in:
``check-wheel --import`` runs this file's text there (``python -I -c``), in a process where CUDA
is absent, and reads the one line of JSON it prints.

It imports the named modules first, then lists the files mapped into the process, and only then
asks ``cudaload.status()`` (when that environment has cudaload), whose probe loads libraries
itself.  It is run in another environment, so it imports only the standard library before that.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import json
import sys


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _where(module) -> str | None:
    path = getattr(module, "__file__", None)
    if path is None:  # a namespace package
        path = next(iter(getattr(module, "__path__", [])), None)
    return path


def _mapped() -> list[str] | None:
    """The files mapped into this process, or None where /proc/self/maps is not there."""
    try:
        with open("/proc/self/maps") as maps:
            return sorted({line.split(None, 5)[5].strip() for line in maps
                           if len(line.split(None, 5)) == 6 and "/" in line.split(None, 5)[5]})
    except OSError:
        return None


def _status() -> dict:
    try:
        import cudaload  # deferred: only the check that needs it

        report = cudaload.status().as_dict()
    except BaseException as exc:  # a broken cudaload is what the check must say
        return {"error": _one_line(exc)}
    return {"file": cudaload.__file__, "available": report.get("available"),
            "driver": report.get("driver", {}), "problems": report.get("problems", [])}


def main(names: list[str]) -> dict:
    """Import ``names`` and say what happened."""
    out: dict = {"prefix": sys.prefix, "imports": [],
           "installed": sorted(f"{d.metadata['Name']} {d.version}"
                               for d in importlib.metadata.distributions())}
    for name in names:
        try:
            module = importlib.import_module(name)
        except BaseException as exc:  # SystemExit and KeyboardInterrupt from an import, too
            out["imports"].append({"name": name, "error": _one_line(exc)})
        else:
            out["imports"].append({"name": name, "file": _where(module)})
    out["mapped"] = _mapped()
    if importlib.util.find_spec("cudaload") is not None:
        out["status"] = _status()
    return out


if __name__ == "__main__":
    # On a line of its own, after anything the imports printed.
    print("\n" + json.dumps(main(json.loads(sys.argv[1]))), flush=True)
