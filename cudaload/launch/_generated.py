"""Functions made from generated source text (the fast-path launcher, argument packers), compiled
under a pseudo-file name whose text ``linecache`` holds, so that tracebacks, ``inspect.getsource``
and pdb show the generated lines instead of nothing.

A text stays registered exactly as long as its function lives (a finalizer removes it), so the
registered text is bounded by what the launch state already keeps, one text per live function,
about the size of the function's own code object; a count-bounded cache instead could drop the
text of a function still in use.  The functions are built on the slow path only: naming them costs
a launch nothing (the same code runs, from another file name), and a process's first costs
importing ``linecache`` once, unless something (numpy, logging, traceback) imported it before.
"""

from __future__ import annotations

import itertools
import weakref

__all__ = ["define"]

_serial = itertools.count(1)  # one file name per function: texts of equal names never mix
_NAME_SHOWN = 60  # characters of a kernel's name in the file name (template names run long)


def define(text: str, env: dict, name: str, what: str, kernel: str):
    """Run ``text`` in the globals ``env`` and return the function ``name`` it defines, whose code
    reads as the file ``<cudaload WHAT KERNEL#N>``."""
    import linecache  # deferred: it imports tokenize, which a process that builds none need not

    shown = kernel if len(kernel) <= _NAME_SHOWN else kernel[:_NAME_SHOWN] + "..."
    filename = f"<cudaload {what} {shown}#{next(_serial)}>"
    exec(text, env)  # noqa: S102 - callers build the text from integers and fixed names only
    function = env[name]
    # Named after the fact: a process's first compile() sets up the classes of every ast node
    # (10M instructions), which exec of a str does not need.  The texts define no nested
    # functions, whose code would keep the old name.
    function.__code__ = function.__code__.replace(co_filename=filename)
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    # atexit=False: at exit nothing reads the texts any more; leave the finalizer registry alone.
    weakref.finalize(function, linecache.cache.pop, filename, None).atexit = False
    return function
