"""The human report of ``status()``: what ``str(status)`` and ``cudaload doctor`` print.
"""

from __future__ import annotations

__all__ = ["text"]


def _not_loaded(section: dict) -> str:
    return "found but NOT USABLE (see problems)" if section.get("refused") else "not found"


def _describe_dir(name: str, entry: dict) -> str:
    if not entry["path"]:
        return f"{name} none"
    if name == "cudart":
        return f"cudart of CUDA {entry['version'] or '?'} at {entry['path']}"
    cuda = f"CUDA {entry['cuda_major'] or '?'}"
    return f"{name} {entry['version'] or '?'} ({cuda}) at {entry['path']}"


def text(report: dict) -> str:
    """The human report."""
    from ._version import __version__  # deferred: each part of the report, when it runs

    drv, nv = report["driver"], report["nvrtc"]
    verdict = "available" if report["available"] else "NOT available"
    lines = [f"cudaload {__version__}: CUDA is {verdict}", ""]
    if drv["found"]:
        lines.append(f"driver   found: CUDA {drv['version'] or '?'} at {drv['path']} "
                     f"(found via {drv['found_via']})")
        lines.append(f"         cuInit: {drv['cuinit'] or 'not attempted'}")
        if report["module_loading_mode"]:
            lines.append(f"         module loading: {report['module_loading_mode']}")
    else:
        lines.append(f"driver   {_not_loaded(drv)}")
    for dev in report["devices"]:
        cc = dev["compute_capability"]
        lines.append(f"device {dev['index']} {dev['name']}, compute capability {cc[0]}.{cc[1]}, "
                     f"{dev['total_memory'] / 2**30:.1f} GiB, {dev['multiprocessors']} SMs")
    if drv["found"] and not report["devices"]:
        lines.append("devices  none")
    if nv["found"]:
        lines.append(f"nvrtc    {nv['version'] or '?'} at {nv['path']} "
                     f"(found via {nv['found_via']})")
        archs = " ".join(f"sm_{a}" for a in nv["supported_archs"])
        lines.append(f"         architectures: {archs or '?'}")
        builtins = {True: "load", False: "DO NOT load", None: "not checked"}[nv["builtins"]]
        lines.append(f"         builtins: {builtins}")
        for index, (name, entry) in enumerate(nv["header_dirs"].items()):
            lines.append(f"         {'headers: ' if index == 0 else ' ' * 9}"
                         f"{_describe_dir(name, entry)}")
        if nv["header_dirs"]:
            lines.append(_HEADERS_EDITED)
    else:
        lines.append(f"nvrtc    {_not_loaded(nv)}")
    lines.append(_linker_line(report["nvjitlink"]))
    if report["ptx_loadable"] is not None:
        lines.append("PTX from this NVRTC loads on this driver: "
                     + ("yes" if report["ptx_loadable"] else "NO"))
    if report["problems"]:
        lines += ["", "problems:"]
        for p in report["problems"]:
            lines += [f"  - {p['what']}", f"    next step: {p['hint']}"]
    return "\n".join(lines)


# Said where the folders are shown: the key knows each header folder by its modification time and
# one file's (an upgrade of its wheel changes both), not by the contents of each of its files.
_HEADERS_EDITED = ("         (a header edited in place in these folders is not seen by the kernel "
                   "cache: run `cudaload cache clear` after such an edit)")


def _linker_line(section: dict) -> str:
    if section["refused"]:
        return f"nvjitlink {_not_loaded(section)}: Program(lto=True) cannot link"
    if not section["found"]:
        return ("nvjitlink not found: only Program(lto=True) needs it "
                "(pip install 'cudaload[nvrtc]')")
    major = f"of CUDA {section['cuda_major']} " if section["cuda_major"] else ""
    return f"nvjitlink {major}at {section['path']} (found via {section['found_via']})"
