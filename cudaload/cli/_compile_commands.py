"""``cudaload compile`` and ``cudaload precompile``: CUDA C++ (or PTX) files to CUBIN, PTX, LTO IR
or a bundle.

Both build the same ``Program.from_file(FILE, options=..., name_expressions=...)`` as Python code
does, with Program's defaults (``-std=c++17`` unless an option gives ``-std``), so what
``precompile`` puts in the kernel cache is what ``compile`` and that Program look up.
"""

from __future__ import annotations

import os
import argparse
import sys

from . import _kernels

# cudaload's own options of ``compile`` (names, key, value's metavar or None for a flag, help); as
# with nvcc they may come before or after FILE, and every other word starting with "-" goes to NVRTC.
_COMPILE_OPTIONS = (
    (("--arch", "-arch", "--gpu-architecture"), "arch", "ARCH",
     "e.g. sm_90 (default: this GPU; without one, NVRTC's newest for CUBIN and its oldest for "
     "PTX, which the driver compiles forward for every newer GPU)"),
    (("--ptx", "-ptx"), "ptx", None, "emit PTX"),
    (("--cubin", "-cubin"), "cubin", None,
     "emit CUBIN (default: CUBIN where NVRTC knows the arch)"),
    (("--ltoir", "-dlto"), "ltoir", None, "emit LTO IR, to be linked by `cudaload link --lto`"),
    (("-o", "--output-file"), "out", "OUT", "output file"),
    (("--name-expression",), "name_expressions", "EXPR",
     "a kernel template to instantiate, e.g. 'scale<float>' (repeatable); its lowered name is "
     "printed"),
)
_REPEATABLE = frozenset({"name_expressions"})
_COMPILE_USAGE = ("cudaload compile FILE.cu|FILE.ptx [--arch sm_90] [--ptx|--cubin|--ltoir] "
                  "[-o OUT] "
                  "[--name-expression EXPR ...] [nvrtc options...]")


def _add_compile_parser(sub) -> None:
    """Register ``cudaload compile`` (for its help: :func:`main` reads its words itself)."""
    compile_ = sub.add_parser(
        "compile", allow_abbrev=False,
        help="compile a .cu file to CUBIN or PTX, like nvcc --cubin/--ptx", usage=_COMPILE_USAGE,
        description="Options cudaload does not know (-DX=1, -I dir, -std=c++20, --use_fast_math, "
                    "...) go to NVRTC, before or after FILE.cu; -std=c++17 unless one gives "
                    "-std, as for Program. Without -o the output is FILE.cubin or FILE.ptx beside "
                    "FILE.cu. A FILE.ptx is linked to CUBIN (Program(text, code_type='ptx')), "
                    "its other options being link options. "
                    "The kernel cache is used and filled: the entries are those of "
                    "Program.from_file(FILE.cu, options=[...], name_expressions=[...]) and of "
                    "cudaload precompile. A source whose kernels are all templates, none "
                    "instantiated, is an error: it would give code without a kernel.")
    for names, key, metavar, text in _COMPILE_OPTIONS:
        compile_.add_argument(*names, dest=key, help=text,
                              **({"metavar": metavar} if metavar else {"action": "store_true"}))
    compile_.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    compile_.set_defaults(func=lambda args: _cmd_compile(args.rest))


def _compile_words(words) -> tuple[dict, list, list]:
    """(cudaload's options, the files, NVRTC's options) of ``compile``'s words.  Raises
    ValueError.  Only whole names are matched: "-c" is not taken for "-cubin"."""
    from ..compile.options import cli_options  # deferred: each command imports what it runs

    by_name = {name: (key, metavar is not None)
               for names, key, metavar, _t in _COMPILE_OPTIONS for name in names}
    own: dict = {key: [] for key in _REPEATABLE}
    files: list[str] = []
    nvrtc: list[str] = []
    words = iter(cli_options(words))  # NVRTC's "-I dir", "-D X": one word each
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
        if takes and not value:  # `-o=` would name no file, `--arch=` no GPU
            raise ValueError(f"{name} needs a value, not an empty one")
        if key in _REPEATABLE:
            own[key].append(value)
        else:
            own[key] = value
    given = [f"--{k}" for k in ("ptx", "cubin", "ltoir") if own.get(k)]
    if len(given) > 1:
        raise ValueError(f"give {' or '.join(given[:2])}, not both")
    return own, files, nvrtc


def _compile_here(program, arch, output: str):
    """``program`` compiled for ``arch``; None: this GPU's, and without one NVRTC's newest for
    CUBIN and its oldest for PTX, which the driver compiles forward for every newer GPU: a file
    written is for some GPU, wherever it is run.  (LTO IR and a PTX file's CUBIN need no device:
    compile() itself makes them, for NVRTC's newest and the PTX's own ``.target``.)"""
    from ..compile.build import run  # deferred: each command imports what it runs
    from ..errors import CudaUnavailableError  # deferred: each command imports what it runs

    try:
        return program.compile(arch=arch, output=output)
    except CudaUnavailableError:  # machine code for this GPU asked for, and there is none
        if arch is not None:
            raise
        return run(program.plan(None, output, device=False))


def _cmd_compile(words) -> int:

    from .._base import _atomic, _untrusted  # deferred: each command imports what it runs
    from ..errors import CompileError, CudaLoadError  # deferred: each command imports what it runs
    from ..compile.program import Program  # deferred: each command imports what it runs

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
    output = next((k for k in ("ptx", "cubin", "ltoir") if own.get(k)), "auto")
    problem = _untrusted.regular_problem(source, _MAX_SOURCE_BYTES)
    if problem:
        return _report(f"cudaload compile: cannot read {source}: {problem}")
    try:
        if own.get("out"):
            _atomic.check_output(own["out"])  # refused before compiling, not after
    except OSError as err:
        return _cannot_write(own["out"], err)
    try:
        program = Program.from_file(source, options=nvrtc_options,
                                    name_expressions=own["name_expressions"])
        obj = _compile_here(program, own.get("arch"), output)
    except CompileError as err:
        print(err, file=sys.stderr)
        return 1
    except (CudaLoadError, OSError, ValueError) as err:
        return _report(f"cudaload compile: {err}")
    kernels = _kernels.holds_kernel(obj.code, obj.kind)
    problem = (_kernels.no_kernel_problem("compile", source, program, obj) if kernels is False
               else None)
    if problem:
        return _report(problem)
    out = own.get("out") or os.path.splitext(source)[0] + "." + obj.kind
    try:
        _atomic.write_output(out, obj.code)
    except OSError as err:
        return _cannot_write(out, err)
    if obj.log:
        print(obj.log, file=sys.stderr)
    cached = f", from the {obj.cached} cache" if obj.cached else ""
    empty = "; no kernel, device functions only" if kernels is False else ""
    print(f"{out}: {obj.kind} for {target_name(obj)}, {len(obj.code)} bytes{cached}{empty}")
    for expression, lowered in obj.lowered_names.items():
        print(f"  {expression}: {lowered}")
    return 0


_MAX_SOURCE_BYTES = 64 << 20  # far beyond any kernel source; /dev/zero would never end


def _cannot_write(out: str, err: OSError) -> int:
    return _report(f"cudaload compile: cannot write {out}: {err.strerror or err}. Next step: "
                   "give -o a regular file in a folder you can write to")


def _report(text: str) -> int:
    print(text, file=sys.stderr)
    return 1



def _add_precompile_parser(sub) -> None:
    """Register ``cudaload precompile``."""
    pre = sub.add_parser(
        "precompile", allow_abbrev=False,
        help="compile programs for given architectures into the kernel cache or, with -o, into "
             "a bundle a package ships",
        usage="cudaload precompile [FILE.cu ...] [--package PKG --resource RES ...] "
              "[--programs MODULE:NAME] --arch sm_80 [--arch sm_90 ...] "
              "[--name-expression EXPR ...] [--option OPT ...] [--ltoir] "
              "[-o OUT.bundle [--append]] [-j N] [--quiet]",
        description="Each program is compiled to CUBIN (LTO IR with --ltoir) for each --arch "
                    "through the kernel cache. "
                    "With -o the results are also written to a bundle file: a package that ships "
                    "it and passes bundle=cudaload.Bundle.from_resource(...) to its "
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
                     metavar="EXPR",
                     help="for FILE.cu and --resource programs, e.g. 'add<float>'; repeatable")
    pre.add_argument("--option", action="append", default=[], metavar="OPT",
                     help="an NVRTC option for FILE.cu and --resource programs; repeatable")
    pre.add_argument("-o", "--output-file", dest="out", metavar="OUT.bundle", type=_file_name,
                     help="write a bundle (replacing the file, unless --append)")
    pre.add_argument("--append", action="store_true",
                     help="keep the entries already in OUT.bundle (e.g. built by another NVRTC)")
    pre.add_argument("--ltoir", action="store_true",
                     help="compile to LTO IR (output='ltoir'), in the cache or the bundle, for "
                          "programs linked at run time by cudaload.Linker(..., lto=True)")
    pre.add_argument("-j", "--jobs", type=_jobs, default=None, metavar="N",
                     help="compile on N processes (default: one per CPU; programs already in the "
                          "kernel cache are only read)")
    pre.add_argument("-q", "--quiet", action="store_true",
                     help="no progress line (shown on stderr where that is a terminal: how many "
                          "programs are done, and about how long the rest take)")
    pre.set_defaults(func=_cmd_precompile)


def target_name(obj) -> str:
    """The arch compiled code is for, as nvcc names it: compute_90 for PTX, sm_90 otherwise."""
    arch = obj.arch or "sm_?"  # a compiled Program always knows its arch
    return arch.replace("sm_", "compute_") if obj.kind == "ptx" else arch


def _file_name(text: str) -> str:
    if not text:  # `-o ""` would name no file, and the bundle would go nowhere
        raise argparse.ArgumentTypeError("an empty name is no file")
    return text


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"-j takes a number of processes, 1 or more, not {text!r}")
    return value


def _precompile_programs(args) -> list:
    """The Program objects named on the command line.  Raises ValueError, ImportError, OSError."""
    from .._base import _program_specs  # deferred: each command imports what it runs
    from ..compile.options import cli_options  # deferred: each command imports what it runs
    from ..compile.program import Program  # deferred: each command imports what it runs

    if args.resource and not args.package:
        raise ValueError("--resource needs --package (the package that holds the file)")
    common = {"options": cli_options(args.option), "name_expressions": args.name_expressions}
    for path in args.files:
        if not os.path.isfile(path):
            raise ValueError(f"{path}: no such file: give the path of a .cu file (from "
                             f"{os.getcwd()})")
    programs = [Program.from_file(path, **common) for path in args.files]
    if (args.resource or args.programs) and os.getcwd() not in sys.path:
        # as `python -m` does: packages in the current folder, for --package and --programs alike
        sys.path.insert(0, os.getcwd())
    programs += [Program.from_resource(args.package, res, **common) for res in args.resource]
    for spec in args.programs:
        programs += _program_specs.load(spec, Program, "install the package, or run from the "
                                        f"folder that holds it (now {os.getcwd()})")
    if not programs:
        raise ValueError("nothing to compile: give FILE.cu, --package with --resource, or "
                         "--programs MODULE:NAME")
    return programs


def _nvrtc_release() -> str | None:
    """The release of the NVRTC that compiled ("13.5"): which drivers load a CUBIN made before
    CUDA 13 depends on it, and the CUBIN does not say."""
    from ..compile import toolchain  # deferred: each command imports what it runs
    from ..errors import CudaLoadError  # deferred: each command imports what it runs

    try:
        major, minor = toolchain.current().version
    except (CudaLoadError, OSError):
        return None
    return f"{major}.{minor}"


def _entry_line(program, obj, nvrtc: str | None) -> str:
    """What precompile says of ``obj``, made from ``program``: its kind, arch, whether it was
    compiled or found, and which drivers load it."""
    from .._base.releases import loads_on  # deferred: each command imports what it runs

    names = ", ".join(program.name_expressions)
    return (f"{program.name}{f' [{names}]' if names else ''}: {obj.kind} for {target_name(obj)} "
            f"({obj.cached or 'compiled'}); "
            f"{loads_on(obj.code, obj.kind, target_name(obj), nvrtc)[1]}")


def _cmd_precompile(args) -> int:

    from .._base import _atomic  # deferred: each command imports what it runs
    from ..compile.bundle import Bundle  # deferred: each command imports what it runs
    from ..compile.parallel.batch import compile_many  # deferred: each command imports what it runs
    from ..errors import CudaLoadError  # deferred: each command imports what it runs

    try:
        programs = _precompile_programs(args)
    except (ImportError, AttributeError, OSError, ValueError, TypeError) as err:
        print(f"cudaload precompile: {err}", file=sys.stderr)
        return 2
    bundle = Bundle()
    if args.out:
        folder = os.path.dirname(os.path.abspath(args.out))
        if not os.path.isdir(folder):  # refused before compiling, and never made (as compile -o)
            print(f"cudaload precompile: cannot write {args.out}: there is no folder {folder}. "
                  "Next step: make it (mkdir -p), or give -o a file in a folder that exists",
                  file=sys.stderr)
            return 1
        try:
            _atomic.check_output(args.out)
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
    items = [(program, arch) for program in programs for arch in args.arch]
    try:
        output = "ltoir" if args.ltoir else "cubin" if args.out else "auto"
        results, failures = compile_many(items, output, args.jobs, progress=not args.quiet)
    except (CudaLoadError, ValueError) as err:
        print(f"cudaload precompile: {err}", file=sys.stderr)
        return 1
    for i, program_name, error in failures:
        print(f"cudaload precompile: {program_name} for {items[i][1]}: {error}", file=sys.stderr)
    if failures:
        return 1
    nvrtc = _nvrtc_release()
    for (program, _arch), obj in zip(items, results):
        problem = _kernels.no_kernel_problem("precompile", program.name, program, obj) \
            if _kernels.holds_kernel(obj.code, obj.kind) is False else None
        if problem:  # an entry without a kernel is no result: no bundle is written
            print(problem, file=sys.stderr)
            return 1
        print(_entry_line(program, obj, nvrtc))
        if args.out:
            bundle.add(program, obj, nvrtc)
    if args.out:
        data = bundle.to_bytes()
        try:
            _atomic.write_output(args.out, data)  # as compile -o: a symbolic link is replaced
        except OSError as err:
            print(f"cudaload precompile: cannot write {args.out}: {err}", file=sys.stderr)
            return 1
        print(f"wrote {len(bundle)} entries ({len(data)} bytes) to {args.out}")
    return 0
