"""The device of a process in a job of several processes per machine: :func:`device_for_rank`.

Launchers say which process of its machine this one is through an environment variable, each its
own: ``LOCAL_RANK`` (torchrun, Accelerate, DeepSpeed), ``OMPI_COMM_WORLD_LOCAL_RANK`` (Open MPI),
``MV2_COMM_WORLD_LOCAL_RANK`` (MVAPICH2), ``MPI_LOCALRANKID`` (MPICH's and Intel MPI's Hydra),
``PALS_LOCAL_RANKID`` (Cray PALS), ``SLURM_LOCALID`` (srun).  The first one set wins, in that
order: a launcher started under another (torchrun under srun) sets the more specific variable.
The rank is taken modulo the number of visible devices, which the driver counts after applying
``CUDA_VISIBLE_DEVICES``: ordinals are within the visible set, so a launcher that gives each
process one GPU through ``CUDA_VISIBLE_DEVICES`` gets device 0 of its one, as it should.
"""

from __future__ import annotations

import os

from ..errors import CudaLoadError
from ..bindings import thread_device
from .device import Device, visible_devices

__all__ = ["RANK_VARIABLES", "RankError", "device_for_rank", "rank_from_environment"]

RANK_VARIABLES = ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK",
                  "MPI_LOCALRANKID", "PALS_LOCAL_RANKID", "SLURM_LOCALID")


class RankError(CudaLoadError, ValueError):
    """A local rank that is no whole number of 0 or more: ``.variable`` names where it came from
    (None for an argument), ``.value`` is what it was."""


def rank_from_environment(environ=None) -> tuple[int, str | None]:
    """(this process's rank on its machine, the variable that said it); (0, None) where no
    launcher set one.  Raises :class:`RankError` for a value that is no rank."""
    environ = os.environ if environ is None else environ
    for name in RANK_VARIABLES:
        value = environ.get(name)
        if value is not None:
            return _parse(value, name), name
    return 0, None


def _parse(value, variable: str | None) -> int:
    where = f"{variable}={value!r}" if variable else f"local_rank={value!r}"
    if isinstance(value, str):
        text = value.strip()
        number = int(text) if text.isascii() and text.isdigit() else None  # no sign, "1.0", ""
    elif isinstance(value, bool) or not hasattr(value, "__index__"):  # True is no rank
        number = None
    else:  # an int, a numpy integer
        number = value.__index__() if value.__index__() >= 0 else None
    if number is None:
        raise RankError(f"{where} is not a local rank: a whole number of 0 or more is needed",
                        hint=f"set {variable or 'local_rank'} to this process's index on its "
                        f"machine (0, 1, ...), or pass device_for_rank(local_rank=N)",
                        variable=variable, value=value)
    return number


def device_for_rank(local_rank: int | None = None) -> Device:
    """The device of this process: its local rank (``local_rank``, else the first of
    :data:`RANK_VARIABLES` set, else 0) modulo the number of visible devices.  Made the calling
    thread's device and the default of every thread that chooses none, so that no thread of the
    process makes a context on another device.  Raises :class:`RankError` for a rank that is no
    whole number of 0 or more, :class:`CudaUnavailableError` where no device is visible."""
    rank = rank_from_environment()[0] if local_rank is None else _parse(local_rank, None)
    count = visible_devices()
    if count <= 0:
        raise thread_device.none_visible()
    device = Device(rank % count)
    thread_device.choose_default(device.ordinal)
    device.set_current()
    return device
