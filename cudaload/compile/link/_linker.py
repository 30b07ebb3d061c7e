"""nvJitLink in a compile with link-time optimisation (``lto=True``): which library links, its
identity for the cache key, and the link of NVRTC's LTO IR.

A linked program's code depends on the linker's build, so its key names that build; yet a
process whose code is all on disk should not load libnvJitLink (117 MB to map, about 8 ms) to
learn which build it is.  The file the loader would load is found as the loader finds it
(``CUDALOAD_LIBNVJITLINK``, else the wheel in site-packages: bindings/_sites.py) and identified
as NVRTC's is (its size and the sha256 of both ends: toolchain.fingerprint), once per process and
file while ``os.stat`` says it is unchanged.  Only where neither names a file is it loaded to be
found (cuda.pathfinder searches then); once loaded, the loaded file is the one identified.

Imports of cudaload: lifetime, bindings (_loader, _sites), _headers, toolchain.
"""

from __future__ import annotations

import os

from ..._base import lifetime
from ...bindings import _loader, _sites

__all__ = ["identity", "found", "forget_found", "load", "link"]

_builds: dict = {}  # path -> (stat identity, fingerprint)
# CUDALOAD_LIBNVJITLINK as it was -> the file found for it: finding the wheel reads
# /proc/self/maps, which a process holding a CUDA context makes long (0.5 ms), once per program
_found: dict = {}  # -> (file, how found)


def identity() -> str:
    """The build of the nvJitLink that links now.  Raises the loader's errors (LibraryNotFound-
    Error with the next step) where there is none."""
    # deferred: the status report finds nvJitLink without the cache's modules
    from .. import toolchain  # deferred: only this path needs it
    from ..includes._headers import stat_id  # deferred: only this path needs it

    path = _find(recheck=False)[0]
    stat = stat_id(path)
    if stat is None:  # gone since it was found (a wheel uninstalled): find it again
        path = _find(recheck=True)[0]
        stat = stat_id(path)
    known = _builds.get(path)
    if known is None or known[0] != stat:
        known = _builds[path] = (stat, toolchain.fingerprint(path))
    return known[1]


def found() -> tuple[str, str]:
    """(file, how it was found) of the nvJitLink that links now, loaded only where neither
    ``CUDALOAD_LIBNVJITLINK`` nor a wheel names a file.  Raises the loader's errors."""
    return _find(recheck=True)


def forget_found() -> None:
    """Find the file again at the next use (``status(refresh=True)``: a wheel installed since)."""
    _found.clear()


lifetime.on_forget(forget_found)


def load() -> str:
    """Load nvJitLink, then :func:`identity` of the file that loaded."""
    _loader.nvjitlink()
    return identity()


def link(compiled, name: str, arch: str, kind: str) -> tuple[bytes, str]:
    """(code, log) of NVRTC's ``compiled`` LTO IR of program ``name`` linked for ``arch`` as
    ``kind``: the log holds NVRTC's warnings, then nvJitLink's."""
    from ...bindings import nvjitlink  # deferred: only this path needs it

    code, notes = nvjitlink.link(compiled.code, name, arch, kind)
    return code, "\n".join(part for part in (compiled.log, notes) if part)


def _find(recheck: bool) -> tuple[str, str]:
    loaded = _loader.loaded("nvjitlink")
    if isinstance(loaded, _loader.Library):
        return loaded.path, loaded.found_via
    override = _loader.toolkit_override("nvjitlink")
    known = _found.get(override)
    if known is None or (recheck and not os.path.isfile(known[0])):
        path = override or _sites.library("nvjitlink")
        if path is not None and os.path.isfile(path):
            known = (path, "CUDALOAD_LIBNVJITLINK" if override else _loader.FROM_WHEEL)
        else:  # searched by cuda.pathfinder, or the loader's error
            library = _loader.nvjitlink()
            known = (library.path, library.found_via)
        _found[override] = known
    return known
