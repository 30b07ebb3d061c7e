"""The files a CUDA source pulls in with ``#include``: from include paths, and from package data.

Two uses, one scanner: the contents of every user file a program includes belong in its cache key
(an edited header must not give back the old kernel), and a kernel shipped as package data has its
sibling files read into in-memory headers, so NVRTC never needs a file-system path into the package.
Only ``#include`` lines are followed; a header that is not found here (CUDA's own, or one behind a
macro) is left to NVRTC.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat

__all__ = ["scan", "computed", "from_paths", "from_package"]

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.M)
# #include MACRO (not #include_next, not "..." or <...>)
_COMPUTED = re.compile(r'^[ \t]*#[ \t]*include[ \t]+[A-Za-z_]', re.M)
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def scan(text: str) -> list[tuple[bool, str]]:
    """(quoted, name) of each ``#include`` line of ``text``, in order."""
    return [(m.group(1) == '"', m.group(2).strip()) for m in _INCLUDE.finditer(text)]


def computed(texts) -> bool:
    """Whether any of ``texts`` includes a file named by a macro, which only NVRTC's
    preprocessor can resolve (commented-out lines aside)."""
    return any(_COMPUTED.search(_COMMENT.sub("", text)) for text in texts if "include" in text)


def from_paths(source: str, headers: dict, include_paths, base_dir: str | None = None
               ) -> list[tuple[str, bytes]]:
    """(path, contents) of each file reachable from ``source`` through ``include_paths``.

    Quoted includes are looked up beside the including file first, as compilers do.  Unreadable
    files are skipped: NVRTC reports them.
    """
    dirs = [os.path.abspath(p) for p in include_paths]
    found: dict[str, bytes] = {}
    pending = [(source, base_dir)] + [(text, None) for text in headers.values()]
    while pending:
        text, here = pending.pop()
        for quoted, name in scan(text):
            if name in headers:
                continue
            for folder in ([here] if quoted and here else []) + dirs:
                path = os.path.normpath(os.path.join(folder, name))
                if path in found:
                    break
                try:
                    if not stat.S_ISREG(os.stat(path).st_mode):
                        continue  # a pipe or /dev/zero would block or never end: NVRTC's to judge
                    with open(path, "rb") as f:
                        data = f.read()
                except (OSError, ValueError):  # ValueError: a NUL in the name
                    continue
                found[path] = data
                pending.append((data.decode(errors="replace"), os.path.dirname(path)))
                break
    return sorted(found.items())


def from_package(package: str, resource: str) -> tuple[str, dict[str, str]]:
    """The text of ``resource`` in ``package`` and, as in-memory headers, the sibling files it includes.

    Raises FileNotFoundError when the resource is missing.
    """
    from importlib import resources

    root = resources.files(package)

    def read(relative: str) -> str | None:
        node = root.joinpath(*relative.split("/"))
        if not node.is_file():
            return None
        try:
            return node.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{package}:{relative} is not UTF-8 text (byte "
                             f"0x{exc.object[exc.start]:02x} at offset {exc.start}); save it as "
                             "UTF-8") from None

    text = read(resource)
    if text is None:
        raise FileNotFoundError(f"no resource {resource!r} in package {package!r}")
    headers: dict[str, str] = {}
    pending = [(text, posixpath.dirname(resource))]
    while pending:
        body, here = pending.pop()
        for _quoted, name in scan(body):
            if name in headers:
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
