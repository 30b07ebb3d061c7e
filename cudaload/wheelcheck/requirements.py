"""Which cudaload a wheel depends on, from its METADATA's ``Requires-Dist`` lines, and the
warning for a wheel that leaves its GPU users without NVRTC: it depends on plain ``cudaload``
(not ``cudaload[nvrtc]``) and ships no bundle, so every GPU compiles its kernels with an NVRTC
nothing installed, and meets ``LibraryNotFoundError``.
"""

from __future__ import annotations

import email.parser
import re
from collections.abc import Sequence

from .mend import precompile_step
from .wheel import open_wheel

__all__ = ["cudaload_requirements", "nvrtc_warning"]

# PEP 508, as far as the check needs it: name, extras, the rest (version or URL), the marker.
_REQUIREMENT = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?([^;]*)(?:;(.*))?")
_EXTRA_MARKER = re.compile(r"\bextra\s*==\s*['\"]([^'\"]+)['\"]")


def cudaload_requirements(path: str) -> list[dict]:
    """The wheel's requirements on cudaload: ``{"text", "extras", "extra"}`` each (``extra``: the
    wheel's own extra that asks for it, or None when every install does)."""
    with open_wheel(path) as archive:
        name = next((n for n in archive.namelist()
                     if n.count("/") == 1 and n.endswith(".dist-info/METADATA")), None)
        data = archive.read(name) if name else b""
    message = email.parser.BytesParser().parsebytes(data, headersonly=True)
    found = []
    for text in message.get_all("Requires-Dist") or ():
        match = _REQUIREMENT.fullmatch(text)
        if match is None or re.sub(r"[-_.]+", "-", match.group(1)).lower() != "cudaload":
            continue
        extra = _EXTRA_MARKER.search(match.group(4) or "")
        found.append({"text": text.strip(),
                      "extras": sorted(e.strip().lower() for e in (match.group(2) or "").split(",")
                                       if e.strip()),
                      "extra": extra.group(1) if extra else None})
    return found


def nvrtc_warning(requirements: list[dict], ships_bundle: bool, packages: Sequence[str] = (),
                  archs: Sequence[str] = ()) -> str | None:
    """The warning for a wheel whose cudaload ``requirements`` bring no NVRTC to every install
    while it ships no bundle (``ships_bundle``), or None.  Its command writes the bundle into
    the wheel's package where ``packages`` (its top-level packages) has one only, for ``archs``
    where given."""
    always = [r for r in requirements if r["extra"] is None]
    if ships_bundle or not always or any("nvrtc" in r["extras"] for r in always):
        return None
    offered = sorted({r["extra"] for r in requirements if "nvrtc" in r["extras"] and r["extra"]})
    only = (f" (only the package's extra {', '.join(offered)} brings cudaload[nvrtc])"
            if offered else "")
    return (f"the wheel depends on plain cudaload (Requires-Dist: {always[0]['text']}), without "
            f"its nvrtc extra{only}, and ships no cudaload.Bundle: on a GPU its kernels are "
            "compiled with NVRTC, which nothing installs, so its GPU users meet "
            "LibraryNotFoundError. Next step: depend on cudaload[nvrtc], or ship a bundle: "
            + precompile_step(f"{packages[0] if len(packages) == 1 else 'PKG'}/kernels.bundle",
                              archs or ["ARCH"],
                              then="list it as package data and build the wheel again"))
