"""The ``cudaload`` command (also ``python -m cudaload``): doctor, demo, compile, cache."""

from __future__ import annotations

import argparse
import sys

__all__ = ["main"]

SAXPY = r"""
extern "C" __global__ void saxpy(float a, const float *x, float *y, unsigned int n)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}
"""


def main(argv=None) -> int:
    """Run the command line; returns the exit status (0 when the command succeeded)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["compile"] and not {"-h", "--help"} & set(argv[1:]):
        return _cmd_compile(argv[1:])  # nvcc's way: options before or after FILE, any NVRTC one
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args(["doctor"])
    return args.func(args) or 0


def _parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="cudaload",
        description="CUDA without a link-time dependency. With no command: doctor.")
    parser.add_argument("--version", action="version", version=f"cudaload {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    doctor = sub.add_parser("doctor", allow_abbrev=False,
                            help="report whether CUDA works here, and why not "
                                 "(exit status 0 when available, 1 when not)")
    doctor.add_argument("--json", action="store_true", help="print the report as JSON")
    doctor.set_defaults(func=_cmd_doctor)
    demo = sub.add_parser("demo", allow_abbrev=False,
                          help="compile a small kernel; on a GPU, launch it and check it")
    demo.set_defaults(func=_cmd_demo)
    _add_compile_parser(sub)
    _add_cache_parser(sub)
    return parser


def _cmd_doctor(args) -> int:
    from .availability import status

    report = status()
    if args.json:
        import json

        text = json.dumps(report.as_dict(), indent=2)
    else:
        text = str(report)
    _print_to_pipe(text)
    return 0 if report.available else 1


def _print_to_pipe(text: str) -> None:
    """Print ``text``; a reader that stopped early (``cudaload doctor | head``) is no error."""
    import os

    try:
        print(text, flush=True)
    except BrokenPipeError:
        # Python's own flush at exit would fail again and print a traceback-like complaint.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _cmd_demo(args) -> int:
    from .availability import status
    from .errors import CudaLoadError

    report = status()
    try:
        from . import nvrtc
        from .program import Program

        oldest = min(nvrtc.supported_archs())
        program = Program(SAXPY, name="saxpy.cu")
        ptx = program.compile(arch=oldest, output="ptx")
        # This GPU's code as a launch makes it: CUBIN, or PTX for a GPU newer than NVRTC knows.
        native = program.compile()
    except CudaLoadError as err:
        print(f"demo: cannot compile: {err}", file=sys.stderr)
        return 1
    major, minor = nvrtc.version()
    target = native.arch.replace("sm_", "compute_") if native.kind == "ptx" else native.arch
    print(f"compiled saxpy with NVRTC {major}.{minor}: PTX for compute_{oldest} "
          f"({len(ptx.code)} bytes), {native.kind.upper()} for {target} "
          f"({len(native.code)} bytes)")
    if not report.available:
        print("no usable GPU here, so the kernel was not launched (`cudaload doctor` says why)")
        return 0
    return _launch_saxpy()


def _launch_saxpy() -> int:
    """Run saxpy through the public launch API and check the result on the host."""
    from array import array

    import cudaload
    from .errors import CudaLoadError

    n, a = 1 << 16, 2.0
    x = array("f", (float(i) for i in range(n)))
    y = array("f", [1.0]) * n
    try:
        kernel = cudaload.Program(SAXPY, name="saxpy.cu").compile().load().get_kernel("saxpy")
        dx, dy = cudaload.alloc(len(x) * 4), cudaload.alloc(len(y) * 4)
        dx.copy_from_host(x)
        dy.copy_from_host(y)
        kernel(((n + 255) // 256,), (256,), (a, dx, dy, n))
        out = array("f")
        out.frombytes(bytes(memoryview(dy.copy_to_host()).cast("B")))
    except CudaLoadError as err:
        print(f"demo: launch failed: {err}", file=sys.stderr)
        return 1
    wrong = [i for i in range(n) if out[i] != a * x[i] + y[i]]
    if wrong:
        print(f"demo: saxpy gave wrong results at {len(wrong)} of {n} elements, first at index "
              f"{wrong[0]}: {out[wrong[0]]} instead of {a * x[wrong[0]] + y[wrong[0]]}",
              file=sys.stderr)
        return 1
    print(f"launched saxpy on {n} elements on the GPU: results correct")
    return 0


# --- compile, cache and precompile ---

# cudaload's own options of ``compile`` (names, key, takes a value, help); as with nvcc they may
# come before or after FILE, and every other word starting with "-" goes to NVRTC.
_COMPILE_OPTIONS = (
    (("--arch", "-arch", "--gpu-architecture"), "arch", True,
     "e.g. sm_90 (default: this GPU, else NVRTC's newest)"),
    (("--ptx", "-ptx"), "ptx", False, "emit PTX"),
    (("--cubin", "-cubin"), "cubin", False,
     "emit CUBIN (default: CUBIN where NVRTC knows the arch)"),
    (("-o", "--output-file"), "out", True, "output file"),
)
_COMPILE_USAGE = ("cudaload compile FILE.cu [--arch sm_90] [--ptx|--cubin] [-o OUT] "
                  "[nvrtc options...]")


def _add_compile_parser(sub) -> None:
    """Register ``cudaload compile`` (for its help: :func:`main` reads its words itself)."""
    compile_ = sub.add_parser(
        "compile", allow_abbrev=False,
        help="compile a .cu file to CUBIN or PTX, like nvcc --cubin/--ptx", usage=_COMPILE_USAGE,
        description="Options cudaload does not know (-DX=1, -I dir, -std=c++20, --use_fast_math, "
                    "...) go to NVRTC, before or after FILE.cu. Without -o the output is "
                    "FILE.cubin or FILE.ptx beside FILE.cu. The kernel cache is used and filled.")
    for names, key, takes_value, text in _COMPILE_OPTIONS:
        compile_.add_argument(*names, dest=key, help=text,
                              **({"metavar": key.upper()} if takes_value else
                                 {"action": "store_true"}))
    compile_.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    compile_.set_defaults(func=lambda args: _cmd_compile(args.rest))


def _compile_words(words) -> tuple[dict, list, list]:
    """(cudaload's options, the files, NVRTC's options) of ``compile``'s words.  Raises
    ValueError.  Only whole names are matched: "-c" is not taken for "-cubin"."""
    from .options import split_cli

    by_name = {name: (key, takes) for names, key, takes, _t in _COMPILE_OPTIONS for name in names}
    own: dict = {}
    files, nvrtc = [], []
    words = iter(split_cli(words))  # NVRTC's "-I dir", "-D X": one word each
    for word in words:
        name, equals, value = word.partition("=")
        if name not in by_name:
            (nvrtc if word.startswith("-") else files).append(word)
            continue
        key, takes = by_name[name]
        if not takes:
            if equals:
                raise ValueError(f"{name} takes no value")
            value = True
        elif not equals:
            value = next(words, None)
            if value is None:
                raise ValueError(f"{name} needs a value")
        own[key] = value
    if own.get("ptx") and own.get("cubin"):
        raise ValueError("give --ptx or --cubin, not both")
    return own, files, nvrtc


def _cmd_compile(words) -> int:
    import os

    from . import _untrusted, _writes
    from .errors import CompileError, CudaLoadError
    from .program import Program

    try:
        own, files, nvrtc_options = _compile_words(words)
        if len(files) != 1:
            raise ValueError("give one FILE.cu" if not files else
                             f"give one FILE.cu, not {len(files)} ({' '.join(files)}); options "
                             "that take a separate value other than -I, -D, -U and -include are "
                             "written -option=value")
    except ValueError as err:
        print(f"usage: {_COMPILE_USAGE}\ncudaload compile: {err}", file=sys.stderr)
        return 2
    source = files[0]
    output = "ptx" if own.get("ptx") else "cubin" if own.get("cubin") else "auto"
    problem = _untrusted.regular_problem(source, _MAX_SOURCE_BYTES)
    if problem:
        return _report(f"cudaload compile: cannot read {source}: {problem}")
    try:
        if own.get("out"):
            _writes.check_output(own["out"])  # refused before compiling, not after
    except OSError as err:
        return _cannot_write(own["out"], err)
    try:
        program = Program.from_file(source, options=nvrtc_options, std=None)
        obj = program.compile(arch=own.get("arch"), output=output)
    except CompileError as err:
        print(err, file=sys.stderr)
        return 1
    except (CudaLoadError, OSError, ValueError) as err:
        return _report(f"cudaload compile: {err}")
    out = own.get("out") or os.path.splitext(source)[0] + "." + obj.kind
    try:
        _writes.write_output(out, obj.code)
    except OSError as err:
        return _cannot_write(out, err)
    if obj.log:
        print(obj.log, file=sys.stderr)
    cached = f", from the {obj.cached} cache" if obj.cached else ""
    print(f"{out}: {obj.kind} for {obj.arch}, {len(obj.code)} bytes{cached}")
    return 0


_MAX_SOURCE_BYTES = 64 << 20  # far beyond any kernel source; /dev/zero would never end


def _cannot_write(out: str, err: OSError) -> int:
    return _report(f"cudaload compile: cannot write {out}: {err.strerror or err}. Next step: "
                   "give -o a regular file in a folder you can write to")


def _report(text: str) -> int:
    print(text, file=sys.stderr)
    return 1


def _add_cache_parser(sub) -> None:
    """Register ``cudaload cache`` and ``cudaload precompile``."""
    cache_ = sub.add_parser("cache", allow_abbrev=False,
                            help="show, clear or prune the kernel cache")
    actions = cache_.add_subparsers(dest="action", metavar="ACTION")
    info = actions.add_parser("info", help="location, entries and bytes")
    info.add_argument("--json", action="store_true", help="print JSON")
    actions.add_parser("clear", help="delete every entry (cudaload's own files only)")
    prune = actions.add_parser("prune", allow_abbrev=False,
                               help="delete corrupt entries, stale temporary files and, beyond "
                                    "the size bound, least recently used entries")
    prune.add_argument("--max-bytes", type=_byte_count, default=None,
                       help="size bound (default: CUDALOAD_CACHE_MAX_BYTES, else none)")
    cache_.set_defaults(func=_cmd_cache)
    _add_precompile_parser(sub)


def _byte_count(text: str) -> int:
    from .cache import byte_count

    value = byte_count(text)
    if value is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of bytes (0 or more)")
    return value


def _cmd_cache(args) -> int:
    from . import cache

    disk = cache.configured()  # looked after even with CUDALOAD_CACHE=0
    try:
        return _cache_action(disk, args.action or "info", args)
    except PermissionError as err:  # a folder not to be trusted: the message says what to do
        print(f"cudaload cache: {err}", file=sys.stderr)
        return 1
    except OSError as err:
        print(f"cudaload cache: {disk.root}: {err.strerror or err}. Next step: set "
              "CUDALOAD_CACHE_DIR to a folder (or a path where one can be made)", file=sys.stderr)
        return 1


def _cache_action(disk, action: str, args) -> int:
    import json
    import os

    from . import cache

    if action == "clear":
        count = disk.clear()
        print(f"removed {count} entries from {disk.root}")
    elif action == "prune":
        limit = args.max_bytes
        if limit is None and os.environ.get("CUDALOAD_CACHE_MAX_BYTES"):
            limit = cache.max_bytes()
        removed = disk.prune(limit)
        print(f"pruned {disk.root}: {removed['entries']} least recently used entries "
              f"({removed['bytes']} bytes), {removed['corrupt']} corrupt entries, "
              f"{removed['tmp']} stale temporary files, {removed['locks']} idle lock files")
    else:
        facts = disk.info()
        if getattr(args, "json", False):
            print(json.dumps(facts, indent=2))
        else:
            state = "on" if facts["enabled"] else \
                f"off ({facts['problem']})" if facts["problem"] else \
                "off (CUDALOAD_CACHE=0, or the folder cannot be written)"
            bound = facts["max_bytes"] if facts["max_bytes"] is not None else "none"
            print(f"location:  {facts['directory']}\ndisk cache: {state}\n"
                  f"entries:   {facts['entries']}\nbytes:     {facts['bytes']}\n"
                  f"size bound: {bound}")
    return 0


def _add_precompile_parser(sub) -> None:
    """Register ``cudaload precompile``."""
    pre = sub.add_parser(
        "precompile", allow_abbrev=False,
        help="compile programs for given architectures into the kernel cache or, with -o, into "
             "a bundle a package ships",
        usage="cudaload precompile [FILE.cu ...] [--package PKG --resource RES ...] "
              "[--programs MODULE:NAME] --arch sm_80 [--arch sm_90 ...] [-o OUT.bundle]",
        description="Each program is compiled to CUBIN for each --arch through the kernel cache. "
                    "With -o the results are also written to a bundle file: a package that ships "
                    "it and passes bundle=cudaload.bundle.Bundle.from_resource(...) to its "
                    "Programs runs them without NVRTC. A bundle entry is used only for the same "
                    "program: source, headers, options and name expressions must be those the "
                    "package uses at run time. --programs MODULE:NAME takes them from the package "
                    "itself (NAME: a function returning its Program objects), so they are.")
    pre.add_argument("files", nargs="*", metavar="FILE.cu", help="source files (Program.from_file)")
    pre.add_argument("--package", help="the package holding --resource files")
    pre.add_argument("--resource", action="append", default=[],
                     help="a .cu file of --package (Program.from_resource); repeatable")
    pre.add_argument("--programs", metavar="MODULE:NAME", action="append", default=[],
                     help="a function (or list) in an importable module giving Program objects")
    pre.add_argument("--arch", action="append", required=True,
                     help="repeatable: --arch sm_80 --arch sm_90")
    pre.add_argument("--name-expression", action="append", default=[], dest="name_expressions",
                     help="for FILE.cu and --resource programs, e.g. 'add<float>'; repeatable")
    pre.add_argument("--option", action="append", default=[],
                     help="an NVRTC option for FILE.cu and --resource programs; repeatable")
    pre.add_argument("-o", "--output-file", dest="out", metavar="OUT.bundle",
                     help="write a bundle (replacing the file, unless --append)")
    pre.add_argument("--append", action="store_true",
                     help="keep the entries already in OUT.bundle (e.g. built by another NVRTC)")
    pre.set_defaults(func=_cmd_precompile)


def _precompile_programs(args) -> list:
    """The Program objects named on the command line.  Raises ValueError, ImportError, OSError."""
    import importlib
    import os

    from .options import split_cli
    from .program import Program

    if args.resource and not args.package:
        raise ValueError("--resource needs --package (the package that holds the file)")
    common = {"options": split_cli(args.option), "name_expressions": args.name_expressions}
    programs = [Program.from_file(path, **common) for path in args.files]
    programs += [Program.from_resource(args.package, res, **common) for res in args.resource]
    for spec in args.programs:
        module_name, _, attr = spec.partition(":")
        if not attr:
            raise ValueError(f"--programs {spec!r}: write MODULE:NAME, e.g. mypkg.kernels:programs")
        if os.getcwd() not in sys.path:  # as `python -m` does: packages in the current folder
            sys.path.insert(0, os.getcwd())
        found = getattr(importlib.import_module(module_name), attr)
        found = list(found() if callable(found) else found)
        if not all(isinstance(p, Program) for p in found):
            raise ValueError(f"--programs {spec!r} gave something other than Program objects")
        programs += found
    if not programs:
        raise ValueError("nothing to compile: give FILE.cu, --package with --resource, or "
                         "--programs MODULE:NAME")
    return programs


def _cmd_precompile(args) -> int:
    from . import _writes
    from .bundle import Bundle
    from .errors import CudaLoadError

    try:
        programs = _precompile_programs(args)
    except (ImportError, AttributeError, OSError, ValueError, TypeError) as err:
        print(f"cudaload precompile: {err}", file=sys.stderr)
        return 2
    bundle = Bundle()
    if args.out:
        try:
            _writes.check_output(args.out)
        except OSError as err:
            print(f"cudaload precompile: cannot write {args.out}: {err.strerror}. Next step: "
                  "give -o a regular file", file=sys.stderr)
            return 1
    if args.out and args.append:
        bundle = Bundle.from_file(args.out)
        try:
            bundle.check()
        except (OSError, ValueError) as err:
            print(f"cudaload precompile: --append {args.out}: not a kernel bundle this cudaload "
                  f"can read ({err}). It is left as it is. Next step: write the bundle to "
                  "another file, or drop --append to replace this one", file=sys.stderr)
            return 1
    for program in programs:
        program.bundle = None  # compile afresh: the code must not come from an older bundle
        for arch in args.arch:
            try:
                obj = program.compile(arch=arch, output="cubin" if args.out else "auto")
            except (CudaLoadError, ValueError) as err:
                print(f"cudaload precompile: {program.name} for {arch}: {err}", file=sys.stderr)
                return 1
            names = ", ".join(program.name_expressions)
            print(f"{program.name}{f' [{names}]' if names else ''}: {obj.kind} for {obj.arch} "
                  f"({obj.cached or 'compiled'})")
            if args.out:
                bundle.add(program, obj)
    if args.out:
        try:
            size = bundle.write(args.out)
        except OSError as err:
            print(f"cudaload precompile: cannot write {args.out}: {err}", file=sys.stderr)
            return 1
        print(f"wrote {len(bundle)} entries ({size} bytes) to {args.out}")
    return 0
