"""Which CUDA header folders a toolchain passes to NVRTC: found (cuda.pathfinder's choice, the
wheels of each site-packages, the toolkits the environment names) and chosen for an NVRTC.

Imports of cudaload: _untrusted, releases, bindings._sites.
"""

from __future__ import annotations

import os

from ..._base import _untrusted

__all__ = ["HEADER_SETS", "stat_id", "identity", "find", "choose", "find_meanwhile"]

# A file whose stat changes when the folder's headers are replaced by another release.
HEADER_SETS = {"cudart": "cuda_runtime_api.h", "cccl": os.path.join("cuda", "std", "version")}


def stat_id(path: str) -> list | None:
    """What says a file is the same one: with the inode and the change time, a file replaced
    or rewritten with its size and modification time kept (cp -p, rsync -t) is not."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]


def identity(name: str, path: str) -> str | None:
    """Part of every kernel's cache key: size and modification time only, so that an identical
    copy of the headers (an image layer, another host sharing the cache) keys the same."""
    folder, marker = stat_id(path), stat_id(os.path.join(path, HEADER_SETS[name]))
    return None if folder is None else _untrusted.dump_json([folder[1], marker and marker[:2]])


# Where wheels put each header set inside site-packages (CUDA 13, then CUDA 12 and older), and
# where a toolkit has it below its root (CUDA 13 moved CCCL into include/cccl).
_WHEEL_DIRS = {"cudart": ("nvidia/cu13/include", "nvidia/cuda_runtime/include"),
               "cccl": ("nvidia/cu13/include/cccl", "nvidia/cuda_cccl/include")}
_TOOLKIT_DIRS = {"cudart": ("include",), "cccl": ("include/cccl", "include")}
_TOOLKIT_ROOTS = ("CUDA_PATH", "CUDA_HOME", "CONDA_PREFIX")


def find(chosen: dict | None = None) -> dict:
    """Every folder holding each header set, in search order: cuda.pathfinder's choice (``chosen``
    when given: its answer found without it), then the wheels of each site-packages, then the
    toolkits CUDA_PATH, CUDA_HOME and CONDA_PREFIX name."""
    import site  # deferred: only this path needs it

    pathfinder = None
    if chosen is None:
        try:
            from cuda import pathfinder  # type: ignore[no-redef]  # deferred
        except ImportError:
            pass
    sites = [*getattr(site, "getsitepackages", list)(), site.getusersitepackages()]
    roots = [os.environ[name] for name in _TOOLKIT_ROOTS if os.environ.get(name)]
    found = {}
    for name in HEADER_SETS:
        try:
            first = [chosen[name]] if chosen else \
                [pathfinder.find_nvidia_header_directory(name)] if pathfinder else []
        except Exception:  # a header set pathfinder does not know is one we go without
            first = []
        found[name] = [*first, *(os.path.join(s, d) for s in sites for d in _WHEEL_DIRS[name]),
                       *(os.path.join(r, d) for r in roots for d in _TOOLKIT_DIRS[name])]
    return found


def choose(found: dict, nvrtc_path: str, nvrtc_version) -> tuple:
    """For each header set, the folder that belongs to this NVRTC: one of its CUDA major (of those,
    cudart nearest its version, not newer where possible, and the newest CCCL), the toolkit or
    wheel NVRTC itself comes from first among equals.  A set found only for another major is
    used all the same, and the report lists the mismatch with its fix."""
    from ..._base import releases  # deferred: only this path needs it

    own_root = os.path.dirname(os.path.dirname(os.path.abspath(nvrtc_path)))
    major, minor = nvrtc_version
    chosen = []
    for name, folders in found.items():
        mine = [os.path.join(own_root, d) for d in _TOOLKIT_DIRS[name]]
        best, best_rank, seen, tried = None, None, set(), set()
        for order, folder in enumerate([*mine, *folders]):
            # Each name once, and whether the set is there before realpath, which stats each
            # part of a path: the same folder comes from several searches, most are absent.
            if not folder or folder in tried or not os.path.isfile(
                    os.path.join(folder, HEADER_SETS[name])):
                continue
            tried.add(folder)
            real = os.path.realpath(folder)
            if real in seen:
                continue
            seen.add(real)
            release = releases.header_release(name, real)
            if release is None:
                rank = (False, False, 0, ())
            elif name == "cudart":
                own = release[1][1]
                rank = (release[0] == major, own <= minor, -abs(own - minor), ())
            else:
                rank = (release[0] == major, True, 0, release[1])
            if best_rank is None or (rank, -order) > best_rank:
                best, best_rank = real, (rank, -order)
        ident = identity(name, best) if best else None
        chosen.append((name, best if ident else None, ident))
    return tuple(chosen)


def find_meanwhile():
    """Start :func:`find` on a thread; return the function that waits for its answer.

    When every header set is in a wheel where cuda.pathfinder looks first, its answers are found
    without it (bindings/_sites.py), at once.  Otherwise pathfinder's search may start a
    subprocess (50-120 ms) that waits in parallel with mapping libnvrtc (the loader releases the
    GIL).  cuda.pathfinder is imported here first, so the two threads never import it at once.
    """
    from ...bindings import _sites  # deferred: a toolchain remembered with its headers needs none

    chosen = {name: _sites.header_folder(name) for name in HEADER_SETS}
    if all(chosen.values()):
        found_now = find(chosen)
        return lambda: found_now
    try:
        from cuda import pathfinder  # noqa: F401  # deferred
    except ImportError:
        pass
    found: list = []
    import threading  # deferred: only this path needs it

    thread = threading.Thread(target=lambda: found.append(find()), daemon=True,
                              name="cudaload-headers")
    thread.start()

    def wait() -> dict:
        thread.join()
        return found[0] if found else {name: [] for name in HEADER_SETS}
    return wait
