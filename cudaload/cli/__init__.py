"""The ``cudaload`` command (also ``python -m cudaload``): doctor, demo, compile, link, precompile,
cache.
"""

from __future__ import annotations

import os
import argparse
import sys
import warnings

from ._compile_commands import (_add_compile_parser, _add_precompile_parser, _cmd_compile,
                                target_name)
from ._link_command import add_parser as _add_link_parser
from ..wheelcheck.command import add_parser as _add_check_wheel_parser
from ..wheelcheck.driver_library import add_parser as _add_fetch_libcuda_parser

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
    """Run the command line; returns the exit status (0 when the command succeeded).

    Its standard output is an :class:`_Output`: a failed write never stops a command half way."""
    argv = list(sys.argv[1:] if argv is None else argv)
    name = "cudaload" + (f" {argv[0]}" if argv and not argv[0].startswith("-") else "")
    if sys.stdout is None:  # pythonw: nowhere to write, nothing to guard
        return _run(argv)
    output = _Output(sys.stdout)
    sys.stdout = output  # type: ignore[assignment]
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _warning_line(name)
            try:
                status = _run(argv)
            except SystemExit as done:  # argparse: --help, --version, a usage error
                if not isinstance(done.code, (int, type(None))):
                    raise
                status = done.code or 0
        return output.finish(status, name)
    finally:
        sys.stdout = output.stream


def _warning_line(name: str):
    """How a command shows a warning: one line on stderr, with the command's name.  The source
    line a warning points at is the caller's, which for a command is Python's own runpy."""
    def show(message, category, filename, lineno, file=None, line=None) -> None:
        try:
            (file or sys.stderr).write(f"{name}: {category.__name__}: {message}\n")
        except OSError:  # stderr closed: a warning is no reason to fail the command
            pass
    return show


def _run(argv: list[str]) -> int:
    if argv[:1] == ["compile"] and not {"-h", "--help"} & set(argv[1:]):
        return _cmd_compile(argv[1:])  # nvcc's way: options before or after FILE, any NVRTC one
    parser = _parser()
    args = parser.parse_args(argv)
    if args.report_json and args.command not in (None, "doctor"):
        parser.error(f"--json before a command is `doctor --json`; for {args.command}, "
                     "put its options after it")
    if args.command is None or args.report_json:
        args = parser.parse_args(["doctor", *(["--json"] if args.report_json else [])])
    return args.func(args) or 0


class _Output:
    """Standard output while a command runs: one rule for every command.

    A reader that stopped early (``cudaload cache info | head -1``) is no error: the rest of the
    output is dropped and the command ends with the status it would have had.  Any other failed
    write (``> /dev/full``) drops the rest too, and the command ends with one line on stderr and
    a nonzero status.  Either way its work is done: a bundle or cache entry is never left half
    made because a ``print`` failed."""

    def __init__(self, stream):
        self.stream = stream
        self.lost: OSError | None = None

    def write(self, text: str) -> int:
        if self.lost is None:
            try:
                return self.stream.write(text)
            except OSError as err:
                self._lose(err)
        return len(text)

    def flush(self) -> None:
        if self.lost is None:
            try:
                self.stream.flush()
            except OSError as err:
                self._lose(err)

    def __getattr__(self, name: str):  # encoding, fileno, isatty, ...
        return getattr(self.stream, name)

    def _lose(self, err: OSError) -> None:
        import contextlib  # deferred: each command imports what it runs

        self.lost = err
        # What the stream still holds would fail again in Python's flush at exit, with a
        # complaint of its own: its descriptor goes to the null device.
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.stream.fileno())
            os.close(devnull)

    def finish(self, status: int, name: str) -> int:
        """The exit status of the command ``name`` that returned ``status``, once its output
        is flushed: nonzero, with a line on stderr, when that output could not be written."""
        self.flush()
        if self.lost is None or isinstance(self.lost, BrokenPipeError):
            return status
        try:
            print(f"{name}: cannot write its output: {self.lost.strerror or self.lost}. Next "
                  "step: send the output to a file or program that can take it", file=sys.stderr,
                  flush=True)
        except OSError:
            pass  # stderr too: nowhere left to say it
        return status or 1


def _parser() -> argparse.ArgumentParser:
    from .._version import __version__  # deferred: each command imports what it runs

    parser = argparse.ArgumentParser(
        prog="cudaload",
        description="CUDA without a link-time dependency. With no command: doctor.")
    parser.add_argument("--version", action="version", version=f"cudaload {__version__}")
    # Its own dest: a subcommand's defaults would overwrite a shared "json" (`--json doctor`).
    parser.add_argument("--json", dest="report_json", action="store_true",
                        help="with no command: print the status report as JSON (doctor --json)")
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
    _add_link_parser(sub)
    _add_cache_parser(sub)
    _add_check_wheel_parser(sub)
    _add_fetch_libcuda_parser(sub)
    return parser


def _cmd_doctor(args) -> int:
    from ..availability import status  # deferred: each command imports what it runs

    report = status()
    if args.json:
        import json  # deferred: each command imports what it runs

        text = json.dumps(report.as_dict(), indent=2)
    else:
        text = str(report)
    print(text)
    return 0 if report.available else 1


def _cmd_demo(args) -> int:
    from ..availability import status  # deferred: each command imports what it runs
    from ..errors import CudaLoadError  # deferred: each command imports what it runs

    report = status()
    try:
        from ..bindings import nvrtc  # deferred: each command imports what it runs
        from ..compile.program import Program  # deferred: each command imports what it runs

        oldest = min(nvrtc.supported_archs())
        program = Program(SAXPY, name="saxpy.cu")
        ptx = program.compile(arch=oldest, output="ptx")
        # This GPU's code as a launch makes it: CUBIN, or PTX for a GPU newer than NVRTC knows.
        # Without a GPU there is none to make (compile() refuses it).
        native = program.compile() if report.available else None
    except CudaLoadError as err:
        print(f"demo: cannot compile: {err}", file=sys.stderr)
        return 1
    major, minor = nvrtc.version()
    made = f"PTX for compute_{oldest} ({len(ptx.code)} bytes)"
    if native is not None:
        made += f", {native.kind.upper()} for {target_name(native)} ({len(native.code)} bytes)"
    print(f"compiled saxpy with NVRTC {major}.{minor}: {made}")
    if native is None:
        print("no usable GPU here, so the kernel was not launched (`cudaload doctor` says why)")
        return 0
    return _launch_saxpy()


def _launch_saxpy() -> int:
    """Run saxpy through the public launch API and check the result on the host."""
    from array import array  # deferred: each command imports what it runs

    import cudaload  # deferred: each command imports what it runs
    from ..errors import CudaLoadError  # deferred: each command imports what it runs

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


# --- cache (compile and precompile: _compile_commands.py) ---

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
    from ..compile.cache import byte_count  # deferred: each command imports what it runs

    value = byte_count(text)
    if value is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of bytes (0 or more)")
    return value


def _cmd_cache(args) -> int:
    from ..compile import cache  # deferred: each command imports what it runs

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
    import json  # deferred: each command imports what it runs

    from ..compile import cache  # deferred: each command imports what it runs

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
              f"{removed['tmp']} stale temporary files, {removed['locks']} idle lock files"
              + (f"; kept {removed['kept']} entries used in the last {cache.GRACE_S:g} seconds "
                 "although over the size bound" if limit is not None else ""))
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
            for tier in facts["tiers"][1:]:  # the read-only ones, in the order looked in
                print(f"read tier: {tier['directory']} (read-only): {tier['entries']} entries, "
                      f"{tier['bytes']} bytes"
                      + (f"; not used: {tier['problem']}" if tier["problem"] else ""))
    return 0
