"""Which NVRTC and which CUDA header folders compile kernels, and their identity for the cache key.

Finding them costs: loading libnvrtc maps 140 MB, importing ``cuda.pathfinder`` takes about 65 ms.
A process whose kernels are all on disk should pay neither, so the identity of what was last used
(NVRTC's path, size, modification time, version, build fingerprint and supported archs; each header
folder's path and the stat of a version file in it) is remembered in ``toolchain.json`` in the
cache folder (_cache_folder.py; the kernel cache's modules are not needed for it) and revalidated
with ``os.stat``.  ``CUDALOAD_LIBNVRTC`` always wins: its file is the one checked.  Once NVRTC is
loaded in the process, the loaded library is the truth.

Imports of cudaload: _atomic and _file_lock (to write), _cache_folder, _headers, _log, _prepare
(sha256), _untrusted, lifetime, bindings (_loader, nvrtc).
"""

from __future__ import annotations

import os
import sys
import _thread
from _operator import itemgetter  # operator's own; the operator module costs a Program 0.3 ms

from . import _cache_folder
from .._base import _log, _untrusted, lifetime
from .includes._headers import HEADER_SETS as _HEADER_SETS, choose as _choose_headers, \
    find_meanwhile as _find_headers_meanwhile, identity as _header_identity, stat_id as _stat_id

__all__ = ["Toolchain", "current", "live", "header_dirs", "fingerprint"]

RECORD = "toolchain.json"
# Where an ELF library says which build it is: the ELF and program headers and, in the first or
# the last pages, the GNU build ID note (GNU ld writes it near the start; libnvrtc has it in its
# last 40 bytes).  Hashing 16 KiB from each end costs the interpreter's sha256 0.3 ms, where a MiB
# from each end cost a fresh process 6-9 ms of its first compile (reading, and importing
# hashlib, which loads OpenSSL).
_FINGERPRINT_SPAN = 16 << 10


class _Fields(tuple):
    """The fields of a Toolchain: a tuple with a name for each item, as collections.namedtuple
    makes one (importing collections cost a fresh process's first compile 1-2 ms)."""

    __slots__ = ()
    _fields = ("nvrtc_path", "version", "build", "archs", "headers", "found_via")

    def __new__(cls, nvrtc_path, version, build, archs, headers, found_via=""):
        return tuple.__new__(cls, (nvrtc_path, version, build, archs, headers, found_via))

    nvrtc_path = property(itemgetter(0))
    version = property(itemgetter(1))
    build = property(itemgetter(2))
    archs = property(itemgetter(3))
    headers = property(itemgetter(4))
    found_via = property(itemgetter(5))

    def __getnewargs__(self) -> tuple:  # pickled as its fields
        return tuple(self)

    def _replace(self, **changes):
        return type(self)(**{**dict(zip(self._fields, self)), **changes})

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(map('{}={!r}'.format, self._fields, self))})"


# A tuple, not a dataclass: the availability report builds one, and importing dataclasses
# alone costs several milliseconds of a report that should take a few.
class Toolchain(_Fields):
    """NVRTC's identity and the CUDA header folders passed to it.

    ``build`` is the file size plus sha256 of its first and last 16 KiB (it tells builds of one
    version apart); ``headers`` is ((name, path | None, stat identity as JSON | None), ...);
    ``found_via`` says how the loader found NVRTC and is not part of the key.
    """

    __slots__ = ()

    @property
    def key(self) -> str:
        return _key_of(self.version, self.build, self.headers)

    @property
    def include_options(self) -> tuple:
        return tuple(f"-I{path}" for _name, path, _ident in self.headers if path)

    def version_number(self) -> int:
        return self.version[0] * 1000 + self.version[1] * 10


_keys: dict[tuple, str] = {}  # (version, build, headers) -> key, for _key_of


def _key_of(version, build, headers) -> str:
    # Remembered: asked for on every cache miss; cold after NVRTC, it cost 20+ us
    found = _keys.get((version, build, headers))
    if found is None:
        from ._prepare import sha256  # deferred: only this path needs it

        found = sha256(_untrusted.dump_json(
            [list(version), build, [list(h) for h in headers]]).encode()).hexdigest()
        if len(_keys) >= 16:  # a few toolchains at most in one process
            _keys.clear()
        _keys[version, build, headers] = found
    return found


_lock = _thread.allocate_lock()
_live: Toolchain | None = None
_remembered: Toolchain | None = None
# What current() read of toolchain.json, for the probe of the same process (a first compile
# would read and parse the file twice otherwise); None until read, and after status(refresh=True).
_record: dict | None = None


def current() -> Toolchain:
    """The toolchain as remembered on disk when that still matches the files, else :func:`live`."""
    if _live is not None:
        return _live
    global _remembered, _record
    if _remembered is None and _in_use():
        _record = _read_record()
        _remembered = _from_record(_record)
        if _remembered is not None:
            _log_choice(_remembered, f"as remembered in {RECORD}, unchanged")
    return _remembered or live()


def live() -> Toolchain:
    """The toolchain of the NVRTC loaded now (loading it).  Raises the loader's errors."""
    global _live
    if _live is None:
        with _lock:
            if _live is None:
                _live = _probe()
    return _live


def header_dirs() -> list[tuple[str, str | None]]:
    """(name, folder or None) of each CUDA header set: what the status report shows."""
    return [(name, path) for name, path, _ident in current().headers]


def _selector() -> str:
    """Which remembered NVRTC applies: the override's, else the one a search from this Python
    environment found (environments share the cache folder, but each searches its own wheels)."""
    override = os.environ.get("CUDALOAD_LIBNVRTC")
    if override:
        return override
    # What a search depends on that may differ between processes of one environment has an
    # entry of its own, so that such processes do not take turns invalidating one entry.
    import site  # deferred: only this path needs it

    steering = [f"{name}={os.environ[name]}" for name in ("CUDA_HOME", "CUDA_PATH", "CONDA_PREFIX")
                if os.environ.get(name)]
    return " ".join(["search from", sys.prefix, *steering, "user site", site.getusersitepackages()])


def _search_stamp() -> list | None:
    """The state of the folders wheels are installed into (installing one changes them): a
    remembered NVRTC found elsewhere is not used once a wheel may have come."""
    if os.environ.get("CUDALOAD_LIBNVRTC"):
        return None
    import site  # deferred: only this path needs it

    folders = [*getattr(site, "getsitepackages", list)(), site.getusersitepackages()]
    return [[folder, _stat_id(folder)] for folder in folders]


_RECORD_MAX_BYTES = 1 << 20  # a few hundred bytes per environment
_RECORD_DEPTH = 8  # {"nvrtc": {env: {"search": [[folder, [stat]]]}}} is 6 deep


def _read_record() -> dict:
    """What ``toolchain.json`` holds, or {} when it is absent, damaged, anything but a regular
    file, not to be trusted (see _untrusted.py), or in a cache a group shares, which never names a
    library to load."""
    if _untrusted.shared():
        return {}
    try:
        data = _untrusted.read_regular(os.path.join(_cache_folder.configured().root, RECORD),
                                       _RECORD_MAX_BYTES, _untrusted.problem)
        record = _untrusted.load_json(data, _RECORD_DEPTH)
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def _entries(record: dict) -> dict:
    """The remembered NVRTC of each environment, a new dict: only entries of the shape
    :func:`_remember` writes whose header folders are to be trusted, so a damaged or planted one
    is forgotten, never an error."""
    found = record.get("nvrtc")
    if not isinstance(found, dict):
        return {}
    return {env: entry for env, entry in found.items()
            if isinstance(env, str) and _well_formed(entry) and
            not any(path and _untrusted.path_problem(path) for _n, path, _i in entry["headers"])}


def _path_text(value) -> bool:
    return isinstance(value, str) and bool(value) and "\0" not in value


def _ints(value, count: int | None = None) -> bool:
    return isinstance(value, list) and (count is None or len(value) == count) \
        and all(type(v) is int for v in value)


def _well_formed(entry) -> bool:
    if not isinstance(entry, dict):
        return False
    try:
        return (_path_text(entry["path"]) and (entry["stat"] is None or _ints(entry["stat"], 4))
                and _ints(entry["version"], 2) and isinstance(entry["build"], str)
                and _ints(entry["archs"]) and isinstance(entry.get("found_via", ""), str)
                and isinstance(entry["headers"], list)
                and all(isinstance(h, list) and len(h) == 3 and h[0] in _HEADER_SETS
                        and (h[1] is None or _path_text(h[1]))
                        and (h[2] is None or isinstance(h[2], str)) for h in entry["headers"]))
    except (KeyError, TypeError):  # TypeError: a header name that is a list
        return False


def _still_valid(entry) -> bool:
    """Whether a remembered NVRTC (an entry of :func:`_entries`, or None) is the file it was, is
    to be trusted as a library to load (it and its folder, where its builtins are), and a search
    would find nothing new."""
    if not entry or entry["stat"] is None:
        return False
    path = entry["path"]
    return (_stat_id(path) == entry["stat"] and _untrusted.path_problem(path) is None
            and _untrusted.path_problem(os.path.dirname(path) or ".") is None
            and entry.get("search") == _search_stamp())


def _from_record(record: dict) -> Toolchain | None:
    entry = _entries(record).get(_selector())
    if entry is None or not _still_valid(entry):
        return None
    headers = []
    for name, path, ident in entry["headers"]:
        if path is not None and _header_identity(name, path) != ident:
            return None
        headers.append((name, path, ident))
    return Toolchain(entry["path"], tuple(entry["version"]), entry["build"],
                     tuple(entry["archs"]), tuple(headers), entry.get("found_via", ""))


def _probe() -> Toolchain:
    from ..bindings import _loader, nvrtc  # deferred: only this path needs it

    record = (_record if _record is not None else _read_record()) if _in_use() else {}
    known = _entries(record).get(_selector())
    try:
        remembered = known["path"] if known and _still_valid(known) else None
    except (KeyError, TypeError):
        remembered = None
    # Remembered header folders are reused only with the NVRTC they were chosen for, and only
    # while no wheel has been installed since (one may bring a better matching set).
    headers = _known_headers(known) if remembered else None
    finding = None if headers is not None else _find_headers_meanwhile()
    library = _loader.nvrtc(remembered)
    path = library.path
    stat = _stat_id(path)
    if known and known.get("path") == path and known.get("stat") == stat:
        build = known["build"]
    else:
        build = fingerprint(path)
    if finding is not None:
        headers = _choose_headers(finding(), path, nvrtc.version())
    # Taken from the record, NVRTC keeps the description of where it was first found.
    found_via = known.get("found_via") if known and remembered and path == remembered else None
    tc = Toolchain(path, nvrtc.version(), build, tuple(nvrtc.supported_archs()), headers,
                   found_via or library.found_via)
    _log_choice(tc, "header folders searched for" if finding is not None
                else f"header folders as remembered in {RECORD}")
    if _in_use():
        _remember(record, tc, stat)
    return tc


def _in_use() -> bool:
    """Whether the cache folder is on and used by this process (not failed, to be trusted)."""
    place = _cache_folder.chosen()
    return place is not None and place.usable


def _log_choice(tc: Toolchain, how: str) -> None:
    if _log.enabled("toolchain"):
        folders = ", ".join(f"{name} {path or 'not found'}" for name, path, _ident in tc.headers)
        _log.debug("toolchain", "NVRTC %d.%d at %s (found via %s), %s: %s", *tc.version,
                   tc.nvrtc_path, tc.found_via, how, folders, nvrtc=tc.nvrtc_path,
                   headers=dict((name, path) for name, path, _ident in tc.headers))


def fingerprint(path: str) -> str:
    """Which build the library file ``path`` is: its size and the sha256 of both ends."""
    from ._prepare import sha256  # deferred: only this path needs it

    digest = sha256(size=2 * _FINGERPRINT_SPAN)
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        digest.update(f.read(_FINGERPRINT_SPAN))
        f.seek(max(0, size - _FINGERPRINT_SPAN))
        digest.update(f.read(_FINGERPRINT_SPAN))
    return f"{size}-{digest.hexdigest()[:32]}"


def _known_headers(known: dict | None) -> tuple | None:
    """The header folders remembered with this environment's NVRTC, when every one of them was
    found and is unchanged."""
    if known is None:
        return None
    try:
        entries = known["headers"]
        if not entries or any(path is None or _header_identity(name, path) != ident
                              for name, path, ident in entries):
            return None
        return tuple((name, path, ident) for name, path, ident in entries)
    except (KeyError, TypeError, ValueError):
        return None


def _remember(record: dict, tc: Toolchain, stat) -> None:
    # The header folders are remembered per environment, as NVRTC is: each finds its own wheels.
    entry = {"path": tc.nvrtc_path, "stat": stat, "version": list(tc.version), "build": tc.build,
             "archs": list(tc.archs), "found_via": tc.found_via,
             "headers": [list(h) for h in tc.headers], "search": _search_stamp()}
    if _untrusted.shared() or _entries(record).get(_selector()) == entry:
        return  # a cache a group shares never names a library to load
    place = _cache_folder.configured()
    root = place.root
    try:
        place.make()  # made private
        if not place.trusted and not place.judge_trust():
            return
        # deferred: only to write the record (reading it takes no lock)
        from .._base import _atomic, _file_lock

        # Read again under the lock: a process of another environment may have added its entry
        # since ``record`` was read, and writing ours over it would lose that one.
        with _file_lock.hold(os.path.join(root, RECORD + ".lock")):
            entries = _entries(_read_record())
            entries[_selector()] = entry
            _atomic.write_atomic(os.path.join(root, RECORD),
                                 _untrusted.dump_json({"nvrtc": entries}).encode())
    except OSError:
        pass  # only a speed-up for the next process; the cache reports an unusable folder itself


def _forget_remembered() -> None:
    # At status(refresh=True): read toolchain.json and check its files again at the next
    # current() (a wheel installed since, another process's newer record).  A loaded NVRTC stays
    # the truth.
    global _remembered, _record
    _remembered = _record = None


lifetime.on_forget(_forget_remembered)
