"""Code the driver refused, compiled again as code it can load: the one way back from a refusal
(launch/module.py) to a compiler.

The refused ObjectCode's ``origin`` (request.Origin: the program's prepared arguments and the
request) makes the request again; its memory entry is dropped and its disk entry evicted first.
Code shipped in a bundle is compiled here instead; code compiled here is compiled once more, as
CUBIN for the device where PTX was refused, else as PTX for an arch older than the refused one.

Imports of cudaload: _log, build, cache, options, plan, request, toolchain.
"""

from __future__ import annotations

from . import build as _build, cache, plan, request as _request, toolchain
from .._base import _log
from .objectcode import ObjectCode
from .options import Arch, parse_arch

__all__ = ["recompile_refused"]


def recompile_refused(refused: ObjectCode) -> ObjectCode | None:
    """Code the driver can load in place of ``refused``, which it refused: compiled again by the
    program that made it (CUBIN for the device, or PTX for an older arch).  None where no Program
    made it, or nothing else can be tried."""
    origin = getattr(refused, "origin", None)
    if not isinstance(origin, _request.Origin):
        return None
    request = _request.make(origin.prepared, None, origin.arch, origin.output, False)
    cache.MEMORY.pop(request.memory_key, None)
    tc = toolchain.live()
    if origin.key is None:  # shipped in a bundle: compile it here instead
        return _build.run(request, tc, shipped=False)
    cache.default().evict(origin.key)
    return _replace(request, _request.keyed(request, tc), refused, origin.key, plan.device_arch())


def _replace(request: _request.Request, found: _request.Found, refused: ObjectCode, key: str,
             device) -> ObjectCode | None:
    """Code the driver can load in place of ``refused`` (filed under ``key``; ``device``: the
    device's arch or None): CUBIN for the device where PTX was refused, else PTX for an arch
    older than the refused one; None where NVRTC has no such arch.  Kept under ``key`` while
    it still stands for what was just compiled (files and NVRTC unchanged)."""
    before = parse_arch(refused.arch)
    device = parse_arch(device) if device is not None else before
    archs = found.tc.archs
    if refused.kind == "ptx" and device.number in archs:
        kind, target = "cubin", device
    else:
        ceiling = before.number if refused.kind == "ptx" else device.number + 1
        older = [a for a in archs if a < ceiling]
        if not older:
            return None
        kind, target = "ptx", Arch((max(older), ""))
    _log.debug("compile", "the driver refused %s %s for %s; recompiling as %s for %s",
               request.inputs.name, refused.kind, refused.arch, kind, target.sm())
    obj, names = _build.nvrtc_code(request, found, kind, target)
    missing = _build.unkeyed(request, found, names)
    made = found._replace(code=obj, where="built", key=key, kept=True,
                          stamps=_build.watching(request, found, missing))
    return _request.keep(request, made, store=missing == [] and found.key == key)
