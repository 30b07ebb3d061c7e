"""The packaging test for host packages: ``cudaload check-wheel`` and the pytest plugin.

``wheel`` finds a wheel's compiled files and bundles; ``elf`` and ``pe`` read the libraries each
compiled file needs; ``libraries`` knows CUDA's library names; ``bundles`` reports the
architectures a shipped bundle covers; ``install`` with ``_probe`` and ``environments`` installs
the wheel into a fresh environment and imports it where CUDA is absent; ``programs`` with
``_programs_probe`` asks there whether the package's Programs find code in their bundle;
``requirements`` reads which cudaload the wheel depends on; ``mend`` writes the
``cudaload precompile`` command a failure gives to make a bundle again; ``command`` is the
subcommand and :func:`check_wheel`; ``pytest_plugin`` gives the fixtures ``no_cuda`` and
``cuda_without_gpu``; ``driver_library`` is ``cudaload fetch-libcuda`` (a real driver library
for a machine without a GPU, which ``cuda_without_gpu`` and ``--import`` use).  Importing this
package imports none of them: pytest imports the plugin in every project where cudaload is
installed.

Entry point: may import every layer.
"""

from __future__ import annotations

TYPE_CHECKING = False  # true for type checkers only: importing this package imports no module
if TYPE_CHECKING:
    from .command import check_wheel as check_wheel  # what __getattr__ binds

__all__ = ["check_wheel"]


def __getattr__(name: str):
    if name == "check_wheel":
        from .command import check_wheel  # deferred: only the check that needs it

        return check_wheel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
