"""Ctrl-C (SIGINT) held off a thread while it is inside a compiler that must not see it.

On the H200 machine (NVRTC 13.0) a SIGINT that came early in a process's first
nvrtcCompileProgram ended the process at once: no KeyboardInterrupt, no finally block, no exit
hook (one that came 1 s into a later compilation raised KeyboardInterrupt: docs/gpu-runs/,
d13fbde).  nvJitLink's link runs the same LLVM.  So each call into either holds SIGINT off its
thread (:func:`hold`, :func:`release`), and the signal comes once the call returns: Python then
raises KeyboardInterrupt in its main thread.  A thread that runs no Python handler of its own and
may be inside neither (the cache writer's) blocks SIGINT for good (:func:`block_here`), so that
the signal waits for a thread that is not in NVRTC rather than reach one that is.

Imports nothing of cudaload.
"""

from __future__ import annotations

import _signal  # the C module: signal.py imports enum
import _thread

__all__ = ["hold", "release", "block_here"]

_SIGINT = {_signal.SIGINT} if hasattr(_signal, "pthread_sigmask") else None
# Each thread's mask as :func:`hold` found it, and how many holds are open, until the last
# :func:`release`: kept here rather than returned, so that a KeyboardInterrupt raised once SIGINT
# is blocked (CPython runs the handlers of signals already pending when pthread_sigmask returns,
# after the mask has changed) still leaves release() what to restore; counted, so that a hold
# inside another is released with it, not at its own release.
_held: dict = {}


def hold() -> None:
    """Block SIGINT in this thread until :func:`release`, which a ``finally`` whose ``try``
    holds this call too must make; holds may nest, SIGINT is restored at the outermost
    release.  Nothing to do where SIGINT is blocked already, or cannot be (no pthread_sigmask)."""
    if _SIGINT is None:
        return
    held = _held.get(_thread.get_ident())
    if held is not None:
        held[1] += 1
        return
    before = _signal.pthread_sigmask(_signal.SIG_BLOCK, ())  # a pending Ctrl-C raises here,
    if _signal.SIGINT not in before:                         # nothing changed yet
        _held[_thread.get_ident()] = [before, 1]
        _signal.pthread_sigmask(_signal.SIG_BLOCK, _SIGINT)


def release() -> None:
    """Undo one :func:`hold`; the last one restores what the first blocked: a SIGINT that came
    meanwhile is delivered now."""
    held = _held.get(_thread.get_ident())
    if held is not None:
        held[1] -= 1
        if held[1] == 0:
            del _held[_thread.get_ident()]
            _signal.pthread_sigmask(_signal.SIG_SETMASK, held[0])


def block_here() -> None:
    """Block SIGINT in this thread for good."""
    if _SIGINT is not None:
        _signal.pthread_sigmask(_signal.SIG_BLOCK, _SIGINT)
