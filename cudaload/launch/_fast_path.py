"""The fast-path launch: a kernel's whole hot path, generated as one function that the ``Kernel``
object calls directly, for one thread, one device and one tuple of argument types.

The cffi call of ``cuLaunchKernelEx`` alone takes about 3,800 machine instructions (CPython 3.12);
the ordinary path (``_KernelState.launch``) added 5,300 more with two arguments and 10,500 with sixteen,
in Python calls, attribute reads and a packing call.  The fast-path function checks that nothing
changed since the last launch (the thread, the bound context, the launch shape by identity, the
arguments), packs the arguments again only where they changed, and calls the driver; anything
else goes to the ordinary path, which raises the precise errors and installs the function again.

Only the thread that owns a kernel (the first to launch it, until it ends) gets one: the buffer
is that thread's, and cuLaunchKernelEx reads it during the call, with the GIL released.  The
function holds its kernel and launch state through weak references only, so a kernel whose
Python objects are gone is freed at once, not by the cycle collector.

How a ``Kernel`` gets its fast path.  A ``Kernel`` is a ``functools.partial`` (CPython calls one
through vectorcall, with no argument tuple or keyword dict) whose function starts as the bound
``_KernelState.launch``.  A launch in the owning thread ends in :func:`install`; the second one in a row
with the same packing plan has :func:`build` write the fast-path function's text (the plan's
conversions inlined, the launch state as globals of its own namespace) and swaps it in as the
partial's function with ``functools.partial.__setstate__``: the object users hold stays the same.
The ordinary path keeps those globals true through :class:`LastLaunch`; the owner thread's end puts
``_KernelState.launch`` back.  To read or debug it: the text is registered as the file
``<cudaload launcher NAME#N>`` (``_generated.define``), so ``inspect.getsource(kernel.func)``,
tracebacks and pdb show it, as they show the packers' ``<cudaload packer NAME#N>``.
"""

from __future__ import annotations

import _thread
import functools
import weakref

from .arguments import PACK_ERRORS
from ._generated import define
from .device import generation

__all__ = ["LastLaunch", "POSITIONAL", "build", "claim", "install", "nothing"]


_owners = _thread.allocate_lock()  # who owns a kernel's fast-path function, and installing it
_setstate = functools.partial.__setstate__  # type: ignore[attr-defined]  # how a Kernel's function is replaced


class LastLaunch:
    """One thread's launches of one kernel: the last constant launch shape and its configuration,
    the context generation its state was checked at, and the globals of the fast-path functions
    built for it (``envs``), which hold copies of these so that a launch reads plain globals;
    ``configs``, the launch configurations made, by (grid, block, shared_mem, stream, cluster,
    cooperative).  Written by the ordinary path, through the methods below."""

    __slots__ = ("gen", "grid", "block", "shmem", "stream", "config", "envs", "configs",
                 "__weakref__")

    def __init__(self, gen: int):
        self.gen = gen
        self.grid = self.block = self.shmem = self.stream = self.config = None
        self.envs: list[dict] = []
        self.configs: dict = {}

    def set_shape(self, grid, block, shmem, stream, config) -> None:
        self.grid, self.block, self.shmem, self.stream, self.config = \
            grid, block, shmem, stream, config
        shape = _shape(self)
        for env in self.envs:
            env.update(shape)

    def set_gen(self, gen: int) -> None:
        """A new generation (a thread bound another context, or the process forked): the shape
        is forgotten too, and made again by the ordinary path."""
        self.gen = gen
        for env in self.envs:
            env["GEN"] = gen
        self._forget()

    def forget_stream(self, stream) -> None:
        """``stream`` (a cudaload Stream) was closed: the configurations and the shape naming it
        are forgotten, so that a launch on it makes its configuration again, which refuses it;
        those of other streams stay."""
        for key in [key for key in list(self.configs) if key[3] is stream]:
            self.configs.pop(key, None)
        if self.stream is stream:
            self._forget()

    def _forget(self) -> None:
        self.grid = self.block = self.shmem = self.stream = self.config = None
        forgotten = _shape(self)
        for env in self.envs:
            env.update(forgotten)

    def unpacked(self) -> None:
        """The parameter buffer now holds the ordinary path's arguments: every fast-path function
        packs its own again."""
        for env in self.envs:
            env.update(env["FORGET"])


def _shape(last: LastLaunch) -> dict:
    """The fast-path globals of ``last``'s shape; none that a call could match before the ordinary
    path has made a configuration."""
    if last.config is None:
        return dict(G=_UNSET, B=_UNSET, M=_UNSET, S=_UNSET, CONFIG=None)
    return dict(G=last.grid, B=last.block, M=last.shmem, S=last.stream, CONFIG=last.config)


# Stands for "no fourth positional argument".  Keyword-only parameters would make every call look
# their defaults up in a dict (about 350 instructions); ordinary ones read a tuple, and a fourth
# positional argument still reaches _KernelState.launch, which refuses it.
POSITIONAL = object()
_UNSET = object()  # what no argument was, and no shape is
# The shape is compared by identity (repeated launches pass the same int, tuple and stream
# objects), then, for an int made anew each time (a computed grid), by value.  Each is a global
# of the function: one instruction fewer than an attribute of a state object, per check.
_HEAD = """\
def launch(grid, block, args, _=POSITIONAL, shared_mem=0, stream=None, cluster=None,
           cooperative=False):
    {kept}
    if (grid is G or type(grid) is int and grid == G) \\
            and (block is B or type(block) is int and block == B) and stream is S \\
            and (shared_mem is M or type(shared_mem) is int and shared_mem == M) \\
            and _ is POSITIONAL and cluster is None and not cooperative \\
            and get_ident() == OWNER and GEN == generation.value:
        try:
"""
_TAIL = """\
        except PACK_ERRORS:
            hit = False
        if hit:
            rc = cuLaunchKernelEx(CONFIG, FUNC, PTRS, NULL)
            if rc:
                kernel_state()._failed(rc, state(), CONFIG)
            return
    return kernel_state().launch(grid, block, args, _, shared_mem=shared_mem, stream=stream,
                         cluster=cluster, cooperative=cooperative)
"""


def build(kernel_state, state, pieces):
    """The fast-path function of a kernel (its ``kernel_state``, kernel.py's _KernelState) for
    ``state`` (this thread's launch state on one device) and the plan whose generated ``pieces``
    (``Packer.pieces``) it inlines."""
    conversions, order, env = pieces
    n = len(conversions)
    converted = [i for i in range(n) if conversions[i][0] is not None]
    plain = [i for i in range(n) if conversions[i][0] is None]
    kept = [f"A{i}" for i in plain] + [f"V{i}" for i in converted]
    body = [f"{', '.join(f'a{i}' for i in range(n))}, = args" if n else
            "if args: raise ValueError"]
    # Converted arguments (buffers, arrays) are tested and converted every time.  Arguments
    # packed as they are (ints, floats) are compared by identity: the same object has the same
    # type and value, so a repeated one costs neither a type test nor packing.  What is kept is
    # such values and converted ones (ints, bytes), never an array, whose memory it would keep.
    # Under CUDA's unified addressing a pointer value names one allocation on one device, so an
    # array whose pointer is the one packed last passed its device test then.
    tested = " and ".join(f"type(a{i}) is T{i}" for i in converted)
    body += [f"hit = {tested or 'True'}"]
    if kept:
        body += ["if hit:"] + [f"    v{i} = {conversions[i][0]}" for i in converted]
    same = [f"a{i} is A{i}" for i in plain] + [f"v{i} == V{i}" for i in converted]
    again = [f"type(a{i}) is T{i}" for i in plain] + [
        conversions[i][1] for i in converted if conversions[i][1]]
    values = ", ".join(f"v{i}" if i in converted else f"a{i}" for i in order)
    if kept:
        body += [f"    if not ({' and '.join(same)}):",
                 f"        if {' and '.join(again) or 'True'}:",
                 # A failed packing leaves part of the buffer written: nothing matches it then.
                 f"            {kept[0]} = UNSET",
                 f"            pack_into(buf, 0, {values})"]
        body += [f"            {name} = {name.lower()}" for name in kept]
        body += ["        else:", "            hit = False"]
    code = (_HEAD.format(kept=f"global {', '.join(kept)}" if kept else "pass")
            + "".join(f"            {line}\n" for line in body) + _TAIL)
    env = dict(env, OWNER=_thread.get_ident(), get_ident=_thread.get_ident,
               generation=generation, GEN=state.last.gen, PACK_ERRORS=PACK_ERRORS,
               POSITIONAL=POSITIONAL, cuLaunchKernelEx=state.launch, FUNC=state.func,
               PTRS=state.pointers, NULL=state.null, kernel_state=weakref.ref(kernel_state),
               state=weakref.ref(state), UNSET=_UNSET, FORGET=dict.fromkeys(kept, _UNSET),
               **dict.fromkeys(kept, _UNSET), **_shape(state.last))
    launch = define(code, env, "launch", "launcher", kernel_state.name)
    state.last.envs.append(env)
    return launch


def claim(kernel_state) -> bool:
    """Whether this thread owns the fast-path function of a kernel (its ``kernel_state``): the
    first thread to launch does, until it ends (its thread-local data going reports that)."""
    ident = _thread.get_ident()
    with _owners:
        if kernel_state._owner is None:
            kernel_state._owner = ident
            kernel_state._tls.owned = token = _Token()
            kernel_state._watch = weakref.ref(
                token, functools.partial(_released, weakref.ref(kernel_state)))
        return kernel_state._owner == ident


def install(kernel_state, state) -> None:
    """Make the fast-path function of this thread's plan the one a call of the Kernel runs, once
    the plan served two launches running (argument types that alternate keep the ordinary path)."""
    if state.repeat is not state.pack:
        state.repeat = state.pack
        return
    fast = state.fast_paths.get(state.pack)
    if fast is None:
        fast = state.fast_paths[state.pack] = build(kernel_state, state,
                                                      state.packer.pieces(state.types))
    with _owners:
        kernel = kernel_state._kernel()
        if kernel is not None and state.own and kernel_state._owner == _thread.get_ident():
            _setstate(kernel, (fast, (), None, kernel.__dict__))
            kernel_state._fast_plan = state.pack


class _Token:
    """Lives in the owner thread's thread-local data: its end tells that the thread ended."""

    __slots__ = ("__weakref__",)


def _released(kernel_state_ref, _token) -> None:
    """The owner thread of a kernel ended: calls go the ordinary way until another thread owns it."""
    kernel_state = kernel_state_ref()
    if kernel_state is None:
        return
    with _owners:
        kernel_state._owner = kernel_state._fast_plan = kernel_state._watch = None
        kernel = kernel_state._kernel()
        if kernel is not None:
            _setstate(kernel, (kernel_state.launch, (), None, kernel.__dict__))


def nothing():
    """What a weak reference to nothing returns."""
    return None
