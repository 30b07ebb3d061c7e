"""Which code a request makes: the arch when none is given, and the kind (CUBIN, PTX or LTO IR)
and target arch, chosen from NVRTC's supported architectures and the driver's version.

:func:`default_arch` is what ``compile(arch=None)`` compiles for: the current device's, asked of
the driver once per thread (and, where no device can be used, once per process).
:func:`choose` gives (kind, target) for a request with the errors for one that cannot be met, and
an :class:`ArchWarning` where code for another arch serves; :func:`check_plausible` refuses an
arch given by hand that is no GPU's (``"sm_900"``).

Imports of cudaload: errors, lifetime, options; bindings (driver, thread_device), releases,
_warn and _outputs where asked.
"""

from __future__ import annotations

from ..errors import CudaLoadError, NvrtcError
from .._base.lifetime import on_forget, on_fork_in_child  # not "from .. import": see the end
from .options import Arch, check_output, parse_arch

TYPE_CHECKING = False  # typing is not imported: a disk hit in a fresh process must cost little
if TYPE_CHECKING:
    from . import toolchain

__all__ = ["LINKED", "ArchWarning", "choose", "check_plausible", "default_arch",
           "device_arch", "driver_version", "assume_driver_version", "forget_no_device"]

LINKED = ("ptx", "nvvm")  # the code types no NVRTC compiles: linked (after libNVVM) instead
_no_device = False
_unusable = None  # thread_device.unusable when _no_device was set: the reason, for every thread
_thread_device = None  # bindings/thread_device.py's state, once imported


def device_arch():
    """The current device's compute capability (e.g. 90), or None without a usable device."""
    if _no_device:
        return None
    state = _thread_device
    found = state.arch if state is not None else None  # found by this thread before: no call
    return found if found is not None else _ask_device()


def default_arch(code_type: str, output: str):
    """The arch ``compile(arch=None, output)`` of a program of ``code_type`` compiles for, one
    rule for every output and code type: the current device's; without a usable device, None
    where the code names no GPU's machine code (LTO IR: NVRTC's newest arch, :func:`choose`; a
    PTX program's CUBIN: the PTX's own ``.target``, _ptx_input.link), else the reason there is
    no device, raised (:func:`_without_device`).  ``output`` is checked first: a wrong one is
    the same ValueError with a GPU, with a driver and no device, and with no driver."""
    if output != "auto":  # "auto", every program's and the default, costs a hit no check
        check_output(output)
        if code_type in LINKED:
            from .link._outputs import check_output as check_linked  # deferred: PTX programs only

            check_linked(output, code_type)
    found = device_arch()
    if found is not None:
        return found
    if output == "ltoir" or code_type == "ptx":
        return None
    if _unusable is not None:  # the reason found before, again: no call into the driver
        raise _unusable.with_traceback(None)
    return _without_device()


def _without_device() -> int:
    """What ``compile(arch=None)`` does without a usable device where machine code for this GPU
    is asked for (CUBIN, PTX or "auto" of CUDA C++): compile nothing, and raise why there is
    none, a CudaUnavailableError (no driver, a failed ``cuInit``, no device, a forked child) or
    the DriverError that kept it from being used, before NVRTC is looked for.  Code compiled
    for no device would be thrown away, and NVRTC is what a machine without a GPU often lacks: a
    host package's ``except CudaUnavailableError`` fallback then works with or without it.  An
    explicit arch compiles anywhere (precompiling, ``cudaload compile --arch``), and so does
    code that names no GPU's machine code (see default_arch).  A device set up since
    (``status(refresh=True)``) answers instead."""
    from ..bindings import thread_device  # deferred: loads the driver's bindings

    return thread_device.arch()


def _ask_device():
    global _no_device, _thread_device, _unusable
    try:
        from ..bindings import thread_device  # deferred: loads the driver's bindings

        _thread_device = thread_device.state
        return thread_device.arch()
    except CudaLoadError:
        # No driver, no device or a failed cuInit stays so for the life of the process (the driver
        # remembers), so the memory-hit path need not ask again: 3-7 us per call otherwise; and
        # where no thread can have a device, default_arch raises the reason without a call.
        _no_device = True
        _unusable = thread_device.unusable
        return None


def forget_no_device() -> None:
    """Ask the driver again at the next ``compile(arch=None)`` (after ``status(refresh=True)``,
    and in the child of a fork)."""
    global _no_device, _unusable
    _no_device, _unusable = False, None


# (lifetime imported by name from its module: "from .. import lifetime" asks the package's
# __getattr__ first, a call into cudaload/__init__.py per first compile.)
on_forget(forget_no_device)  # a driver set up since may answer: ask it again
on_fork_in_child(forget_no_device)  # the child asks its own driver state



_NOT_ASSUMED = object()
_assumed_driver: object = _NOT_ASSUMED  # in a compile worker: the calling process's answer


def assume_driver_version(version: int | None) -> None:
    """From now on take ``version`` for the driver's, without loading libcuda: a compile worker
    (parallel.py) keys PTX as the process that asked for it does, and never touches CUDA."""
    global _assumed_driver
    _assumed_driver = version


def driver_version() -> int | None:
    """The driver's CUDA version (e.g. 13000), or None without a driver."""
    if _assumed_driver is not _NOT_ASSUMED:
        return _assumed_driver  # type: ignore[return-value]  # an int or None, as assumed
    try:
        from ..bindings import driver  # deferred: only this path needs it

        return driver.version() or None
    except CudaLoadError:
        return None


# Compute capability majors beyond the newest NVRTC knows by more than this are taken for typos
# ("sm_900") when written out; a device's own, however new, is always tried (as PTX).
_MAJORS_AHEAD = 3


class ArchWarning(UserWarning):
    """Code was made for another arch than the one asked for (NVRTC does not know that one): the
    message names both and how to get the code asked for."""


def check_plausible(arch, tc: toolchain.Toolchain) -> None:
    """Raise ValueError for an ``arch`` given by hand far beyond what ``tc`` knows (a digit too
    many), naming the arch meant where NVRTC has it."""
    want, newest = parse_arch(arch), max(tc.archs)
    if want.number // 10 > newest // 10 + _MAJORS_AHEAD:
        # A digit too many ("sm_900"): the guess is offered only where NVRTC has it (sm_200's
        # sm_20 is no arch any NVRTC cudaload can use compiles for).
        guess = want.number // 10
        offer = (f" Did you mean sm_{guess}?" if want.number % 10 == 0 and guess in tc.archs
                 else f" Pick one of {_list(sorted(tc.archs))}.")
        raise ValueError(f"arch {arch!r} is no GPU architecture: NVRTC knows up to sm_{newest}, "
                         f"and compute capability {want.number // 10}.{want.number % 10} is far "
                         f"beyond it.{offer}")


def choose(tc: toolchain.Toolchain, arch, output: str, explicit: bool = True
            ) -> tuple[str, Arch]:
    """(kind, target arch) for a request, from NVRTC's supported archs and the driver's version;
    ``explicit``: whether ``arch`` was asked for (else it is the device's).  Code for another
    arch than ``arch`` is made only with an :class:`ArchWarning` that says so."""
    supported = sorted(tc.archs)
    # With no arch and no device (LTO IR, default_arch; cudaload compile): CUBIN or LTO
    # IR for NVRTC's newest; PTX for its oldest, which the driver compiles forward for every
    # newer GPU (never back), so it is the portable choice.
    default = supported[0] if output == "ptx" else supported[-1]
    want = Arch((default, "")) if arch is None else parse_arch(arch)
    name = _named(arch, want)
    asked = f"{name} ({_whose(explicit)})"
    known = want.number in supported
    if output != "auto" or known:
        if not known:
            raise NvrtcError(
                f"NVRTC {_v(tc)} cannot compile for {asked}: it supports {_list(supported)}",
                hint=f"pick one of those. {_support(want, tc, name)}", name="arch")
        return ("cubin" if output == "auto" else output), want
    older = [a for a in supported if a < want.number]
    if not older:
        raise NvrtcError(
            f"{asked} is older than anything NVRTC {_v(tc)} supports ({_list(supported)})",
            hint=_support(want, tc, name), name="arch")
    same_major = [a for a in older if a // 10 == want.number // 10]
    if want.number < supported[-1] and same_major:  # a CUBIN of the same major runs on it
        return _instead(tc, asked, want, "cubin", Arch((same_major[-1], "")))
    driver = driver_version()
    if driver is None or driver >= tc.version_number():
        return _instead(tc, asked, want, "ptx", Arch((older[-1], "")))
    if same_major:
        return _instead(tc, asked, want, "cubin", Arch((same_major[-1], "")))
    from ..bindings.driver import format_version  # deferred: only this path needs it

    raise NvrtcError(
        f"cannot make code for {asked}: NVRTC {_v(tc)} does not know this GPU, and its PTX "
        f"would need a driver for CUDA {_v(tc)} or newer, but the driver is for CUDA "
        f"{format_version(driver)}",
        hint=f"upgrade the NVIDIA driver. {_support(want, tc, name)}", name="arch")


def _instead(tc: toolchain.Toolchain, asked: str, want: Arch, kind: str, target: Arch
             ) -> tuple[str, Arch]:
    """(kind, target), made in place of code for ``want``: said once, with why it serves."""
    from .._base import _warn  # deferred: only a substitution warns

    if kind == "cubin":
        made = (f"CUBIN for {target.sm()}, which runs on {want.sm()} (a CUBIN runs on the GPUs "
                f"of its major with a minor as new or newer)")
    else:
        made = (f"PTX for {target.compute()}, which the driver compiles for {want.sm()} when it "
                f"loads it (a driver for CUDA {_v(tc)} or newer)")
    _warn.warn(f"NVRTC {_v(tc)} cannot compile for {asked}: made {made}. For code of "
               f"{want.sm()} itself: {_support(want, tc, want.sm())}", ArchWarning)
    return kind, target


def _support(want: Arch, tc: toolchain.Toolchain, name: str) -> str:
    from .._base.releases import arch_support  # deferred: only an arch NVRTC lacks needs it

    return arch_support(want.number, tc.version, name)


def _named(arch, want: Arch) -> str:
    """The arch as asked: compute_91 where a virtual arch was asked for, else sm_91."""
    virtual_arch = isinstance(arch, str) and arch.strip().lower().startswith("compute_")
    return want.compute() if virtual_arch else want.sm()


def _whose(explicit: bool) -> str:
    return "the arch asked for" if explicit else "this GPU's arch, as no arch was given"


def _v(tc: toolchain.Toolchain) -> str:
    return f"{tc.version[0]}.{tc.version[1]}"


def _list(archs) -> str:
    return ", ".join(f"sm_{a}" for a in archs)
