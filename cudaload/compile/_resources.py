"""The Programs of package data files (``Program.from_resource``), made once per process.

A host package calls its kernel's function in loops, and on a machine without a GPU each call
would otherwise find, read and scan its resource again (importlib.resources: 30-300 us) only to
fall back to the CPU.  So the Program made for a package, a resource and keyword arguments is
remembered, and equal arguments give that same Program again: a dictionary lookup.

Whether the files can change under it:

- a file under a ``site-packages`` or ``dist-packages`` folder is taken as installed: what was
  read stays the Program's for the life of the process (an installer replaces such files only
  between runs of the host);
- any other file of the file system (an editable install, a source checkout on ``sys.path``) is a
  developer's working copy: a later call compares its ``stat`` (modification time, size,
  inode) with the one taken when it was read, and reads it again where one differs; it does so
  at most once every :data:`CHECK_SECONDS` (a ``stat`` costs more than the rest of a call, and
  a loop of calls must cost what an installed package's does), so an edit is seen within that;
- a resource inside a zip file cannot change.

Keyword arguments are compared by value with their types (``defines={"N": 4}`` and
``{"N": 4.0}`` make different Programs); arguments that cannot be compared so (a set, an object
without equality) and options that name a file NVRTC opens (checked at each Program) are made
afresh each time.  At most :data:`MAX_ENTRIES` are remembered, the oldest dropped first;
``status(refresh=True)`` forgets them all.

Imports of cudaload: lifetime, includes, options.
"""

from __future__ import annotations

import os
import _thread
from time import monotonic

from .._base import lifetime
from .options import names_files

__all__ = ["program", "forget", "MAX_ENTRIES", "CHECK_SECONDS"]

MAX_ENTRIES = 256
CHECK_SECONDS = 1.0
# key -> (Program, ((path, stat signature), ...) of the files to check, [when to check them next])
_memo: dict = {}
_lock = _thread.allocate_lock()
_UNCOMPARABLE = object()
_INSTALLED = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}")


def _canonical(value):
    """``value`` as a hashable key that only equal values of the same types share, or
    _UNCOMPARABLE."""
    cls = value.__class__
    if cls is list or cls is tuple:
        return (tuple, *map(_canonical, value))
    if cls is dict:  # in order: the order of defines is the order of their options
        return (dict, *[(k.__class__, k, _canonical(v)) for k, v in value.items()])
    try:
        hash(value)
    except TypeError:
        return _UNCOMPARABLE
    return (cls, value)


def program(cls, package: str, resource: str, kw: dict):
    """The Program ``cls.from_resource(package, resource, **kw)`` gives: the one made before
    for equal arguments where its files are as they were, else a new one."""
    if kw:
        canonical = [(name, _canonical(value)) for name, value in sorted(kw.items())]
        if any(c is _UNCOMPARABLE for _, c in canonical):
            return _make(cls, package, resource, kw, None)[0]
        key: tuple = (cls, package, resource, *canonical)
    else:
        key = (cls, package, resource)
    found = _memo.get(key)
    if found is not None and (not found[1] or _still(found)):
        return found[0]
    made, stamps = _make(cls, package, resource, kw, [])
    if not names_files(made.options):
        with _lock:
            _memo.pop(key, None)
            _memo[key] = (made, stamps, [monotonic() + CHECK_SECONDS])
            while len(_memo) > MAX_ENTRIES:
                del _memo[next(iter(_memo))]
    return made


def _make(cls, package: str, resource: str, kw: dict, files: list | None):
    """A new Program of the resource, and the signatures of the files it read that may change."""
    from .includes.search import from_package  # deferred: only a first call needs it

    kw = dict(kw)
    if resource.lower().endswith(".ptx"):
        kw.setdefault("code_type", "ptx")
    source, found = from_package(package, resource, files)
    kw["headers"] = {**found, **(kw.get("headers") or {})}
    kw.setdefault("name", resource)
    made = cls(source, **kw)
    stamps = tuple((path, _signature(path)) for path in files or ()
                   if not any(folder in path for folder in _INSTALLED))
    return made, stamps


def _signature(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


def _still(found) -> bool:
    """Whether a remembered Program's working-copy files are as they were: taken as so until
    their next check is due."""
    now = monotonic()
    if now < found[2][0]:
        return True
    found[2][0] = now + CHECK_SECONDS
    return _unchanged(found[1])


def _unchanged(stamps) -> bool:
    for path, signature in stamps:
        if _signature(path) != signature or signature is None:
            return False
    return True


def forget() -> None:
    """Make each resource's Program afresh at its next call (``status(refresh=True)``)."""
    with _lock:
        _memo.clear()


lifetime.on_forget(forget)

