"""The files a CUDA source pulls in with ``#include``, found the way NVRTC finds them.

Two uses.  The cache key: NVRTC has no dependency output, so :func:`resolve` repeats NVRTC's own
search at ``compile()`` time and reports every path that search looks at, with its state (the
sha256 of a file it would read, or that nothing readable is there), so that an edited, added or
shadowing header changes the key.  And package data: a kernel shipped in a package has its sibling
files read into in-memory headers (:func:`from_package`), so NVRTC never needs a path into it.

NVRTC's search, as observed on NVRTC 12 and 13 and followed here:

- an in-memory header whose name is the include's name exactly as written wins, from any file;
- ``"name"``: the folder of the including file, then each ``-I`` folder in order; the program's
  own folder is that of its name taken from the current folder at ``compile()`` time, and an
  in-memory header's is that of its name, likewise; a pre-included file's is the current folder;
  with ``--no-source-include``, no file's own folder is searched (a pre-included file is still
  looked for in the current folder first);
- ``<name>``: each ``-I`` folder in order (the current folder is not searched);
- ``#include_next``: the ``-I`` folders after the one the including file was found in;
- only regular files count: a folder of that name is passed over.

The scan (_directives.py) reads directives after line splices are joined and comments removed
(``#include /**/ "a.h"`` and ``#include \\`` + newline + ``"a.h"`` are includes) and also takes
``__has_include``, whose answer depends on the same search.  It over-approximates where that is
safe: includes in ``#if 0``, in block comments or in raw strings are followed too, which can only
make the key change more often.  What it cannot know for certain, an include named by a macro,
makes the result :attr:`Inputs.includes_known` false: such a program is not kept on disk.

Files under the toolchain's own header folders belong to the toolchain's identity and are not
hashed; their includes are followed only when a user include folder, searched before them, could
shadow one of them.
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat

from ._directives import NOTHING_READ, Inputs, only_toolchain, scan
from .._prepare import sha256
from ..options import include_inputs, searches_source_folder

__all__ = ["Inputs", "NOTHING_READ", "resolve", "scan", "from_package", "not_utf8", "still_valid",
           "watching", "searched_folders"]

# A header this large is no header: reading it to hash it would take the process's memory.
MAX_HEADER_BYTES = 256 << 20


def still_valid(stamps) -> bool:
    """Whether the paths of a :attr:`Inputs.stamps` look as they did (same current folder, same
    ``stat`` of each path).  A file rewritten within one timestamp tick with the same size and
    inode would pass; ccache's direct mode accepts the same."""
    if not stamps:
        return True
    cwd, paths = stamps
    try:
        if os.getcwd() != cwd:
            return False
    except OSError:
        return False
    return all(_signature(path) == sig for path, sig in paths)


def watching(stamps, paths, folders):
    """``stamps`` that also checks ``paths`` (files NVRTC read that the path states lack) as they
    are now and, since the search that found them is not known, every folder where an include
    naming a trailing part of one of them would be looked up first: ``folders`` (where the
    program's includes are searched) and the folders of ``paths`` themselves.  A folder is
    checked by its own modification time, which a file made or removed in it changes."""
    if not paths:
        return stamps
    cwd, known = stamps or (os.getcwd(), ())
    searched = {*folders, *(os.path.dirname(path) for path in paths)}
    watched = {}
    for path in paths:
        parts = path.strip(os.sep).split(os.sep)
        for cut in range(1, len(parts)):  # "a/b/h.h" may be the include "h.h" or "b/h.h" ...
            tail = os.sep.join(parts[cut:-1])
            for folder in searched:
                here = os.path.join(folder, tail) if tail else folder
                watched.setdefault(here + os.sep, _folder_signature(here))
    return cwd, (*known, *((path, _signature(path)) for path in paths), *watched.items())


def _folder_signature(folder: str):
    try:
        st = os.stat(folder)
    except OSError as exc:
        return ("error", exc.errno)
    return ("folder", st.st_ino, st.st_mtime_ns)


def _signature(path: str):
    if path.endswith(os.sep):  # a folder watched by watching()
        return _folder_signature(path)
    try:
        return _signature_of(os.stat(path))
    except OSError as exc:
        return ("error", exc.errno)
    except ValueError:  # a NUL in the name: no file can have it
        return ("error", errno.ENOENT)


def _signature_of(st):
    if stat.S_ISDIR(st.st_mode):
        return ("dir",)
    return (stat.S_IFMT(st.st_mode), st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns,
            st.st_ctime_ns)


_toolchain_scans: dict[str, tuple] = {}  # path -> scan(): the toolchain's files do not change


def resolve(source: str, name: str, headers: dict, options, toolchain_dirs) -> Inputs:
    """Follow NVRTC's search from ``source`` (compiled as ``name`` with in-memory ``headers`` and
    the option list ``options``, then ``-I`` of each of ``toolchain_dirs``) in the current folder.

    Raises ValueError when a file NVRTC would open is not a regular file (a FIFO or a device would
    block NVRTC or never end) or is too large to be a header.
    """
    quick = only_toolchain(source, headers, options)
    if quick is not None:
        return NOTHING_READ[quick]
    user_folders, pre_included = include_inputs(options)
    cwd = os.getcwd()
    search = _Search([_join(cwd, d) for d in user_folders],
                     [os.path.normpath(d) for d in toolchain_dirs], headers,
                     searches_source_folder(options))
    search.add(scan(source), search.folder_of(_join(cwd, name)))
    # Every in-memory header is scanned, reached or not: one a toolchain header includes is not
    # seen when toolchain headers are not followed.
    for header_name, text in headers.items():
        search.add(scan(text), search.folder_of(_join(cwd, header_name)))
    # A pre-included file is looked for in the current folder first, whatever the options.
    search.add((tuple(("include", True, f) for f in pre_included), False), cwd)
    search.run()
    path_states, known = search.path_states, search.includes_known
    looked = sorted(path_states.items())
    # The stamps are the stat each path had when it was looked at (a file's before it was read),
    # so a file changed after that is seen as changed, never taken for what was read.
    stamps = (cwd, tuple((path, signature) for path, (_state, signature) in looked)) \
        if looked else ()
    return Inputs(tuple((path, state) for path, (state, _sig) in looked), stamps, known)


class _Search:
    """One run of NVRTC's search (see the module docstring): the folders it looks in, each path it
    looked at with its state (``path_states``), and the texts still to scan (``pending``: scan() of
    a text, folder of the including file or None where NVRTC does not look there, index in
    ``dirs`` where it was found or -1)."""

    def __init__(self, user_dirs: list[str], tc_dirs: list[str], headers: dict, beside: bool):
        self.dirs, self.n_user, self.tc_dirs = user_dirs + tc_dirs, len(user_dirs), tc_dirs
        self.headers = headers
        # With --no-source-include no include looks beside the file that has it, whichever
        # file it is.
        self.beside = beside
        self.path_states: dict[str, tuple] = {}  # path -> (state, signature when looked at)
        self.includes_known = True
        self.seen: set = set()
        self.pending: list[tuple[tuple, str | None, int]] = []

    def folder_of(self, path: str) -> str | None:
        return os.path.dirname(path) if self.beside else None

    def add(self, scanned, here: str | None, index: int = -1) -> None:
        self.pending.append((scanned, here, index))

    def run(self) -> None:
        while self.pending:
            (includes, computed), here, index = self.pending.pop()
            self.includes_known = self.includes_known and not computed
            for kind, quoted, include in includes:
                if include in self.headers and kind != "include_next":
                    continue  # NVRTC takes the in-memory header, scanned already
                self._find(kind, include, self._candidates(kind, quoted, include, here, index))

    def _candidates(self, kind: str, quoted: bool, include: str, here: str | None,
                    index: int) -> list[tuple[str | None, int]]:
        """Where NVRTC looks for ``include``, in order: (folder, index in dirs or -1)."""
        if os.path.isabs(include):
            return [(None, -1)]
        start = index + 1 if kind == "include_next" and index >= 0 else 0
        first: list[tuple[str | None, int]] = [(here, -1)] if quoted and here is not None and (
            kind != "include_next" or index < 0) else []
        return first + [(self.dirs[i], i) for i in range(start, len(self.dirs))]

    def _find(self, kind: str, include: str, candidates) -> None:
        """Look in each candidate folder until ``include`` is found there; follow what it
        includes (a probe's file is looked for, not read)."""
        for folder, where in candidates:
            path = _join(folder if folder is not None else "", include)
            scanned, data = None, None
            if (0 <= where and where >= self.n_user) or (where < 0 and _under(path, self.tc_dirs)):
                if not self.n_user:
                    return  # the rest of the search is the toolchain's: its identity covers it
                scanned = _toolchain_file(path)
                if scanned is None:
                    continue
            else:
                state, data, signature = _look(path, include)
                self.path_states[path] = (state, signature)
                if data is None:
                    continue
            if kind != "probe" and path not in self.seen:
                self.seen.add(path)
                if scanned is None:  # a user file, read: scanned now
                    scanned = scan(data.decode(errors="replace"))  # type: ignore[union-attr]
                self.pending.append((scanned, self.folder_of(path), where))
            return


def _join(folder: str, name: str) -> str:
    """``name`` in ``folder`` as the kernel finds it: "." and doubled separators go, but ".." stays,
    since after a symbolic link it leads to the link target's parent, not the link's."""
    path = os.path.join(folder, name)
    if ".." not in path:
        return os.path.normpath(path)
    parts = [p for p in path.split(os.sep) if p not in ("", ".")]
    return (os.sep if path.startswith(os.sep) else "") + os.sep.join(parts)


def searched_folders(name: str, headers, options) -> list[str]:
    """The folders NVRTC searches first for a program's includes, in the current folder: the
    program's own, each in-memory header's, the current folder and each ``-I`` folder."""
    cwd = os.getcwd()
    return [os.path.dirname(_join(cwd, name)), cwd,
            *(os.path.dirname(_join(cwd, h)) for h in headers),
            *(_join(cwd, d) for d in include_inputs(options)[0])]


def _under(path: str, folders) -> bool:
    if ".." in path:  # where it leads depends on the links on its way
        path = os.path.realpath(path)
    return any(path.startswith(folder.rstrip(os.sep) + os.sep) for folder in folders)


def _toolchain_file(path: str):
    """:func:`scan` of a regular file in the toolchain's folders, or None where there is none
    (remembered per process: the toolchain's identity covers its files)."""
    cached = _toolchain_scans.get(path)
    if cached is None:
        try:
            with open(path, "rb") as f:
                if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                    raise OSError(errno.EINVAL, "not a regular file")
                cached = (scan(f.read().decode(errors="replace")),)
        except (OSError, ValueError):
            cached = (None,)
        _toolchain_scans[path] = cached
    return cached[0]


def _look(path: str, include: str) -> tuple[str, bytes | None, tuple]:
    """(state, contents or None, :func:`_signature`) of a candidate path outside the toolchain."""
    try:
        st = os.stat(path)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return "absent", None, ("error", exc.errno)
        return f"error:{errno.errorcode.get(exc.errno or 0, exc.errno)}", None, ("error", exc.errno)
    except ValueError:  # a NUL in the name: no file can have it
        return "absent", None, ("error", errno.ENOENT)
    if stat.S_ISDIR(st.st_mode):
        return "dir", None, ("dir",)
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"#include {include!r} names {path}, which is not a regular file (a "
                         "FIFO, socket or device): NVRTC would block or read it forever. Next "
                         "step: remove it, or put the header it should be in its place")
    if st.st_size > MAX_HEADER_BYTES:
        raise ValueError(f"#include {include!r} names {path}, {st.st_size} bytes: too large for a "
                         f"header (limit {MAX_HEADER_BYTES}). Next step: include the right file")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        return f"error:{errno.errorcode.get(exc.errno or 0, exc.errno)}", None, ("error", exc.errno)
    with os.fdopen(fd, "rb") as f:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):  # swapped for something else since the stat
            return "error:EINVAL", None, _signature_of(opened)
        try:
            data = f.read(MAX_HEADER_BYTES + 1)
        except OSError as exc:  # EIO from /proc/self/mem, a failing disk: NVRTC will say more
            return (f"error:{errno.errorcode.get(exc.errno or 0, exc.errno)}", None,
                    _signature_of(opened))
    return sha256(data).hexdigest(), data, _signature_of(opened)


def not_utf8(where: str, exc: UnicodeDecodeError) -> ValueError:
    """The error for CUDA source in ``where`` that is not UTF-8 text."""
    return ValueError(f"{where} is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset "
                      f"{exc.start}); save it as UTF-8")


def from_package(package: str, resource: str,
                 files: list | None = None) -> tuple[str, dict[str, str]]:
    """The text of ``resource`` in ``package`` and, as in-memory headers, the sibling files it
    includes; each one read that is a file of the file system (not a member of a zip) is
    appended to ``files``, as its path.

    Raises FileNotFoundError when the resource is missing.
    """
    from importlib import resources  # deferred: only this path needs it

    root = resources.files(package)

    def read(relative: str) -> str | None:
        node = root.joinpath(*relative.split("/"))
        if not node.is_file():
            return None
        if files is not None and isinstance(node, os.PathLike):
            files.append(os.fspath(node))
        try:
            return node.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise not_utf8(f"{package}:{relative}", exc) from None

    text = read(resource)
    if text is None:
        raise FileNotFoundError(f"no resource {resource!r} in package {package!r}")
    headers: dict[str, str] = {}
    pending = [(text, posixpath.dirname(resource))]
    while pending:
        body, here = pending.pop()
        for kind, _quoted, name in scan(body)[0]:
            if kind == "probe" or name in headers:
                continue
            for candidate in (posixpath.join(here, name), name):
                candidate = posixpath.normpath(candidate)
                # Package data is named with "/" only: a "\\" or "C:" could leave the package
                # where the resource reader is a Windows path.
                if candidate.startswith("..") or posixpath.isabs(candidate) \
                        or "\\" in candidate or ":" in candidate:
                    continue
                content = read(candidate)
                if content is not None:
                    # NVRTC matches in-memory headers by the name as written in the #include line.
                    headers[name] = content
                    pending.append((content, posixpath.dirname(candidate)))
                    break
    return text, headers
