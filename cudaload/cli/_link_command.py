"""``cudaload link``: device code files (CUBIN, PTX, LTO IR, fatbins, libraries) linked into one
CUBIN or PTX by :class:`~cudaload.Linker`, through its cache, as Python code links them.
"""

from __future__ import annotations

import sys

__all__ = ["add_parser"]


def add_parser(sub) -> None:
    """Register ``cudaload link``."""
    link = sub.add_parser(
        "link", allow_abbrev=False,
        help="link .cubin, .ptx, .ltoir, .fatbin and .a files into one CUBIN (or PTX)",
        usage="cudaload link FILE ... [--arch sm_90] [--lto] [--ptx] [--option=-lineinfo ...] "
              "[--backend nvjitlink|driver] -o OUT",
        description="What cudaload.Linker(FILE, ..., arch=ARCH, lto=LTO, options=OPTIONS, "
                    "backend=BACKEND).link() gives, from its cache when it was linked before: "
                    "nvJitLink links, else the driver's linker on a GPU. Relocatable code (compile -rdc=true) and "
                    "LTO IR (compile --ltoir, linked with --lto) may call each other's device "
                    "functions; add libcudadevrt.a (cudaload link --cudadevrt) for kernels that "
                    "launch kernels.")
    link.add_argument("files", nargs="*", metavar="FILE", help="the code to link")
    link.add_argument("--arch", help="e.g. sm_90 (default: this GPU; without one, the inputs')")
    link.add_argument("--lto", action="store_true", help="link-time optimisation (LTO IR inputs)")
    link.add_argument("--ptx", action="store_true", help="emit PTX (of LTO IR inputs, --lto)")
    link.add_argument("--cudadevrt", action="store_true",
                      help="add libcudadevrt.a from the nvidia-cuda-runtime wheel (or a toolkit)")
    link.add_argument("--option", action="append", default=[], metavar="OPTION",
                      help="a link option, written --option=-lineinfo; repeatable")
    link.add_argument("--backend", choices=("nvjitlink", "driver"),
                      help="link by this linker alone (default: nvJitLink, else the driver's)")
    link.add_argument("-o", "--output-file", dest="out", metavar="OUT", required=True,
                      help="the file to write")
    link.set_defaults(func=_cmd_link)


def _cmd_link(args) -> int:
    from .._base import _atomic  # deferred: each command imports what it runs
    from ..compile.link.linker import Linker  # deferred: each command imports what it runs
    from ..errors import CudaLoadError  # deferred: each command imports what it runs

    try:
        _atomic.check_output(args.out)  # refused before linking, not after
    except OSError as err:
        return _report(f"cannot write {args.out}: {err.strerror or err}. Next step: give -o a "
                       "regular file in a folder you can write to")
    try:
        files = [*args.files, *([Linker.cudadevrt()] if args.cudadevrt else [])]
        linker = Linker(*files, arch=args.arch, lto=args.lto, options=args.option,
                        backend=args.backend)
        obj = linker.link("ptx" if args.ptx else "cubin")
    except (CudaLoadError, OSError, ValueError, TypeError) as err:  # LinkError with its log
        return _report(str(err))
    try:
        _atomic.write_output(args.out, obj.code)
    except OSError as err:
        return _report(f"cannot write {args.out}: {err}")
    if linker.info_log:
        print(linker.info_log, file=sys.stderr)
    cached = f", from the {obj.cached} cache" if obj.cached else f", by {linker.linker}"
    print(f"{args.out}: {obj.kind} for {obj.arch}, {len(obj.code)} bytes, linked from "
          f"{obj.name}{cached}")
    return 0


def _report(text: str) -> int:
    print(f"cudaload link: {text}", file=sys.stderr)
    return 1
