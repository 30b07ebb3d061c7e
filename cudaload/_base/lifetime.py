"""Process lifetime: what the child of a ``fork()`` must reset, whether it inherited CUDA, what a
refresh of the status report forgets, and what must finish before the interpreter exits.

A forked child runs with a copy of its parent's memory but only the thread that forked: locks
another thread held stay held, and a driver initialised in the parent cannot be used in the
child.  Modules register a reset with :func:`on_fork_in_child`; one ``os.register_at_fork`` hook
(none where the OS has no fork, e.g. Windows) runs them in the child, in the order registered.

:func:`mark_unforkable` records that this process now holds state no child may use (the CUDA
driver after ``cuInit``); :func:`forked` says whether this process is the child of a fork made
after that, in which case handles inherited from the parent must not be released (the driver
would fail) and the driver must not be used.

What the process found about its machine (a library that failed to load, the nvJitLink file, the
toolchain remembered on disk, that no device answered) is kept for the life of the process, as
looking again costs time.  Each module that keeps such a finding registers how to forget it with
:func:`on_forget`, at its import; :func:`forget_found` (``status(refresh=True)``) runs them all, so
that the next use looks again.  A module not imported yet has found nothing, so it has nothing to
forget: registering at import lets the refresh reach exactly the modules that hold something,
without importing the others (which costs time) or naming them.  The child of a fork also
forgets that the driver failed to load and why compiling found no device (each module's own
:func:`on_fork_in_child` reset), so that its first use asks its own driver state.

:func:`at_exit` registers what must run before the interpreter exits (cache writes still pending);
one ``atexit`` hook runs them, in the order registered.

Imports nothing of cudaload.
"""

from __future__ import annotations

import atexit
import os

__all__ = ["on_fork_in_child", "on_forget", "forget_found", "at_exit", "forked",
           "mark_unforkable", "unforkable"]

_hooks: list = []
_forget_hooks: list = []
_exit_hooks: list = []
_unforkable = False  # this process (or a parent of it) initialised state a child cannot use
_forked = False  # this process is the child of a fork made after that
_child = False  # this process is the child of a fork made after this module was imported


def on_fork_in_child(hook):
    """Call ``hook()`` in the child of every later ``fork()``; returns ``hook``."""
    _hooks.append(hook)
    return hook


def on_forget(hook):
    """Call ``hook()`` at every later :func:`forget_found`; returns ``hook``."""
    _forget_hooks.append(hook)
    return hook


def forget_found() -> None:
    """Forget what each module imported so far found about the machine, so that its next use
    looks again (``status(refresh=True)``)."""
    for hook in tuple(_forget_hooks):  # a module imported meanwhile in another thread may append
        hook()


def at_exit(hook):
    """Call ``hook()`` when the interpreter exits normally; returns ``hook``."""
    _exit_hooks.append(hook)
    return hook


def _at_exit() -> None:
    for hook in _exit_hooks:
        hook()


atexit.register(_at_exit)


def mark_unforkable() -> None:
    """From now on, a child of a fork of this process inherits state it cannot use."""
    global _unforkable
    _unforkable = True


def unforkable() -> bool:
    """Whether a child of a fork of this process would inherit state it cannot use."""
    return _unforkable


def forked() -> bool:
    """Whether this process is the child of a fork made after :func:`mark_unforkable`."""
    return _forked


def child_of_fork() -> bool:
    """Whether this process is the child of a fork made after this module was imported (by the
    first Program or the kernel cache): a module first imported after the fork, whose fork hook
    never ran, learns it here."""
    return _child


def _after_fork_in_child() -> None:
    global _forked, _child
    _child = True
    if _unforkable:
        _forked = True
    for hook in _hooks:
        hook()


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_after_fork_in_child)
