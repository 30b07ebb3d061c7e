"""Include trees for tests/test_include_oracle.py: how one is described, drawn, built and judged.

An *example* is a JSON-able dict (the files of tests/include_regressions/ are such dicts):

- ``files``: {path: text}, ``links``: {path: target} (relative symbolic links), ``dirs``: [path],
  every path relative to a scratch root; ``{ROOT}`` in any text, target, name or option stands
  for that root's absolute path.  The tree ``A`` is where the program is compiled (``cwd``,
  normally ``A/w``); ``B``, when present, is a second tree of the same names that an edit may
  move the current folder to.
- ``source``, ``name``, ``headers`` (in-memory), ``include_paths``, ``options``, ``std``: the
  arguments of cudaload.Program.
- ``edits``: what changes between the first compile and the second, in order: ``write`` (path,
  text; a path ``@absent:K`` is the K-th path the scan found absent, "where the search looks
  first"), ``remove``, ``link`` (path, target), ``mkdir`` (a folder where a file was),
  ``chdir`` (to).

Every text holds exactly one marker, ``__device__ int marker_N;``, guarded so that a text read
twice defines it once: the markers in NVRTC's PTX name the texts it read.  A ``__has_include``
answer shows as ``has_N_J``.

Imports of cudaload: none (the test module compiles).
"""

from __future__ import annotations

import errno
import itertools
import json
import os
import re
import shutil

from hypothesis import strategies as st

KERNEL = 'extern "C" __global__ void k(int *p) { *p = 1; }\n'

# The layout of each tree: folders (relative to the tree), the spots a header may be written
# at, link slots with their possible targets, and a fallback folder searched last that holds
# every include name, so that a generated include almost never misses (a miss is a discard).
FOLDERS = ("w", "w/a", "w/a/b", "w/inc", "w/inc/sub", "w/sub", "up", "up/x", "up/x/y", "up/b")
BASENAMES = ("h.h", "g.h", "p.h")
SPOTS = tuple(f"{d}/{b}" for d in FOLDERS for b in BASENAMES)
LINK_SLOTS = {
    "w/link": ("a/b", "../up/x", "inc/sub", "a", "missing", "link"),  # "link": a loop
    "w/sub": ("inc/sub", "../up/x/y", "a/b"),
    "up/x/y": ("../../w/a", "../../w/inc", "../b"),
    "w/l.h": ("a/h.h", "inc/g.h", "../up/h.h", "sub/h.h", "missing.h"),
    "w/inc/g.h": ("../a/h.h", "sub/p.h", "../../up/x/g.h"),
}
FALLBACK = "fb/f1/f2"
FALLBACK_FILES = tuple(
    [f"{FALLBACK}/{b}" for b in BASENAMES + ("l.h",)]
    + [f"{FALLBACK}/{d}/{b}" for d in ("sub", "b", "x", "y", "link") for b in BASENAMES]
    + [f"fb/f1/{b}" for b in BASENAMES] + [f"fb/{b}" for b in BASENAMES])

# Include names as written in #include lines, relative ones mostly: ".." and folder links are
# where a lexical normalisation and the kernel's resolution part.
NAMES = ("h.h", "g.h", "p.h", "l.h", "sub/h.h", "b/h.h", "x/g.h", "y/h.h", "link/h.h", "link/g.h",
         "../h.h", "../g.h", "../../h.h", "./h.h", "sub/../g.h", "link/../h.h", "b/../../h.h",
         "link/../../g.h", "{ROOT}/A/w/a/h.h", "{ROOT}/A/fb/f1/f2/sub/../g.h")
INCLUDE_PATHS = ("inc", "a", "a/b", "sub", "link", "link/..", "inc/sub/..", "../up", "../up/x",
                 "../up/x/..", ".", "./a", "a/../inc", "{ROOT}/A/up", "up/x/y/..")
SOURCE_NAMES = ("k.cu", "a/k.cu", "link/k.cu", "sub/k.cu", "../up/k.cu", "./k.cu",
                "{ROOT}/A/w/inc/k.cu")
STDS = ("c++03", "c++11", "c++14", "c++17", "c++20")
TRIGRAPH_STDS = ("c++03", "c++11", "c++14")  # NVRTC replaces trigraphs in these only

LEADS = ("", "", "", " ", "\t", "\f", "\v", "\r", " \t ", "/**/", "/* c */ ")
MIDS = ("", "", " ", "\t", "\f", "\v", "\r", "/**/", "\\\n", " /* c */ ")
SEPS = (" ", " ", "", "\t", "\f", "\v", "\r", "/**/", "\\\n", " \\\n ")
TRAILS = ("", "", " // c", " /* c */", "\t", "\f", " ", " x")  # " x": a warning only
# What may stand around an include line: (before, after).  "trigraph_comment": a line comment
# ending in ??/, which C++14 and older splice the include into; "has": __has_include of it.
WRAPS = {
    "": ("", ""), "if0": ("#if 0\n", "#endif\n"), "ifdef_undef": ("#ifdef UNDEF_X\n", "#endif\n"),
    "ifdef_def": ("#ifdef DEF_X\n", "#endif\n"), "ifndef_def": ("#ifndef DEF_X\n", "#endif\n"),
    "if1": ("#if 1\n", "#endif\n"), "elif": ("#if 0\n#elif 1\n", "#endif\n"),
    "has": (None, "#endif\n"), "line_comment": ("// ", ""), "block_comment": ("/* c\n */ ", ""),
    "trigraph_comment": ("// c ??/\n", "")}
WRAP_WEIGHTS = ("",) * 4 + tuple(WRAPS)
GUARDS = ("full", "full", "once", "once_guard", "marker_only")


class Discard(Exception):
    """NVRTC rejected the tree before any edit: the example says nothing about the cache."""


# ---- texts ---------------------------------------------------------------------------------


def once_decl(name: str) -> str:
    """A device variable declared once however often its text is read."""
    return f"#ifndef D_{name}\n#define D_{name}\n__device__ int {name};\n#endif\n"


def render(n: int, directives, guard: str = "full", bom: bool = False, crlf: bool = False,
           pad: int = 0) -> str:
    """The text with marker ``n`` followed by ``directives`` (each ending in a newline).

    NVRTC 13 rejects a UTF-8 byte order mark ("unrecognized token") in a file and in an
    in-memory text alike, so the examples drawn have none (``bom`` is for saved cases)."""
    body = once_decl(f"marker_{n}") + "".join(directives) + ("//" + "." * pad + "\n" if pad else "")
    if guard == "full":
        body = f"#ifndef G_{n}\n#define G_{n}\n{body}#endif\n"
    elif guard == "once":
        body = "#pragma once\n" + body
    elif guard == "once_guard":
        body = f"#pragma once\n#ifndef G_{n}\n#define G_{n}\n{body}#endif\n"
    if crlf:
        body = body.replace("\n", "\r\n")
    return ("\ufeff" if bom else "") + body


@st.composite
def directive(draw, n: int, j: int, std: str) -> str:
    """One include (or ``__has_include`` probe) of text ``n``, the ``j``-th, written one of the
    many ways the preprocessor takes it, maybe inside a conditional or a comment."""
    name = draw(st.sampled_from(NAMES))
    if "/" in name and draw(st.integers(0, 7)) == 0:  # a splice inside the name
        at = name.index("/")
        name = name[:at] + "\\\n" + name[at:]
    operand = f"<{name}>" if draw(st.integers(0, 3)) == 0 else f'"{name}"'
    if draw(st.integers(0, 5)) == 0:  # a probe, not an include
        probe = f"__has_include({operand})"
        if draw(st.booleans()):
            probe = f"defined(__has_include) && {probe}"
        return f"#if {probe}\n{once_decl(f'has_{n}_{j}')}#endif\n"
    mark = draw(st.sampled_from(("#", "#", "#", "%:", "??=" if std in TRIGRAPH_STDS else "#")))
    word = draw(st.sampled_from(("include",) * 8 + ("include_next", "inc\\\nlude")))
    lead, mid = draw(st.sampled_from(LEADS)), draw(st.sampled_from(MIDS))
    sep, trail = draw(st.sampled_from(SEPS)), draw(st.sampled_from(TRAILS))
    prefix, probed = "", operand
    if draw(st.integers(0, 11)) == 0:  # named by a macro: the scan cannot know it for certain
        prefix = f"#define HN_{n}_{j} {operand}\n"
        operand = probed = f"HN_{n}_{j}"
        if sep in ("", "\\\n"):  # "#includeHN" would be another directive
            sep = " "
    line = f"{lead}{mark}{mid}{word}{sep}{operand}{trail}\n"
    wrap = draw(st.sampled_from(WRAP_WEIGHTS))
    before, after = WRAPS[wrap]
    if wrap == "has":
        before = f"#if __has_include({probed})\n"
    return prefix + before + line + after


class Ids:
    """Marker numbers, unique within an example."""

    def __init__(self, start: int = 1):
        self.next = itertools.count(start)

    def __call__(self) -> int:
        return next(self.next)


@st.composite
def text(draw, ids: Ids, std: str, max_directives: int = 4, guard: str | None = None) -> str:
    n = ids()
    count = draw(st.integers(0, max_directives))
    return render(n, [draw(directive(n, j, std)) for j in range(count)],
                  guard=guard or draw(st.sampled_from(GUARDS)),
                  crlf=draw(st.integers(0, 5)) == 0)


def _under_link(path: str, links) -> bool:
    return any(path == link or path.startswith(link + "/") for link in links)


@st.composite
def tree(draw, prefix: str, ids: Ids, std: str) -> tuple[dict, dict]:
    """(files, links) of one tree under ``prefix``: a few headers at the spots, some links, and
    the fallback folder's files."""
    links = {}
    for slot, targets in LINK_SLOTS.items():
        if draw(st.integers(0, 2)) == 0:
            links[f"{prefix}/{slot}"] = draw(st.sampled_from(targets))
    spots = draw(st.lists(st.sampled_from(SPOTS), min_size=1, max_size=8, unique=True))
    files = {f"{prefix}/{spot}": draw(text(ids, std)) for spot in spots
             if not _under_link(f"{prefix}/{spot}", links)}
    for path in FALLBACK_FILES:  # found last: no includes of their own, nothing to miss
        files[f"{prefix}/{path}"] = render(ids(), [])
    return files, links


@st.composite
def options(draw) -> tuple[list, list]:
    """(include_paths, options): -I in each spelling, a pre-include, --no-source-include,
    a macro, and the fallback folder last."""
    include_paths = draw(st.lists(st.sampled_from(INCLUDE_PATHS), max_size=3))
    spellings = ("-I{}", "--include-path={}", "-I={}")
    opts = [draw(st.sampled_from(spellings)).format(p)
            for p in draw(st.lists(st.sampled_from(INCLUDE_PATHS), max_size=2))]
    if draw(st.booleans()):
        opts.append("-DDEF_X")
    if draw(st.integers(0, 3)) == 0:
        opts.append(draw(st.sampled_from(("--pre-include={}", "-include={}"))).format(
            draw(st.sampled_from(NAMES[:8] + NAMES[-2:]))))
    if draw(st.integers(0, 4)) == 0:
        opts.append(draw(st.sampled_from(("--no-source-include", "-no-source-include"))))
    if draw(st.integers(0, 19)):
        opts.append(draw(st.sampled_from(spellings)).format("../" + FALLBACK))
    opts = draw(st.permutations(opts[:-1])) + opts[-1:] if opts else opts
    return include_paths, list(opts)


@st.composite
def edits(draw, files: dict, links: dict, ids: Ids, std: str, has_b: bool) -> list:
    out: list[dict] = []
    movable = sorted(p for p in files if p.startswith("A/") and "/fb/" not in p)
    slots = [f"A/{s}" for s in LINK_SLOTS]
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(("write", "write", "create", "absent", "remove", "link",
                                   "mkdir") + (("chdir",) if has_b else ())))
        if op == "write" and movable:  # an edit of a file: its marker and size change
            n = ids()
            out.append({"op": "write", "path": draw(st.sampled_from(movable)),
                        "text": render(n, [draw(directive(n, 0, std))] if draw(st.booleans())
                                       else [], pad=n % 7 + 1)})
        elif op in ("create", "absent", "write"):
            path = (f"@absent:{draw(st.integers(0, 30))}" if op == "absent"
                    else "A/" + draw(st.sampled_from(SPOTS + ("w/link/h.h", "w/sub/g.h"))))
            out.append({"op": "write", "path": path, "text": draw(text(ids, std, 2))})
        elif op == "remove":
            pool = movable + sorted(links)
            if pool:
                out.append({"op": "remove", "path": draw(st.sampled_from(pool))})
        elif op == "link":
            slot = draw(st.sampled_from(slots))
            out.append({"op": "link", "path": slot,
                        "target": draw(st.sampled_from(LINK_SLOTS[slot[2:]]))})
        elif op == "mkdir" and movable:
            out.append({"op": "mkdir", "path": draw(st.sampled_from(movable))})
        elif op == "chdir":
            out.append({"op": "chdir", "to": "B/w"})
    return out


@st.composite
def examples(draw) -> dict:
    std = draw(st.sampled_from(STDS))
    ids = Ids()
    files, links = draw(tree("A", ids, std))
    has_b = draw(st.integers(0, 3)) == 0
    if has_b:
        more_files, more_links = draw(tree("B", ids, std))
        files.update(more_files)
        links.update(more_links)
    headers = {}
    for name in draw(st.lists(st.sampled_from(NAMES[:12]), max_size=2, unique=True)):
        headers[name] = draw(text(ids, std, 3))
    include_paths, opts = draw(options())
    source = draw(text(ids, std, 5)) + KERNEL
    return {"files": files, "links": links, "dirs": [], "source": source,
            "name": draw(st.sampled_from(SOURCE_NAMES)), "headers": headers,
            "include_paths": include_paths, "options": opts, "std": std, "cwd": "A/w",
            "edits": draw(edits(files, links, ids, std, has_b))}


# ---- building and judging ------------------------------------------------------------------


def fill(value, root: str):
    """``value`` with ``{ROOT}`` replaced by ``root`` in every string."""
    if isinstance(value, str):
        return value.replace("{ROOT}", root)
    if isinstance(value, list):
        return [fill(v, root) for v in value]
    if isinstance(value, dict):
        return {fill(k, root): fill(v, root) for k, v in value.items()}
    return value


def _write(path: str, data: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(data)


def _clear(path: str) -> None:
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)


def build(example: dict, root: str) -> dict:
    """Make the example's trees under ``root``; return {marker number: (st_dev, st_ino)}."""
    for tree_name in ("A", "B"):
        for folder in FOLDERS:
            os.makedirs(os.path.join(root, tree_name, folder), exist_ok=True)
    for path in example["dirs"]:
        os.makedirs(os.path.join(root, path), exist_ok=True)
    for path, target in example["links"].items():
        full = os.path.join(root, path)
        _clear(full)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        os.symlink(target, full)
    where = {}
    for path, data in example["files"].items():
        full = os.path.join(root, path)
        _write(full, data)
        st_ = os.stat(full)
        where[marker(data)] = (st_.st_dev, st_.st_ino)
    return where


def marker(data: str) -> int:
    return int(re.search(r"marker_(\d+)", data).group(1))


def unfill(value, root: str):
    """:func:`fill` undone: ``root`` in every string back to ``{ROOT}``."""
    return json.loads(json.dumps(value).replace(json.dumps(root)[1:-1], "{ROOT}"))


def markers(ptx: bytes) -> list[str]:
    """The markers and ``__has_include`` answers in PTX, sorted."""
    return sorted(set(re.findall(r"\b(?:marker|has)_\d+(?:_\d+)?\b", ptx.decode())))


def marker_numbers(ptx: bytes) -> list[int]:
    """The numbers of the texts whose markers are in PTX: the texts NVRTC read."""
    return sorted({int(n) for n in re.findall(r"\bmarker_(\d+)\b", ptx.decode())})


def path_of(example: dict, n: int) -> str:
    """The file of the example whose text has marker ``n``."""
    return next(path for path, data in example["files"].items() if marker(data) == n)


# What an edit meets when its path runs through a dangling link, a link loop or a folder
_EDIT_MISSES = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EEXIST, errno.EISDIR, errno.ELOOP})


def apply(edit: dict, root: str, absent: list[str]) -> dict:
    """Make one edit; return it as made (an ``@absent:K`` path is named)."""
    op = edit["op"]
    if op == "chdir":
        os.chdir(os.path.join(root, edit["to"]))
        return edit
    path = edit["path"]
    if path.startswith("@absent:"):
        if not absent:
            return {"op": "none"}
        path = os.path.relpath(absent[int(path.split(":")[1]) % len(absent)], root)
    full = os.path.join(root, path)
    made = dict(edit, path=path)
    try:
        if op == "write":
            if os.path.isdir(full) and not os.path.islink(full):
                shutil.rmtree(full)
            _write(full, edit["text"])
        elif op == "remove":
            _clear(full)
        elif op == "link":
            _clear(full)
            os.symlink(edit["target"], full)
        elif op == "mkdir":
            _clear(full)
            os.makedirs(full)
    except OSError as exc:  # e.g. a path under a dangling link: the edit does nothing
        if exc.errno not in _EDIT_MISSES:
            raise
        return {"op": "none", "was": made}
    return made
