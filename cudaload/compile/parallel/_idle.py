"""How many CPUs are idle now: what a batch of a few short programs can gain from workers.

A shared batch (batch.py: at most one key more than its workers) gains from a worker only what
the worker compiles while this process compiles too, and pays its start and NVRTC's first
compilation in it (on 2 cores, some 35 ms: as long as a short kernel's compile).  Beside busy
processes no CPU is free for it: both then share the CPUs the busy ones leave, and two short
programs took 1.1-1.45x as long as compiled in turn (bench/fleet_bench.py --busy 2).  So such a
batch starts no more workers than CPUs are idle, as ``make -l`` starts no job above a load.

Idle means not running nor waiting to run: Linux's /proc/loadavg counts the tasks that are, now
(its fourth field, this process's own thread among them), not the load averaged over a minute,
which a process started seconds ago has barely moved.  Where that is not known, every CPU is
taken for idle, as before; so it is where this process may run on some of the machine's CPUs only
(a cpuset, ``taskset``), whose tasks /proc/loadavg does not tell from the others'.

Imports nothing of cudaload.
"""

from __future__ import annotations

import os

__all__ = ["cores", "idle_cpus", "processes"]


def cores() -> int:
    """The number of CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def idle_cpus() -> int | None:
    """The machine's CPUs that no task other than this thread runs or waits to run on now; None
    where that is not known (no /proc)."""
    cpus = os.cpu_count() or 1
    if cores() != cpus:
        return None  # some of the machine's CPUs (a cpuset): the count says nothing of those
    try:
        with open("/proc/loadavg", "rb") as f:
            running = int(f.read().split()[3].split(b"/")[0])
    except (OSError, ValueError, IndexError):
        return None
    return max(0, cpus - (running - 1))


def processes(n: int) -> int:
    """Of ``n`` processes (this one among them), as many as CPUs are idle, at least this one;
    ``n`` where that is not known."""
    idle = idle_cpus()
    return n if idle is None else min(n, max(1, idle))
