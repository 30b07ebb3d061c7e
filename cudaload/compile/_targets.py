"""Which code a compile request makes: the kind (CUBIN or PTX) and target architecture, from
NVRTC's supported architectures and the driver's version, and the errors for a request that
cannot be met.

Layer 2, compile: may import the foundation, bindings and compile.
"""

from __future__ import annotations

from . import toolchain
from ..errors import CudaLoadError, NvrtcError
from .options import Arch, parse_arch

__all__ = ["choose", "check_plausible", "driver_version", "assume_driver_version"]

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
        from ..bindings import driver

        return driver.version() or None
    except CudaLoadError:
        return None


# Compute capability majors beyond the newest NVRTC knows by more than this are taken for typos
# ("sm_900") when written out; a device's own, however new, is always tried (as PTX).
_MAJORS_AHEAD = 3


def check_plausible(arch, tc: toolchain.Toolchain) -> None:
    want, newest = parse_arch(arch), max(tc.archs)
    if want.number // 10 > newest // 10 + _MAJORS_AHEAD:
        guess = f" Did you mean sm_{want.number // 10}?" if want.number % 10 == 0 else ""
        raise ValueError(f"arch {arch!r} is no GPU architecture: NVRTC knows up to sm_{newest}, "
                         f"and compute capability {want.number // 10}.{want.number % 10} is far "
                         f"beyond it.{guess}")


def choose(tc: toolchain.Toolchain, arch, output: str, explicit: bool = True
            ) -> tuple[str, Arch]:
    """(kind, target arch) for a request, from NVRTC's supported archs and the driver's version;
    ``explicit``: whether ``arch`` was asked for (else it is the device's)."""
    supported = sorted(tc.archs)
    # With no arch and no device: CUBIN for NVRTC's newest; PTX for its oldest, which the driver
    # compiles forward for every newer GPU (never back), so it is the portable choice.
    default = supported[0] if output == "ptx" else supported[-1]
    want = Arch((default, "")) if arch is None else parse_arch(arch)
    known = want.number in supported
    if output != "auto" or known:
        if not known:
            from ..releases import arch_support

            raise NvrtcError(
                f"NVRTC {_v(tc)} cannot compile for {want.sm()} ({_whose(explicit)}): it "
                f"supports {_list(supported)}",
                hint=f"pick one of those, or {arch_support(want.number, tc.version)}", name="arch")
        return ("cubin" if output == "auto" else output), want
    older = [a for a in supported if a < want.number]
    if not older:
        from ..releases import arch_support

        raise NvrtcError(
            f"{want.sm()} ({_whose(explicit)}) is older than anything NVRTC {_v(tc)} supports "
            f"({_list(supported)})", hint=arch_support(want.number, tc.version), name="arch")
    same_major = [a for a in older if a // 10 == want.number // 10]
    if want.number < supported[-1] and same_major:  # a CUBIN of the same major runs on it
        return "cubin", Arch((same_major[-1], ""))
    driver = driver_version()
    if driver is None or driver >= tc.version_number():
        return "ptx", Arch((older[-1], ""))
    if same_major:
        return "cubin", Arch((same_major[-1], ""))
    from ..bindings.driver import format_version
    from ..releases import arch_support

    raise NvrtcError(
        f"cannot make code for {want.sm()}: NVRTC {_v(tc)} does not know this GPU, and its PTX "
        f"would need a driver for CUDA {_v(tc)} or newer, but the driver is for CUDA "
        f"{format_version(driver)}",
        hint=f"upgrade the NVIDIA driver, or {arch_support(want.number, tc.version)}", name="arch")


def _whose(explicit: bool) -> str:
    return "the arch asked for" if explicit else "this GPU's arch, as no arch was given"


def _v(tc: toolchain.Toolchain) -> str:
    return f"{tc.version[0]}.{tc.version[1]}"


def _list(archs) -> str:
    return ", ".join(f"sm_{a}" for a in archs)
