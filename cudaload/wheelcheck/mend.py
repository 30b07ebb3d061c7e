"""The step a check-wheel failure gives to make a bundle again: ``cudaload precompile``
writing it at its path in the package's tree, run from the folder that holds the package (the
project root, or ``src/`` in a src layout), where that path is the one the wheel installs it at.

Every failure that names such a command builds it here, so that each names what the check knows
(the bundle, the archs, the spec) and leaves a placeholder only for what it cannot know.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

__all__ = ["precompile_step"]


def precompile_step(bundle: str, archs: Sequence[str], spec: str = "MODULE:NAME",
                    append: bool = False, then: str = "build the wheel again") -> str:
    """``run `cudaload precompile ...` from the folder that holds the package, then {then}``:
    ``bundle`` as the wheel installs it (relative to site-packages), ``spec`` the
    ``--programs`` argument (its placeholder where the check was not given it)."""
    command = shlex.join(["cudaload", "precompile", "--programs", spec,
                          *[word for arch in archs for word in ("--arch", arch)],
                          "-o", bundle, *(["--append"] if append else [])])
    return f"run `{command}` from the folder that holds the package, then {then}"
