"""Process lifetime: what the child of a ``fork()`` must reset, whether it inherited CUDA, and
what must finish before the interpreter exits.

A forked child runs with a copy of its parent's memory but only the thread that forked: locks
another thread held stay held, and a driver initialised in the parent cannot be used in the
child.  Modules register a reset with :func:`on_fork_in_child`; one ``os.register_at_fork`` hook
(none where the OS has no fork, e.g. Windows) runs them in the child, in the order registered.

:func:`mark_unforkable` records that this process now holds state no child may use (the CUDA
driver after ``cuInit``); :func:`forked` says whether this process is the child of a fork made
after that, in which case handles inherited from the parent must not be released (the driver
would fail) and the driver must not be used.

:func:`at_exit` registers what must run before the interpreter exits (cache writes still pending);
one ``atexit`` hook runs them, in the order registered.

Imports nothing of cudaload.

Foundation: imports only other foundation modules of cudaload, if any.
"""

from __future__ import annotations

import atexit
import os

__all__ = ["on_fork_in_child", "at_exit", "forked", "mark_unforkable"]

_hooks: list = []
_exit_hooks: list = []
_unforkable = False  # this process (or a parent of it) initialised state a child cannot use
_forked = False  # this process is the child of a fork made after that


def on_fork_in_child(hook):
    """Call ``hook()`` in the child of every later ``fork()``; returns ``hook``."""
    _hooks.append(hook)
    return hook


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


def forked() -> bool:
    """Whether this process is the child of a fork made after :func:`mark_unforkable`."""
    return _forked


def _after_fork_in_child() -> None:
    global _forked
    if _unforkable:
        _forked = True
    for hook in _hooks:
        hook()


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_after_fork_in_child)
